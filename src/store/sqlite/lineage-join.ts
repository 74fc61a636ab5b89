// joinLineage in the SQLite store (types.ts): a session that started a lineage of its own becomes
// an ended session's successor, taking its lineage, while nothing hangs off its own yet. Runs
// inside the store's write transaction; statements prepared on first use.
import type Database from 'better-sqlite3';
import { keyOfLineage, type LineageJoin, type RecordSweep } from '../types.js';
import { prefixUpperBound } from './prefix.js';
import { toSession, type SessionOutRow } from './rows.js';
import type { Stmt } from './statements.js';

type One = { one: number };

export type LineageStatements = ReturnType<typeof prepareLineageJoin>;

export function prepareLineageJoin(db: Database.Database) {
  const p = <R = unknown>(sql: string): Stmt<R> => db.prepare<unknown[], R>(sql);
  return {
    session: p<{ id: string; lineage: string; successor: string | null }>('SELECT id, lineage, successor FROM sessions WHERE account = ? AND id = ?'),
    othersOfLineage: p<One>('SELECT 1 AS one FROM sessions WHERE account = ? AND lineage = ? AND id <> ? LIMIT 1'),
    // Each one probe of a primary key or an index by the lineage's mail key.
    mail: p<One>(`SELECT 1 AS one WHERE EXISTS (SELECT 1 FROM messages WHERE to_key = @key)
      OR EXISTS (SELECT 1 FROM mailbox_counts WHERE to_key = @key)
      OR EXISTS (SELECT 1 FROM acks WHERE ack_key = @key)
      OR EXISTS (SELECT 1 FROM ack_floors WHERE ack_key = @key)`),
    alias: p<One>("SELECT 1 AS one FROM names WHERE account = ? AND lineage = ? AND kind = 'alias' LIMIT 1"),
    task: p<One>('SELECT 1 AS one FROM tasks WHERE to_account = ? AND to_lineage = ? LIMIT 1'),
    lease: p<One>('SELECT 1 AS one FROM leases WHERE holder_account = ? AND holder_lineage = ? LIMIT 1'),
    record: p<One>('SELECT 1 AS one FROM records WHERE kind = ? AND id = ?'),
    recordIn: p<One>('SELECT 1 AS one FROM records WHERE kind = ? AND id >= ? AND id < ? LIMIT 1'),
    recordFrom: p<One>('SELECT 1 AS one FROM records WHERE kind = ? AND id >= ? LIMIT 1'),
    dropSlug: p("DELETE FROM names WHERE account = ? AND lineage = ? AND kind = 'slug'"),
    setSuccessor: p('UPDATE sessions SET successor = ?, ended_at = COALESCE(ended_at, ?) WHERE account = ? AND id = ?'),
    setLineage: p('UPDATE sessions SET lineage = ? WHERE account = ? AND id = ?'),
    read: p<SessionOutRow>(`SELECT s.*, n.name AS slug FROM sessions AS s
      LEFT JOIN names AS n ON n.account = s.account AND n.lineage = s.lineage AND n.kind = 'slug'
      WHERE s.account = ? AND s.id = ?`),
  };
}

export function joinLineageIn(st: LineageStatements, account: string, id: string, predecessor: string, at: number, records: RecordSweep['owned']): LineageJoin {
  const s = st.session.get(account, id);
  const pred = st.session.get(account, predecessor);
  if (!s || !pred) return { refused: 'unknown' };
  if (pred.successor !== null || pred.lineage === s.lineage) return { refused: 'taken' };
  const own = s.lineage;
  if (own !== s.id || s.successor !== null || st.othersOfLineage.get(account, own, id)) return { refused: 'not_alone' };
  if (st.mail.get({ key: keyOfLineage(account, own) })) return { refused: 'mail' };
  if (st.alias.get(account, own)) return { refused: 'alias' };
  if (st.task.get(account, own)) return { refused: 'task' };
  if (st.lease.get(account, own)) return { refused: 'lease' };
  const held = (r: RecordSweep['owned'][number]): boolean => {
    if ('id' in r) return st.record.get(r.kind, r.id) !== undefined;
    const upper = prefixUpperBound(r.prefix);
    return (upper === null ? st.recordFrom.get(r.kind, r.prefix) : st.recordIn.get(r.kind, r.prefix, upper)) !== undefined;
  };
  if (records.some(held)) return { refused: 'record' };
  st.dropSlug.run(account, own);
  st.setSuccessor.run(id, at, account, predecessor);
  st.setLineage.run(pred.lineage, account, id);
  return { joined: toSession(st.read.get(account, id) as SessionOutRow) };
}
