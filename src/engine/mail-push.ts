// Pushed mail for a connected session (the stream door's `subscribe`). A subscription is a loop of
// the very read a parked HTTP client runs, inbox {after: cursor, wait_secs, include_bodies: false}:
// so an event carries exactly what that wait would answer, counts as shown and surfaced as it does,
// and parks, wakes (answered in the commit's wake batch), caps and refreshes through the same
// WaitRoom. Nothing is queued here: the loop waits for the door to take each event (its sink) before
// reading on, so a slow client leaves its mail in the store, not in memory.
import { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import type * as W from '../wire/ops.js';
import type { Clock } from './clock.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import type { InboxDoor } from './inbox-reader.js';
import { need, type Caller } from './mail-engine.js';

export interface MailEvent {
  /** The cursor after these messages. */
  cursor: string;
  messages: W.MessageOut[];
}

/** Takes one event; a promise holds the loop until the door can take the next (back-pressure). */
export type MailSink = (event: MailEvent) => void | Promise<void>;

export interface PushDeps {
  clock: Clock;
  /** The inbox read of mail-reads.ts, marking what it answers as shown. */
  read(c: Caller, req: W.InboxRequest, door: InboxDoor): Promise<W.InboxResponse>;
  headSeq(): Promise<number>;
}

export interface SubscribeOptions {
  /** The caller each read runs as: the door re-checks the credential every time (a rotated or
   *  removed account stops the pushes). */
  caller: () => Promise<Caller>;
  /** Default: the current head (only mail committed from now on). */
  after?: string | undefined;
  /** Mail per event (an inbox page). */
  limit: number;
  sink: MailSink;
  /** Told once when the subscription ends by itself (the credential no longer verifies, the read
   *  permission was taken away); never after end() or close(). */
  onEnd?: (err: MailError) => void;
}

export interface MailSubscription {
  /** Where the pushes start. */
  readonly cursor: string;
  /** Ends the loop; a parked read leaves at once (as if its client had gone). */
  end(): void;
}

/** Each parked read lasts at most this long, then parks again (as an HTTP client would). */
const WAIT_SECS = LIMITS.waitSecsHttp;
/** A read that failed for a passing reason (the store, the daemon's wait cap) is retried after this. */
const RETRY_MS = 1_000;
const transient = (e: MailError): boolean => e.code === 'store_unavailable' || e.code === 'rate_limited' || e.code === 'internal';

export class MailPush {
  private live = new Set<AbortController>();
  private closed = false;

  constructor(private d: PushDeps) {}

  get size(): number {
    return this.live.size;
  }

  async subscribe(o: SubscribeOptions): Promise<MailSubscription> {
    if (this.closed) throw new MailError('store_unavailable', 'the daemon is stopping', { operation: 'subscribe' });
    need(await o.caller(), 'read');
    const cursor = o.after ?? encodeCursor(await this.d.headSeq());
    decodeCursor(cursor); // a bad cursor is refused now, named `after`
    const ac = new AbortController();
    this.live.add(ac);
    void this.run(o, cursor, ac.signal).finally(() => this.live.delete(ac));
    return { cursor, end: () => ac.abort() };
  }

  /** Shutdown, before the WaitRoom closes: no subscription parks again. */
  close(): void {
    this.closed = true;
    for (const ac of this.live) ac.abort();
    this.live.clear();
  }

  private async run(o: SubscribeOptions, start: string, signal: AbortSignal): Promise<void> {
    let cursor = start;
    while (!signal.aborted) {
      let page: W.InboxResponse;
      try {
        const c = await o.caller();
        page = await this.d.read(c, { after: cursor, limit: o.limit, include_bodies: false, wait_secs: WAIT_SECS }, { maxWaitSecs: WAIT_SECS, signal });
      } catch (err) {
        if (signal.aborted) return;
        const e = err instanceof MailError ? err : new MailError('internal', 'internal error');
        if (!transient(e)) return o.onEnd?.(e);
        await this.pause(RETRY_MS, signal);
        continue;
      }
      if (signal.aborted) return;
      if (page.messages.length === 0) continue; // the wait expired or was displaced: park again
      cursor = page.next_cursor ?? cursor;
      await o.sink({ cursor, messages: page.messages });
    }
  }

  private pause(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const stop = this.d.clock.timer(ms, () => {
        signal.removeEventListener('abort', done);
        resolve();
      });
      const done = (): void => {
        stop();
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
