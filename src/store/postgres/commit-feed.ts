// The commit feed: every commit that adds mail, this daemon's or another's, announced once, in seq
// order. An append batch sends NOTIFY on the schema's channel with the new head (ids only, never
// bodies; notifications of one transaction merge, which is fine for a head). The feed LISTENs
// (postgres.js keeps a dedicated connection, reconnects with backoff and LISTENs again) and runs a
// catch-up query `seq > caughtUp` on each notification and after every (re)LISTEN, since
// notifications sent while disconnected are lost; a slow poll of the head is the last safety net.
// A local batch whose head was already caught up is announced at once (no round trip); otherwise
// the catch-up announces it in order. This keeps the engine's wake-batch argument (an event for
// seq s comes after every event < s).
//
// A batch also sends a keyed notification before its plain head: `k:<prevHead>:<JSON array of the
// mail key of each seq prevHead+1 … head>`. A daemon caught up to prevHead announces those seqs from
// it without the catch-up query, one round trip less on the cross-daemon wake. Daemons of earlier
// versions read only the plain head (Number() of the keyed form is NaN, which they ignore), and a
// batch whose keys would not fit a notification sends the plain head alone.
import type { StoredMessage } from '../types.js';
import type { CommitEvent } from '../types.js';
import { CommitListeners } from '../commit-listeners.js';
import type { BatchResult } from './append-batch.js';
import type { Sql } from './pg-sql.js';

const CATCH_UP_PAGE = 1000;
/** NOTIFY payloads must stay under 8,000 bytes. */
const MAX_KEYED_PAYLOAD = 7_900;

/** The keyed notification of a batch that created `created` (in seq order from prevHead + 1), or
 *  none when it would not fit. */
export function keyedPayload(prevHead: number, created: readonly StoredMessage[]): string[] {
  const p = `k:${prevHead}:${JSON.stringify(created.map((m) => m.toKey))}`;
  return Buffer.byteLength(p) <= MAX_KEYED_PAYLOAD ? [p] : [];
}

/** The (prevHead, keys) of a keyed payload, or null for any other payload. */
export function parseKeyed(payload: string): { prev: number; keys: string[] } | null {
  const m = /^k:(\d{1,15}):(\[.*\])$/s.exec(payload);
  if (!m) return null;
  try {
    const keys: unknown = JSON.parse(m[2] as string);
    if (!Array.isArray(keys) || !keys.every((k) => typeof k === 'string')) return null;
    return { prev: Number(m[1]), keys };
  } catch {
    return null;
  }
}

export interface CommitFeedStats {
  catchUps: number;
  /** Notifications announced from their keys, without a catch-up query. */
  keyedAnnounces: number;
  notifications: number;
  listens: number;
  /** Feed lag: from the first cause of a catch-up (a notification ahead of us, a (re)LISTEN, the
   *  poll) to the end of the catch-up that announced those commits; the last one and the largest. */
  lastCatchUpLagMs: number;
  maxCatchUpLagMs: number;
}

export class CommitFeed {
  private readonly listeners = new CommitListeners();
  private readonly counts: CommitFeedStats = { catchUps: 0, keyedAnnounces: 0, notifications: 0, listens: 0, lastCatchUpLagMs: 0, maxCatchUpLagMs: 0 };
  /** When the catch-up under way (or asked for) was first asked for. */
  private askedAt: number | null = null;
  /** Every seq ≤ caughtUp has been announced (or was committed before this store opened). */
  private caughtUp = 0;
  private catchUpRunning = false;
  private catchUpAgain = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private closed = false;

  /** @param head the committed head (a read the store retries once on a lost connection) */
  constructor(
    private readonly sql: Sql,
    /** The NOTIFY channel: one per schema, so schemas sharing a database do not wake each other. */
    readonly channel: string,
    private readonly head: () => Promise<number>,
    private readonly pollMs: number,
  ) {}

