// The search rules, written once for every store: which keys a search reads (the scope's, never
// more), what a match is (the memory store's reference), and the same terms as FTS5 MATCH text and
// as a PostgreSQL tsquery. Terms come from wire/search.ts and hold only letters and digits, so the
// quoting below can never be escaped by what a user typed.
import { searchTokens, type SearchTerm } from '../wire/search.js';
import { isKeyOfAccount, keyOfRoom, type MailKey, type ReaderScope, type SearchPage, type SearchQuery, type StoredMessage } from './types.js';
import { scopeKeys } from './reading-rules.js';

/** The scope's keys, narrowed by `to`: an account keeps its direct and session keys, a room its
 *  key. A `to` the scope does not read leaves nothing. */
export function searchKeys(scope: ReaderScope, to: SearchQuery['to']): MailKey[] {
  const keys = scopeKeys(scope);
  if (!to) return keys;
  if ('room' in to) return keys.filter((k) => k === keyOfRoom(to.room));
  return keys.filter((k) => isKeyOfAccount(k, to.account));
}

const safeToken = (t: string): string => {
  // Defence in depth: a token is a run of letters and digits (wire/search.ts), never a quote.
  if (!/^[\p{L}\p{N}\p{Co}]+$/u.test(t)) throw new Error('search: a token that is not a word');
  return t;
};

/** FTS5: each term a quoted phrase (`"a b"`, `"a b" *` for a prefix), all ANDed. A phrase matches
 *  within one column, like the reference. */
export function fts5Match(terms: readonly SearchTerm[]): string {
  return terms.map((t) => `"${t.tokens.map(safeToken).join(' ')}"${t.prefix ? ' *' : ''}`).join(' AND ');
}

/** PostgreSQL: the subject is weighted A and the body D (migration 10), so a phrase is sought in
 *  one of them at a time, never across their seam; a word or prefix anywhere. */
export function tsQuery(terms: readonly SearchTerm[]): string {
  const lexeme = (t: string, last: boolean, prefix: boolean, w: string) => `'${safeToken(t)}'${last && prefix ? ':*' : ''}${w ? (last && prefix ? w : `:${w}`) : ''}`;
  return terms
    .map((t) => {
      const n = t.tokens.length;
      const phrase = (w: string) => t.tokens.map((tok, i) => lexeme(tok, i === n - 1, t.prefix, w)).join(' <-> ');
      return n === 1 ? phrase('') : `(${phrase('A')} | ${phrase('D')})`;
    })
    .join(' & ');
}

/** Whether `tokens` holds the term (its tokens in a row, the last a prefix when so marked). */
function holds(tokens: readonly string[], t: SearchTerm): boolean {
  const n = t.tokens.length;
  for (let i = 0; i + n <= tokens.length; i++) {
    let ok = true;
    for (let j = 0; j < n && ok; j++) {
      const have = tokens[i + j] as string;
      const want = t.tokens[j] as string;
      ok = j === n - 1 && t.prefix ? have.startsWith(want) : have === want;
    }
    if (ok) return true;
  }
  return false;
}

/** The reference match: every term in the subject or in the body. */
export function messageMatches(m: StoredMessage, terms: readonly SearchTerm[]): boolean {
  const subject = searchTokens(m.subject);
  const body = searchTokens(m.body);
  return terms.every((t) => holds(subject, t) || holds(body, t));
}

/** The filters other than the words, as every store applies them. */
export function passesFilters(m: StoredMessage, q: SearchQuery): boolean {
  return (
    (q.beforeSeq === null || m.seq < q.beforeSeq) &&
    (q.fromAccount === null || m.fromAccount === q.fromAccount) &&
    (q.threadId === null || m.threadId === q.threadId) &&
    (q.after === null || m.createdAt >= q.after) &&
    (q.before === null || m.createdAt < q.before)
  );
}

/** The window rule, the same on every store: `window` holds the seqs of the first q.window index
 *  matches, newest first. When it is full and held fewer than q.limit of the scope, more may match
 *  below its lowest seq: the page's floor, where the next page continues. */
export function windowFloor(window: readonly number[], found: number, q: SearchQuery): number | null {
  return window.length >= q.window && found < q.limit ? (window[window.length - 1] ?? null) : null;
}

/** The reference page (the memory store): the matches newest first, cut to the window, then the
 *  scope's keys and the filters, at most q.limit. */
export function referencePage(all: Iterable<StoredMessage>, keys: readonly MailKey[], q: SearchQuery): SearchPage {
  const matches: StoredMessage[] = [];
  for (const m of all) if ((q.beforeSeq === null || m.seq < q.beforeSeq) && messageMatches(m, q.terms)) matches.push(m);
  const window = matches.sort((a, b) => b.seq - a.seq).slice(0, q.window);
  const inScope = new Set<string>(keys);
  const messages = window.filter((m) => inScope.has(m.toKey) && passesFilters(m, q)).slice(0, q.limit);
  return {
    messages,
    windowFloor: windowFloor(
      window.map((m) => m.seq),
      messages.length,
      q,
    ),
  };
}
