// Search over message_search (migration 10): the terms as a tsquery (search-rules.ts, cast, never
// parsed from user text), the scope's keys and the filters on the joined message row, newest first.
import { searchKeys, tsQuery } from '../search-rules.js';
import type { ReaderScope, SearchQuery, StoredMessage } from '../types.js';
import { toMessage, type MessageRow } from '../sqlite/rows.js';
import { pgArray, type Sql } from './pg-sql.js';

type Param = string | number;

export async function pgSearch(sql: Sql, scope: ReaderScope, q: SearchQuery): Promise<StoredMessage[]> {
  const keys = searchKeys(scope, q.to);
  if (keys.length === 0 || q.limit <= 0) return [];
  const params: Param[] = [tsQuery(q.terms), pgArray(keys)];
  const where = ['s.doc @@ $1::tsquery', 'm.to_key = ANY($2::text[])'];
  const and = (clause: (n: string) => string, v: Param | null) => {
    if (v === null) return;
    params.push(v);
    where.push(clause(`$${params.length}`));
  };
  and((n) => `s.seq < ${n}::bigint`, q.beforeSeq);
  and((n) => `m.from_account = ${n}`, q.fromAccount);
  and((n) => `m.thread_id = ${n}`, q.threadId);
  and((n) => `m.created_at >= ${n}::bigint`, q.after);
  and((n) => `m.created_at < ${n}::bigint`, q.before);
  params.push(q.limit);
  const text = `SELECT m.* FROM message_search AS s JOIN messages AS m ON m.seq = s.seq WHERE ${where.join(' AND ')} ORDER BY s.seq DESC LIMIT $${params.length}`;
  const rows = await sql.unsafe<MessageRow[]>(text, params);
  return rows.map(toMessage);
}
