// The A2A 1.0 methods on engine.tasks, for one agent (an account at /a2a/<account>) and one caller
// (the bearer's account and attested session). Every task the door shows is assigned to that
// agent and readable by the caller; anything else is TaskNotFoundError.
import { createHash } from 'node:crypto';
import type { Caller, MailEngine } from '../../engine/mail-engine.js';
import { MailError, detailText } from '../../wire/errors.js';
import { ReplyRequest } from '../../wire/ops.js';
import { TaskCancelRequest, TaskCreateRequest, TaskId, isTerminal, type TaskOut } from '../../wire/tasks.js';
import { parseInput } from '../../wire/validate.js';
import { A2aRpcError } from './a2a-errors.js';
import { acceptsOurOutput, accountOf, textOf, titleOf, toA2aTask, type TaskView } from './a2a-mapping.js';
import { settle, type Follow } from './a2a-stream.js';
import { PushConfigIn, type PushConfigOut, type PushConfigs } from './a2a-push.js';
import { STATE_OF_A2A, type ListTasksParams, type SendMessageParams, type Task, type TaskIdParams } from './a2a-wire.js';

/** ListTasks reads at most this many of the caller's tasks per call while it filters them for
 *  this agent; a page cut short by it still carries a nextPageToken. */
const LIST_SCAN_MAX = 1_000;

/** Our field names as A2A's request names them, for invalid-params answers. */
const FIELD_IN_A2A: Record<string, string> = {
  title: 'message.parts',
  instructions: 'message.parts',
  body: 'message.parts',
  parent_task_id: 'message.referenceTaskIds',
  reason: 'metadata.reason',
};

function asA2aField<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof MailError && (e.code === 'malformed' || e.code === 'too_large')) {
      const field = detailText(e.details.field);
      throw A2aRpcError.invalidParams(FIELD_IN_A2A[field] ?? field, e.message);
    }
    throw e;
  }
}

/** A retried message (same messageId, same caller, same agent) names the same task or mail. */
const idempotencyKey = (agent: string, messageId: string): string => `a2a-${createHash('sha256').update(`${agent}\n${messageId}`).digest('hex').slice(0, 40)}`;

export class A2aMethods {
  constructor(
    private engine: MailEngine,
    private caller: Caller,
    /** The account whose endpoint this is. */
    private agent: string,
    private signal: AbortSignal,
    /** Absent: this daemon sends no push notifications. */
    private push: PushConfigs | null = null,
  ) {}

  get follow(): Follow {
    return { engine: this.engine, caller: this.caller, signal: this.signal };
  }

  /** The task, if it is this agent's and the caller may read it. */
  async taskOf(id: string): Promise<TaskOut> {
    if (!TaskId.safeParse(id).success) throw A2aRpcError.a2a('TaskNotFoundError', 'task not found', { taskId: id.slice(0, 80) });
    const t = await this.engine.tasks.get(this.caller, { task_id: id });
    if (accountOf(t.to) !== this.agent) throw A2aRpcError.a2a('TaskNotFoundError', 'task not found', { taskId: id });
    return t;
  }

  /** The task in A2A's terms, its history the thread's mail as the caller reads it. */
  async present(t: TaskOut, v: Omit<TaskView, 'thread'> = {}): Promise<Task> {
    if (v.historyLength === 0) return toA2aTask(t, v);
    const got = await this.engine.get(this.caller, { message_id: t.thread_id, thread: true });
    return toA2aTask(t, { ...v, thread: got.thread ?? [] });
  }

