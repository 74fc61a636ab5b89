// What `m4a report` and `m4a open` ask the daemon for (/admin/support/*, the operator on this
// machine). The counts answer is numbers under fixed keys only: no shape here can carry a subject,
// a body, a name or a path, so the report cannot leak what the mailbox holds through it.
import { z } from 'zod';
import { Selector } from './fields.js';
import { SessionOut } from './ops.js';
import type { AccountKind } from './admin.js';
import { TASK_STATES } from './task-states.js';

const n = z.number().int().nonnegative();
/** Exactly these keys, each a count (a record over an enum would accept any subset). */
const countsOf = <K extends string>(keys: readonly [K, ...K[]]) => z.strictObject(Object.fromEntries(keys.map((k) => [k, n])) as Record<K, typeof n>);

export const WAKE_KINDS = ['hooks', 'codex-app-server', 'command', 'webhook', 'a2a', 'opencode'] as const;

export const SupportCountsResponse = z.strictObject({
  accounts: countsOf(['agent', 'human', 'service'] as const satisfies readonly AccountKind[]),
  sessions: z.strictObject({ live: n, ended: n }),
  rooms: z.strictObject({ rooms: n, everyone: n, teams: n }),
  /** stored: the messages the store holds now (its maintained per-mailbox totals, so mail that
   *  retention deleted or seqs an import left unused are not counted); head_seq: its highest seq. */
  messages: z.strictObject({ stored: n, head_seq: n }),
  /** Account and room mail not yet acknowledged, summed over accounts (session mail is per lineage). */
  unread: z.strictObject({ total: n, accounts_with_unread: n }),
  tasks: countsOf(TASK_STATES),
  /** By the state approval get shows: expired is pending past its expiry. */
  approvals: countsOf(['pending', 'approved', 'rejected', 'expired'] as const),
  leases: z.strictObject({ live: n }),
  /** Delivery chains by the kind of their steps (a chain of two kinds counts once for each). */
  wake_chains: z.strictObject({ chains: n, ...countsOf(WAKE_KINDS).shape }),
});
export type SupportCountsResponse = z.infer<typeof SupportCountsResponse>;

export const SupportSessionsRequest = z.strictObject({
  account: Selector.optional().describe('only the sessions of this account'),
  include_ended: z.boolean().optional().describe('also sessions that ended'),
});
export type SupportSessionsRequest = z.infer<typeof SupportSessionsRequest>;

export const SupportSessionsResponse = z.object({
  /** Most recently seen first. */
  sessions: z.array(SessionOut.extend({ account: z.string() })),
});
export type SupportSessionsResponse = z.infer<typeof SupportSessionsResponse>;
