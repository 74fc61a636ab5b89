// What a retention pass may delete, written once for every store (pruneMail, types.ts): each store
// gathers the facts (the candidates, their acks, the room's members, the threads open work holds)
// and these rules decide. A message goes only when it was handled and nothing still needs it.
import { TERMINAL_STATES } from '../wire/task-states.js';
import { keyOfAccount, keyOfRoom, lineageKeyPrefix, type MailKey, type MailPruneQuery } from './types.js';

/** The task states after which a task's thread holds nothing open. */
export const TERMINAL: readonly string[] = TERMINAL_STATES;

/** A message a pass looks at. */
export interface PruneCandidate {
  seq: number;
  id: string;
  toKey: MailKey;
  threadId: string;
}

/** The keys of the target: one exact key, and for an account the range of its session keys. */
export function targetKeys(q: MailPruneQuery): { exact: MailKey; sessionPrefix: string | null } {
  if ('room' in q.target) return { exact: keyOfRoom(q.target.room), sessionPrefix: null };
  return { exact: keyOfAccount(q.target.account), sessionPrefix: lineageKeyPrefix(q.target.account) };
}

/** The first `limit` of candidate lists each in seq order (one per key range), and where the next
 *  call starts: after the last one taken, or null when every list was shorter than the limit. */
export function firstCandidates(lists: PruneCandidate[][], limit: number): { taken: PruneCandidate[]; next: number | null } {
  const all = lists.flat().sort((a, b) => a.seq - b.seq);
  const taken = all.slice(0, limit);
  const more = lists.some((l) => l.length >= limit) || all.length > limit;
  return { taken, next: more && taken.length > 0 ? (taken[taken.length - 1] as PruneCandidate).seq : null };
}

export interface PruneFacts {
  /** Threads of a task not yet terminal or of a pending approval. */
  heldThreads: ReadonlySet<string>;
  /** Whether the message is acknowledged under this ack key. */
  acked(ackKey: MailKey, seq: number): boolean;
  /** The room's current members (room targets only). */
  members: readonly string[];
}

/** Whether the candidate may go: handled by whoever reads it, and no open work's thread.
 *  Direct and session mail are acknowledged under their own key (ackKeyFor); room mail under each
 *  member's account key, so it goes only once every current member acknowledged it. A room
 *  without members keeps its mail: nobody has handled it. */
export function mayDelete(c: PruneCandidate, f: PruneFacts): boolean {
  if (f.heldThreads.has(c.threadId)) return false;
  if (!c.toKey.startsWith('r:')) return f.acked(c.toKey, c.seq);
  return f.members.length > 0 && f.members.every((m) => f.acked(keyOfAccount(m), c.seq));
}
