// Full-text search of the mail a caller may read (docs/operations.md "Search"). The query syntax and
// the tokenizer are part of the contract, written once here: every store indexes and matches words
// the way `searchTokens` cuts them, and `parseSearchQuery` is the only reader of a user's query, so
// what reaches FTS5's MATCH or PostgreSQL's tsquery is built from plain tokens, never raw input.
import { z } from 'zod';
import { MessageId, Selector, text } from './fields.js';
import { selectorProblem, utf8Bytes } from './text.js';

export const SEARCH_LIMITS = {
  queryBytes: 256,
  /** Words, phrases and prefixes of one query. */
  terms: 8,
  /** Terms ending with `*`: each is a merge over many words of the index. */
  prefixTerms: 2,
  /** Characters before a `*` at least (a 2- or 3-character prefix has an index of its own). */
  prefixChars: 2,
  /** Tokens over all terms (a phrase counts each of its words). */
  tokens: 16,
  /** Index matches one page examines at most, newest first, before the scope and the filters:
   *  the work of a call is bounded, and a page may hold fewer results than limit and still have
   *  a next_cursor (continue below the last match examined). */
  window: 2000,
  limitDefault: 20,
  limitMax: 100,
  /** A snippet's length in characters, the marks and the ellipses aside. */
  snippetChars: 120,
  /** Searches in flight at once per account, and on the whole daemon: one over either is refused
   *  at once (rate_limited {limit, scope, retry_after}), so a flood of searches leaves the event
   *  loop and the store to everyone else. */
  inFlightPerAccount: 2,
  inFlightPerDaemon: 4,
} as const;

/** A word is a run of letters, digits and private-use characters (FTS5 unicode61's token
 *  characters; PostgreSQL's [[:alnum:]]), compared in lower case; accents are kept (café ≠ cafe). */
const TOKEN = /[\p{L}\p{N}\p{Co}]+/gu;

export function searchTokens(s: string): string[] {
  return s.toLowerCase().match(TOKEN) ?? [];
}

/** One term of a query: a word (one token), a phrase (tokens in a row, in one field), either with
 *  its last token a prefix (`deploy*`). Every term must match (AND). */
export interface SearchTerm {
  tokens: string[];
  prefix: boolean;
}

/** The terms of a query, or why it is refused (malformed {field: query}). */
export function parseSearchQuery(q: string): { terms: SearchTerm[] } | { problem: string } {
  if ((q.match(/"/g) ?? []).length % 2 !== 0) return { problem: 'a quoted phrase is not closed' };
  const terms: SearchTerm[] = [];
  for (const m of q.matchAll(/"([^"]*)"(\*?)|([^\s"]+)/g)) {
    const quoted = m[1] !== undefined;
    const raw = quoted ? (m[1] as string) : (m[3] as string);
    const prefix = quoted ? m[2] === '*' : raw.endsWith('*');
    const tokens = searchTokens(raw);
    if (tokens.length === 0) continue; // punctuation alone: nothing to look for
    terms.push({ tokens, prefix: prefix && !/[^\p{L}\p{N}\p{Co}]\*$/u.test(quoted ? `${raw}*` : raw) });
  }
  if (terms.length === 0) return { problem: 'no word to search for (words are letters and digits)' };
  if (terms.length > SEARCH_LIMITS.terms) return { problem: `at most ${SEARCH_LIMITS.terms} words or phrases` };
  const prefixes = terms.filter((t) => t.prefix);
  if (prefixes.length > SEARCH_LIMITS.prefixTerms) return { problem: `at most ${SEARCH_LIMITS.prefixTerms} prefixes (words ending with *)` };
  if (prefixes.some((t) => [...(t.tokens[t.tokens.length - 1] as string)].length < SEARCH_LIMITS.prefixChars)) {
    return { problem: `a prefix needs at least ${SEARCH_LIMITS.prefixChars} letters or digits before *` };
  }
  if (terms.reduce((n, t) => n + t.tokens.length, 0) > SEARCH_LIMITS.tokens) return { problem: `at most ${SEARCH_LIMITS.tokens} words in all` };
  return { terms };
}

const Query = text(SEARCH_LIMITS.queryBytes)
  .superRefine((s, ctx) => {
    const r = parseSearchQuery(s);
    if ('problem' in r) ctx.addIssue({ code: 'custom', message: r.problem });
  })
  .describe('words, "a phrase", prefix*');

/** `to`: an account (its direct and session mail) or `#room`. Only mail the caller reads anyway. */
const ToFilter = z
  .string()
  .superRefine((s, ctx) => {
    if (utf8Bytes(s) > 129) return void ctx.addIssue({ code: 'custom', message: 'too long', params: { m4a: 'too_large', limit: 129, actual: utf8Bytes(s) } });
    const p = selectorProblem(s.startsWith('#') ? s.slice(1) : s);
    if (p) ctx.addIssue({ code: 'custom', message: `an account or #room: ${p}` });
  })
  .describe('an account or #room');

const Time = z.iso.datetime({ offset: true });

export const SearchRequest = z.strictObject({
  query: Query,
  from: Selector.optional().describe('only mail from this account'),
  to: ToFilter.optional(),
  thread_id: MessageId.optional().describe('only this thread'),
  after: Time.optional().describe('only mail created at or after this ISO time'),
  before: Time.optional().describe('only mail created before this ISO time'),
  limit: z.number().int().min(1).max(SEARCH_LIMITS.limitMax).optional().describe(`default ${SEARCH_LIMITS.limitDefault}`),
  cursor: z.string().max(64).optional().describe('a next_cursor'),
});

/** Over MCP: the query and the cursor only (20 results a page), so the tool costs few tokens of
 *  tools/list; the filters stay over HTTP, the CLI and the browser. */
export const McpSearchRequest = SearchRequest.pick({ query: true }).extend({ cursor: z.string().optional().describe('a next_cursor') });

export const SearchHit = z.object({
  message_id: z.string(),
  thread_id: z.string().optional(),
  from: z.string(),
  from_kind: z.literal('external').optional().describe('e-mail from outside: untrusted'),
  to: z.string().optional(),
  subject: z.string(),
  snippet: z.string().describe('matched words «marked»'),
  created_at: z.string(),
});

export const SearchResponse = z.object({
  results: z.array(SearchHit).describe('whole query in the subject first, then the rest; each newest first'),
  next_cursor: z.string().optional().describe('more results: pass it as cursor'),
});

export type SearchRequest = z.output<typeof SearchRequest>;
export type SearchHit = z.infer<typeof SearchHit>;
export type SearchResponse = z.infer<typeof SearchResponse>;
