// Addresses: exactly three kinds, in a tagged JSON form and a compact string form.
//   direct  {"kind":"direct","participant":"claude"}                 claude
//   session {"kind":"session","participant":"claude","session":"s-…"} claude/s-…
//   room    {"kind":"room","room":"reviewers"}                         #reviewers
import { LIMITS } from './limits.js';
import { selectorProblem, utf8Bytes } from './text.js';

export type Address = { kind: 'direct'; participant: string } | { kind: 'session'; participant: string; session: string } | { kind: 'room'; room: string };

export function formatAddress(a: Address): string {
  switch (a.kind) {
    case 'direct':
      return a.participant;
    case 'session':
      return `${a.participant}/${a.session}`;
    case 'room':
      return `#${a.room}`;
  }
}

export type ParsedAddress = { ok: true; address: Address } | { ok: false; reason: string; tooLarge?: { limit: number; actual: number } };

/** Why one part (account, session or room name) is refused, or null; its length is checked first,
 *  so an over-long name is too_large rather than unknown. */
function partProblem(part: string, what: string): Extract<ParsedAddress, { ok: false }> | null {
  const n = utf8Bytes(part);
  if (n > LIMITS.selectorBytes) return { ok: false, reason: `${what} is over the limit of ${LIMITS.selectorBytes} bytes`, tooLarge: { limit: LIMITS.selectorBytes, actual: n } };
  const p = selectorProblem(part);
  return p ? { ok: false, reason: `${what} ${p}` } : null;
}

/** Parse the compact form; returns the reason on failure. */
export function parseCompactAddress(s: string): ParsedAddress {
  if (s.startsWith('#')) {
    const room = s.slice(1);
    return partProblem(room, 'room name') ?? { ok: true, address: { kind: 'room', room } };
  }
  const slash = s.indexOf('/');
  if (slash === -1) return partProblem(s, 'account id') ?? { ok: true, address: { kind: 'direct', participant: s } };
  const participant = s.slice(0, slash);
  const session = s.slice(slash + 1);
  return partProblem(participant, 'account id') ?? partProblem(session, 'session') ?? { ok: true, address: { kind: 'session', participant, session } };
}
