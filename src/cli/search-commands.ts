// m4a search QUERY: full-text search of the mail this caller may read (docs/operations.md
// "Search"). Only types come from wire/search.ts, so zod stays off the CLI's start-up; the daemon
// checks the query and filters and names what it refuses.
import type { Command } from 'commander';
import type { SearchRequest } from '../wire/search.js';
import { withDaemon, type ConnectOptions } from './connect.js';
import { fail, printJson, printText } from './output.js';
import { bold, dim, table } from './format.js';

interface SearchOptions extends ConnectOptions {
  from?: string;
  to?: string;
  thread?: string;
  before?: string;
  after?: string;
  limit?: string;
  cursor?: string;
  json?: boolean;
}

/** The request from the command line; a date without a time means midnight UTC. */
export function searchInput(query: string, o: SearchOptions): SearchRequest {
  const time = (s: string) => (/^\d{4}-\d{2}-\d{2}$/.test(s) ? `${s}T00:00:00Z` : s);
  const input: SearchRequest = { query };
  if (o.from !== undefined) input.from = o.from;
  if (o.to !== undefined) input.to = o.to;
  if (o.thread !== undefined) input.thread_id = o.thread;
  if (o.before !== undefined) input.before = time(o.before);
  if (o.after !== undefined) input.after = time(o.after);
  if (o.limit !== undefined) input.limit = Number(o.limit);
  if (o.cursor !== undefined) input.cursor = o.cursor;
  return input;
}

export function registerSearch(program: Command): void {
  program
    .command('search')
    .description('search the subject and body of the mail you may read, newest first')
    .argument('<query>', 'words (all must match), "a phrase", or a prefix*')
    .option('--from <account>', 'only mail from this account')
    .option('--to <address>', 'only mail to this account (and its sessions) or #room')
    .option('--thread <id>', 'only this thread')
    .option('--after <time>', 'only mail created at or after this ISO time (or YYYY-MM-DD)')
    .option('--before <time>', 'only mail created before this ISO time (or YYYY-MM-DD)')
    .option('--limit <n>', 'at most this many results (default 20, at most 100)')
    .option('--cursor <c>', 'the next page: the cursor a previous search printed')
    .option('--json', 'print the answer as JSON')
    .option('--account <name>', "which account's secret to use")
    .option('--data-dir <dir>', "the daemon's data directory")
    .action(async (query: string, o: SearchOptions) => {
      try {
        const r = await withDaemon(o, (c) => c.search(searchInput(query, o)));
        if (o.json) return printJson(r);
        // A page examines a bounded window of matches: an empty one may still have a next_cursor.
        if (r.results.length === 0 && !r.next_cursor) return printText(dim('no mail matches'));
        const lines = r.results.flatMap((h) => [table([[h.message_id, dim(h.created_at), h.from, bold(h.subject)]]), `  ${h.snippet}`]);
        if (r.next_cursor) lines.push(dim(`more: m4a search ${JSON.stringify(query)} --cursor ${r.next_cursor}`));
        printText(lines.join('\n'));
      } catch (err) {
        fail(err, !!o.json);
      }
    });
}
