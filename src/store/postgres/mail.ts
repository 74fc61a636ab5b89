// The mail of the PostgreSQL store once it is committed: reading it (pages, threads, woken keys),
// acknowledging it, and the counters and ack floors that keep unread and pending pages cheap at
// any mailbox size. Appends are append-batch.ts.
import {
  ackKeyFor,
  type AckItem,
  type AckResult,
  type MailKey,
  type PagedMessage,
  type PageQuery,
  type ReaderFacts,
  type ReaderFactsQuery,
  type ReaderScope,
  type StoredMessage,
} from '../types.js';
import { toMessage, toPaged, type MessageRow, type PagedRow } from '../sqlite/rows.js';
import { FLOOR_STEP, floorStep, scopeKeys, tallyAcks, unreadTerms } from '../reading-rules.js';
import { memberLock } from './locks.js';
import { pgArray, type Sql, type Tx } from './pg-sql.js';

export class PgMail {
  constructor(private readonly sql: Sql) {}

  async getMessage(id: string): Promise<StoredMessage | null> {
    const [r] = await this.sql<MessageRow[]>`SELECT * FROM messages WHERE id = ${id}`;
    return r ? toMessage(r) : null;
  }

  async getThread(threadId: string): Promise<StoredMessage[]> {
    return (await this.sql<MessageRow[]>`SELECT * FROM messages WHERE thread_id = ${threadId} ORDER BY seq`).map(toMessage);
  }

  /** The committed head: every seq up to it is committed and visible (append-batch.ts). */
  async headSeq(): Promise<number> {
    const [r] = await this.sql<{ seq: number }[]>`SELECT seq FROM message_head WHERE one = 1`;
    return r?.seq ?? 0;
  }

