// Tasks: work handed from a requester to an assignee, living in a thread. Every change is a message
// in that thread from the party who made it, to the other party, carrying the new state in its
// `task` field: so the other side's waits, hooks, delivery chain and receipts fire as for any mail,
// and the store's task row is the state the thread tells. The mailbox schedules nothing and runs
// nothing (docs/tasks.md).
import { createHash } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import { clipUtf8 } from '../wire/text.js';
import { isTeamAddress, parseCompactAddress, type Address } from '../wire/address.js';
import type * as W from '../wire/ops.js';
import type * as T from '../wire/tasks.js';
import { ASSIGNEE_STATES, TASK_LIMITS, isTerminal, type TaskState } from '../wire/tasks.js';
import { keyOfAccount, keyOfLineage, keyOfRoom, type LeaseRecord, type MailKey, type Store, type StoredMessage, type TaskRecord, type TaskStore } from '../store/types.js';
import { LEASE_LIMITS } from '../wire/leases.js';
import { PoolBook, roomOf } from './pool.js';
import type { Clock } from './clock.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { iso } from './present.js';
import { callerAddress, type Caller } from './mail-engine.js';
import type { WaitRoom } from './waits.js';

/** What the task rules need from the mail engine. */
export interface TaskDeps {
  store: Store & TaskStore;
  clock: Clock;
  waits: WaitRoom;
  newId(): string;
  /** Sends mail as the caller through the send path (recipient rules, loop guard, wakes). */
  post(c: Caller, req: W.SendRequest, parent: StoredMessage | null, mark: TaskMark | null): Promise<StoredMessage>;
  printAll(compacts: Iterable<string>): Promise<Map<string, string>>;
  idempotencyWindowMs: number;
}

/** The structured part of a task's message: which task, the state it entered, its version. */
export interface TaskMark {
  task_id: string;
  state: TaskState;
  version: number;
}

const CHILDREN_SHOWN = 50;

function accountAndLineage(key: MailKey): { account: string; lineage: string | null } {
  if (key.startsWith('a:')) return { account: key.slice(2), lineage: null };
  // A pooled task: nobody holds it yet.
  if (key.startsWith('r:')) return { account: '', lineage: null };
  const [account, lineage] = key.slice(2).split('/') as [string, string];
  return { account, lineage };
}

function parsed(compact: string): Address {
  const r = parseCompactAddress(compact);
  if (!r.ok) throw new MailError('internal', `a stored address does not parse: ${compact}`);
  return r.address;
}

/** Every address a task's answer prints. */
const addressesIn = (t: TaskRecord): string[] => [t.fromAddress, t.toAddress, ...t.history.map((h) => h.by)];

export class TaskBook {
  readonly pool: PoolBook;

  constructor(private d: TaskDeps) {
    this.pool = new PoolBook({
      store: d.store,
      clock: d.clock,
      newId: () => d.newId(),
      transition: (c, t, state, note, to, patch) => this.transition(c, t, state, note, undefined, to, patch),
      present: (t) => this.present(t, false),
      presentLease: (l) => this.presentLease(l),
    });
  }

  private isAssignee(c: Caller, t: TaskRecord): boolean {
    return c.account.id === t.toAccount && c.account.createdAt <= t.createdAt && (t.toLineage === null || c.session?.lineage === t.toLineage);
  }

  /** The requester's account, not a later one of the same name (its tasks stay after a removal,
   *  like the mail it sent: docs/identity.md "A name used again"). */
  private isRequester(c: Caller, t: TaskRecord): boolean {
    return c.account.id === t.fromAccount && c.account.createdAt <= t.createdAt;
  }

  private async readable(c: Caller, id: string): Promise<TaskRecord> {
    const t = await this.d.store.getTask(id);
    if (!t) throw new MailError('unknown_task', `no task ${id}`, { task_id: id });
    if (this.isRequester(c, t) || (c.account.id === t.toAccount && c.account.createdAt <= t.createdAt) || c.account.permissions.operator) return t;
    // A pooled task is offered to the members of its room: they read it to take it.
    if (t.pool && c.account.createdAt <= t.createdAt && (await this.pool.member(c, t.pool.room))) return t;
    throw new MailError('not_task_party', `you are neither the requester nor the assignee of ${id}`, { task_id: id });
  }

