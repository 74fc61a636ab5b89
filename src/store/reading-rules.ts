// The reading rules, written once for every store (memory, SQLite, PostgreSQL keep the data; these
// say what to do with it): which keys a reader reads, which counter an acknowledgement moves, how
// unread is counted from those counters, where a pending page starts and how an ack floor moves.
// Under which key a message is acknowledged is the contract's (ackKeyFor, types.ts).
//
// Counters: every mail key counts what was delivered to it (`total`) and what is not yet
// acknowledged under the key itself (`unacked`: direct and session mail, read by one owner). Room
// mail is acknowledged per member account, so each membership counts its own acks (`acked`) and its
// unread is total − acked. A rejoining member keeps the acks it made before (counted at the join).
import { ackKeyFor, readKeys, type AckItem, type MailKey, type PageQuery, type ReaderScope } from './types.js';

export const isRoomKey = (key: MailKey): boolean => key.startsWith('r:');
/** The room of a room key (`r:<room>`). */
export const roomOfKey = (key: MailKey): string => key.slice(2);

/** Every key the scope reads, each once. */
export const scopeKeys = (scope: ReaderScope): MailKey[] => [...new Set(readKeys(scope))];

/** What a fresh acknowledgement moves: the key's own unacked counter when the message is
 *  acknowledged under the key it was delivered to; the member's acked count for room mail; nothing
 *  otherwise (a non-member's ack of room mail matches no membership and changes no counter). */
export type AckCounter = { kind: 'mailbox'; key: MailKey } | { kind: 'member'; room: string } | null;

export function ackCounter(scope: ReaderScope, item: AckItem): AckCounter {
  if (ackKeyFor(scope, item.toKey) === item.toKey) return { kind: 'mailbox', key: item.toKey };
  if (isRoomKey(item.toKey)) return { kind: 'member', room: roomOfKey(item.toKey) };
  return null;
}

/** What a set of fresh acknowledgements changes, summed, each list in key order (stores that lock
 *  rows take them in this order, so two acks never wait on each other in a cycle). */
export interface AckTally {
  /** mail key → how much its unacked counter goes down */
  mailboxes: [key: MailKey, n: number][];
  /** room → how much the reader account's acked count goes up */
  members: [room: string, n: number][];
  /** (ack key, mail key) pairs whose ack floor may move */
  floors: [ackKey: MailKey, toKey: MailKey][];
}

const byKey = <T extends [string, unknown]>(a: T, b: T): number => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);

export function tallyAcks(scope: ReaderScope, fresh: readonly AckItem[]): AckTally {
  const mailboxes = new Map<MailKey, number>();
  const members = new Map<string, number>();
  const floors = new Map<string, [MailKey, MailKey]>();
  for (const item of fresh) {
    const c = ackCounter(scope, item);
    if (c?.kind === 'mailbox') mailboxes.set(c.key, (mailboxes.get(c.key) ?? 0) + 1);
    else if (c?.kind === 'member') members.set(c.room, (members.get(c.room) ?? 0) + 1);
    const ackKey = ackKeyFor(scope, item.toKey);
    floors.set(`${ackKey}\n${item.toKey}`, [ackKey, item.toKey]);
  }
  return {
    mailboxes: [...mailboxes].sort(byKey),
    members: [...members].sort(byKey),
    floors: [...floors.values()].sort((a, b) => byKey(a, b) || byKey([a[1], 0], [b[1], 0])),
  };
}

/** What unread sums, from the counters: each of `mailboxes`' unacked count, and for each of
 *  `rooms` the room key's total less the reader account's acked count. */
export function unreadTerms(scope: ReaderScope): { mailboxes: MailKey[]; rooms: MailKey[] } {
  const keys = scopeKeys(scope);
  return { mailboxes: keys.filter((k) => !isRoomKey(k)), rooms: keys.filter(isRoomKey) };
}

export interface UnreadCounters {
  unacked(key: MailKey): number;
  total(key: MailKey): number;
  memberAcked(room: string): number;
}

/** Unread for a store that reads its counters one at a time. */
export function countUnread(scope: ReaderScope, c: UnreadCounters): number {
  return sumUnread(unreadTerms(scope), c);
}

/** The sum of unreadTerms' terms (a store that has the terms already, e.g. for many readers). */
export function sumUnread({ mailboxes, rooms }: { mailboxes: MailKey[]; rooms: MailKey[] }, c: UnreadCounters): number {
  let n = 0;
  for (const key of mailboxes) n += c.unacked(key);
  for (const key of rooms) n += c.total(key) - c.memberAcked(roomOfKey(key));
  return n;
}

/** The exclusive lower seq bound of one key's page: the cursor, and for a pending page also the
 *  key's ack floor (every message at or below it is acknowledged). */
export const pageLowerBound = (q: PageQuery, floor: number): number => Math.max(q.after ?? 0, q.pendingOnly ? floor : 0);

/** How many messages above a floor one step of advanceFloor reads. */
export const FLOOR_STEP = 64;

/** One step of moving an ack floor past the acknowledged run above it: `next` are the first
 *  FLOOR_STEP messages of the key above `floor`, in seq order, each with whether the ack key
 *  acknowledged it. Amortised over the acks made, since each message is passed once. */
export function floorStep(floor: number, next: readonly { seq: number; acked: boolean }[]): { floor: number; done: boolean } {
  const gap = next.findIndex((r) => !r.acked);
  const upTo = gap < 0 ? next.length : gap;
  const moved = upTo > 0 ? (next[upTo - 1] as { seq: number }).seq : floor;
  return { floor: moved, done: gap >= 0 || next.length === 0 };
}
