// Retention in the PostgreSQL store (pruneMail, pruneRecords: types.ts); the SQLite store's
// retention.ts in PostgreSQL, under the same rules (retention-rules.ts). A room's pass holds the
// registry lock, as a join or leave does, so the members it decided on stay the members whose
// acked counts it lowers, and a join never counts an ack this pass deletes.
import { firstCandidates, mayDelete, targetKeys, TERMINAL, type PruneCandidate } from '../retention-rules.js';
import { keyOfAccount, type MailPruneQuery, type MailPruneResult } from '../types.js';
import { prefixUpperBound } from '../sqlite/prefix.js';
import { lockRegistry } from './locks.js';
import { pgArray, type Sql, type Tx } from './pg-sql.js';

interface CandidateRow {
  seq: number;
  id: string;
  to_key: string;
  thread_id: string;
}

const toCandidate = (r: CandidateRow): PruneCandidate => ({ seq: Number(r.seq), id: r.id, toKey: r.to_key, threadId: r.thread_id });

async function candidates(tx: Tx, q: MailPruneQuery): Promise<PruneCandidate[][]> {
  const { exact, sessionPrefix } = targetKeys(q);
  const lists = [
    (
      await tx<CandidateRow[]>`SELECT seq, id, to_key, thread_id FROM messages
      WHERE to_key = ${exact} AND seq > ${q.after} AND created_at < ${q.before} ORDER BY seq LIMIT ${q.limit}`
    ).map(toCandidate),
  ];
  if (sessionPrefix !== null) {
    const hi = prefixUpperBound(sessionPrefix) as string;
    lists.push(
      (
        await tx<CandidateRow[]>`SELECT seq, id, to_key, thread_id FROM messages
        WHERE to_key >= ${sessionPrefix} AND to_key < ${hi} AND seq > ${q.after} AND created_at < ${q.before} ORDER BY seq LIMIT ${q.limit}`
      ).map(toCandidate),
    );
  }
  return lists;
}

export async function pruneMail(sql: Sql, q: MailPruneQuery): Promise<MailPruneResult> {
  return sql.begin(async (tx) => {
    const room = 'room' in q.target ? q.target.room : null;
    if (room !== null) await lockRegistry(tx);
    const { taken, next } = firstCandidates(await candidates(tx, q), q.limit);
    if (taken.length === 0) return { deleted: 0, next };
    const seqs = taken.map((c) => c.seq);
    const threads = [...new Set(taken.map((c) => c.threadId))];
    const held = await tx<{ thread_id: string }[]>`SELECT thread_id FROM tasks WHERE thread_id = ANY(${pgArray(threads)}::text[])
        AND state <> ALL(${pgArray(TERMINAL)}::text[])
      UNION SELECT thread_id FROM approvals WHERE thread_id = ANY(${pgArray(threads)}::text[]) AND state = 'pending'`;
    const members = room === null ? [] : (await tx<{ account: string }[]>`SELECT account FROM members WHERE room = ${room}`).map((r) => r.account);
    const ackKeys = room === null ? [...new Set(taken.map((c) => c.toKey))] : members.map(keyOfAccount);
    const acks = await tx<{ ack_key: string; seq: number }[]>`SELECT ack_key, seq FROM acks
      WHERE ack_key = ANY(${pgArray(ackKeys)}::text[]) AND seq = ANY(${pgArray(seqs)}::bigint[])`;
    const acked = new Set(acks.map((a) => `${a.ack_key}\n${Number(a.seq)}`));
    const heldThreads = new Set(held.map((r) => r.thread_id));
    const chosen = taken.filter((c) => mayDelete(c, { heldThreads, members, acked: (k, seq) => acked.has(`${k}\n${seq}`) }));
    if (chosen.length === 0) return { deleted: 0, next };
    // Lock them in seq order first, as an ack does (mail.ts): an ack in flight commits its row
    // before this, so the acks deleted below include it, and a later ack finds the message gone.
    // One another daemon's run deleted meanwhile is not locked, nor counted twice.
    const locked = await tx<{ seq: number }[]>`SELECT seq FROM messages
      WHERE seq = ANY(${pgArray(chosen.map((c) => c.seq))}::bigint[]) ORDER BY seq FOR UPDATE`;
    const isLocked = new Set(locked.map((r) => Number(r.seq)));
    const gone = chosen.filter((c) => isLocked.has(c.seq));
    if (gone.length === 0) return { deleted: 0, next };
    const goneSeqs = gone.map((c) => c.seq);
    const ids = gone.map((c) => c.id);
    await tx`DELETE FROM messages WHERE seq = ANY(${pgArray(goneSeqs)}::bigint[])`;
    if (q.byMessage.length > 0) {
      // '}' follows '|': each message's records are one range of the (kind, id) key.
      await tx`DELETE FROM records AS r USING unnest(${pgArray(ids)}::text[]) AS g(id)
        WHERE r.kind = ANY(${pgArray(q.byMessage)}::text[])
          AND r.id >= (g.id || '|') COLLATE "C" AND r.id < (g.id || '}') COLLATE "C"`;
    }
    if (room === null) {
      // Direct and session mail is acknowledged under its own key only.
      await tx`DELETE FROM acks WHERE ack_key = ANY(${pgArray(ackKeys)}::text[]) AND seq = ANY(${pgArray(goneSeqs)}::bigint[])`;
    } else {
      // Every account's acks of it (a former member's too: a rejoin counts its acks again); each
      // current member's acked count of the room goes down by its acks deleted.
      const deletedAcks = await tx<{ ack_key: string; n: number }[]>`WITH d AS (
          DELETE FROM acks AS a USING accounts AS x
          WHERE a.ack_key = ('a:' || x.id) COLLATE "C" AND a.seq = ANY(${pgArray(goneSeqs)}::bigint[])
          RETURNING a.ack_key)
        SELECT ack_key, count(*)::int AS n FROM d GROUP BY ack_key ORDER BY ack_key`;
      const isMember = new Set(members);
      for (const d of deletedAcks) {
        const account = d.ack_key.slice(2);
        if (isMember.has(account)) await tx`UPDATE members SET acked = acked - ${d.n} WHERE room = ${room} AND account = ${account}`;
      }
    }
    const totals = new Map<string, number>();
    for (const c of gone) totals.set(c.toKey, (totals.get(c.toKey) ?? 0) + 1);
    for (const [key, n] of [...totals].sort((a, b) => (a[0] < b[0] ? -1 : 1))) await tx`UPDATE mailbox_counts SET total = total - ${n} WHERE to_key = ${key}`;
    return { deleted: gone.length, next };
  });
}

export async function pruneRecords(sql: Sql, kind: string, before: number, limit: number): Promise<number> {
  const r = await sql`DELETE FROM records WHERE kind = ${kind} AND id IN (
    SELECT id FROM records WHERE kind = ${kind} AND updated_at < ${before} LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;
  return r.count;
}
