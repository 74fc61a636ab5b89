// Approvals: a named reviewer (an agent or a person) approves or rejects an action, once. The
// request and the decision are mail (to the reviewer, then back to the requester, in one thread);
// a linked task waits in auth_required until the decision and then returns to working. The mailbox
// never executes the action: it records who decided what (docs/tasks.md).
import { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import { clipUtf8 } from '../wire/text.js';
import type * as T from '../wire/tasks.js';
import { isTerminal } from '../wire/tasks.js';
import { keyOfAccount, keyOfLineage, type ApprovalRecord, type Store, type TaskStore } from '../store/types.js';
import type { Clock } from './clock.js';
import { iso } from './present.js';
import { callerAddress, type Caller } from './mail-engine.js';
import type { TaskBook, TaskDeps } from './tasks.js';
import type { WaitRoom } from './waits.js';

export interface ApprovalDeps {
  store: Store & TaskStore;
  clock: Clock;
  waits: WaitRoom;
  newId(): string;
  post: TaskDeps['post'];
  printAll: TaskDeps['printAll'];
  tasks: TaskBook;
}

export class ApprovalBook {
  constructor(private d: ApprovalDeps) {}

  private async find(id: string): Promise<ApprovalRecord> {
    const a = await this.d.store.getApproval(id);
    if (!a) throw new MailError('unknown_approval', `no approval ${id}`, { approval_id: id });
    return a;
  }

  private expired(a: ApprovalRecord): boolean {
    return a.state === 'pending' && a.expiresAt !== null && a.expiresAt <= this.d.clock.now();
  }

  async request(c: Caller, req: T.ApprovalRequest): Promise<T.ApprovalOut> {
    if (req.reviewer.kind !== 'direct')
      throw new MailError('malformed', 'the reviewer is an account (an agent or a person), not a session or a room', { field: 'reviewer', reason: 'account' });
    const task = req.task_id ? await this.d.store.getTask(req.task_id) : null;
    if (req.task_id && !task) throw new MailError('unknown_task', `no task ${req.task_id}`, { task_id: req.task_id });
    const party = (id: string): boolean => c.account.id === id && c.account.createdAt <= task!.createdAt;
    if (task && !party(task.fromAccount) && !party(task.toAccount))
      throw new MailError('not_task_party', `you are neither the requester nor the assignee of ${task.id}`, { task_id: task.id });
    if (task && isTerminal(task.state)) throw new MailError('task_terminal', `task ${task.id} is ${task.state}: it never changes again`, { task_id: task.id, state: task.state });
    const now = this.d.clock.now();
    const id = `a-${this.d.newId()}`;
    const root = task ? await this.d.store.getMessage(task.threadId) : null;
    const body = [
      `${callerAddress(c)} asks you to approve: ${req.action}`,
      ...(req.details ? ['', req.details] : []),
      '',
      `Decide with m4a_approval {approval_id: "${id}", decision: "approved" | "rejected", reason}. The mailbox records the decision; it runs nothing.`,
    ];
    const m = await this.d.post(c, { to: req.reviewer, subject: clipUtf8(`Approval: ${req.action}`, LIMITS.subjectBytes), body: body.join('\n') }, root, null);
    const a: ApprovalRecord = {
      id,
      threadId: m.threadId,
      requesterAccount: c.account.id,
      requesterSession: c.session?.id ?? null,
      requesterAddress: callerAddress(c),
      reviewerAccount: req.reviewer.participant,
      action: req.action,
      details: req.details ?? null,
      taskId: task?.id ?? null,
      state: 'pending',
      reason: null,
      createdAt: now,
      expiresAt: req.expires_in !== undefined ? now + req.expires_in * 1000 : null,
      decidedAt: null,
    };
    await this.d.store.createApproval(a);
    if (task && task.state !== 'auth_required') {
      const other = c.account.id === task.toAccount ? task.fromAddress : task.toAddress;
      await this.d.tasks.transition(c, task, 'auth_required', `waiting for approval ${id}: ${req.action}`, undefined, other);
    }
    return this.present(a);
  }

  async decide(c: Caller, req: T.ApprovalDecideRequest): Promise<T.ApprovalOut> {
    const a = await this.find(req.approval_id);
    if (c.account.id !== a.reviewerAccount || c.account.createdAt > a.createdAt)
      throw new MailError('not_reviewer', `only ${a.reviewerAccount} decides ${a.id}`, { approval_id: a.id });
    if (a.state !== 'pending') throw new MailError('approval_decided', `${a.id} was ${a.state} already`, { approval_id: a.id, state: a.state });
    if (this.expired(a)) throw new MailError('approval_expired', `${a.id} expired at ${iso(a.expiresAt!)}`, { approval_id: a.id });
    const now = this.d.clock.now();
    const decided = await this.d.store.decideApproval(a.id, req.decision, req.reason, now);
    if (!decided) throw new MailError('approval_decided', `${a.id} was decided meanwhile`, { approval_id: a.id, state: (await this.find(a.id)).state });
    const root = await this.d.store.getMessage(a.threadId);
    const to = { kind: 'direct' as const, participant: a.requesterAccount };
    await this.d.post(
      c,
      {
        to,
        subject: clipUtf8(`Approval ${req.decision}: ${a.action}`, LIMITS.subjectBytes),
        body: `${req.decision}: ${req.reason}\n(The mailbox runs nothing: acting on it is the requester's.)`,
      },
      root,
      null,
    );
    const task = a.taskId ? await this.d.store.getTask(a.taskId) : null;
    if (task && task.state === 'auth_required') await this.d.tasks.transition(c, task, 'working', `approval ${a.id} ${req.decision}: ${req.reason}`, undefined, task.toAddress);
    return this.present(decided);
  }

  async get(c: Caller, req: T.ApprovalGetRequest, signal?: AbortSignal): Promise<T.ApprovalOut> {
    let a = await this.find(req.approval_id);
    // A later account of the same name is neither (docs/identity.md "A name used again").
    const mine = (x: ApprovalRecord): boolean =>
      ((c.account.id === x.requesterAccount || c.account.id === x.reviewerAccount) && c.account.createdAt <= x.createdAt) || c.account.permissions.operator;
    const task = !mine(a) && a.taskId ? await this.d.store.getTask(a.taskId) : null;
    const party = task !== null && (c.account.id === task.fromAccount || c.account.id === task.toAccount) && c.account.createdAt <= task.createdAt;
    if (!mine(a) && !party) throw new MailError('not_reviewer', `you neither asked for nor review ${a.id}, nor are a party of its task`, { approval_id: a.id });
    const deadline = this.d.clock.now() + (req.wait_secs ?? 0) * 1000;
    // The decision is mail to the requester: park on its keys until it comes.
    while (a.state === 'pending' && !this.expired(a) && this.d.clock.now() < deadline) {
      const keys = [keyOfAccount(a.requesterAccount), ...(a.requesterSession ? [keyOfLineage(a.requesterAccount, a.requesterSession)] : [])];
      const end = await this.d.waits.park(`approval:${c.session?.id ?? c.account.id}`, c.account.id, keys, deadline - this.d.clock.now(), signal).ended;
      a = await this.find(a.id);
      if (end !== 'woken' && end !== 'refresh') break;
    }
    return this.present(a);
  }

  async present(a: ApprovalRecord): Promise<T.ApprovalOut> {
    const names = await this.d.printAll([a.requesterAddress, a.reviewerAccount]);
    return {
      approval_id: a.id,
      thread_id: a.threadId,
      requester: names.get(a.requesterAddress) ?? a.requesterAddress,
      reviewer: a.reviewerAccount,
      action: a.action,
      ...(a.details !== null ? { details: a.details } : {}),
      ...(a.taskId !== null ? { task_id: a.taskId } : {}),
      state: this.expired(a) ? 'expired' : a.state,
      ...(a.reason !== null ? { reason: a.reason } : {}),
      created_at: iso(a.createdAt),
      ...(a.expiresAt !== null ? { expires_at: iso(a.expiresAt) } : {}),
      ...(a.decidedAt !== null ? { decided_at: iso(a.decidedAt) } : {}),
    };
  }
}
