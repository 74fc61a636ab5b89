// The operator page: accounts, rooms, teams (read only, team-panel.ts), listeners and people. Wake chains run programs: this door
// shows them read-only and changes none, and it makes no operator credential (the daemon refuses
// one), so the page offers none.
import type { Account, AccountKind, ApiError, Overview, Permissions, Removed, WakeStep } from './answers.js';
import { api } from './api.js';
import { $, announce, clear, errorText, field, formError, h, type Attrs, type Child } from './dom.js';
import { pageTitle } from './nav.js';
import { me } from './state.js';
import { teamPanel } from './team-panel.js';

function adminForm(id: string, title: string, fields: Child[], button: string, run: () => Promise<string | undefined>): HTMLFormElement {
  const send = h('button', { type: 'submit', text: button });
  const form = h('form', { class: 'card admin-form', id }, [h('h3', { text: title }), ...fields, send]);
  const err = formError(form);
  const out = h('output', { class: 'result', 'aria-live': 'polite' });
  form.appendChild(out);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    err.hide();
    out.textContent = '';
    send.disabled = true;
    run().then(
      (msg) => {
        send.disabled = false;
        if (msg) out.textContent = msg;
        refreshAdmin();
      },
      (e2: ApiError) => {
        send.disabled = false;
        err.show(errorText(e2));
      },
    );
  });
  return form;
}

function permText(p: Permissions): string {
  return (Object.keys(p) as (keyof Permissions)[]).filter((k) => p[k]).join(', ') || 'none';
}

