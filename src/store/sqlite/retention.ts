// Retention in the SQLite store (pruneMail, pruneRecords: types.ts), inside the caller's write
// transaction. The rules are retention-rules.ts'; this gathers the facts and keeps the counters
// right: a deleted message leaves its key's total, and each account's ack of it leaves that
// account's acked count of the room, so total − acked (unread) is what it was.
import type Database from 'better-sqlite3';
import { firstCandidates, mayDelete, targetKeys, TERMINAL, type PruneCandidate } from '../retention-rules.js';
import { keyOfAccount, type MailPruneQuery, type MailPruneResult } from '../types.js';
import { prefixUpperBound } from './prefix.js';
import type { Stmt } from './statements.js';

interface CandidateRow {
  seq: number;
  id: string;
  to_key: string;
  thread_id: string;
}

export type RetentionStatements = ReturnType<typeof prepareRetention>;

const TERMINAL_SQL = TERMINAL.map((s) => `'${s}'`).join(', ');

export function prepareRetention(db: Database.Database) {
  const p = <R = unknown>(sql: string): Stmt<R> => db.prepare<unknown[], R>(sql);
  const cols = 'SELECT seq, id, to_key, thread_id FROM messages';
  return {
    ofKey: p<CandidateRow>(`${cols} WHERE to_key = ? AND seq > ? AND created_at < ? ORDER BY seq LIMIT ?`),
    ofRange: p<CandidateRow>(`${cols} WHERE to_key >= ? AND to_key < ? AND seq > ? AND created_at < ? ORDER BY seq LIMIT ?`),
    // Open work is rare next to mail: its threads are read once per call.
    heldThreads: p<{ thread_id: string }>(`SELECT thread_id FROM tasks WHERE state NOT IN (${TERMINAL_SQL}) UNION SELECT thread_id FROM approvals WHERE state = 'pending'`),
    acked: p<{ one: number }>('SELECT 1 AS one FROM acks WHERE ack_key = ? AND seq = ?'),
    // An ack checks this in its transaction: retention may have deleted the message meanwhile.
    exists: p<{ one: number }>('SELECT 1 AS one FROM messages WHERE seq = ?'),
    members: p<{ account: string }>('SELECT account FROM members WHERE room = ?'),
    accountIds: p<{ id: string }>('SELECT id FROM accounts'),
    deleteMessage: p('DELETE FROM messages WHERE seq = ?'),
    deleteAck: p('DELETE FROM acks WHERE ack_key = ? AND seq = ?'),
    // One account's acks of a batch of room mail: one range of its (ack_key, seq) key.
    deleteAcksIn: p('DELETE FROM acks WHERE ack_key = ? AND seq >= ? AND seq <= ? AND seq IN (SELECT value FROM json_each(?))'),
    lowerTotal: p('UPDATE mailbox_counts SET total = total - ? WHERE to_key = ?'),
    lowerMemberAcked: p('UPDATE members SET acked = acked - ? WHERE room = ? AND account = ?'),
    deleteRecords: p('DELETE FROM records WHERE kind = ? AND id >= ? AND id < ?'),
    pruneRecords: p('DELETE FROM records WHERE kind = ? AND id IN (SELECT id FROM records WHERE kind = ? AND updated_at < ? LIMIT ?)'),
  };
}

const toCandidate = (r: CandidateRow): PruneCandidate => ({ seq: r.seq, id: r.id, toKey: r.to_key, threadId: r.thread_id });

export function pruneMailIn(st: RetentionStatements, q: MailPruneQuery): MailPruneResult {
  const { exact, sessionPrefix } = targetKeys(q);
  const lists = [st.ofKey.all(exact, q.after, q.before, q.limit).map(toCandidate)];
  if (sessionPrefix !== null) lists.push(st.ofRange.all(sessionPrefix, prefixUpperBound(sessionPrefix), q.after, q.before, q.limit).map(toCandidate));
  const { taken, next } = firstCandidates(lists, q.limit);
  if (taken.length === 0) return { deleted: 0, next };
  const room = 'room' in q.target ? q.target.room : null;
  const members = room === null ? [] : st.members.all(room).map((r) => r.account);
  const heldThreads = new Set(st.heldThreads.all().map((r) => r.thread_id));
  const gone = taken.filter((c) => mayDelete(c, { heldThreads, members, acked: (k, seq) => st.acked.get(k, seq) !== undefined }));
  for (const c of gone) {
    st.deleteMessage.run(c.seq);
    for (const kind of q.byMessage) st.deleteRecords.run(kind, `${c.id}|`, `${c.id}}`);
  }
  const totals = new Map<string, number>();
  for (const c of gone) totals.set(c.toKey, (totals.get(c.toKey) ?? 0) + 1);
  for (const [key, n] of totals) st.lowerTotal.run(n, key);
  if (room === null) {
    // Direct and session mail is acknowledged under its own key only; its unacked count has it
    // acknowledged already.
    for (const c of gone) st.deleteAck.run(c.toKey, c.seq);
  } else if (gone.length > 0) {
    // Every account's acks of it (a former member's too: a rejoin counts its acks again).
    const seqs = gone.map((c) => c.seq);
    const lo = seqs[0] as number;
    const hi = seqs[seqs.length - 1] as number;
    const json = JSON.stringify(seqs);
    const isMember = new Set(members);
    for (const a of st.accountIds.all()) {
      const n = st.deleteAcksIn.run(keyOfAccount(a.id), lo, hi, json).changes;
      if (n > 0 && isMember.has(a.id)) st.lowerMemberAcked.run(n, room, a.id);
    }
  }
  return { deleted: gone.length, next };
}

export function pruneRecordsIn(st: RetentionStatements, kind: string, before: number, limit: number): number {
  return st.pruneRecords.run(kind, kind, before, limit).changes;
}
