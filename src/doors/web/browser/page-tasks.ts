// The task board: tasks assigned to the person and tasks they asked for, newest change first,
// grouped by state (open ones first) or narrowed to one state, under the New task form
// (task-create.ts); below them the pools of the person's rooms and the dead letters
// (task-pools.ts). Changes arrive as mail, so the live update redraws the board (not the form)
// when a task's mail comes in (live.ts).
import type { ApiError, Task, TaskList, TaskState } from './answers.js';
import { api } from './api.js';
import { $, clear, errorText, field, h, when } from './dom.js';
import { addr } from './mail-data.js';
import { go, pageTitle } from './nav.js';
import { newTaskForm } from './task-create.js';
import { loadPools } from './task-pools.js';
import { TASK_STATES, stateBadge, stateWord } from './task-data.js';

export type Role = 'assigned' | 'requested';

interface Board {
  role: Role;
  state: TaskState | null;
  tasks: Task[];
  cursor: string | null;
}

let board: Board | null = null;
/** Bumped by each drawing of the page, so an answer for a board left behind draws nothing. */
let gen = 0;

/** Open states first (what needs someone), then the finished ones. */
const ORDER: readonly TaskState[] = ['input_required', 'auth_required', 'submitted', 'working', 'completed', 'failed', 'rejected', 'canceled'];

const boardPath = (role: Role, state: TaskState | null): string => '/web/tasks?role=' + role + (state ? '&state=' + state : '');

export function pageTasks(main: HTMLElement, params: URLSearchParams): void {
  const role: Role = params.get('role') === 'requested' ? 'requested' : 'assigned';
  const asked = params.get('state');
  const state = TASK_STATES.find((s) => s === asked) ?? null;
  pageTitle(main, 'Tasks');
  const tab = (r: Role, label: string): HTMLElement =>
    h('li', {}, [h('a', { href: boardPath(r, state), 'data-nav': true, class: 'tab', 'aria-current': r === role ? 'page' : null, text: label })]);
  const filter = h('select', { id: 'task-state', onchange: () => go(boardPath(role, (filter.value || null) as TaskState | null), true) }, [
    h('option', { value: '', text: 'every state, grouped' }),
    ...TASK_STATES.map((s) => h('option', { value: s, text: stateWord(s) })),
  ]);
  filter.value = state ?? '';
  main.appendChild(
    h('div', { class: 'toolbar' }, [
      h('nav', { 'aria-label': 'whose tasks' }, [h('ul', { class: 'tabs' }, [tab('assigned', 'Assigned to me'), tab('requested', 'Requested by me')])]),
      field('State', filter),
    ]),
  );
  main.appendChild(
    h('p', {
      class: 'hint',
      text: role === 'assigned' ? 'Tasks others handed to you. Open one to move it along.' : 'Tasks you handed to others, with their state as they move them.',
    }),
  );
  main.appendChild(newTaskForm());
  main.appendChild(h('div', { id: 'taskboard', 'aria-live': 'polite' }));
  main.appendChild(h('div', { id: 'pools' }));
  gen++;
  board = { role, state, tasks: [], cursor: null };
  void loadPage(board, false);
  loadPools(true);
}

/** Reads the board again from the start (a task's mail arrived while it is open). */
export function refreshBoard(): void {
  if (board && $('taskboard')) void loadPage({ ...board, tasks: [], cursor: null }, false);
  loadPools(false);
}

function loadPage(b: Board, more: boolean): Promise<void> {
  const g = gen;
  return api<TaskList>('task/list', { role: b.role, limit: 100, ...(b.state ? { state: b.state } : {}), ...(more && b.cursor ? { after: b.cursor } : {}) }).then(
    (r) => {
      if (g !== gen) return;
      b.tasks = b.tasks.concat(r.tasks);
      b.cursor = r.next_cursor;
      board = b;
      drawBoard(b);
    },
    (e: ApiError) => {
      const box = $('taskboard');
      if (box && g === gen) clear(box).appendChild(h('p', { class: 'error', role: 'alert', text: errorText(e) }));
    },
  );
}

function drawBoard(b: Board): void {
  const box = $('taskboard');
  if (!box) return;
  clear(box);
  if (!b.tasks.length) box.appendChild(h('p', { class: 'empty', text: b.state ? 'No ' + stateWord(b.state) + ' tasks.' : 'No tasks yet.' }));
  const states = b.state ? [b.state] : ORDER.filter((s) => b.tasks.some((t) => t.state === s));
  for (const s of states) {
    const these = b.tasks.filter((t) => t.state === s);
    if (!these.length) continue;
    box.appendChild(
      h('section', { class: 'taskgroup', 'data-state': s, 'aria-label': stateWord(s) }, [
        h('h2', { text: stateWord(s) + ' (' + these.length + ')' }),
        h(
          'ul',
          { class: 'msglist tasklist' },
          these.map((t) => taskItem(t, b.role)),
        ),
      ]),
    );
  }
  if (b.cursor) box.appendChild(h('button', { type: 'button', class: 'secondary', text: 'Show older tasks', onclick: () => void loadPage(b, true) }));
}

function taskItem(t: Task, role: Role): HTMLElement {
  const other = role === 'assigned' ? t.from : t.to;
  return h('li', { class: 'msg task', 'data-task': t.task_id }, [
    h('a', { href: '/web/task/' + t.task_id, 'data-nav': true, class: 'open' }, [
      h('span', { class: 'line1' }, [role === 'assigned' ? 'from ' : 'to ', addr(other, 'from'), stateBadge(t.state), when(t.updated_at)]),
      h('span', { class: 'subject', text: t.title }),
    ]),
  ]);
}
