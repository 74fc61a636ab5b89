// Browser code, part 3: the directory (accounts, live sessions with their cards, rooms) and the
// operator page. A card keeps its three kinds of knowledge apart: what the kernel attested, what
// the agent program's own process corroborated, and what the session declared about itself.
// Wake chains run programs: this door shows them read-only and changes none, and it makes no
// operator credential (the daemon refuses one), so the page offers none.
export const JS_DIRECTORY = String.raw`
function dl(pairs) {
  var items = pairs.filter(function (p) { return p[1] !== undefined && p[1] !== null && p[1] !== ''; });
  if (!items.length) return h('p', { class: 'none', text: 'nothing' });
  var el = h('dl', {});
  items.forEach(function (p) { el.appendChild(h('dt', { text: p[0] })); el.appendChild(h('dd', { text: String(p[1]) })); });
  return el;
}

function sessionCard(s) {
  var c = s.card;
  var at = c.attested;
  return h('article', { class: 'session' + (s.live ? ' live' : ' ended'), 'aria-label': 'session ' + s.address }, [
    h('h4', {}, [
      h('span', { class: 'addr', text: s.slug ? s.address.split('/')[0] + '/' + s.slug : s.address }),
      ' ', h('span', { class: 'badge ' + (s.live ? 'live' : 'ended'), text: s.live ? 'live' : 'ended' }),
    ]),
    h('p', { class: 'meta' }, [h('span', { class: 'mono', text: s.address }), s.aliases.length ? ' · aliases: ' + s.aliases.join(', ') : '', ' · last seen ', when(s.last_seen)]),
    h('div', { class: 'facts' }, [
      h('section', { class: 'fact attested' }, [
        h('h5', { text: 'Attested' }), h('p', { class: 'why', text: 'by the kernel: the process on the other end of the connection' }),
        at ? dl([['pid', at.pid], ['program', at.exe], ['uid', at.uid], ['host', at.host.slice(0, 12)], ['started', at.start_time]]) : h('p', { class: 'none', text: 'none' }),
      ]),
      h('section', { class: 'fact corroborated' }, [
        h('h5', { text: 'Corroborated' }), h('p', { class: 'why', text: 'read from that process (command line, cwd, environment): true that it held them, no proof of who launched it' }),
        dl([['provider', c.corroborated.provider], ['provider session', c.corroborated.provider_session_id], ['model', c.corroborated.model], ['cwd', c.corroborated.cwd]]),
      ]),
      h('section', { class: 'fact declared' }, [
        h('h5', { text: 'Declared' }), h('p', { class: 'why', text: 'the session\'s own words (status); unchecked' }),
        dl([['working on', c.declared.working_on], ['role', c.declared.role], ['parent', c.declared.parent]]),
      ]),
    ]),
    s.live ? h('a', { href: '/web/compose?to=' + encodeURIComponent(s.slug ? s.address.split('/')[0] + '/' + s.slug : s.address), 'data-nav': true, text: 'Write to this session' }) : null,
  ]);
}

function pageDirectory(main) {
  pageTitle(main, 'Directory');
  var ended = h('input', { type: 'checkbox', id: 'show-ended' });
  main.appendChild(h('div', { class: 'toolbar' }, [h('label', { class: 'check', for: 'show-ended' }, [ended, ' Show ended sessions'])]));
  var box = h('div', { id: 'directory' });
  main.appendChild(box);
  function draw(d) {
    clear(box);
    box.appendChild(h('h2', { text: 'Rooms' }));
    box.appendChild(d.rooms.length ? h('ul', { class: 'rooms' }, d.rooms.map(function (r) {
      return h('li', {}, [
        h('a', { href: '/web/compose?to=' + encodeURIComponent('#' + r.name), 'data-nav': true, text: '#' + r.name }),
        r.member ? h('span', { class: 'badge', text: 'member' }) : null,
      ]);
    })) : h('p', { class: 'none', text: 'No rooms.' }));
    box.appendChild(h('h2', { text: 'Accounts' }));
    d.accounts.forEach(function (a) {
      var sessions = a.sessions.filter(function (s) { return s.live || ended.checked; });
      box.appendChild(h('section', { class: 'account card', 'aria-label': 'account ' + a.id }, [
        h('h3', {}, [h('span', { text: a.id }), ' ', kindBadge(a.kind), a.label !== a.id ? h('span', { class: 'label', text: ' ' + a.label }) : null]),
        a.id !== state.me.account ? h('a', { href: '/web/compose?to=' + encodeURIComponent(a.id), 'data-nav': true, text: 'Write to ' + a.id }) : null,
        sessions.length ? h('div', { class: 'sessions' }, sessions.map(sessionCard)) : h('p', { class: 'none', text: a.kind === 'human' ? 'People have no attested session.' : 'No live session.' }),
      ]));
    });
  }
  ended.addEventListener('change', function () { if (state.dir) draw(state.dir); });
  loadDirectory().then(draw, function (e) { box.appendChild(h('p', { class: 'error', role: 'alert', text: errorText(e) })); });
}

// --- operator ------------------------------------------------------------------------------------

function adminForm(id, title, fields, button, run) {
  var send = h('button', { type: 'submit', text: button });
  var form = h('form', { class: 'card admin-form', id: id }, [h('h3', { text: title })].concat(fields).concat([send]));
  var err = formError(form);
  var out = h('output', { class: 'result', 'aria-live': 'polite' });
  form.appendChild(out);
  form.addEventListener('submit', function (e) {
    e.preventDefault();
    err.hide();
    out.textContent = '';
    send.disabled = true;
    run().then(function (msg) { send.disabled = false; if (msg) out.textContent = msg; refreshAdmin(); }, function (e2) { send.disabled = false; err.show(errorText(e2)); });
  });
  return form;
}

function permText(p) { return Object.keys(p).filter(function (k) { return p[k]; }).join(', ') || 'none'; }

function input(name, attrs) { return h('input', Object.assign({ name: name, autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false' }, attrs || {})); }

/** What a removal answered: the mail it deleted ({ok, deleted_messages}). */
function removedText(what, r) {
  var n = r && typeof r.deleted_messages === 'number' ? r.deleted_messages : null;
  return what + ' removed' + (n === null ? '.' : '; ' + n + ' message' + (n === 1 ? '' : 's') + ' deleted with it.');
}

function removed(what) {
  return function (r) { var t = removedText(what, r); announce(t); refreshAdmin(t); };
}

function refreshAdmin(note) {
  var box = $('admin-state');
  if (!box) return;
  api('admin/overview', {}).then(function (o) {
    clear(box);
    if (note) box.appendChild(h('p', { class: 'notice', id: 'admin-note', text: note }));
    box.appendChild(h('h2', { text: 'Accounts' }));
    var t = h('table', {}, [h('thead', {}, [h('tr', {}, ['Account', 'Kind', 'Label', 'Permissions', 'Listener', ''].map(function (x) { return h('th', { scope: 'col', text: x }); }))])]);
    var tb = h('tbody', {});
    o.accounts.forEach(function (a) {
      var perms = permText(a.permissions);
      // Operators are made and removed on the machine only: the daemon refuses it from here.
      var rm = a.id === state.me.account ? null : a.permissions.operator ? h('span', { class: 'hint', text: 'managed on the machine' }) : h('button', { type: 'button', class: 'danger', 'aria-label': 'Remove account ' + a.id, text: 'Remove', onclick: function () {
        if (!confirm('Remove account ' + a.id + '? Every message delivered to it is deleted with it; this cannot be undone (an account added again as ' + a.id + ' starts empty).')) return;
        api('admin/account/remove', { id: a.id }).then(removed('Account ' + a.id), function (e) { alert(errorText(e)); });
      } });
      tb.appendChild(h('tr', {}, [h('td', { class: 'mono', text: a.id }), h('td', { text: a.kind }), h('td', { text: a.label }), h('td', { text: perms }), h('td', { class: 'mono', text: o.listeners[a.id] || '' }), h('td', {}, [rm])]));
    });
    t.appendChild(tb);
    box.appendChild(h('div', { class: 'scroll' }, [t]));
    box.appendChild(h('h2', { text: 'Rooms' }));
    if (!o.rooms.length) box.appendChild(h('p', { class: 'none', text: 'No rooms.' }));
    o.rooms.forEach(function (r) {
      box.appendChild(h('section', { class: 'card room' }, [
        h('h3', {}, ['#' + r.name, r.everyone ? h('span', { class: 'badge', text: 'everyone' }) : null,
          h('button', { type: 'button', class: 'danger', 'aria-label': 'Remove room ' + r.name, text: 'Remove room', onclick: function () {
            if (!confirm('Remove room #' + r.name + '? Its memberships and every message posted to it are deleted with it; this cannot be undone (a room created again as #' + r.name + ' starts empty).')) return;
            api('admin/room/remove', { name: r.name }).then(removed('Room #' + r.name), function (e) { alert(errorText(e)); });
          } })]),
        r.everyone ? h('p', { class: 'hint', text: 'Every account is a member.' }) : h('ul', { class: 'members' }, r.members.map(function (m) {
          return h('li', {}, [m, ' ', h('button', { type: 'button', class: 'secondary small', 'aria-label': 'Remove ' + m + ' from #' + r.name, text: 'remove', onclick: function () {
            api('admin/room/member/remove', { room: r.name, account: m }).then(function () { refreshAdmin(); }, function (e) { alert(errorText(e)); });
          } })]);
        })),
      ]));
    });
    box.appendChild(h('h2', { text: 'Wake chains' }));
    box.appendChild(h('p', { class: 'hint', text: 'Read only: a chain runs programs, so it is set on the machine with m4a wake set.' }));
    if (!o.wake.length) box.appendChild(h('p', { class: 'none', text: 'No wake chains.' }));
    else {
      var wt = h('table', { id: 'wake-chains' }, [h('thead', {}, [h('tr', {}, ['For', 'Steps, in order', 'Rooms', 'Debounce'].map(function (x) { return h('th', { scope: 'col', text: x }); }))])]);
      var wb = h('tbody', {});
      o.wake.forEach(function (c) {
        var steps = c.steps.map(function (st) {
          return st.kind === 'hooks' ? 'hooks' : st.kind === 'codex-app-server' ? 'codex ' + st.listen : st.kind === 'command' ? 'command ' + JSON.stringify(st.argv) : 'webhook ' + st.url;
        }).join(' \u2192 ');
        wb.appendChild(h('tr', {}, [h('td', { class: 'mono', text: c.lineage ? c.account + '/' + c.lineage : c.account }), h('td', { class: 'mono', text: steps }), h('td', { text: c.rooms ? 'yes' : 'no' }), h('td', { text: c.debounce_ms + ' ms' })]));
      });
      wt.appendChild(wb);
      box.appendChild(h('div', { class: 'scroll' }, [wt]));
    }
  }, function (e) { clear(box).appendChild(h('p', { class: 'error', role: 'alert', text: errorText(e) })); });
}

function pageAdmin(main) {
  pageTitle(main, 'Operator');
  main.appendChild(h('div', { id: 'admin-state' }));
  var acc = input('id', { required: true }), kind = h('select', { name: 'kind' }, [h('option', { value: 'agent', text: 'agent' }), h('option', { value: 'service', text: 'service' })]), label = input('label');
  var pid = input('id', { required: true }), pname = input('display_name'), ppw = input('password', { type: 'password', autocomplete: 'new-password', required: true });
  var room = input('name', { required: true }), everyone = h('input', { type: 'checkbox', id: 'room-everyone' });
  var mroom = input('room', { required: true }), macc = input('account', { required: true });
  var lacc = input('account', { required: true }), lurl = input('url', { placeholder: 'http://127.0.0.1:PORT/path' });
  main.appendChild(h('div', { class: 'grid' }, [
    adminForm('add-account', 'Add an agent account', [field('Account', acc), field('Kind', kind), field('Label', label), h('p', { class: 'hint', text: 'It may send and read; an operator account is made on the machine (m4a admin account add NAME --operator).' })], 'Add account', function () {
      return api('admin/account/add', { id: acc.value.trim(), kind: kind.value, label: label.value.trim() || undefined }).then(function (r) {
        return 'Secret of ' + r.account.id + ' (permissions: ' + permText(r.account.permissions) + '; shown once, store it now): ' + r.secret;
      });
    }),
    adminForm('add-person', 'Add a person', [field('Account', pid), field('Display name', pname), field('Password', ppw, 'at least 8 characters'), h('p', { class: 'hint', text: 'Operators are made on the machine: m4a user create NAME --operator.' })], 'Add person', function () {
      return api('admin/user/create', { id: pid.value.trim(), display_name: pname.value.trim() || undefined, password: ppw.value }).then(function (r) {
        ppw.value = '';
        return r.account.id + ' can now log in (permissions: ' + permText(r.account.permissions) + ').';
      });
    }),
    adminForm('add-room', 'Add a room', [field('Room', room), h('label', { class: 'check', for: 'room-everyone' }, [everyone, ' Every account is a member'])], 'Add room', function () {
      return api('admin/room/add', { name: room.value.trim().replace(/^#/, ''), everyone: everyone.checked || undefined }).then(function () { return 'Room created.'; });
    }),
    adminForm('add-member', 'Add a member to a room', [field('Room', mroom), field('Account', macc)], 'Add member', function () {
      return api('admin/room/member/add', { room: mroom.value.trim().replace(/^#/, ''), account: macc.value.trim() }).then(function () { return 'Member added.'; });
    }),
    adminForm('set-listener', 'Listener (a loopback URL rung when mail arrives)', [field('Account', lacc), field('URL', lurl, 'empty removes the listener')], 'Save listener', function () {
      var u = lurl.value.trim();
      return (u ? api('admin/listener', { account: lacc.value.trim(), url: u }) : api('admin/listener/remove', { account: lacc.value.trim() })).then(function () { return u ? 'Listener set.' : 'Listener removed.'; });
    }),
  ]));
  refreshAdmin();
}
`;
