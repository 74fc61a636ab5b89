// Reservations: the live leases as the daemon has them (lease/list), file reservations grouped by
// repository root, then the pooled tasks' claims. A reservation is no mail, so nothing announces
// its claim, release or expiry: the view reads the list again every 15 s while it is open, and at
// once when a task's mail arrives (a pooled task claimed, returned or failed; live.ts).
import type { ApiError, Lease, LeaseList } from './answers.js';
import { api } from './api.js';
import { $, clear, errorText, expiry, h } from './dom.js';
import { addr } from './mail-data.js';
import { pageTitle } from './nav.js';

/** How often the open view reads the leases again (no event tells it). */
export const RESERVATIONS_REFRESH_MS = 15_000;
/** The most lease/list answers at once (LEASE_LIMITS.listMax). */
const LIST_MAX = 500;

let timer: ReturnType<typeof setInterval> | undefined;
/** Bumped by each read, so only the newest answer draws. */
let seq = 0;

export function pageReservations(main: HTMLElement): void {
  pageTitle(main, 'Reservations');
  main.appendChild(
    h('p', {
      class: 'hint',
      text: 'Files agents reserved (m4a reserve) and the pooled tasks they claimed, live leases only. Read again every 15 s, and when a task’s mail arrives.',
    }),
  );
  main.appendChild(
    h('div', { class: 'toolbar' }, [
      h('button', { type: 'button', class: 'secondary', id: 'leases-refresh', text: 'Refresh', onclick: () => refreshReservations() }),
      h('span', { class: 'hint', id: 'leases-asof' }),
    ]),
  );
  main.appendChild(h('div', { id: 'reservations' }));
  if (timer !== undefined) clearInterval(timer);
  timer = setInterval(() => {
    if ($('reservations')) refreshReservations();
    else {
      clearInterval(timer);
      timer = undefined;
    }
  }, RESERVATIONS_REFRESH_MS);
  refreshReservations();
}

/** Reads the leases again and redraws the open view (nothing when it is not open). */
export function refreshReservations(): void {
  if (!$('reservations')) return;
  const mine = ++seq;
  Promise.all([api<LeaseList>('lease/list', { resource_prefix: 'path:', limit: LIST_MAX }), api<LeaseList>('lease/list', { resource_prefix: 't-', limit: LIST_MAX })]).then(
    ([paths, tasks]) => {
      if (mine === seq) draw(paths.leases, tasks.leases);
    },
    (e: ApiError) => {
      const box = $('reservations');
      if (box && mine === seq) clear(box).appendChild(h('p', { class: 'error', role: 'alert', text: errorText(e) }));
    },
  );
}

const headRow = (cells: string[]): HTMLElement =>
  h('thead', {}, [
    h(
      'tr',
      {},
      cells.map((c) => h('th', { scope: 'col', text: c })),
    ),
  ]);

const leaseTable = (label: string, head: string[], rows: HTMLElement[]): HTMLElement =>
  h('div', { class: 'scroll' }, [h('table', { class: 'leases', 'aria-label': label }, [headRow(head), h('tbody', {}, rows)])]);

function noteIfCut(box: HTMLElement, n: number): void {
  if (n >= LIST_MAX) box.appendChild(h('p', { class: 'hint', text: 'The first ' + LIST_MAX + ' only.' }));
}

function draw(paths: Lease[], claims: Lease[]): void {
  const box = $('reservations');
  if (!box) return;
  clear(box);
  const asof = $('leases-asof');
  if (asof) asof.textContent = 'as of ' + new Date().toLocaleTimeString();
  const roots = new Map<string, Lease[]>();
  for (const l of paths) {
    const got = roots.get(l.root ?? '');
    if (got) got.push(l);
    else roots.set(l.root ?? '', [l]);
  }
  box.appendChild(h('h2', { text: 'File reservations (' + paths.length + ')' }));
  if (!paths.length) box.appendChild(h('p', { class: 'empty', text: 'No file is reserved.' }));
  for (const [root, ls] of [...roots].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const rows = ls.map((l) =>
      h('tr', { 'data-lease': l.lease_id }, [
        h('td', {}, [addr(l.holder, 'holder')]),
        h('td', { class: 'mono glob', text: l.resource.slice('path:'.length) }),
        h('td', { class: 'mode', text: l.mode }),
        h('td', { class: 'reason', text: l.reason ?? '' }),
        h('td', {}, [expiry(l.expires_at)]),
      ]),
    );
    box.appendChild(
      h('section', { class: 'leasegroup', 'data-root': root, 'aria-label': 'reservations under ' + root }, [
        h('h3', { class: 'mono', text: root }),
        leaseTable('reservations under ' + root, ['Holder', 'Glob', 'Mode', 'Reason', 'Expires'], rows),
      ]),
    );
  }
  noteIfCut(box, paths.length);
  box.appendChild(h('h2', { text: 'Pooled-task claims (' + claims.length + ')' }));
  if (!claims.length) box.appendChild(h('p', { class: 'empty', text: 'No pooled task is claimed.' }));
  else
    box.appendChild(
      h('section', { id: 'task-claims', 'aria-label': 'pooled-task claims' }, [
        leaseTable(
          'pooled-task claims',
          ['Task', 'Holder', 'Attempt', 'Reason', 'Expires'],
          claims.map((l) =>
            h('tr', { 'data-lease': l.lease_id, 'data-task': l.resource }, [
              h('td', {}, [h('a', { href: '/web/task/' + l.resource, 'data-nav': true, class: 'mono', text: l.resource })]),
              h('td', {}, [addr(l.holder, 'holder')]),
              h('td', { class: 'attempt', text: String(l.attempt) }),
              h('td', { class: 'reason', text: l.reason ?? '' }),
              h('td', {}, [expiry(l.expires_at)]),
            ]),
          ),
        ),
      ]),
    );
  noteIfCut(box, claims.length);
}
