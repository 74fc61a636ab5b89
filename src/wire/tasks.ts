// Tasks and approvals on the mailbox: a task lives in a thread, and every change of it is mail in
// that thread, so waits, hooks, delivery chains, receipts and the browser carry tasks with no
// delivery path of their own. States are exactly A2A 1.0's (docs/tasks.md).
import { z } from 'zod';
import { AddressInput, Body, Refs, text } from './fields.js';
import { LIMITS } from './limits.js';
import { RefOut } from './ops.js';
import { TaskState } from './task-states.js';
import { LEASE_LIMITS, LeaseOut, TtlSecs } from './leases.js';

export { ASSIGNEE_STATES, TASK_STATES, TERMINAL_STATES, TaskState, isTerminal } from './task-states.js';

export const TASK_LIMITS = {
  titleBytes: 512,
  noteBytes: 4_096,
  summaryBytes: 4_096,
  /** The result's `data`, as JSON text. */
  dataBytes: 65_536,
  listMax: 100,
  listDefault: 20,
  actionBytes: 512,
  /** History entries a task keeps; past them only a move to a final state is taken. */
  historyMax: 1_000,
  /** An approval expires at most this long after it was asked for. */
  expiresMaxSecs: 30 * 24 * 3600,
} as const;

export const TaskId = z
  .string()
  .regex(/^t-[0-9a-z]{1,64}$/, 'not a task id')
  .describe('task id, t-…');
export const ApprovalId = z
  .string()
  .regex(/^a-[0-9a-z]{1,64}$/, 'not an approval id')
  .describe('approval id, a-…');

const Note = text(TASK_LIMITS.noteBytes);

/** Any JSON value whose text is at most TASK_LIMITS.dataBytes. */
const Data = z.unknown().superRefine((v, ctx) => {
  let n: number;
  try {
    n = Buffer.byteLength(JSON.stringify(v) ?? '', 'utf8');
  } catch {
    ctx.addIssue({ code: 'custom', message: 'not JSON' });
    return;
  }
  if (n > TASK_LIMITS.dataBytes)
    ctx.addIssue({ code: 'custom', message: `over the limit of ${TASK_LIMITS.dataBytes} bytes`, params: { m4a: 'too_large', limit: TASK_LIMITS.dataBytes, actual: n } });
});

export const TaskResult = z.strictObject({
  summary: text(TASK_LIMITS.summaryBytes).optional(),
  data: Data.optional().describe(`any JSON, ≤ ${TASK_LIMITS.dataBytes / 1024} KiB`),
  refs: Refs.optional(),
});

export const TaskCreateRequest = z.strictObject({
  to: AddressInput.describe('the assignee: an account or a session'),
  title: text(TASK_LIMITS.titleBytes),
  instructions: Body.optional(),
  refs: Refs.optional(),
  parent_task_id: TaskId.optional().describe('a task you can read'),
  idempotency_key: text(LIMITS.selectorBytes).optional().describe('retries within 24 h return the first'),
  max_attempts: z
    .number()
    .int()
    .min(1)
    .max(LEASE_LIMITS.maxAttemptsMax)
    .optional()
    .describe(`a task for a room: claims before it fails lease_exhausted (default ${LEASE_LIMITS.maxAttemptsDefault})`),
  retry_delay_secs: z
    .number()
    .int()
    .min(0)
    .max(LEASE_LIMITS.retryDelayMaxSecs)
    .optional()
    .describe('a task for a room: wait before offering it again after a claim ended, doubling per return'),
});

/** Take a pooled task: this one, or the oldest on offer in a room's pool. */
export const TaskClaimRequest = z
  .strictObject({
    task_id: TaskId.optional(),
    pool: z
      .string()
      .max(LIMITS.selectorBytes + 1)
      .optional()
      .describe('#room: its oldest unclaimed task'),
    ttl_secs: TtlSecs.optional(),
  })
  .refine((r) => (r.task_id === undefined) !== (r.pool === undefined), { message: 'name exactly one of task_id and pool', path: ['task_id'] });

