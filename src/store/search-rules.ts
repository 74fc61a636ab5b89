// The search rules, written once for every store: which keys a search reads (the scope's, never
// more), what a match is (the memory store's reference), and the same terms as FTS5 MATCH text and
// as a PostgreSQL tsquery. Terms come from wire/search.ts and hold only letters and digits, so the
// quoting below can never be escaped by what a user typed.
import { searchTokens, type SearchTerm } from '../wire/search.js';
import { isKeyOfAccount, keyOfRoom, type MailKey, type ReaderScope, type SearchPage, type SearchQuery, type SearchTier, type StoredMessage } from './types.js';
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
 *  within one column, like the reference. Tier 1: the whole query in the subject column alone;
 *  tier 2: a match that is not. */
export function fts5Match(terms: readonly SearchTerm[], tier: SearchTier | null = null): string {
  const all = terms.map((t) => `"${t.tokens.map(safeToken).join(' ')}"${t.prefix ? ' *' : ''}`).join(' AND ');
  if (tier === null) return all;
  return tier === 1 ? `{subject} : (${all})` : `(${all}) NOT ({subject} : (${all}))`;
}

/** PostgreSQL: the subject is weighted A and the body D (migration 10), so a phrase is sought in
 *  one of them at a time, never across their seam; a word or prefix anywhere. Tier 1: every
 *  lexeme of every term weighted A (the subject); tier 2: a match that is not. */
