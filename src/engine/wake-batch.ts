// Answering many woken waits with a few queries. A send to a room of 1,000 parked members wakes
// 1,000 readers; re-running each reader's full page query would cost 1,000 queries. Instead every
// reader woken in one turn of the event loop is answered from one query per woken mail key.
//
// Why this is exact: a reader parks only after its query found nothing, and it registers before
// that query, so everything readable with seq ≤ its bound was seen and was empty. What it may read
// now is exactly the mail committed since on its keys, and every such commit is among the keys
// noted in this turn (a commit in an earlier turn would have woken it then). Fetches stop at the
// highest seq noted, so an answer's cursor never passes a commit that is not in the answer.
// The batch then asks the store, for every reader in one call, which of these rows (and of the
// shown mail a wait without a cursor keeps) its scope has already acknowledged (a sibling session
// may have read and acked new mail first) and its unread count, and hands the readers one memo that
// prints the rows' addresses once and presents each distinct page once (shared-page.ts). Readers
// with a thread filter, or whose page would be truncated, fall back to their own full query.
import type { MailKey, ReaderFacts, ReaderScope, StoredMessage, Store } from '../store/types.js';
import { PageMemo } from './shared-page.js';

export interface WakeContext {
  scope: ReaderScope;
  keys: MailKey[];
  /** Exclusive lower bound on seq: max(cursor, the engine's head when the reader registered). */
  bound: number;
  limit: number;
  /** Shown mail the answer keeps (a wait without a cursor): its acks are looked up with the new. */
  old: readonly StoredMessage[];
}

/** A woken reader's new mail, oldest first, with what its answer needs beside it. */
export interface WokenPage {
  rows: StoredMessage[];
  /** seq → when the reader's scope acknowledged it, for the rows and the context's old mail. */
  acked: ReadonlyMap<number, number>;
  unread: number;
  /** The batch's pages, presented once for the readers who see them alike (shared-page.ts). */
  pages: PageMemo | null;
}

/** Readers answered per turn of the event loop. */
const ANSWER_SLICE = 64;

interface Pending {
  ctx: WakeContext;
  resolve: (page: WokenPage | null) => void;
}

export class WakeBatcher {
  /** Keys committed since the last flush, each with its highest seq. */
  private keys = new Map<MailKey, number>();
  private maxSeq = 0;
  private pending: Pending[] = [];
  private scheduled = false;
  private answering: Promise<void> | null = null;
  /** Queries saved: readers answered minus key fetches made (for tests and benchmarks). */
  readonly stats = { batches: 0, readers: 0, fetches: 0, fallbacks: 0, presented: 0, reused: 0 };

  constructor(private store: Store) {}

  /** Called for every commit event, before waiters are woken. */
  noteCommit(keys: MailKey[], seq: number): void {
    for (const k of keys) if (seq > (this.keys.get(k) ?? -1)) this.keys.set(k, seq);
    if (seq > this.maxSeq) this.maxSeq = seq;
  }

  /** The new mail for a woken reader, or null when it must run its own query. */
  page(ctx: WakeContext): Promise<WokenPage | null> {
    return new Promise((resolve) => {
      this.pending.push({ ctx, resolve });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    const noted = this.keys;
    const ceiling = this.maxSeq;
    this.pending = [];
    this.keys = new Map();
    this.scheduled = false;
    this.stats.batches++;
    // One fetch per woken key, from the lowest bound any reader of it needs. A key whose commits
    // are all at or below a reader's bound (noted in an earlier turn that woke nobody) is not
    // fetched for that reader.
    const need = new Map<MailKey, { from: number; limit: number }>();
    for (const { ctx } of batch) {
      for (const k of ctx.keys) {
        if ((noted.get(k) ?? -1) <= ctx.bound) continue;
        const n = need.get(k);
        need.set(k, { from: Math.min(n?.from ?? Infinity, ctx.bound), limit: Math.max(n?.limit ?? 0, ctx.limit) });
      }
    }
    const fetched = new Map<MailKey, { rows: StoredMessage[]; full: boolean }>();
    try {
      for (const [k, { from, limit }] of need) {
        const rows = (await this.store.messagesAfter(k, from, limit + 1)).filter((m) => m.seq <= ceiling);
        fetched.set(k, { rows, full: rows.length > limit });
        this.stats.fetches++;
      }
    } catch {
      for (const p of batch) p.resolve(null);
      return;
    }
    const answered: { p: Pending; rows: StoredMessage[] }[] = [];
    for (const p of batch) {
      const { ctx } = p;
      let truncated = false;
      const rows: StoredMessage[] = [];
      for (const k of ctx.keys) {
        const f = fetched.get(k);
        if (!f) continue;
        const mine = f.rows.filter((m) => m.seq > ctx.bound);
        // A fetch cut at the limit may hide rows this reader needs below others' bounds: re-query.
        if (f.full && mine.length < ctx.limit) truncated = true;
        rows.push(...mine);
      }
      if (truncated) {
        this.stats.fallbacks++;
        p.resolve(null);
        continue;
      }
      rows.sort((a, b) => a.seq - b.seq);
      this.stats.readers++;
      if (rows.length === 0) p.resolve({ rows, acked: new Map(), unread: 0, pages: null });
      else answered.push({ p, rows: rows.slice(0, p.ctx.limit) });
    }
    if (answered.length === 0) return;
    if (answered.length <= ANSWER_SLICE) return this.answer(answered);
    const done = this.answer(answered).catch(() => undefined);
    this.answering = done;
    await done;
    if (this.answering === done) this.answering = null;
  }

  /** While a batch is answered over several turns: settles when its last reader has been answered.
   *  A new read waits for it (inbox-reader.ts), so the woken are answered before anyone reads and
   *  parks again (a pushed subscription re-reads as soon as its event is taken: without this, each
   *  slice's re-reads would run before the next slice is answered). */
  busy(): Promise<void> | null {
    return this.answering;
  }

  /** Acks and unread of every answered reader from one store call (readerFacts), one page memo for
   *  the batch. Readers are answered a slice at a time with the event loop given back between
   *  slices: each slice's answers are written (the door's writes run once the microtasks drain)
   *  while the next is worked out, so the first readers do not wait for the last and the clients
   *  read meanwhile. */
  private async answer(answered: { p: Pending; rows: StoredMessage[] }[]): Promise<void> {
    const rows = new Map<number, StoredMessage>();
    for (const a of answered) for (const m of a.rows) rows.set(m.seq, m);
    const pages = new PageMemo(rows, this.stats);
    let facts: ReaderFacts[];
    try {
      facts = await this.store.readerFacts(answered.map(({ p, rows }) => ({ scope: p.ctx.scope, items: [...p.ctx.old, ...rows].map((m) => ({ seq: m.seq, toKey: m.toKey })) })));
    } catch {
      // Each reader's own query reports the failure (store_unavailable) as any read would.
      for (const { p } of answered) p.resolve(null);
      return;
    }
    const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
    for (let i = 0; i < answered.length; i += ANSWER_SLICE) {
      if (i > 0) await turn();
      for (let j = i; j < Math.min(i + ANSWER_SLICE, answered.length); j++) {
        const { p, rows } = answered[j] as { p: Pending; rows: StoredMessage[] };
        const f = facts[j] as ReaderFacts;
        p.resolve({ rows, acked: f.acked, unread: f.unread, pages });
      }
    }
    // The last slice's answers are written before the reads held by busy() run.
    if (answered.length > ANSWER_SLICE) await turn();
  }
}
