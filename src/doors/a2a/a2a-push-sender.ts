// Sends A2A push notifications for the configs this daemon created (a2a-push.ts). Every task change
// is mail in the task's thread, so the store's commit feed (every daemon's commits, for a shared
// store) says when one of the watched tasks moved; the sender then reads the task as the config's
// owner (who must still be able to read it) and posts one StreamResponse per history entry it has
// not notified, the result as an artifact update before the status that brought it, through the
// daemon's durable outbox of signed POSTs (at least once, retried with backoff, M4A-Signature and
// M4A-Event-Id as for wake webhooks, with the key of the purpose a2a-push). One task's notifications go out in order, one at a time; a
// terminal task's configs are deleted after its last notification.
//
// It also counts this daemon's configs, in all and per account, for the caps of a2a-push.ts: by
// identity, loaded at start, kept by create, delete and forget, and set right by every pass over a
// task (a config another daemon took over is no longer this one's).
import { createHash } from 'node:crypto';
import type { MailEngine } from '../../engine/mail-engine.js';
import type { CommitEvent } from '../../store/types.js';
import { MailError } from '../../wire/errors.js';
import { isTerminal, type TaskOut } from '../../wire/tasks.js';
import { artifactOf, statusAt } from './a2a-mapping.js';
import { parsePushRecord, PUSH_KIND, PUSH_LIMITS, pushRecordId, pushRow, type PushKey, type PushRecord, type PushWatch } from './a2a-push.js';
import type { StreamEvent } from './a2a-wire.js';

/** One signed POST, queued durably; settles after the first attempt (the outbox retries). */
export type PushPost = (e: { eventId: string; url: string; body: string; headers: Record<string, string>; purpose: 'a2a-push' }) => Promise<{ status: string; detail: string }>;

const A2A_CONTENT_TYPE = 'application/a2a+json';

export class A2aPushSender implements PushWatch {
  /** Tasks with a config of this daemon → its configs by record id; `stored` once seen in the
   *  store (a create counts its config before writing it). */
  private watched = new Map<string, Map<string, { key: PushKey; stored: boolean }>>();
  private perAccount = new Map<string, number>();
  private total = 0;
  private runs = new Map<string, Promise<void>>();
  private again = new Set<string>();
  private unsubscribe: (() => void) | null = null;
  private closed = false;

  constructor(
    private o: {
      engine: MailEngine;
      post: PushPost;
    },
  ) {}

  /** Loads this daemon's configs, follows the commit feed, and catches up on changes made while
   *  it was down. */
  async start(): Promise<void> {
    const rows = await this.o.engine.store.listRecords(PUSH_KIND, '', PUSH_LIMITS.perDaemon * 2);
    for (const row of rows) {
      const r = parsePushRecord(row);
      if (r?.host === this.o.engine.hostId) this.track(r, true);
    }
    this.unsubscribe = this.o.engine.store.onCommit((e) => void this.commit(e).catch((err: unknown) => this.warn('A2A push: reading a commit failed', err)));
    for (const taskId of this.watched.keys()) this.run(taskId);
  }

  added(k: PushKey): boolean {
    return this.track(k, false);
  }

  private track(k: PushKey, stored: boolean): boolean {
    const task = this.watched.get(k.task_id) ?? new Map<string, { key: PushKey; stored: boolean }>();
    this.watched.set(k.task_id, task);
    const id = pushRecordId(k);
    const known = task.get(id);
    if (known) {
      known.stored ||= stored;
      return false;
    }
    task.set(id, { key: { task_id: k.task_id, account: k.account, id: k.id }, stored });
    this.perAccount.set(k.account, this.count(k.account) + 1);
    this.total++;
    return true;
  }

  removed(k: PushKey): void {
    const task = this.watched.get(k.task_id);
    if (!task?.delete(pushRecordId(k))) return;
    if (task.size === 0) this.watched.delete(k.task_id);
    const left = this.count(k.account) - 1;
    if (left > 0) this.perAccount.set(k.account, left);
    else this.perAccount.delete(k.account);
    this.total--;
  }

  has(k: PushKey): boolean {
    return this.watched.get(k.task_id)?.has(pushRecordId(k)) ?? false;
  }

  count(account?: string): number {
    return account === undefined ? this.total : (this.perAccount.get(account) ?? 0);
  }

  /** Resolves when no task's notifications are being sent (tests). */
  async idle(): Promise<void> {
    while (this.runs.size > 0) await Promise.allSettled([...this.runs.values()]);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe?.();
    await this.idle();
  }

  private warn(msg: string, err: unknown): void {
    this.o.engine.log.warn({ err: err instanceof Error ? err.message : String(err) }, msg);
  }

