// Browser code, part 1: DOM helpers, the API call, login state, routing, live updates.
// Plain ES2020 served as /web/assets/app.js (the parts are joined inside one function scope).
// Message data only ever reaches the page through textContent and text nodes, never as HTML.
// No backticks or dollar-brace in here: this is a String.raw template.
export const JS_CORE = String.raw`
var CSRF_KEY = 'm4a.csrf';
var state = { me: null, csrf: null, dir: null, inbox: [], byId: {}, cursor: null, unread: 0, unreadOnly: false, liveOn: false, liveGen: 0, view: null };
try { state.csrf = localStorage.getItem(CSRF_KEY); } catch (e) { state.csrf = null; }

/** Builds an element. attrs: class, text (textContent), on<event> handlers, anything else as an
 *  attribute. Children: nodes or strings (strings become text nodes, never markup). */
function h(tag, attrs, children) {
  var el = document.createElement(tag);
  attrs = attrs || {};
  Object.keys(attrs).forEach(function (k) {
    var v = attrs[k];
    if (v === null || v === undefined || v === false) return;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = String(v);
    else if (k.slice(0, 2) === 'on' && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  });
  (children || []).forEach(function (c) {
    if (c === null || c === undefined || c === false) return;
    el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  });
  return el;
}

function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }
function $(id) { return document.getElementById(id); }

function announce(msg) {
  var live = $('live');
  live.textContent = '';
  setTimeout(function () { live.textContent = msg; }, 50);
}

/** One API call: POST JSON to /web/api/NAME with this login's CSRF token. Throws the error body. */
function api(name, body) {
  return fetch('/web/api/' + name, {
    method: 'POST',
    credentials: 'same-origin',
    cache: 'no-store',
    headers: { 'content-type': 'application/json', 'x-m4a-csrf': state.csrf || '' },
    body: JSON.stringify(body || {}),
  }).then(function (r) {
    return r.json().catch(function () { return null; }).then(function (j) {
      if (r.ok) return j;
      var err = (j && j.error) || { code: 'internal', message: 'HTTP ' + r.status };
      if (name !== 'login' && (err.code === 'unauthenticated' || err.code === 'csrf_failed')) loggedOut('Your login ended. Log in again.');
      throw err;
    });
  }, function () {
    throw { code: 'unreachable', message: 'The daemon does not answer.' };
  });
}

function setCsrf(v) {
  state.csrf = v;
  try { if (v) localStorage.setItem(CSRF_KEY, v); else localStorage.removeItem(CSRF_KEY); } catch (e) { /* private mode: this tab only */ }
}

function loggedOut(msg) {
  var was = !!state.me;
  state.me = null; state.inbox = []; state.byId = {}; state.dir = null; state.cursor = null;
  state.liveGen++;
  setCsrf(null);
  renderNav();
  if (was || location.pathname !== '/web/login') go('/web/login', true, msg);
}

// --- routing -------------------------------------------------------------------------------------

function go(path, replace, flash) {
  if (replace) history.replaceState(null, '', path); else history.pushState(null, '', path);
  route(flash);
}

document.addEventListener('click', function (e) {
  var a = e.target.closest ? e.target.closest('a[data-nav]') : null;
  if (!a || e.defaultPrevented || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  go(a.getAttribute('href'));
});
window.addEventListener('popstate', function () { route(); });

function route(flash) {
  var p = location.pathname;
  var main = clear($('main'));
  if (!state.me && p !== '/web/login') {
    if (/^\/web\/(thread|compose|directory|admin)/.test(p)) state.returnTo = p + location.search;
    return go('/web/login', true, flash);
  }
  if (state.me && (p === '/' || p === '/web' || p === '/web/' || p === '/web/login')) return go('/web/inbox', true);
  var m;
  state.view = p;
  renderNav();
  if (p === '/web/login') return pageLogin(main, flash);
  if (p === '/web/inbox') return pageInbox(main);
  if ((m = /^\/web\/thread\/([A-Za-z0-9._@+-]+)$/.exec(p))) return pageThread(main, m[1]);
  if (p === '/web/compose') return pageCompose(main, new URLSearchParams(location.search).get('to') || '');
  if (p === '/web/directory') return pageDirectory(main);
  if (p === '/web/admin' && state.me.operator) return pageAdmin(main);
  pageTitle(main, 'Not found');
  main.appendChild(h('p', {}, ['Nothing here. ', h('a', { href: '/web/inbox', 'data-nav': true, text: 'Back to the inbox' })]));
}

/** The page's h1; focus moves there so screen readers and keyboards start at the content. */
function pageTitle(main, text) {
  document.title = (state.unread ? '(' + state.unread + ') ' : '') + text + ' · mail4agent';
  var t = h('h1', { tabindex: '-1', id: 'page-title', text: text });
  main.appendChild(t);
  setTimeout(function () { t.focus(); }, 0);
  return t;
}

function renderNav() {
  var nav = clear($('nav'));
  if (!state.me) return;
  var links = [['/web/inbox', 'Inbox'], ['/web/compose', 'Compose'], ['/web/directory', 'Directory']];
  if (state.me.operator) links.push(['/web/admin', 'Operator']);
  var ul = h('ul', { class: 'links' }, links.map(function (l) {
    var a = h('a', { href: l[0], 'data-nav': true, 'aria-current': state.view === l[0] ? 'page' : null }, [l[1]]);
    if (l[0] === '/web/inbox') a.appendChild(h('span', { class: 'count', id: 'unread-count', 'aria-label': state.unread + ' unread', text: state.unread ? String(state.unread) : '' }));
    return h('li', {}, [a]);
  }));
  nav.appendChild(ul);
  nav.appendChild(h('div', { class: 'who' }, [
    h('span', { class: 'me', title: 'logged in as ' + state.me.account, text: state.me.label + ' (' + state.me.account + ')' }),
    h('button', { type: 'button', class: 'secondary', id: 'logout', text: 'Log out', onclick: function () { logout('logout'); } }),
    h('button', { type: 'button', class: 'secondary', text: 'Log out everywhere', title: 'end every login of this account, on every device', onclick: function () { logout('revoke-all'); } }),
  ]));
  nav.appendChild(h('div', { id: 'login-throttle', role: 'status' }));
  refreshThrottle();
}

/** Someone guessing this person's password shows here, with the way to end the delays it caused
 *  (only ever for the person's own account). */
function refreshThrottle() {
  api('login-throttle', {}).then(function (t) {
    var box = $('login-throttle');
    if (!box) return;
    clear(box);
    if (!t.wrong_passwords && !t.account_retry_after_ms) return;
    var msg = t.wrong_passwords + ' wrong password' + (t.wrong_passwords === 1 ? '' : 's') + ' for your account recently, from ' + t.addresses + ' address' + (t.addresses === 1 ? '' : 'es') + '.';
    if (t.account_retry_after_ms) msg += ' Logins from every address wait ' + Math.ceil(t.account_retry_after_ms / 1000) + ' s.';
    box.appendChild(h('p', { class: 'notice' }, [msg, ' ', h('button', { type: 'button', class: 'secondary small', id: 'clear-throttle', text: 'Clear login delays', onclick: function () {
      api('login-throttle/clear', {}).then(function (r) {
        clear(box);
        var w = r.addresses_waiting;
        box.appendChild(h('p', { class: 'notice', text: 'Login delays cleared: your account takes logins again' + (w ? '; the ' + w + ' guessing address' + (w === 1 ? '' : 'es') + ' still wait' + (w === 1 ? 's' : '') + ' out ' + (w === 1 ? 'its' : 'their') + ' own delay.' : '.') }));
        announce(box.textContent);
      }, function (e) { alert(errorText(e)); });
    } })]));
  }, function () { /* the page works without it */ });
}

function setUnread(n) {
  state.unread = n;
  var c = $('unread-count');
  if (c) { c.textContent = n ? String(n) : ''; c.setAttribute('aria-label', n + ' unread'); }
  document.title = document.title.replace(/^\(\d+\) /, '');
  if (n) document.title = '(' + n + ') ' + document.title;
}

function logout(which) {
  api(which, {}).catch(function () { /* ended either way */ }).then(function () { loggedOut('You are logged out.'); });
}

// --- live updates: one long-poll parked on the daemon's own wait; no polling loop -------------------

function startLive() {
  var gen = ++state.liveGen;
  var backoff = 1000;
  function next() {
    if (gen !== state.liveGen || !state.me) return;
    api('inbox', { after: state.cursor, wait_secs: 25 }).then(function (r) {
      backoff = 1000;
      if (gen !== state.liveGen) return;
      state.cursor = r.next_cursor;
      setUnread(r.unread);
      if (r.messages.length) arrived(r.messages);
      next();
    }, function (err) {
      if (gen !== state.liveGen || err.code === 'unauthenticated' || err.code === 'csrf_failed') return;
      setTimeout(next, backoff);
      backoff = Math.min(backoff * 2, 30000);
    });
  }
  next();
}

function arrived(msgs) {
  msgs.forEach(function (m) {
    if (state.byId[m.id]) return;
    state.byId[m.id] = m;
    state.inbox.unshift(m);
  });
  var last = msgs[msgs.length - 1];
  announce(msgs.length === 1 ? 'New mail from ' + who(last.from) + ': ' + last.subject : msgs.length + ' new messages');
  if (state.view === '/web/inbox') drawInboxList();
  var open = $('thread');
  if (open && msgs.some(function (m) { return m.thread_id === open.getAttribute('data-thread'); })) pageThread(clear($('main')), open.getAttribute('data-open'), true);
}

function boot() {
  api('me', {}).then(function (me) {
    state.me = me;
    state.unread = me.unread;
    return Promise.all([loadInbox(), loadDirectory().catch(function () { return null; })]).then(function () { startLive(); route(); });
  }, function () {
    state.me = null;
    route();
  });
}

function loadInbox() {
  return api('inbox', {}).then(function (r) {
    state.inbox = r.messages;
    state.byId = {};
    r.messages.forEach(function (m) { state.byId[m.id] = m; });
    state.cursor = r.next_cursor;
    setUnread(r.unread);
  });
}

/** A short name for an address: account/slug when the directory knows the session, else the
 *  session id cut to 8 hex digits (the full address stays in the title). */
function who(addr) {
  var m = /^([^/]+)\/(s-[0-9a-f]{8})[0-9a-f]*$/.exec(addr || '');
  if (!m) return addr;
  var found = null;
  (state.dir ? state.dir.accounts : []).forEach(function (a) {
    if (a.id !== m[1]) return;
    a.sessions.forEach(function (s) { if (s.address === addr && s.slug) found = a.id + '/' + s.slug; });
  });
  return found || m[1] + '/' + m[2] + '\u2026';
}

function addr(a, cls) { return h('span', { class: cls, title: a, text: who(a) }); }

function loadDirectory() {
  return api('directory', {}).then(function (d) { state.dir = d; return d; });
}
`;
