// A form that sends mail (compose and reply).
import type { ApiError, SendAnswer } from './answers.js';
import { api } from './api.js';
import { errorText, formError } from './dom.js';

export interface SendInput {
  to: string;
  subject: string;
  body: string;
  reply_to?: string;
  idempotency_key?: string;
}

/** Wires a form that sends mail: Ctrl+Enter in the body submits; one idempotency key per form, so a
 *  retried click sends once; the button waits for the answer. build() returns the request, or the
 *  text of what is missing. */
export function mailForm(form: HTMLFormElement, body: HTMLTextAreaElement, send: HTMLButtonElement, build: () => SendInput | string, done: (r: SendAnswer) => void): void {
  const err = formError(form);
  const key = 'web-' + Math.random().toString(36).slice(2) + Date.now().toString(36);
  body.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) form.requestSubmit();
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    err.hide();
    const req = build();
    if (typeof req === 'string') return err.show(req);
    send.disabled = true;
    req.idempotency_key = key;
    api<SendAnswer>('send', req).then(done, (e2: ApiError) => {
      send.disabled = false;
      err.show(errorText(e2));
    });
  });
}