  private async commit(e: CommitEvent): Promise<void> {
    if (this.watched.size === 0 || this.closed) return;
    for (const key of e.keys) {
      const [m] = await this.o.engine.store.messagesAfter(key, e.seq - 1, 1);
      if (!m || m.seq !== e.seq) continue;
      if (m.task && this.watched.has(m.task.task_id)) this.run(m.task.task_id);
      return;
    }
  }

  /** One pass over the task's configs at a time; a change during a pass runs another after it. */
  private run(taskId: string): void {
    if (this.runs.has(taskId)) {
      this.again.add(taskId);
      return;
    }
    const p = this.pass(taskId)
      .catch((err: unknown) => this.warn('A2A push notification failed', err))
      .finally(() => {
        this.runs.delete(taskId);
        if (this.again.delete(taskId) && !this.closed) this.run(taskId);
      });
    this.runs.set(taskId, p);
  }

  private async pass(taskId: string): Promise<void> {
    const read = await this.o.engine.store.listRecords(PUSH_KIND, `${taskId}/`, 1_000);
    const rows = read.flatMap((row) => parsePushRecord(row) ?? []);
    const mine = rows.filter((r) => r.host === this.o.engine.hostId);
    // Set the count right: a config replaced through another daemon is that daemon's now, and one
    // seen in the store before and gone now was deleted through another daemon. One never seen
    // there stays: a create is counting it before its write.
    for (const r of rows) if (r.host !== this.o.engine.hostId) this.removed(r);
    for (const r of mine) this.track(r, true);
    const here = new Set(mine.map(pushRecordId));
    if (read.length < 1_000) for (const [id, c] of this.watched.get(taskId) ?? []) if (c.stored && !here.has(id)) this.removed(c.key);
    for (const r of mine) {
      if (this.closed) return;
      await this.notify(r);
    }
  }

  /** The config's owner's view of the task, or null when the owner can no longer read it. */
  private async taskFor(r: PushRecord): Promise<TaskOut | null> {
    const account = await this.o.engine.store.getAccount(r.account);
    if (!account) return null;
    try {
      return await this.o.engine.tasks.get(await this.o.engine.callerFor(account, null), { task_id: r.task_id });
    } catch (e) {
      if (e instanceof MailError && (e.code === 'unknown_task' || e.code === 'not_task_party')) return null;
      throw e;
    }
  }

  private async notify(r: PushRecord): Promise<void> {
    const store = this.o.engine.store;
    const id = pushRecordId(r);
    const t = await this.taskFor(r);
    if (!t) {
      await this.forget(r);
      return;
    }
    const result = JSON.stringify(t.result ?? null);
    const artifact = result !== r.result ? artifactOf(t) : undefined;
    const ids = { taskId: t.task_id, contextId: t.thread_id };
    const events: Array<{ key: string; event: StreamEvent }> = [];
    for (let i = r.sent; i < t.history.length; i++) {
      if (artifact && i === t.history.length - 1) events.push({ key: `${i}a`, event: { artifactUpdate: { ...ids, artifact, lastChunk: true } } });
      events.push({ key: `${i}s`, event: { statusUpdate: { ...ids, status: statusAt(t, i), ...(i === t.history.length - 1 ? { metadata: { version: t.version } } : {}) } } });
    }
    for (const { key, event } of events) {
      const eventId = `a2a-push-${createHash('sha256').update(`${id}#${r.created_at}#${key}`).digest('hex').slice(0, 40)}`;
      await this.o.post({ eventId, url: r.url, body: JSON.stringify(event), headers: this.headers(r), purpose: 'a2a-push' });
    }
    if (isTerminal(t.state)) return this.forget(r);
    if (events.length === 0 && result === r.result) return;
    // A config replaced or deleted meanwhile keeps what its owner did.
    const now = await store.getRecord(PUSH_KIND, id);
    if (now && parsePushRecord(now)?.created_at === r.created_at) await store.putRecord(pushRow({ ...r, sent: t.history.length, result }, this.o.engine.clock.now()));
  }

  private headers(r: PushRecord): Record<string, string> {
    return {
      'content-type': A2A_CONTENT_TYPE,
      ...(r.token ? { 'x-a2a-notification-token': r.token } : {}),
      ...(r.scheme && r.credentials ? { authorization: `${r.scheme} ${r.credentials}` } : {}),
    };
  }

  private async forget(r: PushRecord): Promise<void> {
    await this.o.engine.store.deleteRecord(PUSH_KIND, pushRecordId(r));
    this.removed(r);
  }
}
