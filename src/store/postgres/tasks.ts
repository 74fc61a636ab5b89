// Tasks and approvals in the PostgreSQL store. A change is one conditional UPDATE (version for a
// task, pending for an approval): of two daemons changing the same row at once, the second waits
// for the first's row lock, then finds the condition false and changes nothing. A pooled task keeps
// its claim state in the pool_* columns (migration 7), so poolTasks is one range of an index.
import type { ApprovalRecord, PoolQuery, TaskCreateOutcome, TaskQuery, TaskRecord, TaskStore } from '../types.js';
import { approvalParams, taskParams, toApproval, toTask, type ApprovalRow, type TaskRow } from '../sqlite/task-rows.js';
import { taskKeyLock } from './locks.js';
import type { Sql, Tx } from './pg-sql.js';

/** The columns of a pooled task and of a failure's reason (null for an ordinary task). */
interface PoolColumns {
  pool_room: string | null;
  pool_attempt: number | null;
  pool_max_attempts: number | null;
  pool_retry_delay_secs: number | null;
  pool_available_at: number | null;
  pool_lease_id: string | null;
  pool_lease_epoch: number | null;
  fail_reason: string | null;
}

type PgTaskRow = TaskRow & PoolColumns;

function pgTaskParams(t: TaskRecord): PgTaskRow {
  const p = t.pool ?? null;
  return {
    ...taskParams(t),
    pool_room: p?.room ?? null,
    pool_attempt: p?.attempt ?? null,
    pool_max_attempts: p?.maxAttempts ?? null,
    pool_retry_delay_secs: p?.retryDelaySecs ?? null,
    pool_available_at: p?.availableAt ?? null,
    pool_lease_id: p?.leaseId ?? null,
    pool_lease_epoch: p?.leaseEpoch ?? null,
    fail_reason: t.failReason ?? null,
  };
}

/** An ordinary task comes back without the pool and failReason keys (never null), so a read
 *  compares equal to what was created without them, as a message without a task does. */
function toPgTask(r: PgTaskRow): TaskRecord {
  const { pool: _pool, failReason: _failReason, ...t }: TaskRecord = toTask(r);
  const out: TaskRecord = t;
  if (r.pool_room !== null) {
    out.pool = {
      room: r.pool_room,
      attempt: r.pool_attempt ?? 0,
      maxAttempts: r.pool_max_attempts ?? 0,
      retryDelaySecs: r.pool_retry_delay_secs,
      availableAt: r.pool_available_at,
      leaseId: r.pool_lease_id,
      leaseEpoch: r.pool_lease_epoch,
    };
  }
  if (r.fail_reason !== null) out.failReason = r.fail_reason;
  return out;
}

export class PgTasks implements TaskStore {
  constructor(private readonly sql: Sql) {}

  async createTask(t: TaskRecord, idempotentSince: number): Promise<TaskCreateOutcome> {
    const row = pgTaskParams(t);
    if (t.idempotencyKey === null) {
      await this.sql`INSERT INTO tasks ${this.sql(row)}`;
      return { kind: 'created', task: toPgTask(row) };
    }
    const key = t.idempotencyKey;
    return this.sql.begin(async (tx): Promise<TaskCreateOutcome> => {
      await taskKeyLock(tx, t.fromAccount, key);
      // Newest first: after a window expired, a key may have been used again.
      const [prior] = await tx<PgTaskRow[]>`SELECT * FROM tasks WHERE from_account = ${t.fromAccount} AND idempotency_key = ${key}
        AND created_at >= ${idempotentSince} ORDER BY created_at DESC, id DESC LIMIT 1`;
      if (prior) return { kind: 'duplicate', task: toPgTask(prior) };
      await tx`INSERT INTO tasks ${tx(row)}`;
      return { kind: 'created', task: toPgTask(row) };
    });
  }

  async getTask(id: string): Promise<TaskRecord | null> {
    const [r] = await this.sql<PgTaskRow[]>`SELECT * FROM tasks WHERE id = ${id}`;
    return r ? toPgTask(r) : null;
  }

  /** Also the pool's claim state and the failure's reason, and for a pooled task its assignee (the
   *  holder with each claim, nobody on each return); an ordinary task keeps its assignee. */
  async updateTask(t: TaskRecord, expectedVersion: number): Promise<TaskRecord | null> {
    const r = pgTaskParams(t);
    const s = this.sql;
    const assignee = r.pool_room === null ? s`` : s`, to_account = ${r.to_account}, to_lineage = ${r.to_lineage}, to_address = ${r.to_address}`;
    const [out] = await s<PgTaskRow[]>`UPDATE tasks SET state = ${r.state}, history = ${r.history}, result = ${r.result},
        updated_at = ${r.updated_at}, version = ${r.version}, last_seq = ${r.last_seq} ${assignee},
        pool_room = ${r.pool_room}, pool_attempt = ${r.pool_attempt}, pool_max_attempts = ${r.pool_max_attempts},
        pool_retry_delay_secs = ${r.pool_retry_delay_secs}, pool_available_at = ${r.pool_available_at},
        pool_lease_id = ${r.pool_lease_id}, pool_lease_epoch = ${r.pool_lease_epoch}, fail_reason = ${r.fail_reason}
      WHERE id = ${r.id} AND version = ${expectedVersion} RETURNING *`;
    return out ? toPgTask(out) : null;
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
    const rows = await s<PgTaskRow[]>`SELECT * FROM tasks WHERE ${who} ${state} ${before} ${reason} ORDER BY last_seq DESC, id DESC LIMIT ${q.limit}`;
    return rows.map(toPgTask);
  }

  async taskChildren(parentId: string, limit: number): Promise<TaskRecord[]> {
    if (limit <= 0) return [];
    const rows = await this.sql<PgTaskRow[]>`SELECT * FROM tasks WHERE parent_task_id = ${parentId} ORDER BY created_at, id LIMIT ${limit}`;
    return rows.map(toPgTask);
  }

  /** The offer: unclaimed tasks offered by then, oldest first (tasks_by_pool_offer); else the whole
   *  pool, newest change first (tasks_by_pool). */
  async poolTasks(q: PoolQuery): Promise<TaskRecord[]> {
    if (q.limit <= 0) return [];
    const s = this.sql;
    if (q.offeredAt !== undefined) {
      const rows = await s<PgTaskRow[]>`SELECT * FROM tasks WHERE pool_room = ${q.room} AND state = 'submitted'
        AND (pool_available_at IS NULL OR pool_available_at <= ${q.offeredAt}) ORDER BY created_at, id LIMIT ${q.limit}`;
      return rows.map(toPgTask);
    }
    const before = q.before == null ? s`` : s`AND last_seq < ${q.before}`;
    const rows = await s<PgTaskRow[]>`SELECT * FROM tasks WHERE pool_room = ${q.room} ${before} ORDER BY last_seq DESC, id DESC LIMIT ${q.limit}`;
    return rows.map(toPgTask);
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