  async create(c: Caller, req: T.TaskCreateRequest): Promise<T.TaskOut> {
    if (isTeamAddress(req.to)) throw new MailError('malformed', 'a task goes to one account, session or room, not to team: or leader:', { field: 'to', reason: 'one assignee' });
    if (req.to.kind === 'email')
      throw new MailError('malformed', 'a task goes to an account, session or room here, not to an e-mail address', { field: 'to', reason: 'one assignee here' });
    if (req.to.kind !== 'room' && (req.max_attempts !== undefined || req.retry_delay_secs !== undefined))
      throw new MailError('malformed', 'max_attempts and retry_delay_secs are for a task to a room', {
        field: req.max_attempts !== undefined ? 'max_attempts' : 'retry_delay_secs',
        reason: 'only for a pooled task',
      });
    if (req.parent_task_id) await this.readable(c, req.parent_task_id);
    const now = this.d.clock.now();
    // A retry with the same key names the same task, found before anything is sent again.
    const id = req.idempotency_key ? `t-${createHash('sha256').update(`${c.account.id}\n${req.idempotency_key}`).digest('hex').slice(0, 32)}` : `t-${this.d.newId()}`;
    if (req.idempotency_key) {
      const prior = await this.d.store.getTask(id);
      if (prior) return this.present(prior, false);
    }
    const m = await this.d.post(
      c,
      {
        to: req.to,
        subject: clipUtf8(`Task: ${req.title}`, LIMITS.subjectBytes),
        body: req.instructions ?? req.title,
        ...(req.refs ? { refs: req.refs } : {}),
        // Two retries at once both pass the check above: the mail's own key makes them one message
        // (a space never appears in a caller's key, so none can collide with it).
        ...(req.idempotency_key ? { idempotency_key: `task-create ${id}` } : {}),
      },
      null,
      {
        task_id: id,
        state: 'submitted',
        version: 1,
      },
    );
    const to = accountAndLineage(m.toKey);
    const task: TaskRecord = {
      id,
      threadId: m.threadId,
      fromAccount: c.account.id,
      fromSession: c.session?.id ?? null,
      fromAddress: callerAddress(c),
      toAccount: to.account,
      toLineage: to.lineage,
      toAddress: m.toAddress,
      title: req.title,
      instructions: req.instructions ?? null,
      refs: req.refs ?? [],
      parentTaskId: req.parent_task_id ?? null,
      state: 'submitted',
      history: [{ state: 'submitted', at: now, by: callerAddress(c) }],
      result: null,
      createdAt: now,
      updatedAt: now,
      version: 1,
      lastSeq: m.seq,
      idempotencyKey: req.idempotency_key ?? null,
      ...(req.to.kind === 'room'
        ? {
            pool: {
              room: req.to.room,
              attempt: 0,
              maxAttempts: req.max_attempts ?? LEASE_LIMITS.maxAttemptsDefault,
              retryDelaySecs: req.retry_delay_secs ?? null,
              availableAt: null,
              leaseId: null,
              leaseEpoch: null,
            },
          }
        : {}),
    };
    const out = await this.d.store.createTask(task, now - this.d.idempotencyWindowMs);
    return this.present(out.task, false);
  }

  async get(c: Caller, req: T.TaskGetRequest, signal?: AbortSignal): Promise<T.TaskOut> {
    let t = await this.readable(c, req.task_id);
    const deadline = this.d.clock.now() + (req.wait_secs ?? 0) * 1000;
    // Park until a change (every change is mail to one of the parties' keys) or the deadline.
    while (req.after_version !== undefined && t.version <= req.after_version && this.d.clock.now() < deadline) {
      const keys = [t.toLineage ? keyOfLineage(t.toAccount, t.toLineage) : keyOfAccount(t.toAccount), keyOfAccount(t.fromAccount)];
      if (t.pool) keys.push(keyOfRoom(t.pool.room));
      if (t.fromSession) keys.push(keyOfLineage(t.fromAccount, t.fromSession));
      const end = await this.d.waits.park(`task:${c.session?.id ?? c.account.id}`, c.account.id, keys, deadline - this.d.clock.now(), signal).ended;
      t = await this.readable(c, req.task_id);
      if (end !== 'woken' && end !== 'refresh') break;
    }
    return this.present(t, true);
  }