  /** SendMessage's delivery: a new task for this agent, or mail in an open task's thread (to the
   *  other party: for the requester, the answer an input_required task waits for). Returns the task
   *  and the version the answer must pass to count as news. */
  async deliver(p: SendMessageParams): Promise<{ task: TaskOut; from: number }> {
    const m = p.message;
    const pushIn = p.configuration?.taskPushNotificationConfig;
    const push = pushIn === undefined || pushIn === null ? undefined : this.pushParams(pushIn, 'configuration.taskPushNotificationConfig');
    if (!acceptsOurOutput(p.configuration?.acceptedOutputModes))
      throw A2aRpcError.a2a('ContentTypeNotSupportedError', 'this agent answers in text/plain and application/json only (configuration.acceptedOutputModes)');
    const text = textOf(m);
    const key = idempotencyKey(this.agent, m.messageId);
    if (m.taskId) {
      const t = await this.taskOf(m.taskId);
      if (m.contextId && m.contextId !== t.thread_id) throw A2aRpcError.invalidParams('message.contextId', `is not the context of task ${t.task_id}`);
      if (isTerminal(t.state)) throw A2aRpcError.a2a('UnsupportedOperationError', `task ${t.task_id} is ${t.state}: it takes no more messages`, { taskId: t.task_id });
      const req = asA2aField(() => parseInput(ReplyRequest, { message_id: t.thread_id, body: text, ack: false, idempotency_key: key }));
      await this.engine.reply(this.caller, req);
      return { task: t, from: t.version };
    }
    if (m.contextId) throw A2aRpcError.a2a('UnsupportedOperationError', 'a new task starts its own context: send message.taskId to continue a task, or leave contextId out');
    const parent = m.referenceTaskIds?.[0];
    const req = asA2aField(() =>
      parseInput(TaskCreateRequest, { to: this.agent, title: titleOf(m), instructions: text, idempotency_key: key, ...(parent !== undefined ? { parent_task_id: parent } : {}) }),
    );
    // A config refused after the task was made would answer an error with the task stored: its
    // slot is held from the check to its create.
    const release = push ? this.pushing().reserve(this.caller, push) : null;
    try {
      const task = await this.engine.tasks.create(this.caller, req);
      if (push) await this.pushing().create(this.caller, task, { ...push, taskId: task.task_id }, { reserved: true });
      return { task, from: 0 };
    } finally {
      release?.();
    }
  }

  private pushing(): PushConfigs {
    if (!this.push) throw A2aRpcError.a2a('PushNotificationNotSupportedError', 'this agent sends no push notifications: follow the task with SubscribeToTask or GetTask');
    return this.push;
  }

  private pushParams(v: unknown, at: string): PushConfigIn {
    this.pushing();
    const r = PushConfigIn.safeParse(v);
    if (r.success) return r.data;
    const issue = r.error.issues[0];
    throw A2aRpcError.invalidParams([at, ...(issue?.path ?? []).map(String)].filter(Boolean).join('.'), issue?.message ?? 'invalid');
  }

  /** CreateTaskPushNotificationConfig: on an open task of this agent that the caller may read. */
  async createPush(v: unknown): Promise<PushConfigOut> {
    const p = this.pushParams(v, '');
    if (!p.taskId) throw A2aRpcError.invalidParams('taskId', 'required');
    const t = await this.taskOf(p.taskId);
    if (isTerminal(t.state)) throw A2aRpcError.a2a('UnsupportedOperationError', `task ${t.task_id} is ${t.state}: it never changes again`, { taskId: t.task_id });
    return this.pushing().create(this.caller, t, p);
  }

  async getPush(p: { taskId: string; id: string }): Promise<PushConfigOut> {
    const t = await this.taskOf(p.taskId);
    return this.pushing().get(this.caller, t.task_id, p.id);
  }

  async listPush(p: { taskId: string; pageSize?: number | undefined; pageToken?: string | undefined }): Promise<{ configs: PushConfigOut[]; nextPageToken: string }> {
    const t = await this.taskOf(p.taskId);
    return this.pushing().list(this.caller, t.task_id, p.pageSize, p.pageToken);
  }

  async deletePush(p: { taskId: string; id: string }): Promise<Record<string, never>> {
    const t = await this.taskOf(p.taskId);
    await this.pushing().delete(this.caller, t.task_id, p.id);
    return {};
  }

