// Addresses: exactly three kinds, in a tagged JSON form and a compact string form.
//   direct  {"kind":"direct","participant":"claude"}                 claude
//   session {"kind":"session","participant":"claude","session":"s-…"} claude/s-…
//   room    {"kind":"room","room":"reviewers"}                         #reviewers
import { selectorProblem } from './text.js';

export type Address =
  | { kind: 'direct'; participant: string }
  | { kind: 'session'; participant: string; session: string }
  | { kind: 'room'; room: string };

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

/** Parse the compact form; returns the reason on failure. */
export function parseCompactAddress(s: string): { ok: true; address: Address } | { ok: false; reason: string } {
  if (s.startsWith('#')) {
    const room = s.slice(1);
    const p = selectorProblem(room);
    return p ? { ok: false, reason: `room name ${p}` } : { ok: true, address: { kind: 'room', room } };
  }
  const slash = s.indexOf('/');
  if (slash === -1) {
    const p = selectorProblem(s);
    return p ? { ok: false, reason: `account id ${p}` } : { ok: true, address: { kind: 'direct', participant: s } };
  }
  const participant = s.slice(0, slash);
  const session = s.slice(slash + 1);
  const p = selectorProblem(participant) ?? (selectorProblem(session) && `session ${selectorProblem(session)}`);
  return p ? { ok: false, reason: p } : { ok: true, address: { kind: 'session', participant, session } };
}