  async list(c: Caller, req: T.TaskListRequest): Promise<T.TaskListResponse> {
    const limit = req.limit ?? TASK_LIMITS.listDefault;
    const before = req.after ? decodeCursor(req.after) : null;
    let rows: TaskRecord[];
    if (req.role === 'pool') {
      const room = roomOf(req.pool ?? '');
      if (!room) throw new MailError('malformed', 'role pool needs pool: #room', { field: 'pool', reason: 'required: a room' });
      if (!(await this.pool.member(c, room)) && !c.account.permissions.operator)
        throw new MailError('permission_denied', `you are not a member of #${room}`, { need: 'member', room });
      // The pool's page is filtered by state and reason after it is read: a page may come short.
      rows = (await this.d.store.poolTasks({ room, before, limit: limit + 1 })).filter(
        (t) => (!req.state || t.state === req.state) && (!req.reason || t.failReason === req.reason),
      );
    } else
      rows = await this.d.store.listTasks({
        account: c.account.id,
        role: req.role,
        state: req.state ?? null,
        before,
        limit: limit + 1,
        ...(req.reason ? { failReason: req.reason } : {}),
      });
    const page = rows.slice(0, limit);
    // One lookup of printed addresses for the whole page.
    const names = await this.d.printAll(page.flatMap(addressesIn));
    const tasks = await Promise.all(page.map((t) => this.present(t, false, names)));
    return { tasks, next_cursor: rows.length > limit && page.length ? encodeCursor(page[page.length - 1]!.lastSeq) : null };
  }

  async update(c: Caller, req: T.TaskUpdateRequest): Promise<T.TaskOut> {
    const t = await this.readable(c, req.task_id);
    if (isTerminal(t.state)) throw new MailError('task_terminal', `task ${t.id} is ${t.state}: it never changes again`, { task_id: t.id, state: t.state });
    if (!this.isAssignee(c, t)) {
      if (this.isRequester(c, t))
        throw new MailError('invalid_transition', `only the assignee moves a task to ${req.state}; the requester cancels`, { from: t.state, to: req.state });
      throw new MailError('not_task_party', `you are not the assignee of ${t.id}`, { task_id: t.id });
    }
    // auth_required is left by the approval's decision; the assignee may still give up (failed).
    const allowed = ASSIGNEE_STATES.includes(req.state) && req.state !== t.state && (t.state !== 'auth_required' || req.state === 'failed');
    if (!allowed) throw new MailError('invalid_transition', `the assignee may not move ${t.id} from ${t.state} to ${req.state}`, { from: t.state, to: req.state });
    if (req.state === 'input_required' && !req.note) throw new MailError('malformed', 'input_required needs the question in note', { field: 'note', reason: 'required' });
    if (t.pool) await this.pool.checkEpoch(t, req.epoch);
    else if (req.epoch !== undefined) throw new MailError('malformed', 'epoch is for a claimed task of a room', { field: 'epoch', reason: 'not a pooled task' });
    const out = await this.transition(c, t, req.state, req.note, req.result, t.fromAddress);
    if (t.pool && isTerminal(req.state)) await this.pool.ended(t);
    return out;
  }

  async cancel(c: Caller, req: T.TaskCancelRequest): Promise<T.TaskOut> {
    const t = await this.readable(c, req.task_id);
    if (isTerminal(t.state)) throw new MailError('task_terminal', `task ${t.id} is ${t.state}: it never changes again`, { task_id: t.id, state: t.state });
    if (!this.isRequester(c, t)) {
      if (c.account.id === t.toAccount)
        throw new MailError('invalid_transition', 'only the requester cancels; the assignee rejects or fails it', { from: t.state, to: 'canceled' });
      throw new MailError('not_task_party', `you are not the requester of ${t.id}`, { task_id: t.id });
    }
    const out = await this.transition(c, t, 'canceled', req.reason, undefined, t.toAddress);
    await this.pool.ended(t);
    return out;
  }

