// A2A push-notification configs (specification §9.3: Create/Get/List/DeleteTaskPushNotificationConfig)
// kept as store records, one per (task, owner account, config id). A config is the caller's own:
// another party of the task never sees or deletes it. Its URL must be on this machine
// (http://127.0.0.1, localhost or [::1], as for listeners): any local process with a secret may
// create one, so none may aim the daemon at another machine. The token or credentials it holds are
// sent back to that URL and never shown again (Create, Get and List answer without them). The
// daemon that created a config sends its notifications (a2a-push-sender.ts): loopback means that
// machine's loopback, also when several daemons share one PostgreSQL.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Caller } from '../../engine/mail-engine.js';
import { checkListenerUrl } from '../../engine/listener-url.js';
import type { RecordRow, Store } from '../../store/types.js';
import { MailError } from '../../wire/errors.js';
import { LIMITS } from '../../wire/limits.js';
import { A2aRpcError } from './a2a-errors.js';

export const PUSH_KIND = 'a2a-push';

export const PUSH_LIMITS = {
  /** Configs one account keeps on one task. */
  perTask: 8,
  /** Configs of one account this daemon sends for, all tasks together: no account can use up the
   *  daemon's share alone. */
  perAccount: 256,
  /** Configs this daemon sends for, all tasks together. */
  perDaemon: 10_000,
  tokenBytes: 512,
  credentialsBytes: 4096,
} as const;

/** Visible ASCII only: a header value with CR, LF or NUL could split the request. */
const headerValue = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/, 'visible ASCII only (it is sent as an HTTP header)');

