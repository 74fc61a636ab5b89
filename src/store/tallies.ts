// Store.tallies, shared by every store: zeroes under every state, then the stores' own counts.
import { TASK_STATES } from '../wire/task-states.js';
import type { ApprovalState, StoreTallies } from './types.js';

const APPROVAL_STATES = ['pending', 'approved', 'rejected', 'expired'] as const satisfies readonly (ApprovalState | 'expired')[];

export function emptyTallies(): Omit<StoreTallies, 'messages'> {
  return {
    tasks: Object.fromEntries(TASK_STATES.map((k) => [k, 0])) as StoreTallies['tasks'],
    approvals: Object.fromEntries(APPROVAL_STATES.map((k) => [k, 0])) as StoreTallies['approvals'],
  };
}

/** From `SELECT state, count(*)` rows of the tasks and approvals tables (SQLite and PostgreSQL). */
export function talliesOf(messages: number, tasks: readonly { state: string; n: number | string }[], approvals: readonly { state: string; n: number | string }[]): StoreTallies {
  const t = emptyTallies();
  for (const r of tasks) if (r.state in t.tasks) t.tasks[r.state as keyof StoreTallies['tasks']] = Number(r.n);
  for (const r of approvals) if (r.state in t.approvals) t.approvals[r.state as keyof StoreTallies['approvals']] = Number(r.n);
  return { messages, ...t };
}
