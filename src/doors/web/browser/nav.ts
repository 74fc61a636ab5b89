// Moving between views (history, the page title, the navigation bar) and ending a login.
import type { ApiError, Me, ThrottleCleared, ThrottleView } from './answers.js';
import { api } from './api.js';
import { $, announce, clear, errorText, h, shellPart } from './dom.js';
import { setCsrf, state } from './state.js';

let router: (flash?: string) => void = () => undefined;

/** The function that draws the view the address names (set once by app.ts). */
export function setRouter(fn: (flash?: string) => void): void {
  router = fn;
}

export function go(path: string, replace?: boolean, flash?: string): void {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  router(flash);
}

/** The page's h1; focus moves there so screen readers and keyboards start at the content. */
export function pageTitle(main: HTMLElement, text: string): HTMLHeadingElement {
  document.title = (state.unread ? '(' + state.unread + ') ' : '') + text + ' · mail4agent';
  const t = h('h1', { tabindex: '-1', id: 'page-title', text });
  main.appendChild(t);
  setTimeout(() => t.focus(), 0);
  return t;
}

/** A relay forwards only mail reads and sends (wire/relay-link.ts): the pages it can serve. */
export const RELAYED_PAGES: readonly string[] = ['/web/inbox', '/web/compose', '/web/directory'];

export function renderNav(): void {
  const nav = clear(shellPart('nav'));
  const me = state.me;
  if (!me) return;
  const links: [string, string][] = [
    ['/web/inbox', 'Inbox'],
    ['/web/tasks', 'Tasks'],
    ['/web/reservations', 'Reservations'],
    ['/web/compose', 'Compose'],
    ['/web/directory', 'Directory'],
    ['/web/search', 'Search'],
  ].filter(([href]) => !me.relay || RELAYED_PAGES.includes(href as string)) as [string, string][];
  if (me.operator && !me.relay) links.push(['/web/admin', 'Operator']);
  const ul = h(
    'ul',
    { class: 'links' },
    links.map(([href, label]) => {
      const here = state.view === href || (href === '/web/tasks' && /^\/web\/task\//.test(state.view ?? ''));
      const a = h('a', { href, 'data-nav': true, 'aria-current': here ? 'page' : null }, [label]);
      if (href === '/web/inbox')
        a.appendChild(h('span', { class: 'count', id: 'unread-count', 'aria-label': state.unread + ' unread', text: state.unread ? String(state.unread) : '' }));
      return h('li', {}, [a]);
    }),
  );
  nav.appendChild(ul);
  nav.appendChild(
    h('div', { class: 'who' }, [
      h('span', { class: 'me', title: 'logged in as ' + me.account, text: me.label + ' (' + me.account + ')' + relayNote(me) }),
      h('button', { type: 'button', class: 'secondary', id: 'logout', text: 'Log out', onclick: () => logout('logout') }),
      h('button', {
        type: 'button',
        class: 'secondary',
        text: 'Log out everywhere',
        title: 'end every login of this account, on every device',
        onclick: () => logout('revoke-all'),
      }),
    ]),
  );
  nav.appendChild(h('div', { id: 'login-throttle', role: 'status' }));
  refreshThrottle();
}

/** At a relay, whose login this is: the owner's own, or a delegate acting for the mailbox. */
const relayNote = (me: Me): string => (!me.relay ? '' : me.relay.role === 'delegate' ? ' · delegate ' + me.relay.user + ' via relay' : ' · via relay');

const plural = (n: number, one: string, many: string): string => (n === 1 ? one : many);

/** Someone guessing this person's password shows here, with the way to end the delays it caused
 *  (only ever for the person's own account). */
function refreshThrottle(): void {
  api<ThrottleView>('login-throttle', {}).then(
    (t) => {
      const box = $('login-throttle');
      if (!box) return;
      clear(box);
      if (!t.wrong_passwords && !t.account_retry_after_ms) return;
      let msg =
        t.wrong_passwords +
        ' wrong password' +
        plural(t.wrong_passwords, '', 's') +
        ' for your account recently, from ' +
        t.addresses +
        ' address' +
        plural(t.addresses, '', 'es') +
        '.';
      if (t.account_retry_after_ms) msg += ' Logins from every address wait ' + Math.ceil(t.account_retry_after_ms / 1000) + ' s.';
      const clearDelays = (): void => {
        api<ThrottleCleared>('login-throttle/clear', {}).then(
          (r) => {
            clear(box);
            const w = r.addresses_waiting;
            const rest = w
              ? '; the ' + w + ' guessing address' + plural(w, '', 'es') + ' still wait' + plural(w, 's', '') + ' out ' + plural(w, 'its', 'their') + ' own delay.'
              : '.';
            box.appendChild(h('p', { class: 'notice', text: 'Login delays cleared: your account takes logins again' + rest }));
            announce(box.textContent || '');
          },
          (e: ApiError) => alert(errorText(e)),
        );
      };
      box.appendChild(
        h('p', { class: 'notice' }, [msg, ' ', h('button', { type: 'button', class: 'secondary small', id: 'clear-throttle', text: 'Clear login delays', onclick: clearDelays })]),
      );
    },
    () => {
      /* the page works without it */
    },
  );
}

export function setUnread(n: number): void {
  state.unread = n;
  const c = $('unread-count');
  if (c) {
    c.textContent = n ? String(n) : '';
    c.setAttribute('aria-label', n + ' unread');
  }
  document.title = document.title.replace(/^\(\d+\) /, '');
  if (n) document.title = '(' + n + ') ' + document.title;
}

function logout(which: 'logout' | 'revoke-all'): void {
  void api(which, {})
    .catch(() => {
      /* ended either way */
    })
    .then(() => loggedOut('You are logged out.'));
}

export function loggedOut(msg: string): void {
  const was = !!state.me;
  state.me = null;
  state.inbox = [];
  state.byId = new Map();
  state.dir = null;
  state.cursor = null;
  state.liveGen++;
  setCsrf(null);
  renderNav();
  if (was || location.pathname !== '/web/login') go('/web/login', true, msg);
}
