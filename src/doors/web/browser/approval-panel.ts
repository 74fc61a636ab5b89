// An approval where a person meets it: under an "Approval: …" message and on its task's page. What
// it shows comes from approval/get, never from the mail's words (a message may name any id; the
// daemon answers only its requester and reviewer). The reviewer decides with a reason, once; the
// mailbox records the decision and runs nothing.
import type { ApiError, Approval } from './answers.js';
import { api } from './api.js';
import { announce, clear, dl, field, h } from './dom.js';
import { bodyNodes } from './body-text.js';
import { who } from './mail-data.js';
import { isMe, namedError } from './task-data.js';

/** The approval id an "Approval: …" message names in its body (approval_id: "a-…"). */
export function approvalIdIn(subject: string, body: string | undefined): string | null {
  if (!/^Approval: /.test(subject)) return null;
  const m = /\bapproval_id\W{0,4}(a-[0-9a-z]{1,64})\b/.exec(body || '');
  return m?.[1] ?? null;
}

/** A reason being written survives the panel being drawn again (new mail redraws a thread). */
const drafts = new Map<string, string>();

const stamp = (iso: string | undefined): string | undefined => (iso ? new Date(iso).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' }) : undefined);

/** A panel that loads approval `id` and draws it; the reviewer gets the decision form. onTask: the
 *  task page it is drawn on (no link to itself). */
export function approvalPanel(id: string, onTask?: string): HTMLElement {
  const box = h('section', { class: 'card approval', 'data-approval': id, 'aria-label': 'approval ' + id }, [h('p', { class: 'none', text: 'Loading approval ' + id + '…' })]);
  if (onTask) box.setAttribute('data-on-task', onTask);
  load(box, id);
  return box;
}

function load(box: HTMLElement, id: string, refusal?: string): void {
  api<Approval>('approval/get', { approval_id: id }).then(
    (a) => draw(box, a, refusal),
    (e: ApiError) => {
      clear(box).appendChild(h('p', { class: 'error', role: 'alert', text: 'Approval ' + id + ': ' + namedError(e) }));
    },
  );
}

function draw(box: HTMLElement, a: Approval, refusal?: string): void {
  clear(box);
  box.setAttribute('data-state', a.state);
  box.appendChild(h('h3', {}, ['Approval: ', a.action, h('span', { class: 'badge approval-' + a.state, text: a.state })]));
  box.appendChild(
    dl([
      ['Asked by', who(a.requester)],
      ['Reviewer', a.reviewer],
      ['State', a.state],
      ['Reason', a.reason],
      ['Asked', stamp(a.created_at)],
      ['Decided', stamp(a.decided_at)],
      ['Expires', a.state === 'pending' ? stamp(a.expires_at) : undefined],
      ['Approval', a.approval_id],
    ]),
  );
  if (a.details) box.appendChild(h('div', { class: 'body' }, [bodyNodes(a.details)]));
  if (a.task_id && box.getAttribute('data-on-task') !== a.task_id)
    box.appendChild(h('p', {}, [h('a', { href: '/web/task/' + a.task_id, 'data-nav': true, text: 'Open its task' })]));
  if (refusal) box.appendChild(h('p', { class: 'error', role: 'alert', text: refusal }));
  if (a.state === 'pending' && isMe(a.reviewer)) box.appendChild(decideForm(box, a));
}

function decideForm(box: HTMLElement, a: Approval): HTMLFormElement {
  const reason = h('textarea', { name: 'reason', rows: '3', required: true, maxlength: '4096' });
  reason.value = drafts.get(a.approval_id) ?? '';
  reason.addEventListener('input', () => drafts.set(a.approval_id, reason.value));
  const err = h('p', { class: 'error', role: 'alert', hidden: true });
  const approve = h('button', { type: 'button', class: 'approve', text: 'Approve' });
  const reject = h('button', { type: 'button', class: 'danger', text: 'Reject' });
  const decide = (decision: 'approved' | 'rejected'): void => {
    err.hidden = true;
    if (!reason.value.trim()) {
      err.textContent = 'Write a reason first: the requester reads it.';
      err.hidden = false;
      reason.focus();
      return;
    }
    approve.disabled = reject.disabled = true;
    api<Approval>('approval/decide', { approval_id: a.approval_id, decision, reason: reason.value }).then(
      () => {
        drafts.delete(a.approval_id);
        announce((decision === 'approved' ? 'Approved: ' : 'Rejected: ') + a.action);
        load(box, a.approval_id);
      },
      (e: ApiError) => load(box, a.approval_id, namedError(e)),
    );
  };
  approve.addEventListener('click', () => decide('approved'));
  reject.addEventListener('click', () => decide('rejected'));
  const form = h('form', { class: 'decide' }, [
    field('Reason', reason, 'Required. The requester gets your decision and this reason as mail; the mailbox runs nothing.'),
    h('div', { class: 'buttons' }, [approve, reject]),
    err,
  ]);
  form.addEventListener('submit', (e) => e.preventDefault());
  return form;
}