function input(name: string, attrs?: Attrs): HTMLInputElement {
  return h('input', { name, autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false', ...attrs });
}

/** What a removal answered: the mail it deleted ({ok, deleted_messages}). */
function removedText(what: string, r: Removed | null): string {
  const n = r && typeof r.deleted_messages === 'number' ? r.deleted_messages : null;
  return what + ' removed' + (n === null ? '.' : '; ' + n + ' message' + (n === 1 ? '' : 's') + ' deleted with it.');
}

function removed(what: string): (r: Removed | null) => void {
  return (r) => {
    const t = removedText(what, r);
    announce(t);
    refreshAdmin(t);
  };
}

const fail = (e: ApiError): void => alert(errorText(e));
const headRow = (cols: string[]): HTMLElement =>
  h('thead', {}, [
    h(
      'tr',
      {},
      cols.map((x) => h('th', { scope: 'col', text: x })),
    ),
  ]);

function accountRow(a: Account, listener: string | undefined): HTMLElement {
  const perms = permText(a.permissions);
  const removeAccount = (): void => {
    if (!confirm('Remove account ' + a.id + '? Every message delivered to it is deleted with it; this cannot be undone (an account added again as ' + a.id + ' starts empty).'))
      return;
    api<Removed>('admin/account/remove', { id: a.id }).then(removed('Account ' + a.id), fail);
  };
  // Operators are made and removed on the machine only: the daemon refuses it from here.
  const rm =
    a.id === me().account
      ? null
      : a.permissions.operator
        ? h('span', { class: 'hint', text: 'managed on the machine' })
        : h('button', { type: 'button', class: 'danger', 'aria-label': 'Remove account ' + a.id, text: 'Remove', onclick: removeAccount });
  return h('tr', {}, [
    h('td', { class: 'mono', text: a.id }),
    h('td', { text: a.kind }),
    h('td', { text: a.label }),
    h('td', { text: perms }),
    h('td', { class: 'mono', text: listener || '' }),
    h('td', {}, [rm]),
  ]);
}

function roomCard(r: Overview['rooms'][number], team: boolean): HTMLElement {
  const removeRoom = (): void => {
    if (
      !confirm(
        'Remove room #' +
          r.name +
          '? Its memberships and every message posted to it are deleted with it; this cannot be undone (a room created again as #' +
          r.name +
          ' starts empty).',
      )
    )
      return;
    api<Removed>('admin/room/remove', { name: r.name }).then(removed('Room #' + r.name), fail);
  };
  const member = (m: string): HTMLElement => {
    const removeMember = (): void => {
      api('admin/room/member/remove', { room: r.name, account: m }).then(() => refreshAdmin(), fail);
    };
    return h('li', {}, [
      m,
      ' ',
      h('button', { type: 'button', class: 'secondary small', 'aria-label': 'Remove ' + m + ' from #' + r.name, text: 'remove', onclick: removeMember }),
    ]);
  };
  return h('section', { class: 'card room' }, [
    h('h3', {}, [
      '#' + r.name,
      r.everyone ? h('span', { class: 'badge', text: 'everyone' }) : null,
      team ? h('span', { class: 'badge', title: 'a team: its leaders and grants are under Teams', text: 'team' }) : null,
      h('button', { type: 'button', class: 'danger', 'aria-label': 'Remove room ' + r.name, text: 'Remove room', onclick: removeRoom }),
    ]),
    r.everyone ? h('p', { class: 'hint', text: 'Every account is a member.' }) : h('ul', { class: 'members' }, r.members.map(member)),
  ]);
}

function stepText(st: WakeStep): string {
  return st.kind === 'hooks'
    ? 'hooks'
    : st.kind === 'codex-app-server'
      ? 'codex ' + st.listen
      : st.kind === 'command'
        ? 'command ' + JSON.stringify(st.argv)
        : st.kind === 'webhook'
          ? 'webhook ' + st.url
          : st.kind === 'a2a'
            ? 'a2a ' + st.url
            : 'opencode ' + st.url;
}

function refreshAdmin(note?: string): void {
  const box = $('admin-state');
  if (!box) return;
  api<Overview>('admin/overview', {}).then(
    (o) => {
      clear(box);
      if (note) box.appendChild(h('p', { class: 'notice', id: 'admin-note', text: note }));
      box.appendChild(h('h2', { text: 'Accounts' }));
      const tb = h(
        'tbody',
        {},
        o.accounts.map((a) => accountRow(a, o.listeners[a.id])),
      );
      box.appendChild(h('div', { class: 'scroll' }, [h('table', {}, [headRow(['Account', 'Kind', 'Label', 'Permissions', 'Listener', '']), tb])]));
      box.appendChild(h('h2', { text: 'Rooms' }));
      if (!o.rooms.length) box.appendChild(h('p', { class: 'none', text: 'No rooms.' }));
      const teams = new Set(o.teams.map((t) => t.name));
      for (const r of o.rooms) box.appendChild(roomCard(r, teams.has(r.name)));
      box.appendChild(teamPanel(o.teams));
      box.appendChild(h('h2', { text: 'Wake chains' }));
      box.appendChild(h('p', { class: 'hint', text: 'Read only: a chain runs programs, so it is set on the machine with m4a wake set.' }));
      if (!o.wake.length) box.appendChild(h('p', { class: 'none', text: 'No wake chains.' }));
      else {
        const wb = h(
          'tbody',
          {},
          o.wake.map((c) =>
            h('tr', {}, [
              h('td', { class: 'mono', text: c.lineage ? c.account + '/' + c.lineage : c.account }),
              h('td', { class: 'mono', text: c.steps.map(stepText).join(' \u2192 ') }),
              h('td', { text: c.rooms ? 'yes' : 'no' }),
              h('td', { text: c.debounce_ms + ' ms' }),
            ]),
          ),
        );
        box.appendChild(h('div', { class: 'scroll' }, [h('table', { id: 'wake-chains' }, [headRow(['For', 'Steps, in order', 'Rooms', 'Debounce']), wb])]));
      }
    },
    (e: ApiError) => {
      clear(box).appendChild(h('p', { class: 'error', role: 'alert', text: errorText(e) }));
    },
  );
}

export function pageAdmin(main: HTMLElement): void {
  pageTitle(main, 'Operator');
  main.appendChild(h('div', { id: 'admin-state' }));
  const acc = input('id', { required: true });
  const kind = h('select', { name: 'kind' }, [h('option', { value: 'agent', text: 'agent' }), h('option', { value: 'service', text: 'service' })]);
  const label = input('label');
  const pid = input('id', { required: true });
  const pname = input('display_name');
  const ppw = input('password', { type: 'password', autocomplete: 'new-password', required: true });
  const room = input('name', { required: true });
  const everyone = h('input', { type: 'checkbox', id: 'room-everyone' });
  const mroom = input('room', { required: true });
  const macc = input('account', { required: true });
  const lacc = input('account', { required: true });
  const lurl = input('url', { placeholder: 'http://127.0.0.1:PORT/path' });
  type Made = { account: Account; secret?: string };
  main.appendChild(
    h('div', { class: 'grid' }, [
      adminForm(
        'add-account',
        'Add an agent account',
        [
          field('Account', acc),
          field('Kind', kind),
          field('Label', label),
          h('p', { class: 'hint', text: 'It may send and read; an operator account is made on the machine (m4a admin account add NAME --operator).' }),
        ],
        'Add account',
        () =>
          api<Made>('admin/account/add', { id: acc.value.trim(), kind: kind.value as AccountKind, label: label.value.trim() || undefined }).then((r) => {
            return 'Secret of ' + r.account.id + ' (permissions: ' + permText(r.account.permissions) + '; shown once, store it now): ' + r.secret;
          }),
      ),
      adminForm(
        'add-person',
        'Add a person',
        [
          field('Account', pid),
          field('Display name', pname),
          field('Password', ppw, 'at least 8 characters'),
          h('p', { class: 'hint', text: 'Operators are made on the machine: m4a user create NAME --operator.' }),
        ],
        'Add person',
        () =>
          api<Made>('admin/user/create', { id: pid.value.trim(), display_name: pname.value.trim() || undefined, password: ppw.value }).then((r) => {
            ppw.value = '';
            return r.account.id + ' can now log in (permissions: ' + permText(r.account.permissions) + ').';
          }),
      ),
      adminForm('add-room', 'Add a room', [field('Room', room), h('label', { class: 'check', for: 'room-everyone' }, [everyone, ' Every account is a member'])], 'Add room', () =>
        api('admin/room/add', { name: room.value.trim().replace(/^#/, ''), everyone: everyone.checked || undefined }).then(() => 'Room created.'),
      ),
      adminForm('add-member', 'Add a member to a room', [field('Room', mroom), field('Account', macc)], 'Add member', () =>
        api('admin/room/member/add', { room: mroom.value.trim().replace(/^#/, ''), account: macc.value.trim() }).then(() => 'Member added.'),
      ),
      adminForm(
        'set-listener',
        'Listener (a loopback URL rung when mail arrives)',
        [field('Account', lacc), field('URL', lurl, 'empty removes the listener')],
        'Save listener',
        () => {
          const u = lurl.value.trim();
          return (u ? api('admin/listener', { account: lacc.value.trim(), url: u }) : api('admin/listener/remove', { account: lacc.value.trim() })).then(() =>
            u ? 'Listener set.' : 'Listener removed.',
          );
        },
      ),
    ]),
  );
  refreshAdmin();
}