  async sendMessage(p: SendMessageParams): Promise<{ task: Task }> {
    const { task, from } = await this.deliver(p);
    const t = p.configuration?.returnImmediately ? await this.engine.tasks.get(this.caller, { task_id: task.task_id }) : await settle(this.follow, task, from);
    const historyLength = p.configuration?.historyLength;
    return { task: await this.present(t, historyLength !== undefined ? { historyLength } : {}) };
  }

  async getTask(p: TaskIdParams): Promise<Task> {
    const t = await this.taskOf(p.id);
    return this.present(t, p.historyLength !== undefined ? { historyLength: p.historyLength } : {});
  }

  async cancelTask(p: TaskIdParams): Promise<Task> {
    const t = await this.taskOf(p.id);
    const reason = typeof p.metadata?.reason === 'string' ? p.metadata.reason : undefined;
    const req = asA2aField(() => parseInput(TaskCancelRequest, { task_id: t.task_id, ...(reason !== undefined ? { reason } : {}) }));
    return this.present(await this.engine.tasks.cancel(this.caller, req));
  }

  /** SubscribeToTask's opening: the task, refused when it is terminal already. */
  async subscribable(p: TaskIdParams): Promise<TaskOut> {
    const t = await this.taskOf(p.id);
    if (isTerminal(t.state)) throw A2aRpcError.a2a('UnsupportedOperationError', `task ${t.task_id} is ${t.state}: there is nothing to follow`, { taskId: t.task_id });
    return t;
  }

  /** The caller's tasks at this agent, newest change first: on one's own endpoint every task
   *  assigned to it, on another's the tasks one asked it for. */
  async listTasks(p: ListTasksParams): Promise<{ tasks: Task[]; nextPageToken: string; pageSize: number; totalSize: number }> {
    const own = this.caller.account.id === this.agent;
    const want = p.pageSize ?? 50;
    const state = p.status && p.status !== 'TASK_STATE_UNSPECIFIED' ? STATE_OF_A2A.get(p.status) : undefined;
    if (p.status && p.status !== 'TASK_STATE_UNSPECIFIED' && !state) throw A2aRpcError.invalidParams('status', `not a task state: ${p.status.slice(0, 64)}`);
    const since = p.statusTimestampAfter ? Date.parse(p.statusTimestampAfter) : null;
    const found: TaskOut[] = [];
    let cursor = p.pageToken || undefined;
    let scanned = 0;
    while (found.length < want && scanned < LIST_SCAN_MAX) {
      // Asking for no more than still fits keeps the cursor exactly after the last task read.
      const page = await this.engine.tasks
        .list(this.caller, { role: own ? 'assigned' : 'requested', ...(state ? { state } : {}), ...(cursor ? { after: cursor } : {}), limit: Math.min(100, want - found.length) })
        .catch((e: unknown) => {
          throw e instanceof MailError && e.code === 'malformed' ? A2aRpcError.invalidParams('pageToken', 'not a page token of this agent') : e;
        });
      scanned += page.tasks.length;
      cursor = page.next_cursor ?? undefined;
      let older = false;
      for (const t of page.tasks) {
        if (since !== null && Date.parse(t.updated_at) < since) {
          older = true;
          break;
        }
        if ((own || accountOf(t.to) === this.agent) && (!p.contextId || t.thread_id === p.contextId)) found.push(t);
      }
      if (older) cursor = undefined;
      if (!cursor) break;
    }
    const history = p.historyLength ?? 0;
    const tasks = await Promise.all(found.map((t) => this.present(t, { historyLength: history, artifacts: p.includeArtifacts === true })));
    // The mailbox keeps no count of an agent's tasks: totalSize counts this page.
    return { tasks, nextPageToken: cursor ?? '', pageSize: want, totalSize: tasks.length };
  }
}
