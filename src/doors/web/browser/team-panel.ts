// The operator page's teams (docs/teams.md): members, leaders with their grants, and each team's
// latest recorded changes. Read only: teams are managed on the machine (m4a admin team …), so the
// page offers no button. Every name is drawn as text (dom.ts), never as markup.
import type { Team, TeamChange } from './answers.js';
import { h, when } from './dom.js';

/** What a change did, in words ("granted codex timer.schedule_team"). */
export function changeText(c: TeamChange): string {
  const who = c.account ?? '?';
  switch (c.action) {
    case 'create':
      // Each initial member is its own create change.
      return c.account ? 'created the team with ' + c.account : 'created the team';
    case 'member.add':
      return 'added ' + who;
    case 'member.remove':
      return 'removed ' + who;
    case 'leader.add':
      return 'made ' + who + ' a leader';
    case 'leader.remove':
      return 'ended the leadership of ' + who;
    case 'grant':
      return 'granted ' + who + ' ' + (c.capability ?? '?');
    case 'revoke':
      return 'revoked ' + (c.capability ?? '?') + ' from ' + who;
  }
}

const grantBadge = (g: string): HTMLElement => h('span', { class: 'badge grant', title: 'a capability granted to this leader', text: g });

function teamRow(t: Team): HTMLElement {
  const leaders = new Map(t.leaders.map((l) => [l.account, l.grants]));
  const members = h(
    'ul',
    { class: 'members' },
    t.members.map((m) => h('li', {}, [m, leaders.has(m) ? h('span', { class: 'badge leader', text: 'leader' }) : null])),
  );
  const grants = t.leaders.length
    ? h(
        'ul',
        { class: 'team-leaders' },
        t.leaders.map((l) =>
          h('li', { 'data-leader': l.account }, [
            h('span', { class: 'mono', text: l.account }),
            ' ',
            ...(l.grants.length ? l.grants.map(grantBadge) : [h('span', { class: 'hint', text: 'no grants' })]),
          ]),
        ),
      )
    : h('span', { class: 'none', text: 'no leaders' });
  const changes = t.changes.length
    ? h(
        'ol',
        { class: 'team-changes' },
        t.changes.map((c) => h('li', {}, [when(c.at), ' ', h('span', { class: 'mono', text: c.by }), ' ', changeText(c)])),
      )
    : h('span', { class: 'none', text: 'none recorded' });
  return h('tr', { 'data-team': t.name }, [
    h('th', { scope: 'row' }, [
      h('span', { class: 'mono', text: t.name }),
      t.open ? h('span', { class: 'badge', title: 'anyone may post to #' + t.name, text: 'open' }) : null,
      h('div', { class: 'hint' }, ['since ', when(t.created_at)]),
    ]),
    h('td', {}, [members]),
    h('td', {}, [grants]),
    h('td', {}, [changes]),
  ]);
}

/** The Teams section: a heading, the read-only note, and one row per team. */
export function teamPanel(teams: readonly Team[]): HTMLElement {
  const head = h('thead', {}, [
    h(
      'tr',
      {},
      ['Team', 'Members', 'Leaders and their grants', 'Latest changes'].map((x) => h('th', { scope: 'col', text: x })),
    ),
  ]);
  return h('section', { id: 'teams-panel', 'aria-labelledby': 'teams-heading' }, [
    h('h2', { id: 'teams-heading', text: 'Teams' }),
    h('p', { class: 'hint', text: 'Read only: teams are managed on the machine with m4a admin team \u2026' }),
    teams.length ? h('div', { class: 'scroll' }, [h('table', { id: 'teams' }, [head, h('tbody', {}, teams.map(teamRow))])]) : h('p', { class: 'none', text: 'No teams.' }),
  ]);
}
