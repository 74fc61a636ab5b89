// The commit feed: every commit that adds mail, this daemon's or another's, announced once, in seq
// order. An append batch sends NOTIFY on the schema's channel with the new head (ids only, never
// bodies; notifications of one transaction merge, which is fine for a head). The feed LISTENs
// (postgres.js keeps a dedicated connection, reconnects with backoff and LISTENs again) and runs a
// catch-up query `seq > caughtUp` on each notification and after every (re)LISTEN, since
// notifications sent while disconnected are lost; a slow poll of the head is the last safety net.
// A local batch whose head was already caught up is announced at once (no round trip); otherwise
// the catch-up announces it in order. This keeps the engine's wake-batch argument (an event for
// seq s comes after every event < s).
import type { CommitEvent } from '../types.js';
import { CommitListeners } from '../commit-listeners.js';
import type { BatchResult } from './append-batch.js';
import type { Sql } from './pg-sql.js';

const CATCH_UP_PAGE = 1000;

export interface CommitFeedStats {
  catchUps: number;
  notifications: number;
  listens: number;
}

export class CommitFeed {
  private readonly listeners = new CommitListeners();
  private readonly counts: CommitFeedStats = { catchUps: 0, notifications: 0, listens: 0 };
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
        if (Number(payload) > this.caughtUp) this.requestCatchUp();
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
    if (r.head === r.prevHead) return;
    if (r.prevHead !== this.caughtUp) return this.requestCatchUp();
    this.caughtUp = r.head;
    for (const o of r.outcomes) if (!(o instanceof Error) && o.kind === 'created') this.listeners.emit({ keys: [o.message.toKey], seq: o.message.seq });
  }

  private requestCatchUp(): void {
    if (this.closed) return;
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
