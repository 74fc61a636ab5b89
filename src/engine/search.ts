// Search (docs/operations.md "Search"): the caller's reader scope, the same as its inbox's (its
// account, its own session lineage, its rooms now), narrowed by the filters; the subject's matches
// first, then the others, each newest first, paged by a cursor over (tier, seq). A page examines at most SEARCH_LIMITS.window index matches (the store's
// window), so it may hold fewer than limit and still have a next_cursor. The snippet is cut here, not by a store, so every store answers alike.
import { MailError } from '../wire/errors.js';
import { parseSearchQuery, SEARCH_LIMITS, searchTokens, type SearchRequest, type SearchResponse, type SearchTerm } from '../wire/search.js';
import type { ReaderScope, SearchQuery, Store, StoredMessage } from '../store/types.js';
import { decodeSearchCursor, encodeSearchCursor } from './cursor.js';
import { isoSecs } from './present.js';
import { SNIPPET_MARK } from './email-fence.js';
import type { ShortAddresses } from './short-address.js';
import { need, type Caller } from './mail-engine.js';

export interface SearchDeps {
  store: Store;
  addresses: ShortAddresses;
  scope(c: Caller): Promise<ReaderScope>;
}

const malformed = (field: string, reason: string) => new MailError('malformed', `${field}: ${reason}`, { field, reason });

export class MailSearch {
  private inFlight = 0;
  private readonly perAccount = new Map<string, number>();

  constructor(private readonly d: SearchDeps) {}

  /** Refused at once over a bound, never queued: a queue would hold the flood's work for later. */
  async search(c: Caller, req: SearchRequest): Promise<SearchResponse> {
    need(c, 'read');
    const account = c.account.id;
    const mine = this.perAccount.get(account) ?? 0;
    if (mine >= SEARCH_LIMITS.inFlightPerAccount) {
      const limit = SEARCH_LIMITS.inFlightPerAccount;
      throw new MailError('rate_limited', `account ${account} has ${limit} searches in flight already`, { retry_after: 1, limit, scope: 'account', account });
    }
    if (this.inFlight >= SEARCH_LIMITS.inFlightPerDaemon) {
      const limit = SEARCH_LIMITS.inFlightPerDaemon;
      throw new MailError('rate_limited', `this daemon has ${limit} searches in flight already`, { retry_after: 1, limit, scope: 'daemon' });
    }
    this.inFlight++;
    this.perAccount.set(account, mine + 1);
    try {
      return await this.run(c, req);
    } finally {
      this.inFlight--;
      const n = (this.perAccount.get(account) ?? 1) - 1;
      if (n <= 0) this.perAccount.delete(account);
      else this.perAccount.set(account, n);
    }
  }

  private async run(c: Caller, req: SearchRequest): Promise<SearchResponse> {
    const parsed = parseSearchQuery(req.query);
    if ('problem' in parsed) throw malformed('query', parsed.problem);
    const at = req.cursor === undefined ? { tier: 1 as const, seq: null } : decodeSearchCursor(req.cursor);
    const limit = req.limit ?? SEARCH_LIMITS.limitDefault;
    const to = req.to === undefined ? null : req.to.startsWith('#') ? { room: req.to.slice(1) } : { account: req.to };
    const q: SearchQuery = {
      terms: parsed.terms,
      to,
      fromAccount: req.from ?? null,
      threadId: req.thread_id ?? null,
      after: req.after === undefined ? null : Date.parse(req.after),
      before: req.before === undefined ? null : Date.parse(req.before),
      tier: at.tier,
      beforeSeq: at.seq,
      limit: limit + 1,
      window: SEARCH_LIMITS.window,
    };
    const page = await this.d.store.search(await this.d.scope(c), q);
    const rows = page.messages;
    const shown = rows.slice(0, limit);
    const printed = await this.d.addresses.forMessages(shown);
    const results = shown.map((m) => {
      const hit = { message_id: m.id } as SearchResponse['results'][number];
      if (m.threadId !== m.id) hit.thread_id = m.threadId;
      hit.from = printed.from(m);
      // Mail from outside is marked in a result as in the inbox (email-fence.ts).
      const external = m.fromKind === 'external';
      if (external) hit.from_kind = 'external';
      if (m.toAddress !== c.account.id) hit.to = printed.to(m);
      hit.subject = m.subject;
      hit.snippet = external ? `${SNIPPET_MARK} ${snippetOf(m, parsed.terms)}` : snippetOf(m, parsed.terms);
      hit.created_at = isoSecs(m.createdAt);
      return hit;
    });
    const last = shown[shown.length - 1];
    // More in the window: continue below the last shown, in its tier; the window full: below its floor.
    if (rows.length > limit && last) return { results, next_cursor: encodeSearchCursor(shown.length <= page.subjectHits ? 1 : 2, last.seq) };
    return page.floor !== null ? { results, next_cursor: encodeSearchCursor(page.floor.tier, page.floor.seq) } : { results };
  }
}

const WORD = /[\p{L}\p{N}\p{Co}]+/gu;
const OPEN = '«';
const CLOSE = '»';

/** A short excerpt of the body (of the subject when only it matched) around the first matched
 *  word, every matched word in it marked «so»: two characters a tokenizer reads as one token each,
 *  that JSON leaves unescaped, no markup language gives a meaning, and mail rarely holds. */
export function snippetOf(m: StoredMessage, terms: readonly SearchTerm[]): string {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const t of terms) {
    t.tokens.forEach((tok, i) => (i === t.tokens.length - 1 && t.prefix ? prefixes.push(tok) : exact.add(tok)));
  }
  const hit = (w: string) => {
    const l = w.toLowerCase();
    return exact.has(l) || prefixes.some((p) => l.startsWith(p));
  };
  const body = m.body.replace(/\s+/g, ' ');
  const inBody = searchTokens(body).some(hit);
  const text = inBody ? body : m.subject;
  const words = [...text.matchAll(WORD)].map((x) => ({ at: x.index, end: x.index + x[0].length, hit: hit(x[0]) }));
  const first = words.find((w) => w.hit)?.at ?? 0;
  const n = SEARCH_LIMITS.snippetChars;
  // Start a few words before the first hit, at a word's start, so the hit has some context.
  const from = words.filter((w) => w.at >= first - n / 3 && w.at <= first)[0]?.at ?? first;
  let to = Math.min(text.length, from + n);
  const cut = words.find((w) => w.at < to && w.end > to);
  if (cut) to = cut.at > from ? cut.at : cut.end;
  let out = '';
  let at = from;
  for (const w of words) {
    if (!w.hit || w.at < from || w.end > to) continue;
    out += `${text.slice(at, w.at)}${OPEN}${text.slice(w.at, w.end)}${CLOSE}`;
    at = w.end;
  }
  out += text.slice(at, to);
  return `${from > 0 ? '…' : ''}${out.trim()}${to < text.length ? '…' : ''}`;
}
