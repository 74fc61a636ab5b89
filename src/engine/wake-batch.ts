// Answering many woken waits with a few queries. A send to a room of 1,000 parked members wakes
// 1,000 readers; re-running each reader's full page query would cost 1,000 queries. Instead every
// reader woken in one turn of the event loop is answered from one query per woken mail key.
//
// Why this is exact: a reader parks only after its query found nothing, and it registers before
// that query, so everything readable with seq ≤ its bound was seen and was empty. What it may read
// now is exactly the mail committed since on its keys, and every such commit is among the keys
// noted in this turn (a commit in an earlier turn would have woken it then). Fetches stop at the
// highest seq noted, so an answer's cursor never passes a commit that is not in the answer.
// The engine then asks the store which of these rows the reader's scope has already acknowledged
// (a sibling session may have read and acked new mail first). Readers with a thread filter, or
// whose page would be truncated, fall back to their own full query.
import type { MailKey, ReaderScope, StoredMessage, Store } from '../store/types.js';

export interface WakeContext {
  scope: ReaderScope;
  keys: MailKey[];
  /** Exclusive lower bound on seq: max(cursor, the engine's head when the reader registered). */
  bound: number;
  limit: number;
}

interface Pending {
  ctx: WakeContext;
  resolve: (rows: StoredMessage[] | null) => void;
}

export class WakeBatcher {
  private keys = new Set<MailKey>();
  private maxSeq = 0;
  private pending: Pending[] = [];
  private scheduled = false;
  /** Queries saved: readers answered minus key fetches made (for tests and benchmarks). */
  readonly stats = { batches: 0, readers: 0, fetches: 0, fallbacks: 0 };

  constructor(private store: Store) {}

  /** Called for every commit event, before waiters are woken. */
  noteCommit(keys: MailKey[], seq: number): void {
    for (const k of keys) this.keys.add(k);
    if (seq > this.maxSeq) this.maxSeq = seq;
  }

  /** The new mail for a woken reader, or null when it must run its own query. */
  page(ctx: WakeContext): Promise<StoredMessage[] | null> {
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
    this.keys = new Set();
    this.scheduled = false;
    this.stats.batches++;
    // One fetch per woken key, from the lowest bound any reader of it needs.
    const need = new Map<MailKey, { from: number; limit: number }>();
    for (const { ctx } of batch) {
      for (const k of ctx.keys) {
        if (!noted.has(k)) continue;
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
    for (const { ctx, resolve } of batch) {
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
        resolve(null);
        continue;
      }
      rows.sort((a, b) => a.seq - b.seq);
      this.stats.readers++;
      resolve(rows.slice(0, ctx.limit));
    }
  }
}
