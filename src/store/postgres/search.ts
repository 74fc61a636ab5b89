// Search over message_search (migrations 10 and 11), tier by tier (search-rules.ts rankedPage), each in two
// steps as on SQLite so every store gives the same pages: the first matches of the tier (a tsquery of search-rules.ts, cast, never
// parsed from user text) below the cursor, newest first; then the scope's keys and the filters on
// those rows only.
import { rankedPage, searchKeys, tsQuery } from '../search-rules.js';
import type { ReaderScope, SearchPage, SearchQuery } from '../types.js';
import { toMessage, type MessageRow } from '../sqlite/rows.js';
import { pgArray, type Sql } from './pg-sql.js';

type Param = string | number;

/** Rows of message_search step 1 tests, newest first, before it turns to the GIN index. */
const DENSE_ROWS = 5_000;
/** Step 1: the tier's first $2 matches ($1) among the newest $4 rows below seq $3, in the primary
 *  key's order: cheap when the tier is dense (a common word), and it stops at the window. */
export const PG_NEWEST_SQL =
  'SELECT seq FROM (SELECT seq, doc FROM message_search WHERE seq < $3::bigint ORDER BY seq DESC LIMIT $4) AS newest WHERE doc @@ $1::tsquery ORDER BY seq DESC LIMIT $2';
/** The lowest of those rows (null: there were fewer, the table ends within them). */
const PG_EDGE_SQL = 'SELECT seq FROM message_search WHERE seq < $1::bigint ORDER BY seq DESC OFFSET $2 LIMIT 1';
/** Step 2: the top $2 matches below the edge. A dense tier runs it as the planner plans it (on
 *  down the key); a sparse one with the key and sequential scans off (the GIN index's candidates). */
export const PG_BELOW_SQL = 'SELECT seq FROM message_search WHERE doc @@ $1::tsquery AND seq < $3::bigint ORDER BY seq DESC LIMIT $2';

/** A tier's window, newest first. The planner estimates a tsquery's rows from its lexemes and
 *  ignores weights and negation, so for tier 1 (`'alpha':A`) of a word common in bodies and absent
 *  from subjects it walked the primary key backwards through every row of the table (0.3-0.4 s at
 *  1,000,000). Step 1 tests the newest DENSE_ROWS rows; if they held enough of the tier that the
 *  rest of the window is likely within twenty times as many rows, step 2 goes on down the key (the
 *  planner's plan); else it reads the GIN index's candidates (the words' rows, rechecked), never
 *  the whole table by the key. */
async function tierWindow(sql: Sql, query: string, beforeSeq: number | null, window: number): Promise<number[]> {
  const top = beforeSeq ?? Number.MAX_SAFE_INTEGER;
  const dense = await sql.unsafe<{ seq: string | number }[]>(PG_NEWEST_SQL, [query, window, top, DENSE_ROWS]);
  const seqs = dense.map((r) => Number(r.seq));
  if (seqs.length >= window) return seqs;
  const edge = await sql.unsafe<{ seq: string | number }[]>(PG_EDGE_SQL, [top, DENSE_ROWS - 1]);
  if (edge[0] === undefined) return seqs;
  const need = window - seqs.length;
  const params = [query, need, Number(edge[0].seq)];
  const rest =
    seqs.length > 0 && need <= 20 * seqs.length
      ? await sql.unsafe<{ seq: string | number }[]>(PG_BELOW_SQL, params)
      : await sql.begin(async (tx) => {
          await tx.unsafe('SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off');
          return tx.unsafe<{ seq: string | number }[]>(PG_BELOW_SQL, params);
        });
  return seqs.concat(rest.map((r) => Number(r.seq)));
}

export async function pgSearch(sql: Sql, scope: ReaderScope, q: SearchQuery): Promise<SearchPage> {
  const keys = searchKeys(scope, q.to);
  if (keys.length === 0 || q.limit <= 0) return { messages: [], subjectHits: 0, floor: null };
  return rankedPage(q, async (tier, beforeSeq, window, limit) => {
    const seqs = await tierWindow(sql, tsQuery(q.terms, tier), beforeSeq, window);
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
