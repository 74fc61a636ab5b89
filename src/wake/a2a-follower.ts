// Follows one remote task until it is final here or there. A round reads, in this order: the
// event stream of a message we just sent (SendStreamingMessage: every status from the first),
// else SubscribeToTask when the card streams (it opens with the task as it is, then its events),
// else GetTask. Between rounds it sleeps 1 s, doubling to 60 s while nothing changes; a kick (we
// sent the remote agent something) starts the next round at once. It gives up a day after the
// last change seen (A2A_LIMITS.followForMs): the bridge then fails the local task with a note.
// A round has a deadline too: it ends when no event came for A2A_LIMITS.eventIdleMs (a stream of
// SSE comments alone keeps no socket open) or the day is over, and when its stream went over
// A2A_LIMITS.streamBytes; what it collects of the artifacts is bounded (a2a-artifacts.ts).
import type { StreamResponse } from '@a2a-js/sdk';
import type { Clock } from '../engine/clock.js';
import type { Logger } from '../engine/log.js';
import { ArtifactCollector } from './a2a-artifacts.js';
import { A2aStreamOverLimit } from './a2a-fetch.js';
import { A2A_LIMITS, spanText } from './a2a-limits.js';
import type { A2aLink } from './a2a-links.js';
import { isRemoteFinal, messageText, stateOf, viewOf, waitsForUs, type RemoteView } from './a2a-mirror.js';
import { failureText, remoteRefusal, type A2aRemote } from './a2a-remote.js';

/** A round ended by its own deadline (not a failure of the remote agent). */
export class RoundDeadline extends Error {
  constructor(readonly why: string) {
    super(why);
    this.name = 'RoundDeadline';
  }
}

/** A bound of ours ended the round: the card is fine, nothing to read again. */
function ownBound(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 3; e = (e as { cause?: unknown }).cause, depth++)
    if (e instanceof RoundDeadline || e instanceof A2aStreamOverLimit) return true;
  return false;
}

/** The events of a streaming send, its first already read (it named the task), with its abort. */
export interface Feed {
  events: AsyncIterable<StreamResponse>;
  abort: AbortController;
}

/** Opens a stream and reads its first event (a refusal throws here, before anything is kept);
 *  the feed gives that event again, then the rest. */
export async function openFeed(open: (signal: AbortSignal) => AsyncGenerator<StreamResponse, void, undefined>): Promise<{ first: StreamResponse; feed: Feed }> {
  const abort = new AbortController();
  const it = open(abort.signal);
  const head = await it.next().catch((err: unknown) => {
    abort.abort();
    throw err;
  });
  if (head.done) throw new Error('the remote agent ended its stream before any event');
  const first = head.value;
  async function* events(): AsyncGenerator<StreamResponse> {
    yield first;
    yield* { [Symbol.asyncIterator]: () => it };
  }
  return { first, feed: { events: events(), abort } };
}

export interface FollowDeps {
  clock: Clock;
  log: Logger;
  remote(link: A2aLink): A2aRemote;
  /** Mirrors what the remote task says into ours; 'final' when the link is done. */
  apply(link: A2aLink, view: RemoteView): Promise<'final' | 'open'>;
  /** No change for FOLLOW.forMs, or the remote agent no longer knows the task. */
  giveUp(link: A2aLink, why: string): Promise<void>;
}

export class Follower {
  readonly done: Promise<void>;
  private stopped = false;
  private kicked = false;
  /** The feed the next round reads, and the one being read. */
  private feed: Feed | null = null;
  private reading: Feed | null = null;
  private wakeUp: (() => void) | null = null;
  private readonly aborter = new AbortController();

  constructor(
    readonly link: A2aLink,
    private readonly d: FollowDeps,
    feed: Feed | null = null,
  ) {
    this.kick(feed);
    this.done = this.run()
      .catch((err: unknown) => this.d.log.warn({ task_id: link.taskId, err: failureText(err) }, 'a2a: following stopped'))
      .finally(() => this.feed?.abort.abort());
  }

  /** The next round now, reading `feed` if given (a stream of a message we just sent), else
   *  subscribing even while the remote waited for us. */
  kick(feed: Feed | null = null): void {
    if (feed) {
      this.feed?.abort.abort();
      this.feed = feed;
    }
    this.kicked = true;
    this.wakeUp?.();
  }

  stop(): void {
    this.stopped = true;
    this.aborter.abort();
    this.feed?.abort.abort();
    this.reading?.abort.abort();
    this.wakeUp?.();
  }

  private get over(): boolean {
    return this.stopped || this.link.done !== null;
  }