  /** Reads the head, then listens; each (re)LISTEN catches up from the head. */
  async start(): Promise<void> {
    this.caughtUp = await this.head();
    const meta = await this.sql.listen(
      this.channel,
      (payload) => {
        this.counts.notifications++;
        const keyed = parseKeyed(payload);
        if (keyed) this.announceKeyed(keyed.prev, keyed.keys);
        else if (Number(payload) > this.caughtUp) this.requestCatchUp();
      },
      () => {
        this.counts.listens++;
        this.requestCatchUp();
      },
    );
    this.unlisten = () => meta.unlisten();
    this.pollTimer = setInterval(() => void this.poll(), this.pollMs);
    this.pollTimer.unref();
  }

  stats(): CommitFeedStats {
    return { ...this.counts };
  }

  /** No catch-up or poll runs after it (a batch still draining is announced if it is next in order). */
  stop(): void {
    this.closed = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
  }

  /** Stops listening (after stop, before the pool closes). */
  async close(): Promise<void> {
    this.stop();
    await this.unlisten?.().catch(() => undefined);
  }

  onCommit(listener: (e: CommitEvent) => void): () => void {
    return this.listeners.add(listener);
  }

  /** A local batch whose predecessor seqs are all announced is announced at once; otherwise a
   *  catch-up announces the other daemons' commits first, then this batch, in order. */
  announceLocal(r: BatchResult): void {
    // Already announced: this batch's own keyed notification came back before its commit's answer.
    if (r.head === r.prevHead || r.head <= this.caughtUp) return;
    if (r.prevHead !== this.caughtUp) return this.requestCatchUp();
    this.caughtUp = r.head;
    for (const o of r.outcomes) if (!(o instanceof Error) && o.kind === 'created') this.listeners.emit({ keys: [o.message.toKey], seq: o.message.seq });
  }

  /** Seqs prev+1 … prev+keys.length with their keys: announced here when every seq up to prev
   *  already was (those at or below caughtUp are skipped); a gap before them needs the catch-up. */
  private announceKeyed(prev: number, keys: string[]): void {
    if (this.closed) return;
    if (prev > this.caughtUp) return this.requestCatchUp();
    // Counted only when it announced something: a daemon's own batches come back to it announced.
    if (prev + keys.length > this.caughtUp) this.counts.keyedAnnounces++;
    keys.forEach((key, i) => {
      const seq = prev + 1 + i;
      if (seq <= this.caughtUp) return;
      this.caughtUp = seq;
      this.listeners.emit({ keys: [key], seq });
    });
  }

  private requestCatchUp(): void {
    if (this.closed) return;
    this.askedAt ??= performance.now();
    if (this.catchUpRunning) {
      this.catchUpAgain = true;
      return;
    }
    this.catchUpRunning = true;
    void (async () => {
      try {
        do {
          this.catchUpAgain = false;
          const from = this.caughtUp;
          const rows = await this.sql<{ seq: number; to_key: string }[]>`SELECT seq, to_key FROM messages WHERE seq > ${from} ORDER BY seq LIMIT ${CATCH_UP_PAGE}`;
          this.counts.catchUps++;
          for (const r of rows) {
            // A local batch announced while the query ran is not announced twice.
            if (r.seq <= this.caughtUp) continue;
            this.caughtUp = r.seq;
            this.listeners.emit({ keys: [r.to_key], seq: r.seq });
          }
          if (rows.length === CATCH_UP_PAGE) this.catchUpAgain = true;
        } while (this.catchUpAgain && !this.closed);
        const lag = performance.now() - (this.askedAt ?? performance.now());
        this.askedAt = null;
        this.counts.lastCatchUpLagMs = lag;
        this.counts.maxCatchUpLagMs = Math.max(this.counts.maxCatchUpLagMs, lag);
      } catch {
        // The database is away: the next (re)LISTEN or poll catches up.
      } finally {
        this.catchUpRunning = false;
      }
    })();
  }

  private async poll(): Promise<void> {
    try {
      if ((await this.head()) > this.caughtUp) this.requestCatchUp();
    } catch {
      /* down: try again next time */
    }
  }
}
