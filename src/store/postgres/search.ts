// Search over message_search (migration 10), tier by tier (search-rules.ts rankedPage), each in two
// steps as on SQLite so every store gives the same pages: the first matches of the tier (a tsquery of search-rules.ts, cast, never
// parsed from user text) below the cursor, newest first; then the scope's keys and the filters on
// those rows only.
import { rankedPage, searchKeys, tsQuery } from '../search-rules.js';
import type { ReaderScope, SearchPage, SearchQuery } from '../types.js';
import { toMessage, type MessageRow } from '../sqlite/rows.js';
import { pgArray, type Sql } from './pg-sql.js';

type Param = string | number;

export async function pgSearch(sql: Sql, scope: ReaderScope, q: SearchQuery): Promise<SearchPage> {
  const keys = searchKeys(scope, q.to);
  if (keys.length === 0 || q.limit <= 0) return { messages: [], subjectHits: 0, floor: null };
  return rankedPage(q, async (tier, beforeSeq, window, limit) => {
    const below = beforeSeq === null ? '' : ' AND seq < $3::bigint';
    const query = tsQuery(q.terms, tier);
    const found = await sql.unsafe<{ seq: string | number }[]>(
      `SELECT seq FROM message_search WHERE doc @@ $1::tsquery${below} ORDER BY seq DESC LIMIT $2`,
      beforeSeq === null ? [query, window] : [query, window, beforeSeq],
    );
    const seqs = found.map((r) => Number(r.seq));
    const lowest = seqs[seqs.length - 1] ?? null;
    if (seqs.length === 0) return { messages: [], examined: 0, lowest };
    const params: Param[] = [pgArray(seqs), pgArray(keys)];
    const where = ['m.seq = ANY($1::bigint[])', 'm.to_key = ANY($2::text[])'];
    const and = (clause: (n: string) => string, v: Param | null) => {
      if (v === null) return;
      params.push(v);
      where.push(clause(`$${params.length}`));
    };
    and((n) => `m.from_account = ${n}`, q.fromAccount);
    and((n) => `m.thread_id = ${n}`, q.threadId);
    and((n) => `m.created_at >= ${n}::bigint`, q.after);
    and((n) => `m.created_at < ${n}::bigint`, q.before);
    params.push(limit);
    const text = `SELECT m.* FROM messages AS m WHERE ${where.join(' AND ')} ORDER BY m.seq DESC LIMIT $${params.length}`;
    const rows = await sql.unsafe<MessageRow[]>(text, params);
    return { messages: rows.map(toMessage), examined: seqs.length, lowest };
  });
}
