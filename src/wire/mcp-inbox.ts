// m4a_mail_inbox over MCP also waits for a match (issue #19): with from, subject_contains or
// body_contains it is wait_for (wait-for.ts), waiting up to wait_secs (at most the MCP wait, by
// default all of it), and answers wait_for's {message, codes, links}. One tool and not two: the
// tool list is paid in tokens on every turn (test/contract-tokens.test.ts).
import { MailError } from './errors.js';
import { LIMITS } from './limits.js';
import { McpInboxRequest } from './ops.js';
import { text } from './fields.js';
import { WAIT_FOR_LIMITS, type WaitForRequest } from './wait-for.js';

/** wait_for's bounds (a line of 256 bytes each); the names say the rest, the tool's summary how. */
const filter = () => text(WAIT_FOR_LIMITS.filterBytes).optional();

export const McpInboxWaitRequest = McpInboxRequest.extend({
  from: filter().describe('sender as printed'),
  subject_contains: filter().describe('any case'),
  body_contains: filter().describe('any case'),
});

/** The inbox's own fields, which mean nothing to a wait for the next match. */
const PAGE_FIELDS = ['after', 'limit', 'include_acked', 'include_bodies', 'thread_id'] as const;

/** The wait_for an MCP inbox call asks for, or null for a plain inbox read. A page field beside a
 *  filter is refused by name, so a call never silently means less than it says. */
export function inboxWaitFor(i: Record<string, unknown>): WaitForRequest | null {
  const filters = { from: i.from, subject_contains: i.subject_contains, body_contains: i.body_contains };
  if (Object.values(filters).every((v) => v === undefined)) return null;
  const extra = PAGE_FIELDS.find((k) => i[k] !== undefined);
  if (extra)
    throw new MailError('malformed', `${extra} is for inbox pages; with from, subject_contains or body_contains the call waits for the next match`, {
      field: extra,
      reason: 'not with a filter',
    });
  const secs = typeof i.wait_secs === 'number' ? Math.min(i.wait_secs, LIMITS.waitSecsMcp) : LIMITS.waitSecsMcp;
  const out: WaitForRequest = { timeout_secs: secs };
  for (const [k, v] of Object.entries(filters)) if (typeof v === 'string') out[k as 'from'] = v;
  return out;
}
