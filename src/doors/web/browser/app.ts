// mail4agent browser mailbox: the entry module the page loads (served by the daemon; no framework,
// no CDN). It routes the address to a page and starts from the login the browser may still hold.
import type { Me } from './answers.js';
import { api, onAuthLost } from './api.js';
import { clear, h, shellPart } from './dom.js';
import { startAfterLogin } from './live.js';
import { go, loggedOut, pageTitle, RELAYED_PAGES, renderNav, setRouter } from './nav.js';
import { pageAdmin } from './page-admin.js';
import { pageCompose } from './page-compose.js';
import { pageDirectory } from './page-directory.js';
import { pageInbox } from './page-inbox.js';
import { pageLogin } from './page-login.js';
import { pageTask } from './page-task.js';
import { pageTasks } from './page-tasks.js';
import { pageReservations } from './page-reservations.js';
import { pageSearch } from './page-search.js';
import { pageThread } from './page-thread.js';
import { state } from './state.js';

function route(flash?: string): void {
  const p = location.pathname;
  const main = clear(shellPart('main'));
  if (!state.me && p !== '/web/login') {
    if (/^\/web\/(thread|tasks?|reservations|compose|directory|search|admin)/.test(p)) state.returnTo = p + location.search;
    return go('/web/login', true, flash);
  }
  if (state.me && (p === '/' || p === '/web' || p === '/web/' || p === '/web/login')) return go('/web/inbox', true);
  state.view = p;
  renderNav();
  if (p === '/web/login') return pageLogin(main, flash);
  if (state.me?.relay && !RELAYED_PAGES.includes(p) && !p.startsWith('/web/thread/')) {
    pageTitle(main, 'Not through the relay');
    main.appendChild(h('p', {}, ['The relay carries your mail only. ', h('a', { href: '/web/inbox', 'data-nav': true, text: 'Back to the inbox' })]));
    return;
  }
  if (p === '/web/inbox') return pageInbox(main);
  const m = /^\/web\/thread\/([A-Za-z0-9._@+-]+)$/.exec(p);
  if (m?.[1]) return pageThread(main, m[1]);
  if (p === '/web/tasks') return pageTasks(main, new URLSearchParams(location.search));
  const t = /^\/web\/task\/(t-[0-9a-z]{1,64})$/.exec(p);
  if (t?.[1]) return pageTask(main, t[1]);
  if (p === '/web/reservations') return pageReservations(main);
  if (p === '/web/compose') return pageCompose(main, new URLSearchParams(location.search).get('to') || '');
  if (p === '/web/directory') return pageDirectory(main);
  if (p === '/web/search') return pageSearch(main, new URLSearchParams(location.search).get('q') || '');
  if (p === '/web/admin' && state.me?.operator) return pageAdmin(main);
  pageTitle(main, 'Not found');
  main.appendChild(h('p', {}, ['Nothing here. ', h('a', { href: '/web/inbox', 'data-nav': true, text: 'Back to the inbox' })]));
}

setRouter(route);
onAuthLost(loggedOut);

document.addEventListener('click', (e) => {
  const a = e.target instanceof Element ? e.target.closest('a[data-nav]') : null;
  if (!a || e.defaultPrevented || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  go(a.getAttribute('href') || '/web/inbox');
});
window.addEventListener('popstate', () => route());

api<Me>('me', {}).then(
  (me) => {
    state.me = me;
    state.unread = me.unread;
    return startAfterLogin().then(() => route());
  },
  () => {
    state.me = null;
    route();
  },
);
