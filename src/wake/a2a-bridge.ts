// What every a2a step of a daemon shares: the links (a2a-links.ts), one A2aRemote per card, one
// follower per open link, and the one place a remote status becomes an update of our task, made
// as the account the step delivers for. Started with the daemon (open links are followed again)
// and closed with it (every follower stops).
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
    this.followers.get(recordId(link.account, link.threadId))?.stop();
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

  /** Mirrors the remote task's status into ours: each state once (a repeated status changes
   *  nothing), a new question while one is open as working then the question. */
  async apply(link: A2aLink, view: RemoteView): Promise<'final' | 'open'> {
    if (view.state !== link.remoteState) {
      link.remoteState = view.state;
      link.activeAt = this.now();
      await this.links.put(link);
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
      if (newQuestion && !(await this.update(link, { state: 'working' }))) return 'final';
      if ((u.state !== local.state || newQuestion) && !(await this.update(link, u))) return 'final';
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
