// Browser code, part 2: login, inbox, thread with reply, compose. Bodies are untrusted text: they
// go through bodyNodes (text nodes; bare http(s) links become inert anchors that open a new tab
// without referrer or opener, and a URL carrying user:password@ stays text).
export const JS_PAGES = String.raw`
function when(iso) {
  var d = new Date(iso);
  return h('time', { datetime: iso, title: d.toISOString(), text: d.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' }) });
}

function kindBadge(kind) {
  var word = kind === 'human' ? 'person' : kind;
  return h('span', { class: 'badge kind-' + kind, title: kind === 'human' ? 'written by a person' : 'sent by an ' + kind + ' account', text: word });
}

function errorText(err) {
  if (!err) return 'Something went wrong.';
  var extra = err.field ? ' (' + err.field + ')' : '';
  return (err.message || err.code) + extra;
}

function formError(form) {
  var box = h('p', { class: 'error', role: 'alert', hidden: true });
  form.appendChild(box);
  return {
    show: function (msg) { box.textContent = msg; box.hidden = false; },
    hide: function () { box.hidden = true; box.textContent = ''; },
  };
}

function field(label, input, hint) {
  var id = input.id || ('f-' + Math.random().toString(36).slice(2, 9));
  input.id = id;
  var parts = [h('label', { for: id, text: label }), input];
  if (hint) {
    input.setAttribute('aria-describedby', id + '-hint');
    parts.push(h('p', { class: 'hint', id: id + '-hint', text: hint }));
  }
  return h('div', { class: 'field' }, parts);
}

function bodyNodes(text) {
  var frag = document.createDocumentFragment();
  var re = /\bhttps?:\/\/[^\s<>"'\u0000-\u001f]+/g;
  var last = 0, m;
  while ((m = re.exec(text))) {
    var url = m[0].replace(/[.,;:!?)\]}'"]+$/, '');
    frag.appendChild(document.createTextNode(text.slice(last, m.index)));
    var u = null;
    try { u = new URL(url); } catch (e) { u = null; }
    if (u && (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password) {
      frag.appendChild(h('a', { href: u.href, rel: 'noopener noreferrer nofollow', target: '_blank', referrerpolicy: 'no-referrer', class: 'ext', title: 'opens ' + u.host + ' in a new tab', text: url }));
    } else {
      frag.appendChild(document.createTextNode(url));
    }
    last = m.index + url.length;
    re.lastIndex = last;
  }
  frag.appendChild(document.createTextNode(text.slice(last)));
  return frag;
}

// --- login ---------------------------------------------------------------------------------------

function pageLogin(main, flash) {
  pageTitle(main, 'Log in');
  if (flash) main.appendChild(h('p', { class: 'notice', role: 'status', text: flash }));
  var account = h('input', { name: 'account', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' });
  var password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  var submit = h('button', { type: 'submit', text: 'Log in' });
  var form = h('form', { class: 'card narrow', id: 'login-form', novalidate: true }, [
    field('Account', account, 'the name your operator created with m4a user create'),
    field('Password', password),
    submit,
  ]);
  var err = formError(form);
  var timer = null;
  function waitFor(ms, msg) {
    submit.disabled = true;
    var until = Date.now() + ms;
    clearInterval(timer);
    function tick() {
      var left = Math.ceil((until - Date.now()) / 1000);
      if (left <= 0) { clearInterval(timer); submit.disabled = false; submit.textContent = 'Log in'; return; }
      submit.textContent = 'Wait ' + left + ' s';
    }
    err.show(msg);
    tick();
    timer = setInterval(tick, 250);
  }
  form.addEventListener('submit', function (e) {
    e.preventDefault();
    err.hide();
    if (!account.value || !password.value) return err.show('Enter your account and password.');
    submit.disabled = true;
    api('login', { account: account.value.trim(), password: password.value }).then(function (r) {
      clearInterval(timer);
      setCsrf(r.csrf);
      state.me = { account: r.account, label: r.label, operator: r.operator, unread: 0 };
      return Promise.all([loadInbox(), loadDirectory().catch(function () { return null; })]).then(function () {
        startLive();
        var to = state.returnTo || '/web/inbox';
        state.returnTo = null;
        go(to, true);
      });
    }, function (e2) {
      submit.disabled = false;
      password.value = '';
      password.focus();
      var ms = Number(e2.retry_after_ms || 0);
      if (e2.code === 'bad_credentials') waitFor(ms, 'Wrong account or password. The next try is possible in ' + Math.ceil(ms / 1000) + ' s.');
      else if (e2.code === 'rate_limited') waitFor(ms, e2.scope === 'account' ? 'Someone tried too many wrong passwords for this account: wait ' + Math.ceil(ms / 1000) + ' s, or clear the delays from a browser where you are logged in.' : 'Too many wrong passwords for this account from here: wait ' + Math.ceil(ms / 1000) + ' s.');
      else err.show(errorText(e2));
    });
  });
  main.appendChild(form);
  setTimeout(function () { account.focus(); }, 0);
}

// --- inbox ---------------------------------------------------------------------------------------

function pageInbox(main) {
  pageTitle(main, 'Inbox');
  var only = h('input', { type: 'checkbox', id: 'unread-only', checked: state.unreadOnly, onchange: function () { state.unreadOnly = only.checked; drawInboxList(); } });
  main.appendChild(h('div', { class: 'toolbar' }, [
    h('label', { class: 'check', for: 'unread-only' }, [only, ' Unread only']),
    h('a', { href: '/web/compose', 'data-nav': true, class: 'button', text: 'Write a message' }),
  ]));
  main.appendChild(h('p', { class: 'hint', text: 'New mail appears here as it arrives. Opening a message does not acknowledge it: acknowledge when it is handled.' }));
  main.appendChild(h('ul', { class: 'msglist', id: 'msglist', 'aria-label': 'messages, newest first' }));
  drawInboxList();
}

function drawInboxList() {
  var list = $('msglist');
  if (!list) return;
  clear(list);
  var shown = state.inbox.filter(function (m) { return !state.unreadOnly || !m.acked_at; });
  if (!shown.length) list.appendChild(h('li', { class: 'empty', text: state.unreadOnly ? 'No unread mail.' : 'No mail yet.' }));
  shown.forEach(function (m) {
    var unread = !m.acked_at;
    var li = h('li', { class: 'msg' + (unread ? ' unread' : ''), 'data-id': m.id }, [
      h('a', { href: '/web/thread/' + m.id, 'data-nav': true, class: 'open' }, [
        h('span', { class: 'line1' }, [
          unread ? h('span', { class: 'dot', title: 'unread' }, [h('span', { class: 'sr-only', text: 'unread: ' })]) : null,
          addr(m.from, 'from'), ' ', kindBadge(m.from_kind),
          m.priority === 'urgent' ? h('span', { class: 'badge urgent', text: 'urgent' }) : null,
          h('span', { class: 'to' }, ['to ', addr(m.to, '')]),
          when(m.created_at),
        ]),
        h('span', { class: 'subject', text: m.subject || '(no subject)' }),
        h('span', { class: 'preview', text: m.body || '' }),
      ]),
      unread ? h('button', { type: 'button', class: 'secondary ack', 'aria-label': 'Acknowledge: ' + m.subject, text: 'Acknowledge', onclick: function () { ackIds([m.id]); } }) : h('span', { class: 'acked', text: 'handled' }),
    ]);
    list.appendChild(li);
  });
}

function ackIds(ids) {
  return api('ack', { message_ids: ids }).then(function (r) {
    r.acked.forEach(function (a) { var m = state.byId[a.message_id]; if (m) m.acked_at = a.acked_at; });
    setUnread(r.unread);
    announce(ids.length === 1 ? 'Acknowledged.' : ids.length + ' messages acknowledged.');
    if (state.view === '/web/inbox') drawInboxList();
    return r;
  }, function (e) { announce('Could not acknowledge: ' + errorText(e)); throw e; });
}

// --- thread --------------------------------------------------------------------------------------

function pageThread(main, id, quiet) {
  var title = quiet ? h('h1', { tabindex: '-1', id: 'page-title', text: 'Thread' }) : pageTitle(main, 'Thread');
  if (quiet) main.appendChild(title);
  var box = h('section', { id: 'thread', 'data-open': id, 'aria-live': 'polite' });
  main.appendChild(box);
  api('get', { message_id: id, thread: true }).then(function (r) {
    var msgs = r.thread || [r.message];
    box.setAttribute('data-thread', r.message.thread_id);
    var root = msgs[0] || r.message;
    title.textContent = root.subject || '(no subject)';
    document.title = title.textContent + ' · mail4agent';
    var pending = [];
    msgs.forEach(function (m) {
      var mine = m.from === state.me.account;
      var readable = !mine || m.to === state.me.account || m.to.charAt(0) === '#';
      if (!m.acked_at && !mine) pending.push(m.id);
      var ackBtn = !mine && !m.acked_at
        ? h('button', { type: 'button', class: 'secondary ack', text: 'Acknowledge', onclick: function () { ackIds([m.id]).then(function () { pageThread(clear($('main')), id, true); }); } })
        : null;
      box.appendChild(h('article', { class: 'message' + (m.id === id ? ' focus' : '') + (mine ? ' mine' : ''), id: 'msg-' + m.id, 'aria-label': 'from ' + m.from }, [
        h('header', {}, [
          addr(m.from, 'from'), ' ', kindBadge(m.from_kind),
          m.priority === 'urgent' ? h('span', { class: 'badge urgent', text: 'urgent' }) : null,
          h('span', { class: 'to' }, ['to ', addr(m.to, '')]),
          when(m.created_at),
          m.acked_at ? h('span', { class: 'acked', text: 'handled' }) : (readable && !mine ? h('span', { class: 'badge unread', text: 'unread' }) : null),
          ackBtn,
        ]),
        m.subject !== root.subject ? h('p', { class: 'subject', text: m.subject }) : null,
        h('div', { class: 'body' }, [bodyNodes(m.body || '')]),
        m.refs ? h('ul', { class: 'refs', 'aria-label': 'references' }, m.refs.map(function (x) { return h('li', { text: x.kind + ': ' + x.locator }); })) : null,
      ]));
    });
    if (pending.length > 1) box.appendChild(h('button', { type: 'button', class: 'secondary', text: 'Acknowledge all ' + pending.length, onclick: function () { ackIds(pending).then(function () { pageThread(clear($('main')), id, true); }); } }));
    box.appendChild(replyForm(msgs, root));
  }, function (e) {
    box.appendChild(h('p', { class: 'error', role: 'alert', text: errorText(e) }));
  });
}

function replyForm(msgs, root) {
  var others = msgs.filter(function (m) { return m.from !== state.me.account; });
  var target = others.length ? others[others.length - 1] : msgs[msgs.length - 1];
  var to = target.from === state.me.account ? target.to : (target.to.charAt(0) === '#' ? target.to : target.from);
  var subject = /^re:/i.test(root.subject) ? root.subject : 'Re: ' + root.subject;
  var body = h('textarea', { name: 'body', rows: '5', required: true });
  var send = h('button', { type: 'submit', text: 'Send reply' });
  var form = h('form', { class: 'card reply', id: 'reply-form' }, [
    h('h2', { text: 'Reply' }),
    field('Reply to ' + who(to), body, 'Ctrl+Enter sends.'),
    send,
  ]);
  mailForm(form, body, send, function () {
    if (!body.value.trim()) return 'Write something first.';
    return { to: to, subject: subject.slice(0, 500), body: body.value, reply_to: target.id };
  }, function () {
    announce('Reply sent to ' + to + '.');
    pageThread(clear($('main')), $('thread') ? $('thread').getAttribute('data-open') : target.id, true);
  });
  return form;
}

/** Wires a form that sends mail: Ctrl+Enter in the body submits; one idempotency key per form, so a
 *  retried click sends once; the button waits for the answer. build() returns the request, or the
 *  text of what is missing. */
function mailForm(form, body, send, build, done) {
  var err = formError(form);
  var key = 'web-' + Math.random().toString(36).slice(2) + Date.now().toString(36);
  body.addEventListener('keydown', function (e) { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) form.requestSubmit(); });
  form.addEventListener('submit', function (e) {
    e.preventDefault();
    err.hide();
    var req = build();
    if (typeof req === 'string') return err.show(req);
    send.disabled = true;
    req.idempotency_key = key;
    api('send', req).then(done, function (e2) { send.disabled = false; err.show(errorText(e2)); });
  });
}

// --- compose -------------------------------------------------------------------------------------

function addressOptions(dir) {
  var opts = [];
  dir.rooms.forEach(function (r) { opts.push(['#' + r.name, 'room' + (r.member ? ' (you are a member)' : '')]); });
  dir.accounts.forEach(function (a) {
    if (a.id === state.me.account) return;
    opts.push([a.id, a.label + ' (' + (a.kind === 'human' ? 'person' : a.kind) + ')']);
    a.sessions.forEach(function (s) {
      if (!s.live) return;
      var what = s.card.declared.working_on ? ': ' + s.card.declared.working_on : '';
      if (s.slug) opts.push([a.id + '/' + s.slug, 'live session' + what]);
      s.aliases.forEach(function (al) { opts.push([a.id + '/' + al, 'live session (alias)' + what]); });
      opts.push([s.address, 'live session' + what]);
    });
  });
  return opts;
}

function pageCompose(main, presetTo) {
  pageTitle(main, 'Write a message');
  var list = h('datalist', { id: 'addresses' });
  var to = h('input', { name: 'to', list: 'addresses', required: true, autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false', value: presetTo });
  var subject = h('input', { name: 'subject', required: true, maxlength: '500' });
  var body = h('textarea', { name: 'body', rows: '10' });
  var send = h('button', { type: 'submit', text: 'Send' });
  var form = h('form', { class: 'card', id: 'compose-form' }, [
    field('To', to, 'an account (codex), one session (codex/web-ui or codex/s-…) or a room (#reviewers); suggestions come from the directory'),
    list,
    field('Subject', subject),
    field('Message', body, 'plain text; Ctrl+Enter sends'),
    send,
  ]);
  mailForm(form, body, send, function () {
    if (!to.value.trim() || !subject.value.trim()) return 'A recipient and a subject are needed.';
    return { to: to.value.trim(), subject: subject.value, body: body.value };
  }, function (r) {
    announce('Sent to ' + r.to + '.');
    go('/web/thread/' + r.message_id);
  });
  main.appendChild(form);
  loadDirectory().then(function (dir) {
    addressOptions(dir).forEach(function (o) { list.appendChild(h('option', { value: o[0], label: o[1] })); });
  }, function () { /* completion is a convenience */ });
}
`;