export const PushConfigIn = z.object({
  tenant: z.string().optional(),
  id: z
    .string()
    .max(64)
    .regex(/^[\w.-]*$/, 'letters, digits, _ . - only')
    .optional(),
  taskId: z.string().max(256).optional(),
  url: z.string().min(1).max(LIMITS.urlBytes),
  token: z.union([z.literal(''), headerValue(PUSH_LIMITS.tokenBytes)]).optional(),
  authentication: z
    .object({
      scheme: z.string().regex(/^[A-Za-z][\w!#$%&'*+.^`|~-]{0,63}$/, 'an HTTP authentication scheme (Bearer, Basic …)'),
      credentials: z.union([z.literal(''), headerValue(PUSH_LIMITS.credentialsBytes)]).optional(),
    })
    .optional(),
});
export const PushConfigRef = z.object({ tenant: z.string().optional(), taskId: z.string().min(1).max(256), id: z.string().min(1).max(64) });
export const PushConfigList = z.object({
  tenant: z.string().optional(),
  taskId: z.string().min(1).max(256),
  pageSize: z.number().int().min(0).max(100).optional(),
  pageToken: z.string().max(128).optional(),
});
export type PushConfigIn = z.output<typeof PushConfigIn>;

/** As stored. */
export interface PushRecord {
  task_id: string;
  id: string;
  account: string;
  url: string;
  token?: string;
  scheme?: string;
  credentials?: string;
  /** The daemon that sends its notifications. */
  host: string;
  created_at: string;
  /** History entries already notified (the first notification is the entry after these). */
  sent: number;
  /** JSON of the result last notified as an artifact. */
  result: string;
}

/** What Create, Get and List answer: the config without its secrets. */
export interface PushConfigOut {
  id: string;
  taskId: string;
  url: string;
  authentication?: { scheme: string };
}

const recordId = (taskId: string, account: string, id: string): string => `${taskId}/${account}/${id}`;
export const pushRecordId = (k: PushKey): string => recordId(k.task_id, k.account, k.id);

export function parsePushRecord(row: RecordRow): PushRecord | null {
  try {
    const v = JSON.parse(row.value) as Partial<PushRecord>;
    if (typeof v.task_id !== 'string' || typeof v.id !== 'string' || typeof v.account !== 'string' || typeof v.url !== 'string' || typeof v.host !== 'string') return null;
    return { ...(v as PushRecord), sent: typeof v.sent === 'number' ? v.sent : 0, result: typeof v.result === 'string' ? v.result : 'null' };
  } catch {
    return null;
  }
}

export const pushRow = (r: PushRecord, at: number): RecordRow => ({ kind: PUSH_KIND, id: recordId(r.task_id, r.account, r.id), value: JSON.stringify(r), updatedAt: at });

const out = (r: PushRecord): PushConfigOut => ({ id: r.id, taskId: r.task_id, url: r.url, ...(r.scheme ? { authentication: { scheme: r.scheme } } : {}) });

const notFound = (taskId: string, id?: string): A2aRpcError =>
  A2aRpcError.a2a('TaskNotFoundError', id ? `no push notification config ${id.slice(0, 64)} of yours on this task` : 'task not found', { taskId: taskId.slice(0, 80) });

/** A config's identity: one per (task, owner account, id). */
export interface PushKey {
  task_id: string;
  account: string;
  id: string;
}

/** What the sender is told when this daemon's configs change. Counted by identity, so a replaced
 *  config stays one config. */
export interface PushWatch {
  /** A config of this daemon exists on the task (its sender follows it); true when it is new. */
  added(k: PushKey): boolean;
  /** A config is gone (deleted, or never stored after all). */
  removed(k: PushKey): void;
  has(k: PushKey): boolean;
  /** How many configs this daemon sends for, in all or of one account. */
  count(account?: string): number;
}

export class PushConfigs {
  constructor(
    private o: {
      store: Store;
      hostId: string;
      now(): number;
      watch: PushWatch;
      /** The daemon's own listening ports: a push there would speak to the daemon as its owner. */
      ownPorts?: () => number[];
    },
  ) {}

  /** Creates (or, with the id of one of the caller's configs on the task, replaces) a config on a
   *  task the caller may read; `task` is that task's id and its history length now. */
  async create(
    c: Caller,
    task: { task_id: string; history: unknown[]; result?: unknown },
    p: PushConfigIn,
    /** The caller holds a slot of reserve(): it is this config's, not another's. */
    o: { reserved?: boolean } = {},
  ): Promise<PushConfigOut> {
    this.checkUrl(p.url);
    const id = p.id || `p-${randomBytes(8).toString('hex')}`;
    const mine = await this.mine(c, task.task_id);
    const replacing = mine.some((r) => r.id === id);
    if (!replacing && mine.length >= PUSH_LIMITS.perTask)
      throw new MailError('too_large', `at most ${PUSH_LIMITS.perTask} push notification configs of one account on a task`, {
        field: 'configs',
        limit: PUSH_LIMITS.perTask,
        actual: mine.length + 1,
      });
    // A config this daemon sends for already is replaced in place; anything else counts against
    // the caps (also a config another daemon sent for, which this one takes over).
    const key: PushKey = { task_id: task.task_id, account: c.account.id, id };
    const fresh = !this.o.watch.has(key);
    // Slots other SendMessages hold count too; our own (reserved) does not.
    const own = o.reserved ? 1 : 0;
    const ofAccount = this.o.watch.count(c.account.id) + this.held(c.account.id) - own;
    if (fresh && ofAccount >= PUSH_LIMITS.perAccount)
      throw new MailError('too_large', `at most ${PUSH_LIMITS.perAccount} push notification configs of one account on this daemon`, {
        field: 'configs',
        limit: PUSH_LIMITS.perAccount,
        actual: ofAccount + 1,
      });
    if (fresh && this.o.watch.count() + this.held() - own >= PUSH_LIMITS.perDaemon)
      throw new MailError('rate_limited', `this daemon sends for ${PUSH_LIMITS.perDaemon} push notification configs already`, { retry_after: 60 });
    const rec: PushRecord = {
      task_id: task.task_id,
      id,
      account: c.account.id,
      url: p.url,
      ...(p.token ? { token: p.token } : {}),
      ...(p.authentication ? { scheme: p.authentication.scheme } : {}),
      ...(p.authentication?.credentials ? { credentials: p.authentication.credentials } : {}),
      host: this.o.hostId,
      created_at: new Date(this.o.now()).toISOString(),
      sent: task.history.length,
      result: JSON.stringify(task.result ?? null),
    };
    // Counted before the write, in the same turn as the checks, so concurrent creates cannot pass a
    // cap together; uncounted again if the write fails.
    const counted = this.o.watch.added(key);
    try {
      await this.o.store.putRecord(pushRow(rec, this.o.now()));
    } catch (e) {
      if (counted) this.o.watch.removed(key);
      throw e;
    }
    return out(rec);
  }

  /** Slots SendMessage holds between its check and its create (per account, and in all). */
  private reserved = new Map<string, number>();
  private reservedTotal = 0;
  private held(account?: string): number {
    return account === undefined ? this.reservedTotal : (this.reserved.get(account) ?? 0);
  }

  /** What create would refuse before it reads the task, with a slot held until the release: SendMessage
   *  checks a config it carries before it makes the task, so a refused config leaves no task behind,
   *  and two sends at the last free slot cannot both pass the check and one then fail its create. */
  reserve(c: Caller, p: PushConfigIn): () => void {
    this.checkUrl(p.url);
    const account = c.account.id;
    const ofAccount = this.o.watch.count(account) + this.held(account);
    if (ofAccount >= PUSH_LIMITS.perAccount)
      throw new MailError('too_large', `at most ${PUSH_LIMITS.perAccount} push notification configs of one account on this daemon`, {
        field: 'configs',
        limit: PUSH_LIMITS.perAccount,
        actual: ofAccount + 1,
      });
    if (this.o.watch.count() + this.held() >= PUSH_LIMITS.perDaemon)
      throw new MailError('rate_limited', `this daemon sends for ${PUSH_LIMITS.perDaemon} push notification configs already`, { retry_after: 60 });
    this.reserved.set(account, this.held(account) + 1);
    this.reservedTotal++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.reservedTotal--;
      const left = this.held(account) - 1;
      if (left > 0) this.reserved.set(account, left);
      else this.reserved.delete(account);
    };
  }

  private checkUrl(url: string): void {
    let port: number;
    try {
      port = checkListenerUrl(url).port;
    } catch (e) {
      if (e instanceof MailError) throw A2aRpcError.invalidParams('url', e.message);
      throw e;
    }
    if (this.o.ownPorts?.().includes(port)) throw A2aRpcError.invalidParams('url', `port ${port} is this daemon's own: a push goes to a receiver of yours`);
  }

  async get(c: Caller, taskId: string, id: string): Promise<PushConfigOut> {
    const row = await this.o.store.getRecord(PUSH_KIND, recordId(taskId, c.account.id, id));
    const r = row ? parsePushRecord(row) : null;
    if (!r) throw notFound(taskId, id);
    return out(r);
  }

  /** The caller's configs on the task, in id order; a page token is the last id of a page. */
  async list(c: Caller, taskId: string, pageSize: number = PUSH_LIMITS.perTask, pageToken = ''): Promise<{ configs: PushConfigOut[]; nextPageToken: string }> {
    const all = (await this.mine(c, taskId)).filter((r) => r.id > pageToken);
    const size = pageSize || PUSH_LIMITS.perTask;
    const page = all.slice(0, size);
    return { configs: page.map(out), nextPageToken: all.length > size ? (page.at(-1)?.id ?? '') : '' };
  }

  async delete(c: Caller, taskId: string, id: string): Promise<void> {
    if (!(await this.o.store.deleteRecord(PUSH_KIND, recordId(taskId, c.account.id, id)))) throw notFound(taskId, id);
    this.o.watch.removed({ task_id: taskId, account: c.account.id, id });
  }

  private async mine(c: Caller, taskId: string): Promise<PushRecord[]> {
    const rows = await this.o.store.listRecords(PUSH_KIND, `${taskId}/${c.account.id}/`, PUSH_LIMITS.perTask + 1);
    return rows.flatMap((row) => parsePushRecord(row) ?? []);
  }
}
