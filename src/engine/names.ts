// Friendly session names (from omp-mail): a slug per lineage from its working directory's
// basename, aliases the session chooses, and unique id prefixes. Resolution order: exact id,
// alias or slug, prefix. Anything ambiguous or unknown is refused with the candidates listed.
// An alias is always written with a leading @ and a slug never starts with one, so a name a
// session chose can never take (or shadow) the name another session's directory gives it.
import { basename } from 'node:path';
import { MailError } from '../wire/errors.js';
import { selectorProblem } from '../wire/text.js';
import type { SessionRecord, Store } from '../store/types.js';

export const FULL_ID = /^s-[0-9a-f]{64}$/;
/** An id prefix as written in an address: six or more hex digits, with or without `s-`. */
export const PREFIX = /^(?:s-)?([0-9a-f]{6,63})$/;
const MAX_CANDIDATES = 20;
/** Marks an alias: `account/@name`. */
export const ALIAS_SIGIL = '@';

/** A slug base from a working directory: selector characters only, short, never empty. */
export function slugFromCwd(cwd: string | undefined): string {
  const raw = cwd ? basename(cwd) : '';
  let s = raw
    .toLowerCase()
    .replace(/[^a-z0-9._@+-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[-.@]+|[-.]+$/g, '')
    .slice(0, 48);
  // Names that look like session ids or prefixes would shadow them.
  if (!s || PREFIX.test(s) || s.startsWith('s-')) s = s ? `dir-${s}`.slice(0, 48) : 'session';
  return s;
}

/** The alias a session asks for, as stored and addressed: with its leading @ (added when the
 *  caller left it out). Refused when the rest is no name or looks like a session id. */
export function aliasName(asked: string, field: 'alias' | 'unalias' = 'alias'): string {
  const name = asked.startsWith(ALIAS_SIGIL) ? asked : `${ALIAS_SIGIL}${asked}`;
  const bare = name.slice(ALIAS_SIGIL.length);
  const p = bare === '' ? 'empty after @' : bare.startsWith(ALIAS_SIGIL) ? 'more than one leading @' : selectorProblem(bare);
  if (p) throw new MailError('malformed', `${field}: ${p}`, { field, reason: p });
  if (FULL_ID.test(bare) || PREFIX.test(bare) || bare.startsWith('s-'))
    throw new MailError('malformed', `${field}: must not look like a session id (s-…, or six or more hex digits)`, { field, reason: 'looks like a session id' });
  if (name.length > 64) throw new MailError('too_large', `${field} is over 64 bytes`, { field, limit: 64, actual: name.length });
  return name;
}

/** The session `name` denotes within `account`, or a named refusal listing the candidates. */
export async function findSession(store: Store, account: string, name: string, isLive: (s: SessionRecord) => boolean): Promise<SessionRecord> {
  if (FULL_ID.test(name)) {
    const s = await store.getSession(account, name);
    if (s) return s;
  } else {
    const named = await store.resolveName(account, name);
    // By its shape a name is an alias (@…) or a slug, never the other (rows kept from before the rule).
    if (named && named.kind === (name.startsWith(ALIAS_SIGIL) ? 'alias' : 'slug')) {
      const sessions = await store.lineageSessions(account, named.lineage);
      const pick = [...sessions].reverse().find(isLive) ?? sessions[sessions.length - 1];
      if (pick) return pick;
    }
    const m = PREFIX.exec(name);
    if (m?.[1]) {
      const found = await store.findSessionsByPrefix(account, `s-${m[1]}`, MAX_CANDIDATES);
      if (found.length === 1 && found[0]) return found[0];
      if (found.length > 1) {
        const candidates = found.map((s) => `${account}/${s.slug ?? s.id.slice(0, 14)}`);
        throw new MailError('unknown_session', `${account}/${name} is ambiguous: ${candidates.join(', ')}`, { participant: account, session: name, candidates });
      }
    }
  }
  const candidates = (await store.namesOf(account)).slice(0, MAX_CANDIDATES).map((n) => `${account}/${n.name}`);
  throw new MailError('unknown_session', `no session ${name} of ${account}${candidates.length ? `; known: ${candidates.join(', ')}` : ''}`, {
    participant: account,
    session: name,
    candidates,
  });
}
