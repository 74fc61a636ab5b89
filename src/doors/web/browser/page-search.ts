// Search: the person's own mail (its account and the rooms it is in now), newest first, through
// /web/api/search, the same operation agents call. The snippet's «marks» become <mark> elements;
// the text is only ever set as text, never parsed as HTML.
import type { ApiError } from './answers.js';
import { api } from './api.js';
import { announce, clear, errorText, field, formError, h, when } from './dom.js';
import { pageTitle } from './nav.js';

interface Hit {
  message_id: string;
  thread_id?: string;
  from: string;
  to?: string;
  subject: string;
  snippet: string;
  created_at: string;
}
interface SearchAnswer {
  results: Hit[];
  next_cursor?: string;
}

/** The snippet with each «word» as a <mark>. */
function snippet(s: string): HTMLElement {
  const p = h('p', { class: 'snippet' });
  for (const [i, part] of s.split(/[«»]/).entries()) {
    if (part) p.appendChild(i % 2 ? h('mark', { text: part }) : document.createTextNode(part));
  }
  return p;
}

function hit(m: Hit): HTMLElement {
  return h('li', { class: 'hit' }, [
    h('a', { href: '/web/thread/' + (m.thread_id || m.message_id), 'data-nav': true, class: 'open', text: m.subject || '(no subject)' }),
    h('p', { class: 'meta' }, [m.from, m.to ? ' → ' + m.to : '', ' · ', when(m.created_at)]),
    snippet(m.snippet),
  ]);
}

export function pageSearch(main: HTMLElement, initial: string): void {
  pageTitle(main, 'Search');
  const input = h('input', { type: 'search', id: 'search-query', name: 'query', maxlength: '256', value: initial, autocomplete: 'off' });
  const form = h('form', { class: 'search', role: 'search' }, [
    field('Search your mail', input, 'words (all must match), "a phrase", or a prefix*'),
    h('button', { type: 'submit', text: 'Search' }),
  ]);
  const err = formError(form);
  const list = h('ol', { class: 'hits', 'aria-label': 'results' });
  const more = h('button', { type: 'button', class: 'secondary', hidden: true, text: 'More results' });
  const status = h('p', { class: 'hint', id: 'search-status' });
  let cursor: string | undefined;
  let query = '';

  const load = (append: boolean): void => {
    err.hide();
    const body: Record<string, string> = { query };
    if (append && cursor) body.cursor = cursor;
    api<SearchAnswer>('search', body).then(
      (r) => {
        if (!append) clear(list);
        for (const m of r.results) list.appendChild(hit(m));
        cursor = r.next_cursor;
        more.hidden = !cursor;
        const n = list.children.length;
        // A page examines a bounded window of matches: none found yet may still have more below.
        status.textContent = n ? n + (cursor ? '+' : '') + ' found' : cursor ? 'None yet: More looks further back.' : 'No mail matches.';
        announce(status.textContent);
      },
      (e: ApiError) => err.show(errorText(e)),
    );
  };
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    query = input.value.trim();
    if (!query) return;
    history.replaceState(null, '', '/web/search?q=' + encodeURIComponent(query));
    load(false);
  });
  more.addEventListener('click', () => load(true));
  main.append(form, status, list, more);
  if (initial) {
    query = initial;
    load(false);
  }
}