  async externalCount(key: MailKey, limit: number): Promise<number> {
    const [r] = await this.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM (SELECT 1 FROM messages WHERE to_key = ${key} AND from_kind = 'external' LIMIT ${limit}) AS x`;
    return r?.n ?? 0;
  }

  async messagesAfter(key: MailKey, after: number, limit: number): Promise<StoredMessage[]> {
    if (limit <= 0) return [];
    const rows = await this.sql<MessageRow[]>`SELECT * FROM messages WHERE to_key = ${key} AND seq > ${after} ORDER BY seq LIMIT ${limit}`;
    return rows.map(toMessage);
  }

  /** Like the SQLite page query: one index range scan per key, each stopping at `limit`, merged.
   *  Each key's lower bound is pageLowerBound's (reading-rules.ts), with the floor read in the query. */
  async page(scope: ReaderScope, q: PageQuery): Promise<PagedMessage[]> {
    if (q.limit <= 0) return [];
    const keys = scopeKeys(scope);
    const params: (string | number)[] = [];
    const p = (v: string | number): string => {
      params.push(v);
      return `$${params.length}`;
    };
    const parts = keys.map((key) => {
      const ackKey = p(ackKeyFor(scope, key));
      const toKey = p(key);
      let lower = `${p(q.after ?? 0)}::bigint`;
      if (q.pendingOnly) {
        lower = `GREATEST(${lower}, COALESCE((SELECT f.floor FROM ack_floors AS f WHERE f.ack_key = ${ackKey} AND f.to_key = ${toKey}), 0))`;
      }
      return (
        `SELECT * FROM (SELECT m.seq, a.acked_at FROM messages AS m LEFT JOIN acks AS a ON a.ack_key = ${ackKey} AND a.seq = m.seq` +
        ` WHERE m.to_key = ${toKey} AND m.seq > ${lower}` +
        (q.threadId !== null ? ` AND m.thread_id = ${p(q.threadId)}` : '') +
        (q.pendingOnly ? ' AND a.seq IS NULL' : '') +
        ` ORDER BY m.seq LIMIT ${p(q.limit)}::bigint) AS k${params.length}`
      );
    });
    const text = `SELECT m.*, p.acked_at FROM (${parts.join(' UNION ALL ')} ORDER BY seq LIMIT ${p(q.limit)}::bigint) AS p` + ' JOIN messages AS m ON m.seq = p.seq ORDER BY p.seq';
    return (await this.sql.unsafe<PagedRow[]>(text, params, { prepare: true })).map(toPaged);
  }

  async ack(scope: ReaderScope, items: AckItem[], at: number): Promise<AckResult[]> {
    if (items.length === 0) return [];
    return this.sql.begin(async (tx) => {
      const results = new Array<AckResult>(items.length);
      // In (ack key, seq) order, so two acks of overlapping items never wait on each other in a cycle.
      const order = items
        .map((item, i) => ({ item, i, ackKey: ackKeyFor(scope, item.toKey) }))
        .sort((a, b) => (a.ackKey < b.ackKey ? -1 : a.ackKey > b.ackKey ? 1 : a.item.seq - b.item.seq));
      const fresh: AckItem[] = [];
      // Each insert takes its message's key-share lock, or finds it gone: retention locks what it
      // deletes FOR UPDATE first, so an ack never writes a row for a message deleted meanwhile (it
      // waits, then finds nothing). Several messages are locked first in seq order, the pass's
      // order, so the two never wait on each other in a cycle.
      const seqs = [...new Set(items.map((it) => it.seq))];
      if (seqs.length > 1) await tx`SELECT 1 FROM messages WHERE seq = ANY(${pgArray(seqs)}::bigint[]) ORDER BY seq FOR KEY SHARE`;
      for (const { item, i, ackKey } of order) {
        const ins = await tx<{ acked_at: number }[]>`INSERT INTO acks (ack_key, seq, to_key, acked_at)
          SELECT ${ackKey}::text, ${item.seq}::bigint, ${item.toKey}::text, ${at}::bigint FROM messages WHERE seq = ${item.seq} FOR KEY SHARE
          ON CONFLICT (ack_key, seq) DO NOTHING RETURNING acked_at`;
        if (ins.length === 0) {
          // An earlier ack stands, or retention deleted the message (with its acks) since the caller
          // looked it up: it was acknowledged, and no row or counter changes.
          const [prior] = await tx<{ acked_at: number }[]>`SELECT acked_at FROM acks WHERE ack_key = ${ackKey} AND seq = ${item.seq}`;
          results[i] = { seq: item.seq, ackedAt: prior?.acked_at ?? at, fresh: false };
          continue;
        }
        fresh.push(item);
        results[i] = { seq: item.seq, ackedAt: at, fresh: true };
      }
      // Counters and floors in key order (tallyAcks), so overlapping acks never wait in a cycle.
      const t = tallyAcks(scope, fresh);
      for (const [key, n] of t.mailboxes) await tx`UPDATE mailbox_counts SET unacked = unacked - ${n} WHERE to_key = ${key}`;
      for (const [room, n] of t.members) {
        await memberLock(tx, room, scope.account, true);
        await tx`UPDATE members SET acked = acked + ${n} WHERE room = ${room} AND account = ${scope.account}`;
      }
      for (const [ackKey, toKey] of t.floors) await this.advanceFloor(tx, ackKey, toKey);
      return results;
    });
  }

  /** Moves the ack floor past every consecutive acked message (floorStep). */
  private async advanceFloor(tx: Tx, ackKey: string, toKey: string): Promise<void> {
    const [f] = await tx<{ floor: number }[]>`SELECT floor FROM ack_floors WHERE ack_key = ${ackKey} AND to_key = ${toKey} FOR UPDATE`;
    const start = f?.floor ?? 0;
    let floor = start;
    for (let done = false; !done;) {
      const rows = await tx<{ seq: number; acked: boolean }[]>`SELECT m.seq, (a.seq IS NOT NULL) AS acked
        FROM messages AS m LEFT JOIN acks AS a ON a.ack_key = ${ackKey} AND a.seq = m.seq
        WHERE m.to_key = ${toKey} AND m.seq > ${floor} ORDER BY m.seq LIMIT ${FLOOR_STEP}`;
      ({ floor, done } = floorStep(floor, rows));
    }
    if (floor !== start) {
      await tx`INSERT INTO ack_floors (ack_key, to_key, floor) VALUES (${ackKey}, ${toKey}, ${floor})
        ON CONFLICT (ack_key, to_key) DO UPDATE SET floor = GREATEST(ack_floors.floor, excluded.floor)`;
    }
  }

  async unread(scope: ReaderScope): Promise<number> {
    const { mailboxes: direct, rooms } = unreadTerms(scope);
    const [r] = await this.sql<{ n: number }[]>`SELECT
        COALESCE((SELECT sum(unacked) FROM mailbox_counts WHERE to_key = ANY(${pgArray(direct)}::text[])), 0)::bigint
      + COALESCE((SELECT sum(COALESCE(c.total, 0) - COALESCE(mb.acked, 0))
          FROM unnest(${pgArray(rooms)}::text[]) AS k(key)
          LEFT JOIN mailbox_counts AS c ON c.to_key = k.key
          LEFT JOIN members AS mb ON mb.room = substr(k.key, 3) AND mb.account = ${scope.account}), 0)::bigint AS n`;
    return r?.n ?? 0;
  }

  async ackedAt(scope: ReaderScope, items: AckItem[]): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    if (items.length === 0) return out;
    const rows = await this.sql<{ seq: number; acked_at: number }[]>`SELECT a.seq, a.acked_at
      FROM unnest(${pgArray(items.map((it) => ackKeyFor(scope, it.toKey)))}::text[], ${pgArray(items.map((it) => it.seq))}::bigint[]) AS x(k, s)
      JOIN acks AS a ON a.ack_key = x.k AND a.seq = x.s`;
    for (const r of rows) out.set(r.seq, r.acked_at);
    return out;
  }

  /** unread and ackedAt of many readers (a woken room's members), two statements side by side
   *  whatever their number: the same sums and joins as unread and ackedAt, per reader index. */
  async readerFacts(readers: readonly ReaderFactsQuery[]): Promise<ReaderFacts[]> {
    const out = readers.map(() => ({ unread: 0, acked: new Map<number, number>() }));
    const d = { i: [] as number[], key: [] as string[] };
    const r = { i: [] as number[], key: [] as string[], account: [] as string[] };
    const a = { i: [] as number[], key: [] as string[], seq: [] as number[] };
    readers.forEach(({ scope, items }, i) => {
      const { mailboxes, rooms } = unreadTerms(scope);
      for (const k of mailboxes) {
        d.i.push(i);
        d.key.push(k);
      }
      for (const k of rooms) {
        r.i.push(i);
        r.key.push(k);
        r.account.push(scope.account);
      }
      for (const it of items) {
        a.i.push(i);
        a.key.push(ackKeyFor(scope, it.toKey));
        a.seq.push(it.seq);
      }
    });
    if (readers.length === 0) return out;
    const [counts, acks] = await Promise.all([
      this.sql<{ i: number; n: number }[]>`SELECT t.i, sum(t.n)::bigint AS n FROM (
          SELECT x.i, COALESCE(c.unacked, 0) AS n FROM unnest(${pgArray(d.i)}::int[], ${pgArray(d.key)}::text[]) AS x(i, key)
            LEFT JOIN mailbox_counts AS c ON c.to_key = x.key
          UNION ALL
          SELECT y.i, COALESCE(c.total, 0) - COALESCE(mb.acked, 0) FROM unnest(${pgArray(r.i)}::int[], ${pgArray(r.key)}::text[], ${pgArray(r.account)}::text[]) AS y(i, key, account)
            LEFT JOIN mailbox_counts AS c ON c.to_key = y.key
            LEFT JOIN members AS mb ON mb.room = substr(y.key, 3) AND mb.account = y.account
        ) AS t GROUP BY t.i`,
      a.i.length === 0
        ? Promise.resolve([])
        : this.sql<{ i: number; seq: number; acked_at: number }[]>`SELECT x.i, a.seq, a.acked_at
            FROM unnest(${pgArray(a.i)}::int[], ${pgArray(a.key)}::text[], ${pgArray(a.seq)}::bigint[]) AS x(i, k, s)
            JOIN acks AS a ON a.ack_key = x.k AND a.seq = x.s`,
    ]);
    for (const c of counts) (out[c.i] as { unread: number }).unread = c.n;
    for (const x of acks) out[x.i]?.acked.set(x.seq, x.acked_at);
    return out;
  }
}
