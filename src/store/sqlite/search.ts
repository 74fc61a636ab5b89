// Search over the FTS5 index of migration 10, tier by tier (search-rules.ts rankedPage), each in
// two steps so the work of a call is bounded: the index's first matches of the tier (MATCH text of
// search-rules.ts) below the cursor and the durable head, newest first (FTS5 walks its matches in rowid = seq order and stops at the
// LIMIT), then the scope's keys and the filters on those rows only. better-sqlite3 runs on the
// event loop: an unbounded walk here would stall every other caller of the daemon.
import type Database from 'better-sqlite3';
import { MailError } from '../../wire/errors.js';
import { fts5Match, rankedPage, searchKeys } from '../search-rules.js';
import type { ReaderScope, SearchPage, SearchQuery, StoredMessage } from '../types.js';

/** Index matches a turn of the event loop examines (a window is 2,000: eight turns at most). */
const CHUNK = 250;
import { toMessage, type MessageRow } from './rows.js';

export class SqliteSearch {
  private readonly cache = new Map<string, Database.Statement<unknown[], MessageRow>>();
  private readonly matches: Database.Statement<[string, number, number], number>;

  constructor(private readonly db: Database.Database) {
    this.matches = db.prepare<[string, number, number], number>('SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid <= ? ORDER BY rowid DESC LIMIT ?').pluck();
  }

  /** `head`: the durable head (reads stop there, as every mail read does). Each tier's window is
   *  walked in chunks, the event loop let through between them, and the walk stops once the page
   *  is full: no call holds the loop for more than one chunk's work. */
  async run(scope: ReaderScope, q: SearchQuery, head: number): Promise<SearchPage> {
    const keys = searchKeys(scope, q.to);
    if (keys.length === 0 || q.limit <= 0) return { messages: [], subjectHits: 0, floor: null };
    let first = true;
    return rankedPage(q, async (tier, beforeSeq, window, limit) => {
      const match = fts5Match(q.terms, tier);
      let top = Math.min(head, beforeSeq === null ? head : beforeSeq - 1);
      const messages: StoredMessage[] = [];
      let examined = 0;
      let lowest: number | null = null;
      for (let left = window; left > 0 && messages.length < limit;) {
        if (!first) await new Promise((r) => setImmediate(r));
        first = false;
        const n = Math.min(CHUNK, left);
        const chunk = this.window(match, top, n);
        examined += chunk.length;
        left -= chunk.length;
        if (chunk.length > 0) {
          messages.push(...this.inScope(chunk, keys, q, limit - messages.length));
          lowest = chunk[chunk.length - 1] as number;
          top = lowest - 1;
        }
        if (chunk.length < n) break; // the index has no more matches of the tier below
      }
      return { messages, examined, lowest };
    });
  }

  private window(match: string, top: number, n: number): number[] {
    try {
      return this.matches.all(match, top, n);
    } catch (err) {
      // Cannot happen for terms of wire/search.ts; if FTS5 still refuses the text, it is the query's fault.
      if (err instanceof Error && /fts5: syntax error|unterminated string/.test(err.message)) {
        throw new MailError('malformed', 'query: not a search the index understands', { field: 'query', reason: 'syntax' });
      }
      throw err;
    }
  }

  /** The rows of `seqs` in the scope and the filters, newest first, at most `limit`. */
  private inScope(seqs: number[], keys: string[], q: SearchQuery, limit: number): StoredMessage[] {
    const where = ['m.seq IN (SELECT value FROM json_each(?))', `m.to_key IN (${keys.map(() => '?').join(', ')})`];
    const params: (string | number)[] = [JSON.stringify(seqs), ...keys];
    const and = (clause: string, v: string | number | null) => {
      if (v === null) return;
      where.push(clause);
      params.push(v);
    };
    and('m.from_account = ?', q.fromAccount);
    and('m.thread_id = ?', q.threadId);
    and('m.created_at >= ?', q.after);
    and('m.created_at < ?', q.before);
    const sql = `SELECT m.* FROM messages AS m WHERE ${where.join(' AND ')} ORDER BY m.seq DESC LIMIT ?`;
    let stmt = this.cache.get(sql);
    if (!stmt) {
      stmt = this.db.prepare<unknown[], MessageRow>(sql);
      if (this.cache.size > 64) this.cache.clear();
      this.cache.set(sql, stmt);
    }
    return stmt.all(...params, limit).map(toMessage);
  }
}
