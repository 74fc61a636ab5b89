// The inbox query. A reader's keys are few (direct, session, rooms) but each mailbox may be huge,
// so `to_key IN (...) ORDER BY seq` would sort every match. Instead each key is its own indexed
// range scan that stops after `limit` rows, and only those (keys x limit rows) are merged.
import type Database from 'better-sqlite3';
import type { PagedRow } from './rows.js';

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
  return `SELECT m.*, p.acked_at AS acked_at FROM (${picked}) AS p CROSS JOIN messages AS m WHERE m.seq = p.seq ORDER BY p.seq`;
}

/** Prepared page statements, one per shape, created on first use and kept. */
export class PageStatements {
  private readonly cache = new Map<string, Database.Statement<unknown[], PagedRow>>();

  constructor(private readonly db: Database.Database) {}

  get(shape: PageShape): Database.Statement<unknown[], PagedRow> {
    const id = `${shape.keys}|${shape.pendingOnly ? 1 : 0}|${shape.thread ? 1 : 0}`;
    let stmt = this.cache.get(id);
    if (!stmt) {
      stmt = this.db.prepare<unknown[], PagedRow>(pageSql(shape));
      this.cache.set(id, stmt);
    }
    return stmt;
  }
}
