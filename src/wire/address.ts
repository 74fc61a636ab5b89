// Addresses: exactly three kinds, in a tagged JSON form and a compact string form.
//   direct  {"kind":"direct","participant":"claude"}                 claude
//   session {"kind":"session","participant":"claude","session":"s-…"} claude/s-…
//   room    {"kind":"room","room":"reviewers"}                         #reviewers
//   team    {"kind":"team","team":"reviewers"}                         team:reviewers
//   leader  {"kind":"leader","team":"reviewers"}                       leader:reviewers
// team: and leader: are expanded at send time (engine/teams.ts) into one copy per other member
// (or leader) of the team; a copy keeps `team:NAME` as the address it was written to. Account ids
// never contain ':', so neither form can be an account.
import { LIMITS } from './limits.js';
import { selectorProblem, utf8Bytes } from './text.js';

export type Address =
  | { kind: 'direct'; participant: string }
  | { kind: 'session'; participant: string; session: string }
  | { kind: 'room'; room: string }
  | { kind: 'team'; team: string }
  | { kind: 'leader'; team: string };

/** The addresses that name one recipient (an account, a session or a room), not a team's roster. */
export type SingleAddress = Exclude<Address, { kind: 'team' | 'leader' }>;

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