  private async run(): Promise<void> {
    let backoff = A2A_LIMITS.firstBackoffMs;
    while (!this.over) {
      if (this.d.clock.now() - this.link.activeAt >= A2A_LIMITS.followForMs) {
        await this.d.giveUp(this.link, `no change from the remote agent for ${spanText(A2A_LIMITS.followForMs)}: stopped following its task`);
        return;
      }
      const seen = `${this.link.remoteState}|${this.link.activeAt}`;
      const kicked = this.kicked;
      const feed = this.feed;
      this.kicked = false;
      this.feed = null;
      this.reading = feed;
      try {
        await this.round(kicked, feed);
      } catch (err) {
        if (this.over) return;
        if (remoteRefusal(err)?.name === 'TaskNotFoundError') {
          await this.d.giveUp(this.link, 'the remote agent no longer knows the task');
          return;
        }
        if (!remoteRefusal(err) && !ownBound(err)) this.d.remote(this.link).forget();
        this.d.log.info({ task_id: this.link.taskId, err: failureText(err) }, 'a2a: following the remote task failed; trying again');
      } finally {
        feed?.abort.abort();
        this.reading = null;
      }
      if (this.over) return;
      // The day is over (a round's deadline said so): give up now, not after a sleep.
      if (this.d.clock.now() - this.link.activeAt >= A2A_LIMITS.followForMs) continue;
      backoff = seen !== `${this.link.remoteState}|${this.link.activeAt}` ? A2A_LIMITS.firstBackoffMs : Math.min(backoff * 2, A2A_LIMITS.maxBackoffMs);
      if (!this.kicked) await this.sleep(backoff);
    }
  }

  private async round(kicked: boolean, feed: Feed | null): Promise<void> {
    const { client, streaming } = await this.d.remote(this.link).clients();
    const id = this.link.remoteTaskId;
    const ends = new AbortController();
    const stop = (): void => ends.abort();
    this.aborter.signal.addEventListener('abort', stop, { once: true });
    const opts = { signal: ends.signal };
    const events = feed?.events ?? (streaming && (kicked || !waitsForUs(this.link.remoteState)) ? client.resubscribeTask({ tenant: '', id }, opts) : null);
    if (events) {
      const artifacts = new ArtifactCollector();
      const deadline = this.deadline(() => {
        ends.abort();
        feed?.abort.abort();
      });
      try {
        for await (const ev of events) {
          const p = ev.payload;
          let view: RemoteView | null = null;
          if (p?.$case === 'task' && p.value.id === id) {
            for (const a of p.value.artifacts ?? []) artifacts.add(a, false);
            view = viewOf(p.value);
          } else if (p?.$case === 'artifactUpdate' && p.value.taskId === id) artifacts.add(p.value.artifact, p.value.append);
          else if (p?.$case === 'statusUpdate' && p.value.taskId === id) {
            const state = stateOf(p.value.status);
            if (!state) continue;
            // A final status: its artifacts as the remote keeps them, else as the stream gave them.
            const full = isRemoteFinal(state) ? await client.getTask({ tenant: '', id, historyLength: 0 }, opts).catch(() => null) : null;
            view = (full && viewOf(full)) ?? { state, text: messageText(p.value.status?.message), artifacts: artifacts.artifacts, dropped: artifacts.note };
          } else continue;
          deadline.event();
          if (view && (await this.d.apply(this.link, view)) === 'final') return;
          if (this.over) return;
        }
        return;
      } catch (err) {
        if (deadline.ended) throw new RoundDeadline(deadline.ended);
        // The remote refused the subscription (a final task cannot be subscribed to): ask instead.
        if (feed || !remoteRefusal(err) || remoteRefusal(err)?.name === 'TaskNotFoundError') throw err;
      } finally {
        deadline.cancel();
        this.aborter.signal.removeEventListener('abort', stop);
      }
    }
    this.aborter.signal.removeEventListener('abort', stop);
    const t = await client.getTask({ tenant: '', id, historyLength: 0 }, { signal: this.aborter.signal });
    const view = viewOf(t);
    if (view) await this.d.apply(this.link, view);
  }

  /** A round's deadline: no event about our task for eventIdleMs, or the day since the last change
   *  is over; `end` is called once when it passes. One timer, moved on only when it fires. */
  private deadline(end: () => void): { event(): void; cancel(): void; readonly ended: string | null } {
    let last = this.d.clock.now();
    let ended: string | null = null;
    let cancel = (): void => {};
    const check = (): void => {
      const now = this.d.clock.now();
      const idle = last + A2A_LIMITS.eventIdleMs;
      const day = this.link.activeAt + A2A_LIMITS.followForMs;
      if (now < Math.min(idle, day)) {
        cancel = this.d.clock.timer(Math.min(idle, day) - now, check);
        return;
      }
      ended =
        now >= day
          ? `no change from the remote agent for ${spanText(A2A_LIMITS.followForMs)}`
          : `no event from the remote agent for ${spanText(A2A_LIMITS.eventIdleMs)}: the round ends`;
      end();
    };
    check();
    return {
      event: () => {
        last = this.d.clock.now();
      },
      cancel: () => cancel(),
      get ended() {
        return ended;
      },
    };
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const cancel = this.d.clock.timer(ms, () => {
        this.wakeUp = null;
        resolve();
      });
      this.wakeUp = () => {
        cancel();
        this.wakeUp = null;
        resolve();
      };
    });
  }
}
