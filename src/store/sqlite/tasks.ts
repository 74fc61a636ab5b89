// Tasks and approvals in the SQLite store: statements prepared once, one transaction per write
// (the store's, so commits are counted). Removal of an account is purge.ts (purgeAccountTasks).
// Pooled tasks: poolTasks reads one range of tasks_by_pool_offer or tasks_by_pool.
import type Database from 'better-sqlite3';
import type { ApprovalRecord, PoolQuery, TaskCreateOutcome, TaskQuery, TaskRecord, TaskStore } from '../types.js';
import type { Stmt } from './statements.js';
import { approvalParams, poolParams, taskParams, toApproval, toTask, type ApprovalRow, type TaskRow } from './task-rows.js';

/** No cursor: every lastSeq is below it. */
const NO_CURSOR = Number.MAX_SAFE_INTEGER;

/** What an update writes besides the changing fields (task-rows.ts poolParams). */
const POOL_COLUMNS = ['pool_room', 'pool_attempt', 'pool_max_attempts', 'pool_retry_delay_secs', 'pool_available_at', 'pool_lease_id', 'pool_lease_epoch', 'fail_reason'] as const;

export type TaskStatements = ReturnType<typeof prepareTaskStatements>;

export function prepareTaskStatements(db: Database.Database) {
  const p = <R = unknown>(sql: string): Stmt<R> => db.prepare<unknown[], R>(sql);
  // One backward range of (account, [state,] last_seq, id): newest change first, no sort.
  // The dead-letter list (failReason) filters the same range.
  const list = (column: 'to_account' | 'from_account', state: boolean, reason = false) =>
    p<TaskRow>(
      `SELECT * FROM tasks WHERE ${column} = ?${state ? ' AND state = ?' : ''}${reason ? ' AND fail_reason = ?' : ''} AND last_seq < ? ORDER BY last_seq DESC, id DESC LIMIT ?`,
    );
  return {
    insertTask: p(
      `INSERT INTO tasks (id, thread_id, from_account, from_session, from_address, to_account, to_lineage,
         to_address, title, instructions, refs, parent_task_id, state, history, result, created_at,
         updated_at, version, last_seq, idempotency_key, ${POOL_COLUMNS.join(', ')})
       VALUES (@id, @thread_id, @from_account, @from_session, @from_address, @to_account, @to_lineage,
         @to_address, @title, @instructions, @refs, @parent_task_id, @state, @history, @result, @created_at,
         @updated_at, @version, @last_seq, @idempotency_key, ${POOL_COLUMNS.map((c) => `@${c}`).join(', ')})`,
    ),
    // Newest first: after a window expired, a key may have been used again.
    findIdempotentTask: p<TaskRow>(
      `SELECT * FROM tasks WHERE from_account = ? AND idempotency_key = ? AND created_at >= ?
       ORDER BY created_at DESC, id DESC LIMIT 1`,
    ),
    getTask: p<TaskRow>('SELECT * FROM tasks WHERE id = ?'),
    updateTask: p(
      `UPDATE tasks SET state = @state, history = @history, result = @result, updated_at = @updated_at,
         version = @version, last_seq = @last_seq, ${POOL_COLUMNS.map((c) => `${c} = @${c}`).join(', ')},
         -- A pooled task's holder changes with its claims; an ordinary task's assignee never.
         to_account = CASE WHEN pool_room IS NULL THEN to_account ELSE @to_account END,
         to_lineage = CASE WHEN pool_room IS NULL THEN to_lineage ELSE @to_lineage END,
         to_address = CASE WHEN pool_room IS NULL THEN to_address ELSE @to_address END
       WHERE id = @id AND version = @expected`,
    ),
    assigned: list('to_account', false),
    assignedInState: list('to_account', true),
    requested: list('from_account', false),
    requestedInState: list('from_account', true),
    assignedFailed: list('to_account', false, true),
    assignedInStateFailed: list('to_account', true, true),
    requestedFailed: list('from_account', false, true),
    requestedInStateFailed: list('from_account', true, true),
    poolOffer: p<TaskRow>(
      `SELECT * FROM tasks WHERE pool_room = ? AND state = 'submitted' AND (pool_available_at IS NULL OR pool_available_at <= ?)
       ORDER BY created_at, id LIMIT ?`,
    ),
    poolAll: p<TaskRow>('SELECT * FROM tasks WHERE pool_room = ? AND last_seq < ? ORDER BY last_seq DESC, id DESC LIMIT ?'),
    taskChildren: p<TaskRow>('SELECT * FROM tasks WHERE parent_task_id = ? ORDER BY created_at, id LIMIT ?'),

    insertApproval: p(
      `INSERT INTO approvals (id, thread_id, requester_account, requester_session, requester_address,
         reviewer_account, action, details, task_id, state, reason, created_at, expires_at, decided_at)
       VALUES (@id, @thread_id, @requester_account, @requester_session, @requester_address,
         @reviewer_account, @action, @details, @task_id, @state, @reason, @created_at, @expires_at, @decided_at)`,
    ),
    getApproval: p<ApprovalRow>('SELECT * FROM approvals WHERE id = ?'),
    decideApproval: p("UPDATE approvals SET state = ?, reason = ?, decided_at = ? WHERE id = ? AND state = 'pending'"),
  };
}

