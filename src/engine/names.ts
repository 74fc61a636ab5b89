// Friendly session names (from omp-mail): a slug per lineage from its working directory's
// basename, aliases the session chooses, and unique id prefixes. Resolution order: exact id,
// alias, slug, prefix. Anything ambiguous or unknown is refused with the candidates listed.
import { basename } from 'node:path';
import { MailError } from '../wire/errors.js';
import { selectorProblem } from '../wire/text.js';
import type { SessionRecord, Store } from '../store/types.js';

const FULL_ID = /^s-[0-9a-f]{64}$/;
const PREFIX = /^(?:s-)?([0-9a-f]{6,63})$/;
const MAX_CANDIDATES = 20;

/** A slug base from a working directory: selector characters only, short, never empty. */
export function slugFromCwd(cwd: string | undefined): string {
  const raw = cwd ? basename(cwd) : '';
  let s = raw
    .toLowerCase()
    .replace(/[^a-z0-9._@+-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, 48);
  // Names that look like session ids or prefixes would shadow them.
  if (!s || PREFIX.test(s) || s.startsWith('s-')) s = s ? `dir-${s}`.slice(0, 48) : 'session';
  return s;
}

export function checkAlias(name: string): void {
  const p = selectorProblem(name);
  if (p) throw new MailError('malformed', `alias: ${p}`, { field: 'alias', reason: p });
  if (FULL_ID.test(name) || PREFIX.test(name) || name.startsWith('s-'))
    throw new MailError('malformed', 'alias: must not look like a session id (s-…, or six or more hex digits)', { field: 'alias', reason: 'looks like a session id' });
  if (name.length > 64) throw new MailError('too_large', 'alias is over 64 bytes', { field: 'alias', limit: 64, actual: name.length });
}

/** The session `name` denotes within `account`, or a named refusal listing the candidates. */
export async function findSession(store: Store, account: string, name: string, isLive: (s: SessionRecord) => boolean): Promise<SessionRecord> {
  if (FULL_ID.test(name)) {
    const s = await store.getSession(account, name);
    if (s) return s;
  } else {
    const named = await store.resolveName(account, name);
    if (named) {
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
