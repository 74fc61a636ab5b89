// Search over the FTS5 index of migration 10: the terms as MATCH text (search-rules.ts), the
// scope's keys and the filters on the joined message row, newest first. FTS5 walks its matches
// in rowid (= seq) order, descending here, and stops at the limit, so a page costs the matches it
// passes over, not every match.
import type Database from 'better-sqlite3';
import { MailError } from '../../wire/errors.js';
import { fts5Match, searchKeys } from '../search-rules.js';
import type { ReaderScope, SearchQuery, StoredMessage } from '../types.js';
import { toMessage, type MessageRow } from './rows.js';

export class SqliteSearch {
  private readonly cache = new Map<string, Database.Statement<unknown[], MessageRow>>();

  constructor(private readonly db: Database.Database) {}

  /** `head`: the durable head (reads stop there, as every mail read does). */
  run(scope: ReaderScope, q: SearchQuery, head: number): StoredMessage[] {
    const keys = searchKeys(scope, q.to);
    if (keys.length === 0 || q.limit <= 0) return [];
    const where = ['messages_fts MATCH ?', `m.to_key IN (${keys.map(() => '?').join(', ')})`, 'f.rowid <= ?'];
    const params: (string | number)[] = [fts5Match(q.terms), ...keys, Math.min(head, q.beforeSeq === null ? head : q.beforeSeq - 1)];
    const and = (clause: string, v: string | number | null) => {
      if (v === null) return;
      where.push(clause);
      params.push(v);
    };
    and('m.from_account = ?', q.fromAccount);
    and('m.thread_id = ?', q.threadId);
    and('m.created_at >= ?', q.after);
    and('m.created_at < ?', q.before);
    const sql = `SELECT m.* FROM messages_fts AS f CROSS JOIN messages AS m ON m.seq = f.rowid WHERE ${where.join(' AND ')} ORDER BY f.rowid DESC LIMIT ?`;
    let stmt = this.cache.get(sql);
    if (!stmt) {
      stmt = this.db.prepare<unknown[], MessageRow>(sql);
      if (this.cache.size > 64) this.cache.clear();
      this.cache.set(sql, stmt);
    }
    try {
      return stmt.all(...params, q.limit).map(toMessage);
    } catch (err) {
      // Cannot happen for terms of wire/search.ts; if FTS5 still refuses the text, it is the query's fault.
      if (err instanceof Error && /fts5: syntax error|unterminated string/.test(err.message)) {
        throw new MailError('malformed', 'query: not a search the index understands', { field: 'query', reason: 'syntax' });
      }
      throw err;
    }
  }
}