export const TaskGetRequest = z.strictObject({
  task_id: TaskId,
  wait_secs: z.number().finite().min(0).max(LIMITS.waitSecsHttp).optional().describe(`park until the version passes after_version, ≤ ${LIMITS.waitSecsHttp} s`),
  after_version: z.number().int().min(0).optional().describe('with wait_secs: the version you have'),
});

export const TaskListRequest = z.strictObject({
  role: z.enum(['assigned', 'requested', 'pool']).describe('pool: the tasks of the room named in pool'),
  pool: z
    .string()
    .max(LIMITS.selectorBytes + 1)
    .optional()
    .describe('role pool: #room'),
  state: TaskState.optional(),
  reason: z.enum(['lease_exhausted']).optional().describe('only tasks the mailbox failed for this reason'),
  after: z.string().max(64).optional().describe('a next_cursor'),
  limit: z.number().int().min(1).max(TASK_LIMITS.listMax).optional().describe(`default ${TASK_LIMITS.listDefault}`),
});

export const TaskUpdateRequest = z.strictObject({
  task_id: TaskId,
  state: TaskState,
  note: Note.optional().describe('input_required: the question'),
  result: TaskResult.optional(),
  epoch: z.number().int().min(1).optional().describe("a pooled task: your lease's epoch"),
});

export const TaskCancelRequest = z.strictObject({ task_id: TaskId, reason: Note.optional() });

export const HistoryEntry = z.object({ state: TaskState, at: z.string(), by: z.string(), note: z.string().optional() });

export const TaskOut = z.object({
  task_id: z.string(),
  thread_id: z.string(),
  from: z.string().describe('the requester'),
  to: z.string().describe('the assignee'),
  title: z.string(),
  instructions: z.string().optional(),
  refs: z.array(RefOut).optional(),
  parent_task_id: z.string().optional(),
  state: TaskState,
  history: z.array(HistoryEntry),
  result: z.object({ summary: z.string().optional(), data: z.unknown().optional(), refs: z.array(RefOut).optional() }).optional(),
  created_at: z.string(),
  updated_at: z.string(),
  version: z.number().int(),
  pool: z
    .object({
      room: z.string(),
      attempt: z.number().int(),
      max_attempts: z.number().int(),
      available_at: z.string().optional(),
      lease_id: z.string().optional(),
      epoch: z.number().int().optional(),
    })
    .optional()
    .describe('a task for a room'),
  fail_reason: z.string().optional(),
  children: z
    .array(z.object({ task_id: z.string(), title: z.string(), state: TaskState }))
    .optional()
    .describe('get: tasks whose parent this is'),
});

export const TaskListResponse = z.object({ tasks: z.array(TaskOut), next_cursor: z.string().nullable() });
export const TaskClaimResponse = z.object({ task: TaskOut.nullable().describe('null: nothing on offer'), lease: LeaseOut.nullable() });

export const ApprovalRequest = z.strictObject({
  reviewer: AddressInput.describe('an account (an agent or a person)'),
  action: text(TASK_LIMITS.actionBytes).describe('what would be done; the mailbox never does it'),
  details: Body.optional(),
  task_id: TaskId.optional().describe('moves that task to auth_required until decided'),
  expires_in: z.number().int().min(1).max(TASK_LIMITS.expiresMaxSecs).optional().describe('seconds'),
});

export const ApprovalDecideRequest = z.strictObject({
  approval_id: ApprovalId,
  decision: z.enum(['approved', 'rejected']),
  reason: Note,
});

export const ApprovalGetRequest = z.strictObject({
  approval_id: ApprovalId,
  wait_secs: z.number().finite().min(0).max(LIMITS.waitSecsHttp).optional().describe(`park until decided, ≤ ${LIMITS.waitSecsHttp} s`),
});

