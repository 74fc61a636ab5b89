// After mail to team:NAME or leader:NAME: the daemon wrote one copy per member (or leader), and a
// member's contact policy may have refused its copy. The page says who got one and who did not,
// from the send's answer, before the person moves on.
import type { SendAnswer } from './answers.js';
import { h } from './dom.js';

/** Team suggestions for the To field: both addresses of every team the person is a member of. */
export function teamOptions(teams: readonly string[]): [string, string][] {
  return teams.flatMap((t): [string, string][] => [
    ['team:' + t, 'team ' + t + ': a copy to every other member'],
    ['leader:' + t, 'team ' + t + ': a copy to each leader'],
  ]);
}

export const isTeamAddress = (to: string): boolean => /^(team|leader):/.test(to);

/** Where a team send went: the copies (each a link to its thread) and the refusals. */
export function expansionCard(asked: string, r: SendAnswer): HTMLElement {
  const copies = r.expanded ?? [];
  const refused = r.refused ?? [];
  const n = copies.length;
  return h('section', { class: 'card send-expansion', id: 'send-expansion', 'aria-labelledby': 'expansion-heading' }, [
    h('h2', { id: 'expansion-heading', text: 'Sent to ' + asked }),
    h('p', { text: n ? n + (n === 1 ? ' copy was' : ' copies were') + ' delivered:' : 'No copy was delivered.' }),
    n
      ? h(
          'ul',
          { class: 'expanded' },
          copies.map((c) => h('li', {}, [h('a', { href: '/web/thread/' + encodeURIComponent(c.message_id), 'data-nav': true, class: 'mono', text: c.to })])),
        )
      : null,
    refused.length ? h('h3', { text: 'Refused by their contact policy' }) : null,
    refused.length
      ? h(
          'ul',
          { class: 'refused' },
          refused.map((x) => h('li', {}, [h('span', { class: 'mono', text: x.recipient }), ' (' + x.policy + ')'])),
        )
      : null,
    h('p', {}, [h('a', { href: '/web/compose', 'data-nav': true, text: 'Write another message' })]),
  ]);
}