export class SqliteTasks implements TaskStore {
  constructor(
    private readonly st: TaskStatements,
    /** The store's write transaction, resolved once durable (writer.ts). */
    private readonly tx: <R>(fn: () => R) => Promise<R>,
  ) {}

  async createTask(t: TaskRecord, idempotentSince: number): Promise<TaskCreateOutcome> {
    return this.tx((): TaskCreateOutcome => {
      if (t.idempotencyKey !== null) {
        const prior = this.st.findIdempotentTask.get(t.fromAccount, t.idempotencyKey, idempotentSince);
        if (prior) return { kind: 'duplicate', task: toTask(prior) };
      }
      const row = taskParams(t);
      this.st.insertTask.run(row);
      return { kind: 'created', task: toTask(row) };
    });
  }

  async getTask(id: string): Promise<TaskRecord | null> {
    const r = this.st.getTask.get(id);
    return r ? toTask(r) : null;
  }

  async updateTask(t: TaskRecord, expectedVersion: number): Promise<TaskRecord | null> {
    return this.tx(() => {
      const row = taskParams(t);
      const params = {
        id: row.id,
        state: row.state,
        history: row.history,
        result: row.result,
        updated_at: row.updated_at,
        version: row.version,
        last_seq: row.last_seq,
        to_account: row.to_account,
        to_lineage: row.to_lineage,
        to_address: row.to_address,
        ...poolParams(t),
      };
      if (this.st.updateTask.run({ ...params, expected: expectedVersion }).changes === 0) return null;
      const r = this.st.getTask.get(t.id);
      return r ? toTask(r) : null;
    });
  }

  async listTasks(q: TaskQuery): Promise<TaskRecord[]> {
    if (q.limit <= 0) return []; // LIMIT -1 would mean "no limit" to SQLite
    const assigned = q.role === 'assigned';
    // An unclaimed pooled task has no assignee account (''): nobody's to list as assigned.
    if (assigned && q.account === '') return [];
    const reason = q.failReason ?? null;
    const stmt = this.st[`${assigned ? 'assigned' : 'requested'}${q.state === null ? '' : 'InState'}${reason === null ? '' : 'Failed'}` as const];
    const params: unknown[] = [q.account];
    if (q.state !== null) params.push(q.state);
    if (reason !== null) params.push(reason);
    return stmt.all(...params, q.before ?? NO_CURSOR, q.limit).map(toTask);
  }

  async taskChildren(parentId: string, limit: number): Promise<TaskRecord[]> {
    if (limit <= 0) return [];
    return this.st.taskChildren.all(parentId, limit).map(toTask);
  }

  async poolTasks(q: PoolQuery): Promise<TaskRecord[]> {
    if (q.limit <= 0) return [];
    const rows = q.offeredAt === undefined ? this.st.poolAll.all(q.room, q.before ?? NO_CURSOR, q.limit) : this.st.poolOffer.all(q.room, q.offeredAt, q.limit);
    return rows.map(toTask);
  }

  async createApproval(a: ApprovalRecord): Promise<void> {
    await this.tx(() => this.st.insertApproval.run(approvalParams(a)));
  }

  async getApproval(id: string): Promise<ApprovalRecord | null> {
    const r = this.st.getApproval.get(id);
    return r ? toApproval(r) : null;
  }

  async decideApproval(id: string, state: 'approved' | 'rejected', reason: string, at: number): Promise<ApprovalRecord | null> {
    return this.tx(() => {
      if (this.st.decideApproval.run(state, reason, at, id).changes === 0) return null;
      const r = this.st.getApproval.get(id);
      return r ? toApproval(r) : null;
    });
  }
}
