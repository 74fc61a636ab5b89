// How leases end besides a release: expiry (a sweep every second on the engine's clock), the
// holder's session ending (the session sweep), the holder's account removed (the store ends
// those). Every ended lease is handed to the listeners (the pool returns its task) and only then
// settled, so a crash in between acts on it again at the next start: acting is idempotent.
import type { LeaseRecord, SessionRecord, Store } from '../store/types.js';
import type { Clock } from './clock.js';
import type { Logger } from './log.js';

/** Called once per ended lease (again after a crash or a failure: it must be idempotent). */
export type LeaseEndListener = (lease: LeaseRecord) => Promise<void> | void;

export interface LeaseEndDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  /** The session's process runs (this host), or its host is alive (another daemon's). */
  isLive(s: SessionRecord): boolean;
}

const TICK_MS = 1000;
/** Ended leases expired or ended per store call. */
const BATCH = 256;
/** Unsettled leases this engine did not end itself are taken up after this long: another daemon
 *  sharing the store may be acting on one it just ended. */
const RECOVER_AFTER_MS = 5000;
/** Live leases looked at per session sweep for holders whose session ended elsewhere. */
const HOLDER_SCAN = 10_000;
/** Ended, settled leases are kept this long (what happened to a reservation stays explainable). */
const KEEP_ENDED_MS = 24 * 3600_000;

export class LeaseEnds {
  private listeners: LeaseEndListener[] = [];
  /** Ended leases a listener failed on: retried at the next tick. */
  private retry = new Set<string>();
  private acting = new Set<string>();
  private ticking: Promise<void> | null = null;
  private cancelArm: (() => void) | null = null;
  private closed = false;

  constructor(private d: LeaseEndDeps) {}

  onEnded(fn: LeaseEndListener): () => void {
    this.listeners.push(fn);
    return () => {
      this.listeners = this.listeners.filter((x) => x !== fn);
    };
  }

  /** Crash recovery (every unsettled lease, whoever ended it), then the expiry sweep. */
  async start(): Promise<void> {
    await this.recover(Number.POSITIVE_INFINITY);
    this.arm();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cancelArm?.();
    await this.ticking;
  }

  /** One pass: retry what failed at an earlier pass, end the expired leases and act on them. A
   *  call while a pass runs joins it. */
  tick(): Promise<void> {
    this.ticking ??= (async () => {
      try {
        const now = this.d.clock.now();
        await this.recover(now - RECOVER_AFTER_MS);
        for (let batch = await this.d.store.expireLeases(now, BATCH); ; batch = await this.d.store.expireLeases(now, BATCH)) {
          await this.settle(batch);
          if (batch.length < BATCH) break;
        }
      } catch (err) {
        this.d.log.warn({ err: String(err) }, 'lease sweep failed: tried again in a second');
      }
    })().finally(() => (this.ticking = null));
    return this.ticking;
  }

  /** The sessions the session sweep found ended: their leases end now, not at their TTL. */
  async sessionsEnded(sessions: readonly { account: string; id: string }[]): Promise<void> {
    for (const s of sessions) {
      try {
        await this.settle(await this.d.store.endSessionLeases(s.account, s.id, this.d.clock.now()));
      } catch (err) {
        this.d.log.warn({ err: String(err), account: s.account, session: s.id }, 'ending the leases of an ended session failed');
      }
    }
  }

  /** Live leases whose holder session ended without this sweep seeing it (a send found it gone,
   *  another daemon's host died): they end too. Then ended, settled leases of long ago go. */
  async sweepHolders(): Promise<void> {
    try {
      const now = this.d.clock.now();
      const holders = new Map<string, { account: string; id: string }>();
      for (const l of await this.d.store.listLeases({ now, limit: HOLDER_SCAN }))
        if (l.holderSession !== null) holders.set(`${l.holderAccount}/${l.holderSession}`, { account: l.holderAccount, id: l.holderSession });
      const gone: { account: string; id: string }[] = [];
      for (const h of holders.values()) {
        const s = await this.d.store.getSession(h.account, h.id);
        if (!s || !this.d.isLive(s)) gone.push(h);
      }
      await this.sessionsEnded(gone);
      await this.d.store.pruneLeases(now - KEEP_ENDED_MS);
    } catch (err) {
      this.d.log.warn({ err: String(err) }, 'the lease holders sweep failed');
    }
  }

  /** Hands each ended lease to the listeners, then settles it; a failure is logged and the lease
   *  stays unsettled, retried at the next tick. Never throws; returns how many it settled. */
  async settle(leases: readonly LeaseRecord[]): Promise<number> {
    let settled = 0;
    for (const l of leases) {
      if (this.acting.has(l.id)) continue;
      this.acting.add(l.id);
      try {
        for (const fn of this.listeners) await fn(l);
        await this.d.store.settleLease(l.id);
        this.retry.delete(l.id);
        settled++;
      } catch (err) {
        this.retry.add(l.id);
        this.d.log.warn({ err: String(err), lease: l.id }, 'acting on an ended lease failed: retried at the next tick');
      } finally {
        this.acting.delete(l.id);
      }
    }
    return settled;
  }

  /** Unsettled leases that ended by `endedBy`, and those a listener failed on. */
  private async recover(endedBy: number): Promise<void> {
    for (let round = 0; round < 64; round++) {
      const page = await this.d.store.unsettledLeases(BATCH);
      const due = page.filter((l) => this.retry.has(l.id) || (l.endedAt ?? 0) <= endedBy);
      // Nothing settled this round (a listener keeps failing): the rest waits for the next tick.
      if (due.length === 0 || (await this.settle(due)) === 0 || page.length < BATCH) return;
    }
  }

  private arm(): void {
    if (this.closed) return;
    this.cancelArm = this.d.clock.timer(TICK_MS, () => {
      void this.tick().finally(() => this.arm());
    });
  }
}