  /** Moves the task: the row first (if nobody changed it meanwhile), then the message to `to` in
   *  its thread, then the row's lastSeq. The row comes first because the message is what wakes the
   *  waits on this task (on any daemon sharing the store): woken, they must read the new version. */
  async transition(
    c: Caller,
    t: TaskRecord,
    state: TaskState,
    note: string | undefined,
    result: T.TaskUpdateRequest['result'],
    to: string,
    /** What else changes with it (a pooled task's holder and claim). */
    patch: Partial<TaskRecord> = {},
  ): Promise<T.TaskOut> {
    // A task that never settles (a remote agent flipping states) must not grow without bound.
    if (t.history.length >= TASK_LIMITS.historyMax && !isTerminal(state))
      throw new MailError('too_large', `task ${t.id} has ${t.history.length} changes, the most it keeps: only completed, failed, canceled or rejected now`, {
        field: 'history',
        limit: TASK_LIMITS.historyMax,
        actual: t.history.length + 1,
      });
    const now = this.d.clock.now();
    const version = t.version + 1;
    const next: TaskRecord = {
      ...t,
      ...patch,
      state,
      history: [...t.history, { state, at: now, by: callerAddress(c), ...(note ? { note } : {}) }],
      result: result
        ? {
            ...(result.summary !== undefined ? { summary: result.summary } : {}),
            ...(result.data !== undefined ? { data: result.data } : {}),
            ...(result.refs ? { refs: result.refs } : {}),
          }
        : t.result,
      updatedAt: now,
      version,
    };
    const moved = await this.d.store.updateTask(next, t.version);
    if (!moved) throw new MailError('invalid_transition', `task ${t.id} changed meanwhile: read it again`, { from: t.state, to: state });
    const root = await this.d.store.getMessage(t.threadId);
    const lines = [`${state}${note ? `: ${note}` : ''}`, ...(result?.summary ? [`Result: ${result.summary}`] : [])];
    const m = await this.d.post(c, { to: parsed(to), subject: clipUtf8(`Task ${state}: ${t.title}`, LIMITS.subjectBytes), body: lines.join('\n') }, root, {
      task_id: t.id,
      state,
      version,
    });
    // Not a change of the task (its version stays): where lists place it. A later change that came
    // first has a later seq of its own.
    const placed = (await this.d.store.updateTask({ ...moved, lastSeq: m.seq }, version)) ?? moved;
    return this.present(placed, true);
  }

  /** The task as answers show it: printed addresses, ISO times, children on `get`. */
  async present(t: TaskRecord, withChildren: boolean, printed?: Map<string, string>): Promise<T.TaskOut> {
    const names = printed ?? (await this.d.printAll(addressesIn(t)));
    const p = (a: string): string => names.get(a) ?? a;
    const children = withChildren ? await this.d.store.taskChildren(t.id, CHILDREN_SHOWN) : [];
    return {
      task_id: t.id,
      thread_id: t.threadId,
      from: p(t.fromAddress),
      to: p(t.toAddress),
      title: t.title,
      ...(t.instructions !== null ? { instructions: t.instructions } : {}),
      ...(t.refs.length ? { refs: t.refs } : {}),
      ...(t.parentTaskId ? { parent_task_id: t.parentTaskId } : {}),
      state: t.state,
      history: t.history.map((h) => ({ state: h.state, at: iso(h.at), by: p(h.by), ...(h.note ? { note: h.note } : {}) })),
      ...(t.result ? { result: t.result } : {}),
      created_at: iso(t.createdAt),
      updated_at: iso(t.updatedAt),
      version: t.version,
      ...(t.pool
        ? {
            pool: {
              room: `#${t.pool.room}`,
              attempt: t.pool.attempt,
              max_attempts: t.pool.maxAttempts,
              ...(t.pool.availableAt !== null && t.state === 'submitted' ? { available_at: iso(t.pool.availableAt) } : {}),
              ...(t.pool.leaseId ? { lease_id: t.pool.leaseId } : {}),
              ...(t.pool.leaseEpoch !== null ? { epoch: t.pool.leaseEpoch } : {}),
            },
          }
        : {}),
      ...(t.failReason ? { fail_reason: t.failReason } : {}),
      ...(children.length ? { children: children.map((x) => ({ task_id: x.id, title: x.title, state: x.state })) } : {}),
    };
  }

  async presentLease(l: LeaseRecord): Promise<NonNullable<T.TaskClaimResponse['lease']>> {
    const names = await this.d.printAll([l.holderAddress]);
    return {
      lease_id: l.id,
      resource: l.resource,
      holder: names.get(l.holderAddress) ?? l.holderAddress,
      mode: l.mode,
      ...(l.reason ? { reason: l.reason } : {}),
      expires_at: iso(l.expiresAt),
      epoch: l.epoch,
      attempt: l.attempt,
    };
  }
}