export const ApprovalOut = z.object({
  approval_id: z.string(),
  thread_id: z.string(),
  requester: z.string(),
  reviewer: z.string(),
  action: z.string(),
  details: z.string().optional(),
  task_id: z.string().optional(),
  state: z.enum(['pending', 'approved', 'rejected', 'expired']),
  reason: z.string().optional(),
  created_at: z.string(),
  expires_at: z.string().optional(),
  decided_at: z.string().optional(),
});

// ---- over MCP: one tool per family, the action naming the operation; its own schema checks the rest

/** m4a_task: the fields of create, update, cancel and list in one flat object (a model reads one
 *  short schema); the door checks them against that action's own schema. */
export const McpTaskRequest = z.strictObject({
  action: z.enum(['create', 'update', 'cancel', 'list', 'claim']).describe('what to do'),
  task_id: TaskId.optional().describe('update, cancel, claim'),
  to: z.string().optional().describe('create: the assignee (account, session or #room)'),
  pool: z.string().optional().describe('claim, list: #room'),
  epoch: z.number().int().optional().describe("update of a claimed task: its lease's epoch"),
  title: z.string().optional().describe('create'),
  instructions: z.string().optional().describe('create'),
  parent_task_id: z.string().optional().describe('create: its parent task'),
  idempotency_key: z.string().optional().describe('create: a retry returns the first'),
  state: TaskState.optional().describe('update; list: only this state'),
  note: z.string().optional().describe('update: for input_required, the question; cancel: the reason'),
  result: z.object({ summary: z.string().optional(), data: z.unknown().optional() }).optional().describe('update'),
  role: z.enum(['assigned', 'requested', 'pool']).optional().describe('list'),
  after: z.string().optional().describe('list: a next_cursor'),
});

export const TaskActionResponse = z.union([TaskOut, z.object({ tasks: z.array(TaskOut), next_cursor: z.string().nullable() })]);

export const McpTaskGetRequest = TaskGetRequest.extend({
  wait_secs: z.number().finite().min(0).max(LIMITS.waitSecsMcp).optional().describe(`wait for its next change, ≤ ${LIMITS.waitSecsMcp} s`),
});

export const McpApprovalRequest = z.strictObject({
  action: z.enum(['request', 'decide', 'get']).describe('what to do'),
  approval_id: z.string().optional().describe('decide, get'),
  reviewer: z.string().optional().describe('request: an account'),
  what: z.string().optional().describe('request: the action to approve'),
  details: z.string().optional().describe('request'),
  task_id: z.string().optional().describe('request: the task that waits for it'),
  decision: z.enum(['approved', 'rejected']).optional().describe('decide'),
  reason: z.string().optional().describe('decide'),
});

export type McpTaskRequest = z.output<typeof McpTaskRequest>;
export type McpApprovalRequest = z.output<typeof McpApprovalRequest>;
export type TaskCreateRequest = z.output<typeof TaskCreateRequest>;
export type TaskGetRequest = z.output<typeof TaskGetRequest>;
export type TaskListRequest = z.output<typeof TaskListRequest>;
export type TaskUpdateRequest = z.output<typeof TaskUpdateRequest>;
export type TaskCancelRequest = z.output<typeof TaskCancelRequest>;
export type TaskClaimRequest = z.output<typeof TaskClaimRequest>;
export type TaskClaimResponse = z.infer<typeof TaskClaimResponse>;
export type TaskOut = z.infer<typeof TaskOut>;
export type TaskListResponse = z.infer<typeof TaskListResponse>;
export type ApprovalRequest = z.output<typeof ApprovalRequest>;
export type ApprovalDecideRequest = z.output<typeof ApprovalDecideRequest>;
export type ApprovalGetRequest = z.output<typeof ApprovalGetRequest>;
export type ApprovalOut = z.infer<typeof ApprovalOut>;
