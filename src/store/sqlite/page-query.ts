// The inbox query. A reader's keys are few (direct, session, rooms) but each mailbox may be huge,
// so `to_key IN (...) ORDER BY seq` would sort every match. Instead each key is its own indexed
// range scan that stops after `limit` rows, and only those (keys x limit rows) are merged.
import type Database from 'better-sqlite3';
import type { PagedMessage } from '../types.js';
import { PAGED_COLUMNS, pagedFromValues } from './rows.js';

export interface PageShape {
  keys: number;
  pendingOnly: boolean;
  thread: boolean;
}

/** Parameters per key, in order: ack key, to_key, lower seq bound (exclusive), upper seq bound
 *  (inclusive: the durable head), thread id when `thread`, limit. One final parameter: the overall limit. */
export function pageSql(shape: PageShape): string {
  // A thread is usually far smaller than a mailbox, so scan the thread's range instead.
  const index = shape.thread ? 'messages_by_thread' : 'messages_by_key';
  // The per-key scans read only index entries (seq, ack time); full rows are fetched for the
  // `limit` winners alone, not for keys x limit candidates.
  const part =
    `SELECT * FROM (SELECT m.seq AS seq, a.acked_at AS acked_at FROM messages AS m INDEXED BY ${index}` +
    ' LEFT JOIN acks AS a ON a.ack_key = ? AND a.seq = m.seq' +
    ' WHERE m.to_key = ? AND m.seq > ? AND m.seq <= ?' +
    (shape.thread ? ' AND m.thread_id = ?' : '') +
    (shape.pendingOnly ? ' AND a.seq IS NULL' : '') +
    ' ORDER BY m.seq LIMIT ?)';
  const picked = Array.from({ length: shape.keys }, () => part).join(' UNION ALL ') + ' ORDER BY seq LIMIT ?';
  const columns = PAGED_COLUMNS.map((c) => (c === 'acked_at' ? 'p.acked_at' : `m.${c}`)).join(', ');
  return `SELECT ${columns} FROM (${picked}) AS p CROSS JOIN messages AS m WHERE m.seq = p.seq ORDER BY p.seq`;
}

type Values = (string | number | null)[];

/** Prepared page statements, one per shape, created on first use and kept; rows come as arrays of
 *  PAGED_COLUMNS' values (raw mode) and are mapped by pagedFromValues. */
export class PageStatements {
  private readonly cache = new Map<string, Database.Statement<unknown[], Values>>();

  constructor(private readonly db: Database.Database) {}

  get(shape: PageShape): Database.Statement<unknown[], Values> {
    const id = `${shape.keys}|${shape.pendingOnly ? 1 : 0}|${shape.thread ? 1 : 0}`;
    let stmt = this.cache.get(id);
    if (!stmt) {
      stmt = this.db.prepare<unknown[], Values>(pageSql(shape)).raw(true);
      this.cache.set(id, stmt);
    }
    return stmt;
  }

  /** The page's rows, oldest first. */
  rows(shape: PageShape, params: unknown[]): PagedMessage[] {
    return this.get(shape)
      .all(...params)
      .map(pagedFromValues);
  }
}
