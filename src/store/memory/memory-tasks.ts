// Tasks and approvals in the memory store. Records go in and out through JSON, as the SQL stores
// keep refs, history and result as JSON text, so every store gives back exactly the same values.
import type { ApprovalRecord, PoolQuery, StoreTallies, TaskCreateOutcome, TaskQuery, TaskRecord, TaskStore } from '../types.js';
import { emptyTallies } from '../tallies.js';
import { binaryCompare } from './binary-compare.js';

const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** An ordinary task is kept without the pool and failReason keys (never null), as the SQL stores
 *  give it back. */
function stripped(t: TaskRecord): TaskRecord {
  const { pool, failReason, ...rest } = copy(t);
  return { ...rest, ...(pool ? { pool } : {}), ...(failReason != null ? { failReason } : {}) };
}

/** Newest change first; the id breaks ties, as the SQL stores' indexes do. */
const newestFirst = (a: TaskRecord, b: TaskRecord): number => b.lastSeq - a.lastSeq || binaryCompare(b.id, a.id);

export class MemoryTasks implements TaskStore {
  /** id -> task, in creation order. */
  private readonly tasks = new Map<string, TaskRecord>();
  private readonly approvals = new Map<string, ApprovalRecord>();

  async createTask(t: TaskRecord, idempotentSince: number): Promise<TaskCreateOutcome> {
    if (t.idempotencyKey !== null) {
      let prior: TaskRecord | null = null;
      for (const p of this.tasks.values()) {
        if (p.fromAccount !== t.fromAccount || p.idempotencyKey !== t.idempotencyKey || p.createdAt < idempotentSince) continue;
        // Newest first: after a window expired, a key may have been used again.
        if (prior === null || p.createdAt > prior.createdAt || (p.createdAt === prior.createdAt && binaryCompare(p.id, prior.id) > 0)) prior = p;
      }
      if (prior) return { kind: 'duplicate', task: copy(prior) };
    }
    if (this.tasks.has(t.id)) throw new Error(`task id ${t.id} already exists`);
    const stored = stripped(t);
    this.tasks.set(stored.id, stored);
    return { kind: 'created', task: copy(stored) };
  }

  /** Tasks and approvals by state (Store.tallies). */
  tallies(now: number): Omit<StoreTallies, 'messages'> {
    const t = emptyTallies();
    for (const x of this.tasks.values()) t.tasks[x.state]++;
    for (const a of this.approvals.values()) t.approvals[a.state === 'pending' && a.expiresAt !== null && a.expiresAt <= now ? 'expired' : a.state]++;
    return t;
  }

  /** Threads that open work holds: a task not yet terminal, an approval pending (retention). */
  heldThreads(terminal: readonly string[]): Set<string> {
    const out = new Set<string>();
    for (const t of this.tasks.values()) if (!terminal.includes(t.state)) out.add(t.threadId);
    for (const a of this.approvals.values()) if (a.state === 'pending') out.add(a.threadId);
    return out;
  }

  async getTask(id: string): Promise<TaskRecord | null> {
    const t = this.tasks.get(id);
    return t ? copy(t) : null;
  }

  async updateTask(t: TaskRecord, expectedVersion: number): Promise<TaskRecord | null> {
    const cur = this.tasks.get(t.id);
    if (!cur || cur.version !== expectedVersion) return null;
    const next = copy({
      state: t.state,
      history: t.history,
      result: t.result,
      updatedAt: t.updatedAt,
      version: t.version,
      lastSeq: t.lastSeq,
      // A pooled task's holder changes with its claims.
      ...(cur.pool ? { toAccount: t.toAccount, toLineage: t.toLineage, toAddress: t.toAddress } : {}),
    });
    const { pool: _pool, failReason: _failReason, ...kept } = cur;
    const updated = stripped({ ...kept, ...next, pool: t.pool ?? null, failReason: t.failReason ?? null });
    this.tasks.set(t.id, updated);
    return copy(updated);
  }

  async listTasks(q: TaskQuery): Promise<TaskRecord[]> {
    // An unclaimed pooled task has no assignee account (''): nobody's to list as assigned.
    if (q.limit <= 0 || (q.role === 'assigned' && q.account === '')) return [];
    const mine = (t: TaskRecord) => (q.role === 'assigned' ? t.toAccount : t.fromAccount) === q.account;
    const reason = q.failReason ?? null;
    return [...this.tasks.values()]
      .filter((t) => mine(t) && (q.state === null || t.state === q.state) && (reason === null || t.failReason === reason) && (q.before === null || t.lastSeq < q.before))
      .sort(newestFirst)
      .slice(0, q.limit)
      .map(copy);
  }

  async taskChildren(parentId: string, limit: number): Promise<TaskRecord[]> {
    if (limit <= 0) return [];
    return [...this.tasks.values()]
      .filter((t) => t.parentTaskId === parentId)
      .sort((a, b) => a.createdAt - b.createdAt || binaryCompare(a.id, b.id))
      .slice(0, limit)
      .map(copy);
  }

  async poolTasks(q: PoolQuery): Promise<TaskRecord[]> {
    if (q.limit <= 0) return [];
    const of = [...this.tasks.values()].filter((t) => t.pool?.room === q.room);
    const at = q.offeredAt;
    const picked =
      at === undefined
        ? of.filter((t) => q.before == null || t.lastSeq < q.before).sort(newestFirst)
        : of
            .filter((t) => t.state === 'submitted' && (t.pool?.availableAt == null || t.pool.availableAt <= at))
            .sort((a, b) => a.createdAt - b.createdAt || binaryCompare(a.id, b.id));
    return picked.slice(0, q.limit).map(copy);
  }

  async createApproval(a: ApprovalRecord): Promise<void> {
    if (this.approvals.has(a.id)) throw new Error(`approval id ${a.id} already exists`);
    this.approvals.set(a.id, copy(a));
  }

  async getApproval(id: string): Promise<ApprovalRecord | null> {
    const a = this.approvals.get(id);
    return a ? copy(a) : null;
  }

  async decideApproval(id: string, state: 'approved' | 'rejected', reason: string, at: number): Promise<ApprovalRecord | null> {
    const a = this.approvals.get(id);
    if (!a || a.state !== 'pending') return null;
    Object.assign(a, { state, reason, decidedAt: at });
    return copy(a);
  }

  /** Whether a task is assigned to this lineage of the account (joinLineage refuses then). */
  assignedToLineage(account: string, lineage: string): boolean {
    for (const t of this.tasks.values()) if (t.toAccount === account && t.toLineage === lineage) return true;
    return false;
  }

  /** An account removed, or created under a name used before: the tasks assigned to it and the
   *  approvals it was to review go; the tasks it asked for stay, without their retry handles. */
  purgeAccount(account: string): void {
    for (const [id, t] of this.tasks) {
      if (t.toAccount === account) this.tasks.delete(id);
      else if (t.fromAccount === account) t.idempotencyKey = null;
    }
    for (const [id, a] of this.approvals) if (a.reviewerAccount === account) this.approvals.delete(id);
  }
}
