// Reads for many readers at once: a commit to a room wakes its parked members together
// (engine/wake-batch.ts), and each answer needs the reader's unread count and ack times, and the
// send rings the members' listeners. Each statement joins a JSON list of keys against its table's
// primary key, so a batch costs a few statements whatever the number of readers, and the answers
// are exactly what unread, ackedAt and getListener give one at a time (reading-rules.ts counts).
import type Database from 'better-sqlite3';
import { ackKeyFor, type ReaderFacts, type ReaderFactsQuery } from '../types.js';
import { roomOfKey, sumUnread, unreadTerms } from '../reading-rules.js';

/** The ack times of a reader none of whose messages is acknowledged. */
const NONE: ReadonlyMap<number, number> = new Map();

/** Pushes `v` onto the list of `k` (the list made on first use). */
function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const l = m.get(k);
  if (l) l.push(v);
  else m.set(k, [v]);
}

export class BatchReads {
  private readonly counts: Database.Statement<[string], { key: string; total: number; unacked: number }>;
  /** (room, accounts): one room's members among the accounts. */
  private readonly members: Database.Statement<[string, string], { account: string; acked: number }>;
  /** (seq, ack keys): one message's acks under the keys. */
  private readonly acks: Database.Statement<[number, string], { ack_key: string; acked_at: number }>;
  private readonly listeners: Database.Statement<[string], { account: string; url: string }>;

  constructor(db: Database.Database) {
    this.counts = db.prepare('SELECT c.to_key AS key, c.total AS total, c.unacked AS unacked FROM json_each(?) AS j CROSS JOIN mailbox_counts AS c ON c.to_key = j.value');
    this.members = db.prepare('SELECT account, acked FROM members WHERE room = ? AND account IN (SELECT value FROM json_each(?))');
    this.acks = db.prepare('SELECT ack_key, acked_at FROM acks WHERE seq = ? AND ack_key IN (SELECT value FROM json_each(?))');
    this.listeners = db.prepare('SELECT l.account AS account, l.url AS url FROM json_each(?) AS j CROSS JOIN listeners AS l ON l.account = j.value');
  }

  /** A batch touches few rooms and few messages: one statement per room and per message, each
   *  over every reader's key. */
  readerFacts(readers: readonly ReaderFactsQuery[]): ReaderFacts[] {
    const keys = new Set<string>();
    const byRoom = new Map<string, string[]>();
    const bySeq = new Map<number, string[]>();
    const terms = readers.map(({ scope, items }) => {
      const t = unreadTerms(scope);
      for (const k of t.mailboxes) keys.add(k);
      for (const k of t.rooms) {
        keys.add(k);
        push(byRoom, roomOfKey(k), scope.account);
      }
      for (const it of items) push(bySeq, it.seq, ackKeyFor(scope, it.toKey));
      return t;
    });
    const counts = new Map<string, { total: number; unacked: number }>();
    if (keys.size > 0) for (const r of this.counts.all(JSON.stringify([...keys]))) counts.set(r.key, r);
    // room → account → acked; seq → ack key → time
    const memberAcked = new Map<string, Map<string, number>>();
    for (const [room, accounts] of byRoom) memberAcked.set(room, new Map(this.members.all(room, JSON.stringify(accounts)).map((r) => [r.account, r.acked])));
    const ackedAt = new Map<number, Map<string, number>>();
    for (const [seq, ackKeys] of bySeq) {
      const found = this.acks.all(seq, JSON.stringify(ackKeys));
      if (found.length > 0) ackedAt.set(seq, new Map(found.map((r) => [r.ack_key, r.acked_at])));
    }
    return readers.map(({ scope, items }, i) => {
      // Most new mail is not acknowledged yet: those readers share one empty map (never written).
      let acked: Map<number, number> | null = null;
      for (const it of items) {
        const at = ackedAt.get(it.seq)?.get(ackKeyFor(scope, it.toKey));
        if (at !== undefined) (acked ??= new Map()).set(it.seq, at);
      }
      const unread = sumUnread(terms[i] as ReturnType<typeof unreadTerms>, {
        unacked: (key) => counts.get(key)?.unacked ?? 0,
        total: (key) => counts.get(key)?.total ?? 0,
        memberAcked: (room) => memberAcked.get(room)?.get(scope.account) ?? 0,
      });
      return { unread, acked: acked ?? NONE };
    });
  }

  listenersOf(accounts: readonly string[]): Map<string, string> {
    const out = new Map<string, string>();
    if (accounts.length > 0) for (const r of this.listeners.all(JSON.stringify([...new Set(accounts)]))) out.set(r.account, r.url);
    return out;
  }
}