export function tsQuery(terms: readonly SearchTerm[], tier: SearchTier | null = null): string {
  const lexeme = (t: string, last: boolean, prefix: boolean, w: string) => `'${safeToken(t)}'${last && prefix ? ':*' : ''}${w ? (last && prefix ? w : `:${w}`) : ''}`;
  const phrase = (t: SearchTerm, w: string) => t.tokens.map((tok, i) => lexeme(tok, i === t.tokens.length - 1, t.prefix, w)).join(' <-> ');
  const all = terms.map((t) => (t.tokens.length === 1 ? phrase(t, '') : `(${phrase(t, 'A')} | ${phrase(t, 'D')})`)).join(' & ');
  if (tier === null) return all;
  const subject = terms.map((t) => `(${phrase(t, 'A')})`).join(' & ');
  return tier === 1 ? subject : `(${all}) & !(${subject})`;
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

/** The reference match: every term in the subject or in the body; its tier: 1 when every term is
 *  in the subject alone, else 2; null for no match. */
export function matchTier(m: StoredMessage, terms: readonly SearchTerm[]): SearchTier | null {
  const subject = searchTokens(m.subject);
  if (terms.every((t) => holds(subject, t))) return 1;
  const body = searchTokens(m.body);
  return terms.every((t) => holds(subject, t) || holds(body, t)) ? 2 : null;
}

/** The filters other than the words and the cursor, as every store applies them. */
export function passesFilters(m: StoredMessage, q: SearchQuery): boolean {
  return (
    (q.fromAccount === null || m.fromAccount === q.fromAccount) &&
    (q.threadId === null || m.threadId === q.threadId) &&
    (q.after === null || m.createdAt >= q.after) &&
    (q.before === null || m.createdAt < q.before)
  );
}

/** One tier's window, as a store walks it: at most `window` index matches of the tier below
 *  `beforeSeq` (null: from the newest), newest first, any scope; of those, the scope's that pass
 *  the filters, at most `limit`. `examined`: how many matches it looked at; `lowest`: the lowest. */
export type TierWalk = (
  tier: SearchTier,
  beforeSeq: number | null,
  window: number,
  limit: number,
) => Promise<{ messages: StoredMessage[]; examined: number; lowest: number | null }>;

/** The ranking and the window, the same on every store: tier 1 (the whole query in the subject)
 *  newest first, then tier 2 (the other matches) newest first, a page examining at most q.window
 *  matches in all from the cursor's (tier, seq) on. When the window runs out before q.limit are
 *  found, the page's floor is where the next page continues (more may match below it). */
export async function rankedPage(q: SearchQuery, walk: TierWalk): Promise<SearchPage> {
  const messages: StoredMessage[] = [];
  let subjectHits = 0;
  let budget = q.window;
  for (const tier of q.tier === 1 ? ([1, 2] as const) : ([2] as const)) {
    const w = await walk(tier, tier === q.tier ? q.beforeSeq : null, budget, q.limit - messages.length);
    messages.push(...w.messages);
    if (tier === 1) subjectHits = w.messages.length;
    if (messages.length >= q.limit) return { messages, subjectHits, floor: null };
    budget -= w.examined;
    if (budget <= 0) return { messages, subjectHits, floor: w.lowest === null ? null : { tier, seq: w.lowest } };
  }
  return { messages, subjectHits, floor: null };
}

/** The reference page (the memory store): every message tested, in the order and the window of
 *  rankedPage. It reads every message of the store: the reference, not for large mailboxes. */
export async function referencePage(all: Iterable<StoredMessage>, keys: readonly MailKey[], q: SearchQuery): Promise<SearchPage> {
  const subject: StoredMessage[] = [];
  const rest: StoredMessage[] = [];
  for (const m of all) {
    const t = matchTier(m, q.terms);
    if (t !== null) (t === 1 ? subject : rest).push(m);
  }
  for (const t of [subject, rest]) t.sort((a, b) => b.seq - a.seq);
  const inScope = new Set<string>(keys);
  return rankedPage(q, (tier, beforeSeq, window, limit) => {
    const matches = (tier === 1 ? subject : rest).filter((m) => beforeSeq === null || m.seq < beforeSeq).slice(0, window);
    const messages = matches.filter((m) => inScope.has(m.toKey) && passesFilters(m, q)).slice(0, limit);
    return Promise.resolve({ messages, examined: matches.length, lowest: matches[matches.length - 1]?.seq ?? null });
  });
}

/** PostgreSQL's tsvector rules, as to_tsvector and || apply them (tsearch's MAXSTRLEN, MAXNUMPOS,
 *  MAXENTRYPOS): a word of 2,048 bytes or more is skipped without taking a position; one field
 *  keeps 255 positions a word, the two together 256; a position past 16,383 is 16,383. */
const PG_WORD_BYTES = 2048;
const PG_FIELD_POSITIONS = 255;
const PG_WORD_POSITIONS = 256;
const PG_LAST_POSITION = 16_383;

/** One field's positions a word, numbered from 1 as to_tsvector numbers them. */
function pgPositions(text: string): Map<string, number[]> {
  const at = new Map<string, number[]>();
  let pos = 0;
  for (const w of searchTokens(text)) {
    if (w.length * 3 >= PG_WORD_BYTES && Buffer.byteLength(w) >= PG_WORD_BYTES) continue;
    const p = Math.min(++pos, PG_LAST_POSITION);
    let list = at.get(w);
    if (!list) at.set(w, (list = []));
    if (list.length < PG_FIELD_POSITIONS && list[list.length - 1] !== p) list.push(p);
  }
  return at;
}

/** A message's PostgreSQL search document as a tsvector literal: the words of wire/search.ts (the
 *  same cut as the query's, so a document and a query can never disagree on what a word is), as
 *  `setweight(to_tsvector('simple', subject), 'A') || to_tsvector('simple', body)` numbers them
 *  (the body's positions after the subject's last). Made by the writer, so the database need not
 *  cut the text with a regular expression (most of an insert's cost). */
export function pgSearchDocument(subject: string, body: string): string {
  const subj = pgPositions(subject);
  let shift = 0;
  for (const list of subj.values()) shift = Math.max(shift, list[list.length - 1] as number);
  const all = new Map<string, string[]>();
  for (const [w, list] of subj)
    all.set(
      w,
      list.map((p) => `${p}A`),
    );
  for (const [w, list] of pgPositions(body)) {
    const have = all.get(w) ?? [];
    let last = -1;
    for (const p of list) {
      const q = Math.min(p + shift, PG_LAST_POSITION);
      if (have.length >= PG_WORD_POSITIONS) break;
      if (q !== last) have.push(String(q));
      last = q;
    }
    all.set(w, have);
  }
  let out = '';
  for (const [w, list] of all) out += `${out ? ' ' : ''}'${safeToken(w)}':${list.join(',')}`;
  return out;
}
