// A task's states, exactly A2A 1.0's, and who moves a task where (docs/tasks.md). Their own file
// so both the task operations (tasks.ts) and message items (ops.ts, which tasks.ts imports) name
// them without an import cycle.
import { z } from 'zod';

export const TASK_STATES = ['submitted', 'working', 'input_required', 'auth_required', 'completed', 'failed', 'canceled', 'rejected'] as const;
export const TaskState = z.enum(TASK_STATES);
export type TaskState = (typeof TASK_STATES)[number];

/** A task in one of these states is final: nothing changes it again (task_terminal). */
export const TERMINAL_STATES: readonly TaskState[] = ['completed', 'failed', 'canceled', 'rejected'];
export const isTerminal = (s: TaskState): boolean => TERMINAL_STATES.includes(s);

/** States only the assignee moves a task to; the requester only cancels. `auth_required` is the
 *  mailbox's own, while an approval linked to the task is pending. */
export const ASSIGNEE_STATES: readonly TaskState[] = ['working', 'input_required', 'completed', 'failed', 'rejected'];
