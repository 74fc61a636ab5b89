// The writers' half of the search index (migration 11): each writer of messages (an append batch,
// an import, a store migration) adds the rows' documents itself, made in this process by
// search-rules.ts, and marks its transaction so the statement trigger leaves those rows alone. The
// trigger still indexes, with m4a_search_doc, a row that any other writer adds (a daemon of an
// earlier version on the same database).
import { pgSearchDocument } from '../search-rules.js';
import { pgArray, type Sql } from './pg-sql.js';

type Query = Pick<Sql, 'unsafe'>;

/** Marks the current transaction as one whose writers index their own rows. */
export const WRITER_INDEXES = `SELECT set_config('m4a.search_docs', 'writer', true)`;

/** The documents of `rows`, messages this transaction stored (a message indexed already keeps
 *  its document). */
export function indexRows(q: Query, rows: readonly { seq: number; subject: string; body: string }[]): Promise<unknown> {
  if (rows.length === 0) return Promise.resolve();
  return q.unsafe(`INSERT INTO message_search (seq, doc) SELECT * FROM unnest($1::bigint[], $2::tsvector[]) ON CONFLICT (seq) DO NOTHING`, [
    pgArray(rows.map((r) => r.seq)),
    pgArray(rows.map((r) => pgSearchDocument(r.subject, r.body))),
  ]);
}
