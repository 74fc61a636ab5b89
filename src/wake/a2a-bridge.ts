// What every a2a step of a daemon shares: the links (a2a-links.ts), one A2aRemote per card, one
// follower per open link, and the one place a remote status becomes an update of our task, made
// as the account the step delivers for, paced per link (a remote flipping states must not flood
// the requester with mail and wakes): at most one mirrored change per A2A_LIMITS.coalesceMs, the
// latest remote state winning, and at most A2A_LIMITS.changesPerHour in any hour, past which our
// task fails. Started with the daemon (open links are followed again) and closed with it (every
// follower stops).
import { MailError } from '../wire/errors.js';
import { isTerminal } from '../wire/task-states.js';
import type { A2aStep } from '../wire/wake.js';
import type { Clock } from '../engine/clock.js';
import type { Logger } from '../engine/log.js';
import type { Caller, MailEngine } from '../engine/mail-engine.js';
import { LinkBook, recordId, type A2aLink } from './a2a-links.js';
import { checkedUpdate, isRemoteFinal, updateFor, type LocalUpdate, type RemoteView } from './a2a-mirror.js';
import { A2aRemote, failureText, remoteRefusal } from './a2a-remote.js';
import type { Resolver } from './remote-url.js';
import { Follower, type Feed } from './a2a-follower.js';
import { A2A_LIMITS } from './a2a-limits.js';

const HOUR_MS = 3600_000;

/** How a link's mirrored changes are paced (in memory: a restart starts afresh). */
interface Pace {
  /** When the last change was mirrored, and the changes of the last hour (oldest first). */
  lastAt: number;
  recent: number[];
  /** The latest remote status not mirrored yet, and the timer that mirrors it. */
  pending: RemoteView | null;
  cancel: (() => void) | null;
  /** Mirrors of the link run one after another. */
  queue: Promise<unknown>;
  /** The state and text last mirrored (a repeat is dropped before the store is read), and the
   *  link as last written (a link is written when it changed, not at every status). */
  seen: string;
  saved: string;
}

const viewKey = (v: RemoteView): string => `${v.state}\n${v.text}`;

export interface BridgeOptions {
  engine: MailEngine;
  clock: Clock;
  log: Logger;
  /** For tests: how remote names resolve. */
  resolver?: Resolver;
}

/** The part of a step that names the remote agent (and so one A2aRemote). */
const remoteKey = (s: A2aStep): string => JSON.stringify([s.url, s.allow_remote ?? false, s.token_file ?? null]);

export class A2aBridge {
  readonly links: LinkBook;
  private remotes = new Map<string, A2aRemote>();
  private followers = new Map<string, Follower>();
  private paces = new Map<string, Pace>();
  private closed = false;

  constructor(private readonly o: BridgeOptions) {
    this.links = new LinkBook(o.engine.store, o.log);
  }

  get engine(): MailEngine {
    return this.o.engine;
  }

  get log(): Logger {
    return this.o.log;
  }

  now(): number {
    return this.o.clock.now();
  }

  remote(step: A2aStep): A2aRemote {
    const key = remoteKey(step);
    let r = this.remotes.get(key);
    if (!r) this.remotes.set(key, (r = new A2aRemote(step, { now: () => this.o.clock.now(), ...(this.o.resolver ? { resolver: this.o.resolver } : {}) })));
    return r;
  }

  /** Follows the link (again after a restart). `feed`: the stream of a message just sent to the
   *  remote agent, read first; `kick`: we just sent it something, the next round starts now (a
   *  link already followed only takes the feed or the kick). */
  follow(link: A2aLink, o: { feed?: Feed; kick?: boolean } = {}): void {
    if (this.closed || link.done !== null) {
      o.feed?.abort.abort();
      return;
    }
    const id = recordId(link.account, link.threadId);
    const running = this.followers.get(id);
    if (running) {
      if (o.feed || o.kick) running.kick(o.feed ?? null);
      return;
    }
    const deps = {
      clock: this.o.clock,
      log: this.o.log,
      remote: (l: A2aLink) => this.remote(l.step),
      apply: (l: A2aLink, v: RemoteView) => this.apply(l, v),
      giveUp: (l: A2aLink, why: string) => this.giveUp(l, why),
    };
    const f = new Follower(link, deps, o.feed ?? null);
    this.followers.set(id, f);
    void f.done.finally(() => {
      if (this.followers.get(id) === f) this.followers.delete(id);
    });
  }

