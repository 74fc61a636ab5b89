// What the task pages share: the states and who moves them (as docs/tasks.md; the daemon decides,
// this only chooses which controls to offer), state badges, and named refusals in plain words.
import type { ApiError, TaskState } from './answers.js';
import { errorText, h } from './dom.js';
import { me } from './state.js';

export const TASK_STATES: readonly TaskState[] = ['submitted', 'working', 'input_required', 'auth_required', 'completed', 'failed', 'canceled', 'rejected'];
const TERMINAL: readonly TaskState[] = ['completed', 'failed', 'canceled', 'rejected'];
const ASSIGNEE: readonly TaskState[] = ['working', 'input_required', 'completed', 'failed', 'rejected'];

export const isTerminal = (s: TaskState): boolean => TERMINAL.includes(s);

/** Where the assignee may move a task in state `s`: auth_required is left by the approval's
 *  decision (the assignee may only give up), a terminal task never moves. */
export function assigneeMoves(s: TaskState): TaskState[] {
  if (isTerminal(s)) return [];
  if (s === 'auth_required') return ['failed'];
  return ASSIGNEE.filter((x) => x !== s);
}

export const stateWord = (s: string): string => s.replace(/_/g, ' ');

export function stateBadge(s: TaskState): HTMLSpanElement {
  return h('span', { class: 'badge state state-' + s, text: stateWord(s) });
}

/** The person is this address: their account, or (never for a person today) one of its sessions. */
export function isMe(address: string): boolean {
  const a = me().account;
  return address === a || address.startsWith(a + '/');
}

const SAY: Readonly<Record<string, (e: ApiError) => string>> = {
  task_terminal: (e) => 'This task is ' + stateWord(e.state || 'finished') + ': it never changes again.',
  invalid_transition: (e) => 'This task cannot move from ' + stateWord(e.from || '?') + ' to ' + stateWord(e.to || '?') + ' (' + (e.message || 'not by you') + ').',
  not_task_party: () => 'You are neither the requester nor the assignee of this task.',
  unknown_task: () => 'There is no such task.',
  approval_decided: (e) => 'This approval was decided already' + (e.state ? ' (' + e.state + ')' : '') + '.',
  approval_expired: () => 'This approval expired before anyone decided it.',
  not_reviewer: () => 'You are not the reviewer of this approval.',
  unknown_approval: () => 'There is no such approval.',
};

/** A refusal in words, with its name (task_terminal, approval_decided …) kept for the record. */
export function namedError(e: ApiError): string {
  const say = SAY[e.code];
  return (say ? say(e) : errorText(e)) + ' [' + e.code + ']';
}
