// The directory: rooms, accounts, and live sessions with their cards. A card keeps its three kinds
// of knowledge apart: what the kernel attested, what the agent program's own process corroborated,
// and what the session declared about itself.
import type { ApiError, Directory, Session } from './answers.js';
import { clear, dl, errorText, h, kindBadge, when } from './dom.js';
import { loadDirectory } from './mail-data.js';
import { pageTitle } from './nav.js';
import { me, state } from './state.js';

/** account/slug when the session has one, else its full address. */
const shortAddress = (s: Session): string => (s.slug ? s.address.split('/')[0] + '/' + s.slug : s.address);

function sessionCard(s: Session): HTMLElement {
  const c = s.card;
  const at = c.attested;
  return h('article', { class: 'session' + (s.live ? ' live' : ' ended'), 'aria-label': 'session ' + s.address }, [
    h('h4', {}, [h('span', { class: 'addr', text: shortAddress(s) }), ' ', h('span', { class: 'badge ' + (s.live ? 'live' : 'ended'), text: s.live ? 'live' : 'ended' })]),
    h('p', { class: 'meta' }, [h('span', { class: 'mono', text: s.address }), s.aliases.length ? ' · aliases: ' + s.aliases.join(', ') : '', ' · last seen ', when(s.last_seen)]),
    h('div', { class: 'facts' }, [
      h('section', { class: 'fact attested' }, [
        h('h5', { text: 'Attested' }),
        h('p', { class: 'why', text: 'by the kernel: the process on the other end of the connection' }),
        at
          ? dl([
              ['pid', at.pid],
              ['program', at.exe],
              ['uid', at.uid],
              ['host', at.host.slice(0, 12)],
              ['started', at.start_time],
            ])
          : h('p', { class: 'none', text: 'none' }),
      ]),
      h('section', { class: 'fact corroborated' }, [
        h('h5', { text: 'Corroborated' }),
        h('p', { class: 'why', text: 'read from that process (command line, cwd, environment): true that it held them, no proof of who launched it' }),
        dl([
          ['provider', c.corroborated.provider],
          ['provider session', c.corroborated.provider_session_id],
          ['model', c.corroborated.model],
          ['cwd', c.corroborated.cwd],
        ]),
      ]),
      h('section', { class: 'fact declared' }, [
        h('h5', { text: 'Declared' }),
        h('p', { class: 'why', text: "the session's own words (status); unchecked" }),
        dl([
          ['working on', c.declared.working_on],
          ['role', c.declared.role],
          ['parent', c.declared.parent],
        ]),
      ]),
    ]),
    s.live ? h('a', { href: '/web/compose?to=' + encodeURIComponent(shortAddress(s)), 'data-nav': true, text: 'Write to this session' }) : null,
  ]);
}

export function pageDirectory(main: HTMLElement): void {
  pageTitle(main, 'Directory');
  const ended = h('input', { type: 'checkbox', id: 'show-ended' });
  main.appendChild(h('div', { class: 'toolbar' }, [h('label', { class: 'check', for: 'show-ended' }, [ended, ' Show ended sessions'])]));
  const box = h('div', { id: 'directory' });
  main.appendChild(box);
  function draw(d: Directory): void {
    clear(box);
    box.appendChild(h('h2', { text: 'Rooms' }));
    box.appendChild(
      d.rooms.length
        ? h(
            'ul',
            { class: 'rooms' },
            d.rooms.map((r) =>
              h('li', {}, [
                h('a', { href: '/web/compose?to=' + encodeURIComponent('#' + r.name), 'data-nav': true, text: '#' + r.name }),
                r.member ? h('span', { class: 'badge', text: 'member' }) : null,
              ]),
            ),
          )
        : h('p', { class: 'none', text: 'No rooms.' }),
    );
    box.appendChild(h('h2', { text: 'Accounts' }));
    for (const a of d.accounts) {
      const sessions = a.sessions.filter((s) => s.live || ended.checked);
      box.appendChild(
        h('section', { class: 'account card', 'aria-label': 'account ' + a.id }, [
          h('h3', {}, [h('span', { text: a.id }), ' ', kindBadge(a.kind ?? 'agent'), a.label !== undefined ? h('span', { class: 'label', text: ' ' + a.label }) : null]),
          a.id !== me().account ? h('a', { href: '/web/compose?to=' + encodeURIComponent(a.id), 'data-nav': true, text: 'Write to ' + a.id }) : null,
          sessions.length
            ? h('div', { class: 'sessions' }, sessions.map(sessionCard))
            : h('p', { class: 'none', text: a.kind === 'human' ? 'People have no attested session.' : 'No live session.' }),
        ]),
      );
    }
  }
  ended.addEventListener('change', () => {
    if (state.dir) draw(state.dir);
  });
  loadDirectory().then(draw, (e: ApiError) => {
    box.appendChild(h('p', { class: 'error', role: 'alert', text: errorText(e) }));
  });
}
