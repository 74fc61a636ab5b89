// What a person may do to a task: the assignee moves it (working, input_required with the question,
// completed, failed or rejected, with a result), the requester cancels it. The daemon decides; a
// refusal is shown by name (task_terminal, invalid_transition …) and nothing changes.
import type { ApiError, Task, TaskState } from './answers.js';
import { api } from './api.js';
import { announce, field, formError, h } from './dom.js';
import { assigneeMoves, isMe, isTerminal, namedError, stateWord } from './task-data.js';

/** done: draw the task again, after a change went through. */
export function taskActions(t: Task, done: () => void): HTMLElement {
  const part = h('section', { id: 'task-actions', 'aria-label': 'what you can do' });
  if (isTerminal(t.state)) {
    part.appendChild(h('p', { class: 'hint', text: 'This task is ' + stateWord(t.state) + ': it never changes again.' }));
    return part;
  }
  const moves = isMe(t.to) ? assigneeMoves(t.state) : [];
  if (moves.length) part.appendChild(moveForm(t, moves, done));
  else if (isMe(t.to) && t.state === 'auth_required') part.appendChild(h('p', { class: 'hint', text: 'Waiting for an approval: its decision moves the task back to working.' }));
  if (isMe(t.from)) part.appendChild(cancelForm(t, done));
  if (!part.firstChild) part.appendChild(h('p', { class: 'hint', text: 'You take no part in this task.' }));
  return part;
}

/** The result's data: empty is none, anything else must be JSON. */
type Parsed = { ok: true; data?: unknown } | { ok: false; why: string };

function parseData(text: string): Parsed {
  if (!text.trim()) return { ok: true };
  try {
    return { ok: true, data: JSON.parse(text) as unknown };
  } catch (e) {
    return { ok: false, why: 'Data is not JSON: ' + (e instanceof Error ? e.message : String(e)) };
  }
}

function moveForm(t: Task, moves: TaskState[], done: () => void): HTMLFormElement {
  const to = h(
    'select',
    { name: 'state', id: 'task-move-state' },
    moves.map((s) => h('option', { value: s, text: stateWord(s) })),
  );
  const note = h('textarea', { name: 'note', rows: '3', maxlength: '4096', id: 'task-note' });
  const noteLabel = h('label', { for: 'task-note', text: 'Note' });
  const noteHint = h('p', { class: 'hint', id: 'task-note-hint' });
  note.setAttribute('aria-describedby', 'task-note-hint');
  const summary = h('textarea', { name: 'summary', rows: '3', maxlength: '4096' });
  const data = h('textarea', { name: 'data', rows: '4', class: 'mono', spellcheck: 'false' });
  const resultPart = h('div', { class: 'result-fields' }, [
    field('Result summary', summary, 'what was done, for the requester'),
    field('Result data (JSON)', data, 'optional: any JSON value, up to 64 KiB'),
  ]);
  const send = h('button', { type: 'submit', text: 'Move the task' });
  // novalidate: the checks below say what is missing in words, as the daemon's refusals do.
  const form = h('form', { class: 'card', id: 'task-move', novalidate: true }, [
    h('h3', { text: 'Move this task' }),
    field('New state', to),
    h('div', { class: 'field' }, [noteLabel, note, noteHint]),
    resultPart,
    send,
  ]);
  const err = formError(form);
  const shape = (): void => {
    const asking = to.value === 'input_required';
    noteLabel.textContent = asking ? 'Question (required)' : 'Note';
    noteHint.textContent = asking ? 'what you need from the requester; they answer with mail in the thread' : 'optional, kept in the history';
    note.required = asking;
    resultPart.hidden = !['completed', 'failed', 'rejected'].includes(to.value);
  };
  to.addEventListener('change', shape);
  shape();
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    err.hide();
    const state = to.value as TaskState;
    if (state === 'input_required' && !note.value.trim()) return err.show('Write the question first.');
    const parsed: Parsed = resultPart.hidden ? { ok: true } : parseData(data.value);
    if (!parsed.ok) return err.show(parsed.why);
    const result = {
      ...(!resultPart.hidden && summary.value.trim() ? { summary: summary.value } : {}),
      ...(parsed.data !== undefined ? { data: parsed.data } : {}),
    };
    send.disabled = true;
    api<Task>('task/update', { task_id: t.task_id, state, ...(note.value.trim() ? { note: note.value } : {}), ...(Object.keys(result).length ? { result } : {}) }).then(
      (r) => {
        announce('The task is ' + stateWord(r.state) + ' now.');
        done();
      },
      (e2: ApiError) => {
        send.disabled = false;
        err.show(namedError(e2));
      },
    );
  });
  return form;
}

function cancelForm(t: Task, done: () => void): HTMLFormElement {
  const reason = h('input', { name: 'reason', maxlength: '4096', autocomplete: 'off' });
  const send = h('button', { type: 'submit', class: 'danger', text: 'Cancel the task' });
  const form = h('form', { class: 'card', id: 'task-cancel' }, [h('h3', { text: 'Call it off' }), field('Why (optional)', reason, 'the assignee gets it as mail'), send]);
  const err = formError(form);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    err.hide();
    send.disabled = true;
    api<Task>('task/cancel', { task_id: t.task_id, ...(reason.value.trim() ? { reason: reason.value } : {}) }).then(
      () => {
        announce('The task is canceled.');
        done();
      },
      (e2: ApiError) => {
        send.disabled = false;
        err.show(namedError(e2));
      },
    );
  });
  return form;
}
