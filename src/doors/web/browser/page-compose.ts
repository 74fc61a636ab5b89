// Writing a new message; the directory suggests addresses, and `me` the person's teams (team: and
// leader:). A team send shows where its copies went instead of opening a thread.
import type { Directory, Me } from './answers.js';
import { api } from './api.js';
import { announce, field, h } from './dom.js';
import { loadDirectory } from './mail-data.js';
import { mailForm } from './mail-form.js';
import { go, pageTitle } from './nav.js';
import { expansionCard, isTeamAddress, teamOptions } from './send-expansion.js';
import { me } from './state.js';

/** [address, what it is] for every room, account and live session the person could write to
 *  (the New task form leaves the rooms out). */
export function addressOptions(dir: Directory): [string, string][] {
  const opts: [string, string][] = [];
  const account = me().account;
  for (const r of dir.rooms) opts.push(['#' + r.name, 'room' + (r.member ? ' (you are a member)' : '')]);
  for (const a of dir.accounts) {
    if (a.id === account) continue;
    opts.push([a.id, (a.label ?? a.id) + ' (' + (a.kind === 'human' ? 'person' : (a.kind ?? 'agent')) + ')']);
    for (const s of a.sessions) {
      if (!s.live) continue;
      const what = s.card.declared.working_on ? ': ' + s.card.declared.working_on : '';
      if (s.slug) opts.push([a.id + '/' + s.slug, 'live session' + what]);
      for (const al of s.aliases) opts.push([a.id + '/' + al, 'live session (alias)' + what]);
      opts.push([s.address, 'live session' + what]);
    }
  }
  return opts;
}

export function pageCompose(main: HTMLElement, presetTo: string): void {
  pageTitle(main, 'Write a message');
  const list = h('datalist', { id: 'addresses' });
  const to = h('input', { name: 'to', list: 'addresses', required: true, autocomplete: 'off', autocapitalize: 'none', spellcheck: 'false', value: presetTo });
  const subject = h('input', { name: 'subject', required: true, maxlength: '500' });
  const body = h('textarea', { name: 'body', rows: '10' });
  const send = h('button', { type: 'submit', text: 'Send' });
  const form = h('form', { class: 'card', id: 'compose-form' }, [
    field(
      'To',
      to,
      'an account (codex), one session (codex/web-ui or codex/s-…), a room (#reviewers) or a team of yours (team:core, leader:core); suggestions come from the directory',
    ),
    list,
    field('Subject', subject),
    field('Message', body, 'plain text; Ctrl+Enter sends'),
    send,
  ]);
  mailForm(
    form,
    body,
    send,
    () => {
      if (!to.value.trim() || !subject.value.trim()) return 'A recipient and a subject are needed.';
      return { to: to.value.trim(), subject: subject.value, body: body.value };
    },
    (r) => {
      const asked = to.value.trim();
      if (r.expanded || isTeamAddress(asked)) {
        const n = (r.expanded ?? []).length;
        form.replaceWith(expansionCard(asked, r));
        return announce('Sent to ' + asked + ': ' + n + (n === 1 ? ' copy' : ' copies') + '.');
      }
      announce('Sent to ' + r.to + '.');
      go('/web/thread/' + r.message_id);
    },
  );
  main.appendChild(form);
  // Asked afresh each time the form is drawn: the operator may have changed the person's teams.
  const teams = api<Me>('me', {}).then(
    (m) => m.teams ?? [],
    (): string[] => [],
  );
  Promise.all([teams, loadDirectory().catch((): Directory => ({ accounts: [], rooms: [] }))]).then(
    ([ts, dir]) => {
      for (const o of [...teamOptions(ts), ...addressOptions(dir)]) list.appendChild(h('option', { value: o[0], label: o[1] }));
    },
    () => {
      /* completion is a convenience */
    },
  );
}