  /** Every link the store still has open is followed again. */
  async start(): Promise<void> {
    const open = await this.links.open();
    for (const link of open) this.follow(link);
    if (open.length) this.o.log.info({ links: open.length }, 'a2a: following remote tasks again');
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.followers.values()];
    for (const f of all) f.stop();
    for (const p of this.paces.values()) p.cancel?.();
    this.paces.clear();
    await Promise.allSettled(all.map((f) => f.done));
  }

  /** The account the link acts as: null when it was removed (or its name now names another). */
  async callerOf(link: A2aLink): Promise<Caller | null> {
    const account = await this.o.engine.store.getAccount(link.account);
    if (!account || account.createdAt !== link.accountCreatedAt) return null;
    return this.o.engine.callerFor(account, null);
  }

  async finish(link: A2aLink, why: string): Promise<void> {
    if (link.done !== null) return;
    link.done = why;
    await this.links.put(link);
    const id = recordId(link.account, link.threadId);
    this.followers.get(id)?.stop();
    this.paces.get(id)?.cancel?.();
    this.paces.delete(id);
    this.o.log.info({ task_id: link.taskId, remote_task_id: link.remoteTaskId, why }, 'a2a: link done');
  }

  /** Moves the task as `caller`; a move the rules refuse (it moved meanwhile, or is final) is
   *  logged and left ('kept'). 'not_ours': the task is not the caller's to move (any more). */
  async updateAs(caller: Caller, taskId: string, u: LocalUpdate): Promise<'moved' | 'kept' | 'not_ours'> {
    try {
      await this.o.engine.tasks.update(caller, checkedUpdate(taskId, u));
      return 'moved';
    } catch (err) {
      if (!(err instanceof MailError)) throw err;
      if (err.code === 'invalid_transition' || err.code === 'task_terminal') {
        this.o.log.info({ task_id: taskId, state: u.state, code: err.code }, 'a2a: the remote status was not mirrored');
        return 'kept';
      }
      if (err.code === 'not_task_party' || err.code === 'unknown_task') return 'not_ours';
      // The task's history is full: only a final state would be taken, so following it is over.
      if (err.code === 'too_large' && err.details.field === 'history') {
        await this.o.engine.tasks
          .update(caller, checkedUpdate(taskId, { state: 'failed', note: 'the remote agent changed state more often than a task keeps' }))
          .catch(() => undefined);
        return 'not_ours';
      }
      throw err;
    }
  }

  /** Moves the link's task as its account; false (and the link done) when that is no longer ours. */
  async update(link: A2aLink, u: LocalUpdate): Promise<boolean> {
    const caller = await this.callerOf(link);
    const moved = caller ? await this.updateAs(caller, link.taskId, u) : 'not_ours';
    if (moved !== 'not_ours') return true;
    await this.finish(link, caller ? "the local task is not the account's to move" : 'the account is gone');
    return false;
  }

  /** Takes what the remote task says now. A final status is mirrored at once (after a change
   *  still waiting); another at once when the link's last change is coalesceMs old, else it waits
   *  for then, replaced by any later one ('open' meanwhile). */
  async apply(link: A2aLink, view: RemoteView): Promise<'final' | 'open'> {
    if (view.state !== link.remoteState) {
      // Seen now (the follower's backoff and its day count from it); written with the mirror.
      link.remoteState = view.state;
      link.activeAt = this.now();
    }
    const pace = this.paceOf(link);
    const wait = pace.lastAt + A2A_LIMITS.coalesceMs - this.now();
    if (isRemoteFinal(view.state)) {
      const before = this.takePending(pace);
      if (before) await this.serially(pace, () => this.mirror(link, before, pace));
      return this.serially(pace, () => this.mirror(link, view, pace));
    }
    if (viewKey(view) === pace.seen) {
      // Back to what was mirrored last: a change still waiting is void.
      this.takePending(pace);
      return 'open';
    }
    if (wait <= 0 && !pace.pending)
      return this.serially(pace, () => {
        // Decided again in its turn: a change mirrored just before, still in its awaits when this
        // status came, has set lastAt since (seen under load: two changes 48 ms apart).
        const again = pace.lastAt + A2A_LIMITS.coalesceMs - this.now();
        if (pace.pending) return Promise.resolve('open' as const); // a later status waits: it wins
        if (again <= 0) return this.mirror(link, view, pace);
        this.pend(link, view, pace, again);
        return Promise.resolve('open' as const);
      });
    this.pend(link, view, pace, wait);
    return 'open';
  }

  /** Keeps the status for when the link's last change is coalesceMs old (a later one replaces it). */
  private pend(link: A2aLink, view: RemoteView, pace: Pace, wait: number): void {
    pace.pending = view;
    pace.cancel ??= this.o.clock.timer(Math.max(wait, 0), () => {
      pace.cancel = null;
      const v = this.takePending(pace);
      if (v && link.done === null)
        this.serially(pace, () => this.mirror(link, v, pace)).catch((err: unknown) =>
          this.o.log.warn({ task_id: link.taskId, err: failureText(err) }, 'a2a: mirroring a remote status failed'),
        );
    });
  }

  private paceOf(link: A2aLink): Pace {
    const id = recordId(link.account, link.threadId);
    let p = this.paces.get(id);
    if (!p) this.paces.set(id, (p = { lastAt: -Infinity, recent: [], pending: null, cancel: null, queue: Promise.resolve(), seen: '', saved: '' }));
    return p;
  }

  private takePending(p: Pace): RemoteView | null {
    const v = p.pending;
    p.pending = null;
    p.cancel?.();
    p.cancel = null;
    return v;
  }

  private serially<T>(p: Pace, f: () => Promise<T>): Promise<T> {
    const run = p.queue.then(f);
    p.queue = run.catch(() => undefined);
    return run;
  }

  /** Mirrors the remote task's status into ours: each state once (a repeated status changes
   *  nothing), a new question while one is open as working then the question. A change past the
   *  hour's budget fails our task instead (a final status is always taken). */
  private async mirror(link: A2aLink, view: RemoteView, pace: Pace): Promise<'final' | 'open'> {
    if (link.done !== null) return 'final';
    const out = await this.mirrorOnce(link, view, pace);
    // Only once it is taken: a status that failed to mirror is tried again when it comes again.
    pace.seen = viewKey(view);
    return out;
  }

  private async mirrorOnce(link: A2aLink, view: RemoteView, pace: Pace): Promise<'final' | 'open'> {
    const saved = `${link.remoteState}|${link.activeAt}`;
    if (pace.saved !== saved) {
      await this.links.put(link);
      pace.saved = saved;
    }
    const local = await this.o.engine.store.getTask(link.taskId);
    if (!local) {
      await this.finish(link, 'the local task is gone');
      return 'final';
    }
    if (isTerminal(local.state)) {
      // The requester canceled while the remote works on: tell the remote (the wake of the cancel
      // does too; whoever comes first, once).
      if (local.state === 'canceled' && !isRemoteFinal(view.state)) await this.cancelRemote(link);
      await this.finish(link, `the local task is ${local.state}`);
      return 'final';
    }
    const u = updateFor(view, link.cancelRequested);
    if (u) {
      const last = local.history[local.history.length - 1];
      const newQuestion = u.state === 'input_required' && local.state === 'input_required' && u.note !== undefined && u.note !== last?.note;
      if (u.state !== local.state || newQuestion) {
        const now = this.now();
        while (pace.recent.length && pace.recent[0]! <= now - HOUR_MS) pace.recent.shift();
        if (!isRemoteFinal(view.state) && pace.recent.length >= A2A_LIMITS.changesPerHour) {
          await this.giveUp(link, `the remote agent changed state too often (more than ${A2A_LIMITS.changesPerHour} times in an hour): stopped following its task`);
          return 'final';
        }
        pace.lastAt = now;
        pace.recent.push(now);
        if (newQuestion && !(await this.update(link, { state: 'working' }))) return 'final';
        if (!(await this.update(link, u))) return 'final';
      }
    }
    if (isRemoteFinal(view.state)) {
      await this.finish(link, `the remote task is ${view.state}`);
      return 'final';
    }
    return 'open';
  }

  /** CancelTask on the remote, once; a remote that says it cannot (it is final) is logged. Throws
   *  when the remote cannot be reached (the follower tries again). */
  async cancelRemote(link: A2aLink): Promise<void> {
    if (link.cancelRequested) return;
    const { client } = await this.remote(link.step).clients();
    try {
      await client.cancelTask({ tenant: '', id: link.remoteTaskId, metadata: undefined });
    } catch (err) {
      if (!remoteRefusal(err)) throw err;
      this.o.log.info({ task_id: link.taskId, err: failureText(err) }, 'a2a: the remote agent did not cancel its task');
    }
    link.cancelRequested = true;
    link.activeAt = this.now();
    await this.links.put(link);
  }

  /** Fails our task with the reason (if it is still open) and stops following. */
  async giveUp(link: A2aLink, why: string): Promise<void> {
    const local = await this.o.engine.store.getTask(link.taskId);
    if (local && !isTerminal(local.state)) await this.update(link, { state: 'failed', note: why });
    await this.finish(link, why);
  }
}
