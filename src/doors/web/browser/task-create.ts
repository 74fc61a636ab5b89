// The board's "New task" form: the person hands a task to an account, one of its sessions or a room
// she is in (its pool; task/create, with the login's CSRF token like every call). The daemon
// decides: a refusal (unknown_participant, malformed with its field, too_large, permission_denied
// for a room she is not in) is shown by name beside the form and nothing is created; a task made
// opens its page.
import type { ApiError, Task } from './answers.js';
import { api } from './api.js';
import { announce, field, formError, h } from './dom.js';
import { loadDirectory } from './mail-data.js';
import { go } from './nav.js';
import { addressOptions } from './page-compose.js';
import { namedError } from './task-data.js';

/** One key per drawing of the form, kept in it as a hidden field: a resend of the same form (a
 *  lost answer, a second click) names the task the first one made instead of making another. */
const newKey = (): string => 'web-task-' + Math.random().toString(36).slice(2) + Date.now().toString(36);

export function newTaskForm(): HTMLElement {
  const list = h('datalist', { id: 'task-addresses' });
  const to = h('input', { name: 'to', id: 'task-to', list: 'task-addresses', autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false' });
  const title = h('input', { name: 'title', id: 'task-title', autocomplete: 'off' });
  const instructions = h('textarea', { name: 'instructions', id: 'task-instructions-input', rows: '6' });
  const parent = h('input', { name: 'parent_task_id', id: 'task-parent', class: 'mono', autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false' });
  const key = h('input', { type: 'hidden', name: 'idempotency_key', value: newKey() });
  const send = h('button', { type: 'submit', text: 'Hand over the task' });
  // novalidate: what is missing is said in words, as the daemon's refusals are.
  const form = h('form', { id: 'task-create', novalidate: true, 'aria-label': 'New task' }, [
    field('To', to, 'an account (codex), one of its sessions (codex/web-ui, codex/s-…), or a room you are in (#reviewers): its members claim it'),
    list,
    field('Title', title),
    field('Instructions', instructions, 'optional, plain text; Ctrl+Enter hands it over'),
    field('Parent task (optional)', parent, 'a task id (t-…) this one is part of'),
    key,
    send,
  ]);
  const err = formError(form);
  let pending = false;
  instructions.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) form.requestSubmit();
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    // One request at a time: a second submit while the first is out would race it to the key.
    if (pending) return;
    err.hide();
    if (!to.value.trim() || !title.value.trim()) return err.show('A recipient and a title are needed.');
    pending = true;
    send.disabled = true;
    const req = {
      to: to.value.trim(),
      title: title.value,
      ...(instructions.value.trim() ? { instructions: instructions.value } : {}),
      ...(parent.value.trim() ? { parent_task_id: parent.value.trim() } : {}),
      idempotency_key: key.value,
    };
    api<Task>('task/create', req).then(
      (t) => {
        announce('Task handed to ' + t.to + '.');
        go('/web/task/' + t.task_id);
      },
      (e2: ApiError) => {
        pending = false;
        send.disabled = false;
        err.show(namedError(e2));
      },
    );
  });
  loadDirectory().then(
    (dir) => {
      // Of the rooms, those the person is in: a task for one goes to its pool.
      const mine = new Set(dir.rooms.filter((r) => r.member).map((r) => '#' + r.name));
      for (const o of addressOptions(dir)) if (!o[0].startsWith('#') || mine.has(o[0])) list.appendChild(h('option', { value: o[0], label: o[1] }));
    },
    () => {
      /* completion is a convenience */
    },
  );
  return h('details', { class: 'card new-task', id: 'new-task' }, [h('summary', { text: 'New task' }), form]);
}
