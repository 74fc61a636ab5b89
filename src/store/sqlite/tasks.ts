// Tasks and approvals in the SQLite store: statements prepared once, one transaction per write
// (the store's, so commits are counted). Removal of an account is purge.ts (purgeAccountTasks).
import type Database from 'better-sqlite3';
import type { ApprovalRecord, TaskCreateOutcome, TaskQuery, TaskRecord, TaskStore } from '../types.js';
import type { Stmt } from './statements.js';
import { approvalParams, taskParams, toApproval, toTask, type ApprovalRow, type TaskRow } from './task-rows.js';

/** No cursor: every lastSeq is below it. */
const NO_CURSOR = Number.MAX_SAFE_INTEGER;

export type TaskStatements = ReturnType<typeof prepareTaskStatements>;

export function prepareTaskStatements(db: Database.Database) {
  const p = <R = unknown>(sql: string): Stmt<R> => db.prepare<unknown[], R>(sql);
  // One backward range of (account, [state,] last_seq, id): newest change first, no sort.
  const list = (column: 'to_account' | 'from_account', state: boolean) =>
    p<TaskRow>(`SELECT * FROM tasks WHERE ${column} = ?${state ? ' AND state = ?' : ''} AND last_seq < ? ORDER BY last_seq DESC, id DESC LIMIT ?`);
  return {
    insertTask: p(
      `INSERT INTO tasks (id, thread_id, from_account, from_session, from_address, to_account, to_lineage,
         to_address, title, instructions, refs, parent_task_id, state, history, result, created_at,
         updated_at, version, last_seq, idempotency_key)
       VALUES (@id, @thread_id, @from_account, @from_session, @from_address, @to_account, @to_lineage,
         @to_address, @title, @instructions, @refs, @parent_task_id, @state, @history, @result, @created_at,
         @updated_at, @version, @last_seq, @idempotency_key)`,
    ),
    // Newest first: after a window expired, a key may have been used again.
    findIdempotentTask: p<TaskRow>(
      `SELECT * FROM tasks WHERE from_account = ? AND idempotency_key = ? AND created_at >= ?
       ORDER BY created_at DESC, id DESC LIMIT 1`,
    ),
    getTask: p<TaskRow>('SELECT * FROM tasks WHERE id = ?'),
    updateTask: p(
      `UPDATE tasks SET state = @state, history = @history, result = @result, updated_at = @updated_at,
         version = @version, last_seq = @last_seq
       WHERE id = @id AND version = @expected`,
    ),
    assigned: list('to_account', false),
    assignedInState: list('to_account', true),
    requested: list('from_account', false),
    requestedInState: list('from_account', true),
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
    /** The store's write transaction. */
    private readonly tx: <R>(fn: () => R) => R,
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
      const params = { id: row.id, state: row.state, history: row.history, result: row.result, updated_at: row.updated_at, version: row.version, last_seq: row.last_seq };
      if (this.st.updateTask.run({ ...params, expected: expectedVersion }).changes === 0) return null;
      const r = this.st.getTask.get(t.id);
      return r ? toTask(r) : null;
    });
  }

  async listTasks(q: TaskQuery): Promise<TaskRecord[]> {
    if (q.limit <= 0) return []; // LIMIT -1 would mean "no limit" to SQLite
    const before = q.before ?? NO_CURSOR;
    const assigned = q.role === 'assigned';
    const rows =
      q.state === null
        ? (assigned ? this.st.assigned : this.st.requested).all(q.account, before, q.limit)
        : (assigned ? this.st.assignedInState : this.st.requestedInState).all(q.account, q.state, before, q.limit);
    return rows.map(toTask);
  }

  async taskChildren(parentId: string, limit: number): Promise<TaskRecord[]> {
    if (limit <= 0) return [];
    return this.st.taskChildren.all(parentId, limit).map(toTask);
  }

  async createApproval(a: ApprovalRecord): Promise<void> {
    this.tx(() => this.st.insertApproval.run(approvalParams(a)));
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
