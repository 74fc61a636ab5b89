// Rows of the tasks and approvals tables, shared by the SQLite and PostgreSQL stores (same column
// names). refs, history and result are JSON text: what goes in comes back as JSON gives it back.
// A pooled task's claim state is the pool_* columns (pool_room null: not pooled).
import type { ApprovalRecord, ApprovalState, Ref, TaskHistoryEntry, TaskPool, TaskRecord, TaskResultRecord } from '../types.js';

export interface TaskRow {
  id: string;
  thread_id: string;
  from_account: string;
  from_session: string | null;
  from_address: string;
  to_account: string;
  to_lineage: string | null;
  to_address: string;
  title: string;
  instructions: string | null;
  refs: string;
  parent_task_id: string | null;
  state: string;
  history: string;
  result: string | null;
  created_at: number;
  updated_at: number;
  version: number;
  last_seq: number;
  idempotency_key: string | null;
  pool_room: string | null;
  pool_attempt: number | null;
  pool_max_attempts: number | null;
  pool_retry_delay_secs: number | null;
  pool_available_at: number | null;
  pool_lease_id: string | null;
  pool_lease_epoch: number | null;
  fail_reason: string | null;
}

export function taskParams(t: TaskRecord): TaskRow {
  return {
    id: t.id,
    thread_id: t.threadId,
    from_account: t.fromAccount,
    from_session: t.fromSession,
    from_address: t.fromAddress,
    to_account: t.toAccount,
    to_lineage: t.toLineage,
    to_address: t.toAddress,
    title: t.title,
    instructions: t.instructions,
    refs: JSON.stringify(t.refs),
    parent_task_id: t.parentTaskId,
    state: t.state,
    history: JSON.stringify(t.history),
    result: t.result === null ? null : JSON.stringify(t.result),
    created_at: t.createdAt,
    updated_at: t.updatedAt,
    version: t.version,
    last_seq: t.lastSeq,
    idempotency_key: t.idempotencyKey,
    ...poolParams(t),
  };
}

export type PoolColumns = Pick<
  TaskRow,
  'pool_room' | 'pool_attempt' | 'pool_max_attempts' | 'pool_retry_delay_secs' | 'pool_available_at' | 'pool_lease_id' | 'pool_lease_epoch' | 'fail_reason'
>;

/** The columns an update writes besides the changing fields: the pool and the fail reason. */
export function poolParams(t: TaskRecord): PoolColumns {
  const p = t.pool ?? null;
  return {
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

/** The pool of a row (null when the task is not pooled; a row read before the columns existed has
 *  none of them). */
function toPool(r: TaskRow): TaskPool | null {
  if (r.pool_room == null) return null;
  return {
    room: r.pool_room,
    attempt: r.pool_attempt ?? 0,
    maxAttempts: r.pool_max_attempts ?? 0,
    retryDelaySecs: r.pool_retry_delay_secs ?? null,
    availableAt: r.pool_available_at ?? null,
    leaseId: r.pool_lease_id ?? null,
    leaseEpoch: r.pool_lease_epoch ?? null,
  };
}

/** An ordinary task comes back without the pool and failReason keys (never null), as a message
 *  without a task comes back without that key. */
export function toTask(r: TaskRow): TaskRecord {
  const pool = toPool(r);
  const failReason = r.fail_reason ?? null;
  return {
    id: r.id,
    threadId: r.thread_id,
    fromAccount: r.from_account,
    fromSession: r.from_session,
    fromAddress: r.from_address,
    toAccount: r.to_account,
    toLineage: r.to_lineage,
    toAddress: r.to_address,
    title: r.title,
    instructions: r.instructions,
    refs: r.refs === '[]' ? [] : (JSON.parse(r.refs) as Ref[]),
    parentTaskId: r.parent_task_id,
    state: r.state as TaskRecord['state'],
    history: JSON.parse(r.history) as TaskHistoryEntry[],
    result: r.result === null ? null : (JSON.parse(r.result) as TaskResultRecord),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    version: r.version,
    lastSeq: r.last_seq,
    idempotencyKey: r.idempotency_key,
    ...(pool ? { pool } : {}),
    ...(failReason !== null ? { failReason } : {}),
  };
}

export interface ApprovalRow {
  id: string;
  thread_id: string;
  requester_account: string;
  requester_session: string | null;
  requester_address: string;
  reviewer_account: string;
  action: string;
  details: string | null;
  task_id: string | null;
  state: string;
  reason: string | null;
  created_at: number;
  expires_at: number | null;
  decided_at: number | null;
}

export function approvalParams(a: ApprovalRecord): ApprovalRow {
  return {
    id: a.id,
    thread_id: a.threadId,
    requester_account: a.requesterAccount,
    requester_session: a.requesterSession,
    requester_address: a.requesterAddress,
    reviewer_account: a.reviewerAccount,
    action: a.action,
    details: a.details,
    task_id: a.taskId,
    state: a.state,
    reason: a.reason,
    created_at: a.createdAt,
    expires_at: a.expiresAt,
    decided_at: a.decidedAt,
  };
}

export function toApproval(r: ApprovalRow): ApprovalRecord {
  return {
    id: r.id,
    threadId: r.thread_id,
    requesterAccount: r.requester_account,
    requesterSession: r.requester_session,
    requesterAddress: r.requester_address,
    reviewerAccount: r.reviewer_account,
    action: r.action,
    details: r.details,
    taskId: r.task_id,
    state: r.state as ApprovalState,
    reason: r.reason,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    decidedAt: r.decided_at,
  };
}
