// Tasks and approvals in the PostgreSQL store. A change is one conditional UPDATE (version for a
// task, pending for an approval): of two daemons changing the same row at once, the second waits
// for the first's row lock, then finds the condition false and changes nothing. A pooled task keeps
// its claim state in the pool_* columns (migration 7; the row mapping is the SQLite store's), so
// poolTasks is one range of an index.
import type { ApprovalRecord, PoolQuery, TaskCreateOutcome, TaskQuery, TaskRecord, TaskStore } from '../types.js';
import { approvalParams, taskParams, toApproval, toTask, type ApprovalRow, type TaskRow } from '../sqlite/task-rows.js';
import { taskKeyLock } from './locks.js';
import type { Sql, Tx } from './pg-sql.js';

export class PgTasks implements TaskStore {
  constructor(private readonly sql: Sql) {}

  async createTask(t: TaskRecord, idempotentSince: number): Promise<TaskCreateOutcome> {
    const row = taskParams(t);
    if (t.idempotencyKey === null) {
      await this.sql`INSERT INTO tasks ${this.sql(row)}`;
      return { kind: 'created', task: toTask(row) };
    }
    const key = t.idempotencyKey;
    return this.sql.begin(async (tx): Promise<TaskCreateOutcome> => {
      await taskKeyLock(tx, t.fromAccount, key);
      // Newest first: after a window expired, a key may have been used again.
      const [prior] = await tx<TaskRow[]>`SELECT * FROM tasks WHERE from_account = ${t.fromAccount} AND idempotency_key = ${key}
        AND created_at >= ${idempotentSince} ORDER BY created_at DESC, id DESC LIMIT 1`;
      if (prior) return { kind: 'duplicate', task: toTask(prior) };
      await tx`INSERT INTO tasks ${tx(row)}`;
      return { kind: 'created', task: toTask(row) };
    });
  }

  async getTask(id: string): Promise<TaskRecord | null> {
    const [r] = await this.sql<TaskRow[]>`SELECT * FROM tasks WHERE id = ${id}`;
    return r ? toTask(r) : null;
  }

  /** Also the pool's claim state and the failure's reason, and for a pooled task its assignee (the
   *  holder with each claim, nobody on each return); an ordinary task keeps its assignee. */
  async updateTask(t: TaskRecord, expectedVersion: number): Promise<TaskRecord | null> {
    const r = taskParams(t);
    const s = this.sql;
    // A pooled task's holder changes with its claims; an ordinary task's assignee never (SET reads the stored row).
    const assignee = s`, to_account = CASE WHEN pool_room IS NULL THEN to_account ELSE ${r.to_account} END,
        to_lineage = CASE WHEN pool_room IS NULL THEN to_lineage ELSE ${r.to_lineage} END,
        to_address = CASE WHEN pool_room IS NULL THEN to_address ELSE ${r.to_address} END`;
    const [out] = await s<TaskRow[]>`UPDATE tasks SET state = ${r.state}, history = ${r.history}, result = ${r.result},
        updated_at = ${r.updated_at}, version = ${r.version}, last_seq = ${r.last_seq} ${assignee},
        pool_room = ${r.pool_room}, pool_attempt = ${r.pool_attempt}, pool_max_attempts = ${r.pool_max_attempts},
        pool_retry_delay_secs = ${r.pool_retry_delay_secs}, pool_available_at = ${r.pool_available_at},
        pool_lease_id = ${r.pool_lease_id}, pool_lease_epoch = ${r.pool_lease_epoch}, fail_reason = ${r.fail_reason}
      WHERE id = ${r.id} AND version = ${expectedVersion} RETURNING *`;
    return out ? toTask(out) : null;
  }

  async listTasks(q: TaskQuery): Promise<TaskRecord[]> {
    // An unclaimed pooled task has no assignee account (''): nobody's to list as assigned.
    if (q.limit <= 0 || (q.role === 'assigned' && q.account === '')) return [];
    const s = this.sql;
    // One backward range of tasks_by_{to,from}[_state]: newest change first, no sort.
    const who = q.role === 'assigned' ? s`to_account = ${q.account}` : s`from_account = ${q.account}`;
    const state = q.state === null ? s`` : s`AND state = ${q.state}`;
    const before = q.before === null ? s`` : s`AND last_seq < ${q.before}`;
    const reason = q.failReason == null ? s`` : s`AND fail_reason = ${q.failReason}`;
    const rows = await s<TaskRow[]>`SELECT * FROM tasks WHERE ${who} ${state} ${before} ${reason} ORDER BY last_seq DESC, id DESC LIMIT ${q.limit}`;
    return rows.map(toTask);
  }

  async taskChildren(parentId: string, limit: number): Promise<TaskRecord[]> {
    if (limit <= 0) return [];
    const rows = await this.sql<TaskRow[]>`SELECT * FROM tasks WHERE parent_task_id = ${parentId} ORDER BY created_at, id LIMIT ${limit}`;
    return rows.map(toTask);
  }

  /** The offer: unclaimed tasks offered by then, oldest first (tasks_by_pool_offer); else the whole
   *  pool, newest change first (tasks_by_pool). */
  async poolTasks(q: PoolQuery): Promise<TaskRecord[]> {
    if (q.limit <= 0) return [];
    const s = this.sql;
    if (q.offeredAt !== undefined) {
      const rows = await s<TaskRow[]>`SELECT * FROM tasks WHERE pool_room = ${q.room} AND state = 'submitted'
        AND (pool_available_at IS NULL OR pool_available_at <= ${q.offeredAt}) ORDER BY created_at, id LIMIT ${q.limit}`;
      return rows.map(toTask);
    }
    const before = q.before == null ? s`` : s`AND last_seq < ${q.before}`;
    const rows = await s<TaskRow[]>`SELECT * FROM tasks WHERE pool_room = ${q.room} ${before} ORDER BY last_seq DESC, id DESC LIMIT ${q.limit}`;
    return rows.map(toTask);
  }

  async createApproval(a: ApprovalRecord): Promise<void> {
    await this.sql`INSERT INTO approvals ${this.sql(approvalParams(a))}`;
  }

  async getApproval(id: string): Promise<ApprovalRecord | null> {
    const [r] = await this.sql<ApprovalRow[]>`SELECT * FROM approvals WHERE id = ${id}`;
    return r ? toApproval(r) : null;
  }

  async decideApproval(id: string, state: 'approved' | 'rejected', reason: string, at: number): Promise<ApprovalRecord | null> {
    const [r] = await this.sql<ApprovalRow[]>`UPDATE approvals SET state = ${state}, reason = ${reason}, decided_at = ${at}
      WHERE id = ${id} AND state = 'pending' RETURNING *`;
    return r ? toApproval(r) : null;
  }
}

/** An account removed, or created under a name used before (inside that transaction): the tasks
 *  assigned to it and the approvals it was to review go; the tasks it asked for stay (their
 *  assignees'), without their retry handles. */
export async function purgeAccountTasks(tx: Tx, account: string): Promise<void> {
  await tx`DELETE FROM tasks WHERE to_account = ${account}`;
  await tx`DELETE FROM approvals WHERE reviewer_account = ${account}`;
  await tx`UPDATE tasks SET idempotency_key = NULL WHERE from_account = ${account} AND idempotency_key IS NOT NULL`;
}
