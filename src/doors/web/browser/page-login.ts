// Logging in. A wrong password or a throttled account counts down on the button until the next try
// is possible.
import type { ApiError, LoginAnswer } from './answers.js';
import { api } from './api.js';
import { errorText, field, formError, h } from './dom.js';
import { startAfterLogin } from './live.js';
import { go, pageTitle } from './nav.js';
import { setCsrf, state } from './state.js';

export function pageLogin(main: HTMLElement, flash?: string): void {
  pageTitle(main, 'Log in');
  if (flash) main.appendChild(h('p', { class: 'notice', role: 'status', text: flash }));
  const account = h('input', { name: 'account', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const submit = h('button', { type: 'submit', text: 'Log in' });
  const form = h('form', { class: 'card narrow', id: 'login-form', novalidate: true }, [
    field('Account', account, 'the name your operator created with m4a user create'),
    field('Password', password),
    submit,
  ]);
  const err = formError(form);
  let timer: ReturnType<typeof setInterval> | undefined;
  function waitFor(ms: number, msg: string): void {
    submit.disabled = true;
    const until = Date.now() + ms;
    clearInterval(timer);
    function tick(): void {
      const left = Math.ceil((until - Date.now()) / 1000);
      if (left <= 0) {
        clearInterval(timer);
        submit.disabled = false;
        submit.textContent = 'Log in';
        return;
      }
      submit.textContent = 'Wait ' + left + ' s';
    }
    err.show(msg);
    tick();
    timer = setInterval(tick, 250);
  }
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    err.hide();
    if (!account.value || !password.value) return err.show('Enter your account and password.');
    submit.disabled = true;
    api<LoginAnswer>('login', { account: account.value.trim(), password: password.value }).then(
      (r) => {
        clearInterval(timer);
        setCsrf(r.csrf);
        state.me = { account: r.account, label: r.label, operator: r.operator, unread: 0, ...(r.relay ? { relay: r.relay } : {}) };
        return startAfterLogin().then(() => {
          const to = state.returnTo || '/web/inbox';
          state.returnTo = null;
          go(to, true);
        });
      },
      (e2: ApiError) => {
        submit.disabled = false;
        password.value = '';
        password.focus();
        const ms = Number(e2.retry_after_ms || 0);
        const s = Math.ceil(ms / 1000);
        if (e2.code === 'bad_credentials') waitFor(ms, 'Wrong account or password. The next try is possible in ' + s + ' s.');
        else if (e2.code === 'rate_limited')
          waitFor(
            ms,
            e2.scope === 'account'
              ? 'Someone tried too many wrong passwords for this account: wait ' + s + ' s, or clear the delays from a browser where you are logged in.'
              : 'Too many wrong passwords for this account from here: wait ' + s + ' s.',
          );
        else err.show(errorText(e2));
      },
    );
  });
  main.appendChild(form);
  setTimeout(() => account.focus(), 0);
}
