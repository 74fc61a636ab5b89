// Pooled tasks on the board and on a task's page: for each room the person is a member of, a
// "Pool #room" section (task/list role pool) by state, on offer, claimed (by whom, attempt n of m)
// and finished; "Dead letters", the tasks the person handed to a room that failed lease_exhausted
// (claimed max_attempts times without finishing); and a pooled task's own facts.
import type { ApiError, Directory, LeaseList, Task, TaskList, TaskState } from './answers.js';
import { api } from './api.js';
import { $, clear, errorText, expiry, h, when } from './dom.js';
import { addr, loadDirectory } from './mail-data.js';
import { state } from './state.js';
import { stateBadge } from './task-data.js';

/** What the pool sections group by: a task on offer, one someone holds, then the finished ones. */
const GROUPS: readonly { id: string; label: string; states: readonly TaskState[] }[] = [
  { id: 'offer', label: 'On offer', states: ['submitted'] },
  { id: 'claimed', label: 'Claimed', states: ['working', 'input_required', 'auth_required'] },
  { id: 'failed', label: 'Failed', states: ['failed'] },
  { id: 'completed', label: 'Completed', states: ['completed'] },
  { id: 'rejected', label: 'Rejected', states: ['rejected'] },
  { id: 'canceled', label: 'Canceled', states: ['canceled'] },
];

const attemptText = (p: NonNullable<Task['pool']>): string => 'attempt ' + p.attempt + ' of ' + p.max_attempts;

/** Bumped by each read, so only the newest answer draws. */
let seq = 0;

/** Reads every pool of the person's rooms and the dead letters into #pools (the board's). fresh:
 *  ask the directory again (the board was drawn), else use the rooms known. */
export function loadPools(fresh: boolean): void {
  if (!$('pools')) return;
  const mine = ++seq;
  const dir: Promise<Directory> = fresh || !state.dir ? loadDirectory() : Promise.resolve(state.dir);
  dir
    .then((d) => {
      const rooms = d.rooms.filter((r) => r.member).map((r) => '#' + r.name);
      return Promise.all([
        Promise.all(rooms.map((room) => api<TaskList>('task/list', { role: 'pool', pool: room, limit: 100 }).then((l) => [room, l.tasks] as const))),
        api<TaskList>('task/list', { role: 'requested', state: 'failed', reason: 'lease_exhausted', limit: 100 }),
      ]);
    })
    .then(
      ([pools, dead]) => {
        if (mine === seq) drawPools(pools, dead.tasks);
      },
      (e: ApiError) => {
        const box = $('pools');
        if (box && mine === seq) clear(box).appendChild(h('p', { class: 'error', role: 'alert', text: errorText(e) }));
      },
    );
}

function drawPools(pools: readonly (readonly [string, Task[]])[], dead: Task[]): void {
  const box = $('pools');
  if (!box) return;
  clear(box);
  for (const [room, tasks] of pools) {
    const sec = h('section', { class: 'pool', 'data-room': room, 'aria-label': 'pool ' + room }, [h('h2', { text: 'Pool ' + room + ' (' + tasks.length + ')' })]);
    if (!tasks.length) sec.appendChild(h('p', { class: 'empty', text: 'Nothing in the pool of ' + room + '.' }));
    for (const g of GROUPS) {
      const these = tasks.filter((t) => g.states.includes(t.state));
      if (!these.length) continue;
      sec.appendChild(
        h('div', { class: 'poolgroup', 'data-group': g.id }, [
          h('h3', { text: g.label + ' (' + these.length + ')' }),
          h(
            'ul',
            { class: 'msglist tasklist' },
            these.map((t) => poolItem(t, g.id)),
          ),
        ]),
      );
    }
    box.appendChild(sec);
  }
  box.appendChild(
    h('section', { id: 'dead-letters', 'aria-label': 'dead letters' }, [
      h('h2', { text: 'Dead letters (' + dead.length + ')' }),
      h('p', { class: 'hint', text: 'Tasks you handed to a room that were claimed as often as they may be without finishing: failed, never dropped.' }),
      dead.length
        ? h(
            'ul',
            { class: 'msglist tasklist' },
            dead.map((t) => poolItem(t, 'dead')),
          )
        : h('p', { class: 'empty', text: 'None.' }),
    ]),
  );
}

/** The last note the history has: why a task failed, in the mailbox's words. */
const lastNote = (t: Task): string => [...t.history].reverse().find((e) => e.note)?.note ?? '';

function poolItem(t: Task, group: string): HTMLElement {
  const p = t.pool;
  const facts: (Node | string)[] =
    group === 'claimed'
      ? ['claimed by ', addr(t.to, 'holder'), stateBadge(t.state), ' ' + (p ? attemptText(p) : '')]
      : group === 'dead'
        ? ['to ', addr(p?.room ?? t.to, 'to'), stateBadge(t.state)]
        : ['from ', addr(t.from, 'from'), stateBadge(t.state), ' ' + (p ? attemptText(p) : '')];
  if (group === 'offer' && p?.available_at) facts.push(' · offered again ', when(p.available_at));
  return h('li', { class: 'msg task', 'data-task': t.task_id }, [
    h('a', { href: '/web/task/' + t.task_id, 'data-nav': true, class: 'open' }, [
      h('span', { class: 'line1' }, [...facts, when(t.updated_at)]),
      h('span', { class: 'subject', text: t.title }),
      t.fail_reason ? h('span', { class: 'preview fail-reason', text: t.fail_reason + (lastNote(t) ? ' · ' + lastNote(t) : '') }) : null,
    ]),
  ]);
}

/** A pooled task's facts on its page: room, attempt, holder and its lease's expiry. */
export function poolFacts(t: Task): HTMLElement | null {
  const p = t.pool;
  if (!p) return null;
  const held = p.lease_id !== undefined;
  const until = h('dd', { id: 'task-lease-expiry', text: held ? '…' : 'no claim' });
  const sec = h('section', { class: 'card', id: 'task-pool', 'aria-label': 'pooled task' }, [
    h('h2', { text: 'Pool' }),
    h('dl', {}, [
      h('dt', { text: 'Room' }),
      h('dd', { id: 'task-pool-room', text: p.room }),
      h('dt', { text: 'Attempt' }),
      h('dd', { id: 'task-pool-attempt', text: p.attempt + ' of ' + p.max_attempts }),
      h('dt', { text: 'Holder' }),
      h('dd', { id: 'task-pool-holder' }, [held ? addr(t.to, 'holder') : t.state === 'submitted' ? 'nobody: on offer' : 'nobody']),
      h('dt', { text: 'Lease expires' }),
      until,
      ...(p.available_at ? [h('dt', { text: 'Offered again' }), h('dd', {}, [when(p.available_at)])] : []),
      ...(t.fail_reason ? [h('dt', { text: 'Failed because' }), h('dd', { id: 'task-fail-reason', text: t.fail_reason })] : []),
    ]),
  ]);
  if (held)
    api<LeaseList>('lease/list', { resource_prefix: t.task_id, limit: 10 }).then(
      (r) => {
        const l = r.leases.find((x) => x.lease_id === p.lease_id);
        clear(until).appendChild(l ? expiry(l.expires_at) : document.createTextNode('ended'));
        if (l) until.setAttribute('data-lease', l.lease_id);
      },
      (e: ApiError) => {
        until.textContent = errorText(e);
      },
    );
  return sec;
}
