// Addresses: exactly three kinds, in a tagged JSON form and a compact string form.
//   direct  {"kind":"direct","participant":"claude"}                 claude
//   session {"kind":"session","participant":"claude","session":"s-…"} claude/s-…
//   room    {"kind":"room","room":"reviewers"}                         #reviewers
//   team    {"kind":"team","team":"reviewers"}                         team:reviewers
//   leader  {"kind":"leader","team":"reviewers"}                       leader:reviewers
//   email   {"kind":"email","email":"bob@example.com"}                 email:bob@example.com
// team: and leader: are expanded at send time (engine/teams.ts) into one copy per other member
// (or leader) of the team; a copy keeps `team:NAME` as the address it was written to. Account ids
// never contain ':', so neither form can be an account. email: is a real e-mail address outside
// (issue #19): mail to it leaves through the relay, mail from it came in through the SMTP door.
import { LIMITS } from './limits.js';
import { selectorProblem, utf8Bytes } from './text.js';

export type Address =
  | { kind: 'direct'; participant: string }
  | { kind: 'session'; participant: string; session: string }
  | { kind: 'room'; room: string }
  | { kind: 'team'; team: string }
  | { kind: 'leader'; team: string }
  | { kind: 'email'; email: string };

/** The addresses that name one mailbox here (an account, a session or a room), not a team's
 *  roster and not an e-mail address outside. */
export type SingleAddress = Exclude<Address, { kind: 'team' | 'leader' | 'email' }>;

export const isTeamAddress = (a: Address): a is Extract<Address, { kind: 'team' | 'leader' }> => a.kind === 'team' || a.kind === 'leader';

export function formatAddress(a: Address): string {
  switch (a.kind) {
    case 'direct':
      return a.participant;
    case 'session':
      return `${a.participant}/${a.session}`;
    case 'room':
      return `#${a.room}`;
    case 'team':
      return `team:${a.team}`;
    case 'leader':
      return `leader:${a.team}`;
    case 'email':
      return `email:${a.email}`;
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
  if (s.startsWith('email:')) {
    const e = normalEmail(s.slice(6));
    return typeof e === 'string' ? { ok: true, address: { kind: 'email', email: e } } : e;
  }
  for (const kind of ['team', 'leader'] as const) {
    if (!s.startsWith(`${kind}:`)) continue;
    const team = s.slice(kind.length + 1);
    return partProblem(team, 'team name') ?? { ok: true, address: { kind, team } };
  }
  const slash = s.indexOf('/');
  if (slash === -1) return partProblem(s, 'account id') ?? { ok: true, address: { kind: 'direct', participant: s } };
  const participant = s.slice(0, slash);
  const session = s.slice(slash + 1);
  return partProblem(participant, 'account id') ?? partProblem(session, 'session') ?? { ok: true, address: { kind: 'session', participant, session } };
}

/** The longest address SMTP carries (RFC 5321: a path of 256 octets, less its angle brackets). */
export const EMAIL_MAX_BYTES = 254;

/** An e-mail address as mail4agent keeps it: lower case, a dot-atom local part (RFC 5322 without
 *  quoted strings, which nobody uses and which would let a space or a quote into an address a
 *  model reads), a host name of letters, digits and hyphens. The reason when it is not one. */
export function normalEmail(raw: string): string | Extract<ParsedAddress, { ok: false }> {
  const n = utf8Bytes(raw);
  if (n > EMAIL_MAX_BYTES) return { ok: false, reason: `e-mail address is over the limit of ${EMAIL_MAX_BYTES} bytes`, tooLarge: { limit: EMAIL_MAX_BYTES, actual: n } };
  const s = raw.toLowerCase();
  const at = s.lastIndexOf('@');
  const local = s.slice(0, at);
  const domain = s.slice(at + 1);
  if (at < 1 || local.length > 64 || !LOCAL_PART.test(local))
    return { ok: false, reason: "e-mail address: the part before @ must be letters, digits and !#$%&'*+=?^_`{}~.- (no quotes, spaces or leading, trailing or double dots)" };
  if (!DOMAIN.test(domain)) return { ok: false, reason: 'e-mail address: the part after @ must be a host name such as example.com' };
  return s;
}

// Without / and |, which RFC 5322 allows and nobody uses: a printed address and a record id split on them.
const ATOM = "[a-z0-9!#$%&'*+=?^_`{}~-]+";
const LOCAL_PART = new RegExp(`^${ATOM}(?:\\.${ATOM})*$`);
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
