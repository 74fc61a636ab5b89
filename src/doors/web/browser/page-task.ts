// One task: its parties, state, instructions, history, result, children, approvals and thread, with
// what the person may do to it (task-actions.ts). Every field is the daemon's answer shown as text.
import type { ApiError, Ref, Task } from './answers.js';
import { api } from './api.js';
import { approvalPanel } from './approval-panel.js';
import { bodyNodes } from './body-text.js';
import { clear, h, shellPart, when } from './dom.js';
import { addr } from './mail-data.js';
import { pageTitle } from './nav.js';
import { taskActions } from './task-actions.js';
import { namedError, stateBadge } from './task-data.js';
import { poolFacts } from './task-pools.js';

/** Draws task `id`; quiet: redrawn in place (after a change, or its mail arriving). */
export function pageTask(main: HTMLElement, id: string, quiet?: boolean): void {
  const title = quiet ? h('h1', { tabindex: '-1', id: 'page-title', text: 'Task' }) : pageTitle(main, 'Task');
  if (quiet) main.appendChild(title);
  const box = h('div', { id: 'task', 'data-task': id });
  main.appendChild(box);
  api<Task>('task/get', { task_id: id }).then(
    (t) => {
      title.textContent = t.title;
      document.title = t.title + ' · mail4agent';
      drawTask(box, t);
    },
    (e: ApiError) => {
      box.appendChild(h('p', { class: 'error', role: 'alert', text: namedError(e) }));
      box.appendChild(h('p', {}, [h('a', { href: '/web/tasks', 'data-nav': true, text: 'Back to the tasks' })]));
    },
  );
}

/** Draws the task again from the daemon (after this page changed it). */
export function redrawTask(id: string): void {
  pageTask(clear(shellPart('main')), id, true);
}

const refList = (refs: Ref[] | undefined, label: string): HTMLElement | null =>
  refs?.length
    ? h(
        'ul',
        { class: 'refs', 'aria-label': label },
        refs.map((x) => h('li', { text: x.kind + ': ' + x.locator })),
      )
    : null;

/** The approval ids the task's history names (the engine notes "waiting for approval a-…"). */
function approvalIds(t: Task): string[] {
  const ids = new Set<string>();
  for (const e of t.history) for (const m of (e.note || '').matchAll(/\bapproval (a-[0-9a-z]{1,64})\b/g)) if (m[1]) ids.add(m[1]);
  return [...ids];
}

function drawTask(box: HTMLElement, t: Task): void {
  box.setAttribute('data-thread', t.thread_id);
  box.setAttribute('data-state', t.state);
  box.appendChild(
    h('section', { class: 'card task-head', 'aria-label': 'about this task' }, [
      h('p', { class: 'task-state' }, ['State', stateBadge(t.state), '· version ' + t.version + ' · updated', when(t.updated_at)]),
      h('dl', {}, [
        h('dt', { text: 'Requester' }),
        h('dd', {}, [addr(t.from, 'party')]),
        h('dt', { text: 'Assignee' }),
        h('dd', {}, [addr(t.to, 'party')]),
        h('dt', { text: 'Created' }),
        h('dd', {}, [when(t.created_at)]),
        h('dt', { text: 'Task' }),
        h('dd', { class: 'mono', text: t.task_id }),
        ...(t.parent_task_id ? [h('dt', { text: 'Parent' }), h('dd', {}, [h('a', { href: '/web/task/' + t.parent_task_id, 'data-nav': true, text: t.parent_task_id })])] : []),
      ]),
      h('p', {}, [h('a', { href: '/web/thread/' + t.thread_id, 'data-nav': true, id: 'task-thread', text: 'Open its thread' }), ' (questions and answers are mail there)']),
    ]),
  );
  const pool = poolFacts(t);
  if (pool) box.appendChild(pool);
  box.appendChild(h('h2', { text: 'Instructions' }));
  box.appendChild(h('div', { class: 'message' }, [h('div', { class: 'body', id: 'task-instructions' }, [bodyNodes(t.instructions ?? t.title)]), refList(t.refs, 'references')]));
  if (t.result) box.appendChild(resultPart(t.result));
  box.appendChild(h('h2', { text: 'History' }));
  box.appendChild(
    h(
      'ol',
      { class: 'history', id: 'task-history' },
      t.history.map((e) =>
        h('li', { 'data-state': e.state }, [stateBadge(e.state), ' ', when(e.at), ' by ', addr(e.by, 'party'), e.note ? h('p', { class: 'note', text: e.note }) : null]),
      ),
    ),
  );
  if (t.children?.length) {
    box.appendChild(h('h2', { text: 'Children' }));
    box.appendChild(
      h(
        'ul',
        { class: 'children' },
        t.children.map((c) => h('li', {}, [h('a', { href: '/web/task/' + c.task_id, 'data-nav': true, text: c.title }), ' ', stateBadge(c.state)])),
      ),
    );
  }
  const ids = approvalIds(t);
  if (ids.length) {
    box.appendChild(h('h2', { text: 'Approvals' }));
    for (const id of ids) box.appendChild(approvalPanel(id, t.task_id));
  }
  box.appendChild(taskActions(t, () => redrawTask(t.task_id)));
}

function resultPart(r: NonNullable<Task['result']>): HTMLElement {
  const sec = h('section', { class: 'result-part', id: 'task-result', 'aria-label': 'result' }, [h('h2', { text: 'Result' })]);
  if (r.summary !== undefined) sec.appendChild(h('div', { class: 'message' }, [h('div', { class: 'body summary' }, [bodyNodes(r.summary)])]));
  if (r.data !== undefined) {
    sec.appendChild(h('h3', { text: 'Data (JSON)' }));
    sec.appendChild(h('pre', { class: 'data mono', tabindex: '0', 'aria-label': 'result data as JSON', text: JSON.stringify(r.data, null, 2) }));
  }
  const refs = refList(r.refs, 'result references');
  if (refs) sec.appendChild(refs);
  return sec;
}
