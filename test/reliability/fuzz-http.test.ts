// Property tests over the HTTP door: every route of docs/protocol.md (mail and operator), and
// /mcp with arbitrary JSON-RPC, batches and every tool with arbitrary arguments. Inputs: arbitrary
// JSON, wrong types, unknown fields, deep nesting, values at and over the limits, control
// characters, lone surrogates, invalid UTF-8 bytes, random paths, methods, Host and Origin.
// Every answer is a success or the named envelope with its documented status; never a 500 or a
// hang; a refused request stores nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LIMITS } from '../../src/wire/limits.js';
import { ERROR_TABLE, isErrorCode } from '../../src/wire/errors.js';
import { HTTP_PATHS, OPERATIONS, OPERATION_NAMES } from '../../src/wire/operations.js';
import { PROTOCOL_VERSIONS } from '../../src/doors/mcp/mcp-handler.js';
import { TASK_LIMITS, TASK_STATES } from '../../src/wire/tasks.js';
import type { Store } from '../../src/store/types.js';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { assertEnvelope, assertUnchanged, http, storeSnapshot, type RawAnswer } from './helpers.js';
import { stillClock } from './still-clock.js';
import { fuzzValues } from '../support/fuzz-values.js';

const NUM_RUNS = Number(process.env.M4A_FUZZ_RUNS ?? 0) || undefined;
const runs = (n: number) => ({ numRuns: NUM_RUNS ?? n, includeErrorInReport: true, ...(process.env.M4A_FUZZ_SEED ? { seed: Number(process.env.M4A_FUZZ_SEED) } : {}) });

// ---- values

/** Counterexamples print through this, so a 1 MiB body shows as its first bytes and its size. */
const short = <T extends object>(v: T, text: string | Buffer): T =>
  Object.assign(v, { [fc.toStringMethod]: () => `${JSON.stringify(String(text).slice(0, 300))}${text.length > 300 ? ` … (${text.length} bytes)` : ''}` });

/** Strings at and one past each byte limit, in one-, two- and four-byte characters. */
const LIMIT_SIZES = [
  LIMITS.selectorBytes,
  LIMITS.subjectBytes,
  LIMITS.bodyBytes,
  LIMITS.correlationBytes,
  LIMITS.refLocatorBytes,
  LIMITS.refDigestBytes,
  LIMITS.declaredBytes,
  LIMITS.labelBytes,
  LIMITS.urlBytes,
  64,
];
const { valueFor } = fuzzValues({
  sizes: LIMIT_SIZES,
  deltas: [-1, 0, 1, 2],
  units: ['k', 'é', '😀', 'a1'],
  strings: ['\u009b'],
  treeKeys: ['__proto__', 'toString', 'valueOf', 'kind', 'to'],
  plausibleWeight: 5,
});

// ---- routes

interface RouteSpec {
  path: string;
  admin: boolean;
  /** A task or approval operation: it may store mail (one message per change, see taskLedger). */
  tasks?: boolean;
  base: () => Record<string, unknown>;
  /** More valid-shaped bodies to start from (mutations reach deeper from several starts). */
  more?: Record<string, unknown>[];
  fields: Record<string, readonly unknown[]>;
}

/** Every change of a task and every approval request and decision is one message in a thread:
 *  the sum of the tasks' versions, plus one per approval and one more once decided, moves exactly
 *  as many seqs as those operations store. Approvals are found by the ids the answers named. */
async function taskLedger(store: Store, approvals: ReadonlySet<string>): Promise<number> {
  const seen = new Set<string>();
  let n = 0;
  for (const a of await store.listAccounts())
    for (const t of await store.listTasks({ account: a.id, role: 'requested', state: null, before: null, limit: 100_000 }))
      if (!seen.has(t.id)) {
        seen.add(t.id);
        n += t.version;
      }
  for (const id of approvals) {
    const a = await store.getApproval(id);
    if (a) n += a.state === 'pending' ? 1 : 2;
  }
  return n;
}

/** Approval ids an answer names (the ledger follows them). */
const approvalIdOf = (v: unknown): string | null => {
  const id = v && typeof v === 'object' ? (v as { approval_id?: unknown }).approval_id : undefined;
  return typeof id === 'string' ? id : null;
};

describe('fuzz: HTTP routes and MCP', () => {
  let d: TestDaemon;
  let aliceSecret: string;
  let routes: RouteSpec[];
  let tools: { tool: string; spec: RouteSpec }[];
  let readable: string[];
  const approvals = new Set<string>();
  before(async () => {
    // Time stands still (still-clock.ts): a reminder a run sets (in_secs: 1, a team's, a snooze)
    // or a pooled claim's lease would otherwise come due during a later run and store mail nobody
    // in it sent. The reminder loop polls every ms of that clock, so it never arms for a due time.
    d = await startTestDaemon({ clock: stillClock(), timerPollMs: 1 });
    const alice = await d.account('alice', { urgent: true });
    aliceSecret = alice.secret;
    const bob = await d.account('bob');
    await d.operator.admin.roomAdd('lobby');
    await d.operator.admin.memberAdd('lobby', 'alice');
    await d.operator.admin.memberAdd('lobby', 'bob');
    // A team alice leads with both grants, and one she is a plain member of.
    await d.operator.admin.teamCreate({ name: 'fzteam', members: ['alice', 'bob'] });
    await d.operator.admin.teamLeaderAdd('fzteam', 'alice');
    await d.operator.admin.teamGrant({ team: 'fzteam', leader: 'alice', capability: 'team.manage_members' });
    await d.operator.admin.teamGrant({ team: 'fzteam', leader: 'alice', capability: 'timer.schedule_team' });
    await d.operator.admin.teamCreate({ name: 'fzplain', members: ['alice', 'bob'] });
    await d.operator.admin.teamLeaderAdd('fzplain', 'bob');
    const me = (await alice.client.whoami()).address;
    const m1 = await bob.client.send({ to: 'alice', subject: 'hello', body: 'body' });
    const m2 = await alice.client.send({ to: '#lobby', subject: 'room', body: 'r' });
    const m3 = await bob.client.send({ to: me, subject: 'session', body: 's' });
    const foreign = await bob.client.send({ to: 'bob', subject: 'not for alice', body: '' });
    // Used only in mixed ack lists (one readable, one not): a refused ack must acknowledge none.
    const spare: string[] = [];
    for (let i = 0; i < 6; i++) spare.push((await bob.client.send({ to: 'alice', subject: `spare ${i}`, body: '' })).message_id);
    readable = [m1.message_id, m2.message_id, m3.message_id];
    const ids = [...readable, foreign.message_id, 'm-0', 'm-zzzzzzzzzz', 'm-', 'm-A', `m-${'a'.repeat(65)}`];
    const cursors = ['c1.0', 'c1.1', 'c1.3', 'c1.zzzzzzzzzzzz', 'c1.', 'c2.1', 'c1.-1', 'x'.repeat(65)];
    const addresses = [
      'bob',
      'alice',
      me,
      'bob/s-deadbeefdeadbeef',
      `alice/${me.split('/')[1]!.slice(0, 10)}`,
      'nobody',
      '#lobby',
      '#nowhere',
      '#',
      '',
      'alice/',
      '/s-1',
      'a'.repeat(129),
      { kind: 'direct', participant: 'bob' },
      { kind: 'room', room: 'lobby' },
      { kind: 'session', participant: 'alice', session: me.split('/')[1] },
      { kind: 'direct', participant: 'bob', extra: 1 },
      { kind: 'email', to: 'x' },
      'team:fzteam',
      'leader:fzteam',
      'leader:fzplain',
      'team:lobby',
      'team:nowhere',
      'team:',
      'leader:',
      { kind: 'team', team: 'fzteam' },
      { kind: 'leader', team: 'fzplain', extra: 1 },
    ];
    const teams = ['fzteam', 'fzplain', 'lobby', 'nowhere', '', 't'.repeat(129)];
    const future = new Date(Date.now() + 3600_000).toISOString();
    const selectors = ['fz1', 'fz2', 'lobby', 'nobody', 'ok.name_1@x+y-z', '-x', '.x', 'a..b', 'a b', 'k'.repeat(128), 'k'.repeat(129), 'é', ''];
    const text = ['', 'plain', 'line\nbreak', 'tab\there'];
    const refs = [
      [],
      [{ kind: 'git', locator: 'abc' }],
      [{ kind: 'git', locator: 'abc', digest: 'ff' }],
      Array.from({ length: 9 }, () => ({ kind: 'k', locator: 'l' })),
      [{ kind: 'k' }],
      [{ kind: 'k', locator: 'l', digest: 'XYZ' }],
    ];
    const bool = [true, false];
    const waits = [0, 0.01, 1, 60, 1e9, -1];
    const limits = [1, 2, 50, 256, 257, 0, -1, 1.5];
    const mail: Record<string, Omit<RouteSpec, 'path' | 'admin'>> = {
      '/mail/send': {
        base: () => ({ to: 'bob', subject: 'fuzz', body: 'fuzz' }),
        more: [
          { to: '#lobby', subject: 'Re', body: 'b', reply_to: readable[0] },
          { to: me, subject: 'self', body: 'b', idempotency_key: 'k1', correlation: 'c' },
          { to: { kind: 'room', room: 'lobby' }, subject: 's', body: 'b', refs: [{ kind: 'git', locator: 'x', digest: 'ab' }], priority: 'urgent' },
          { to: 'bob', subject: 's', body: 'b', reply_to: foreign.message_id },
        ],
        fields: {
          to: addresses,
          subject: text,
          body: text,
          reply_to: ids,
          correlation: text,
          refs,
          idempotency_key: ['k1', 'k2', 'k'.repeat(128), 'k'.repeat(129), 'bad key'],
          priority: ['normal', 'urgent', 'low'],
        },
      },
      '/mail/inbox': {
        base: () => ({}),
        more: [
          { include_acked: true, limit: 2 },
          { after: 'c1.0', wait_secs: 1 },
          { thread_id: readable[0], include_bodies: false },
        ],
        fields: { after: cursors, limit: limits, include_acked: bool, include_bodies: bool, thread_id: ids, wait_secs: waits },
      },
      '/mail/ack': {
        base: () => ({ message_id: readable[0] }),
        more: [{ message_ids: readable }, ...spare.map((id, i) => ({ message_ids: [id, i % 2 ? 'm-0' : foreign.message_id] }))],
        fields: {
          message_id: ids,
          message_ids: [ids.slice(0, 2), [], Array.from({ length: 257 }, () => 'm-1'), readable, ...spare.map((id, i) => [id, i % 2 ? 'm-0' : foreign.message_id])],
        },
      },
      '/mail/get': {
        base: () => ({ message_id: readable[1] }),
        more: [
          { message_id: foreign.message_id, thread: true },
          { message_id: readable[2], thread: true },
        ],
        fields: { message_id: ids, thread: bool },
      },
      '/mail/search': {
        base: () => ({ query: 'subject' }),
        more: [
          { query: '"a phrase" pre*', limit: 2, cursor: 'c1.5' },
          { query: 'x', from: 'bob', to: '#room', thread_id: readable[0], after: '2020-01-01T00:00:00Z', before: '2100-01-01T00:00:00Z' },
        ],
        fields: {
          query: ['subject', '', '"', '"unclosed', '***', 'a*', '—', 'ü東京', 'OR AND NOT', 'col:x', 'x'.repeat(257), 'w '.repeat(17), 1],
          from: ['bob', '', 'bad name', 'x'.repeat(129)],
          to: ['bob', '#room', '#', '#bad name', 'x'.repeat(130)],
          thread_id: ids,
          after: ['2020-01-01T00:00:00Z', 'yesterday', ''],
          before: ['2100-01-01T00:00:00Z', '2020-13-01T00:00:00Z'],
          limit: [...limits, 100, 101],
          cursor: cursors,
        },
      },
      '/mail/wait_for': {
        // Never a long accepted timeout: the fuzz must not park for minutes.
        base: () => ({ timeout_secs: 0 }),
        more: [{ from: 'bob', subject_contains: 'code', body_contains: 'x', timeout_secs: 0.01 }],
        fields: {
          from: ['bob', '', 'x'.repeat(257), 1],
          subject_contains: ['c', '', 'ü東京'],
          body_contains: ['x'.repeat(256), 'x'.repeat(257)],
          timeout_secs: [0, 0.01, 600.5, 601, -1, 1e9, 'x', null],
        },
      },
      '/mail/attachment': {
        // No mail from outside here: every message answers unknown_attachment or a refusal.
        base: () => ({ message_id: readable[0], n: 0 }),
        more: [{ message_id: foreign.message_id, n: 0 }],
        fields: { message_id: ids, n: [0, 1, 99, 100, -1, 0.5, '0', null, 1e9] },
      },
      '/mail/unread': { base: () => ({}), fields: {} },
      '/mail/whoami': { base: () => ({}), fields: {} },
      '/mail/directory': { base: () => ({}), more: [{ include_ended: true, detail: true }], fields: { include_ended: bool, detail: bool } },
      '/mail/reply': {
        base: () => ({ message_id: readable[0], body: 'fuzz' }),
        more: [
          { message_id: readable[1], body: 'b', ack: false, to_sender: true, idempotency_key: 'r1' },
          { message_id: foreign.message_id, body: 'b' },
        ],
        fields: { message_id: ids, body: text, ack: bool, to_sender: bool, idempotency_key: ['r1', 'r2', 'k'.repeat(129), 'bad key'] },
      },
      '/mail/notice': {
        base: () => ({ event: 'peek' }),
        more: [{ event: 'tool' }, { event: 'stop', wait_secs: 0 }],
        fields: { event: ['stop', 'prompt', 'tool', 'peek', 'later', ''], wait_secs: [0, 0.01, -1, 'x'] },
      },
      '/mail/listen': { base: () => ({ on: false }), fields: { on: [...bool, 'yes', 1] } },
      '/mail/timer/list': { base: () => ({}), fields: {} },
      '/mail/timer/snooze': { base: () => ({ id: 't-none', in_secs: 60 }), fields: { id: ['t-none', '', 'x'.repeat(65)], in_secs: [0, 1, 1.5, 366 * 24 * 3600 + 1, -5] } },
      '/mail/timer/clear': { base: () => ({ id: 't-none' }), fields: { id: ['t-none', '', 'x'.repeat(65)] } },
      '/mail/receipts': { base: () => ({ message_id: readable[0] }), more: [{ message_id: foreign.message_id }], fields: { message_id: [...ids, 'x'.repeat(300)] } },
      '/mail/remind': {
        base: () => ({ in_secs: 3600, note: 'fuzz' }),
        more: [{ in_secs: 60, note: 'acct', account: true }],
        fields: { in_secs: [0, 1, 59.5, 3600, 366 * 24 * 3600 + 1, -5], note: [...text, 'n'.repeat(513)], account: bool },
      },
      '/mail/timer/team': {
        base: () => ({ team: 'fzteam', in_secs: 3600, note: 'fuzz' }),
        more: [{ team: 'fzplain', in_secs: 60, note: 'n', include_self: true }],
        fields: { team: teams, in_secs: [0, 1, 3600, 366 * 24 * 3600 + 1, -5, 1.5], note: [...text, 'n'.repeat(513)], include_self: bool },
      },
      '/team': {
        base: () => ({ action: 'show', team: 'fzteam' }),
        more: [
          { action: 'member-add', team: 'fzteam', account: 'fz1' },
          { action: 'member-remove', team: 'fzteam', account: 'fz1' },
          { action: 'member-remove', team: 'fzplain', account: 'bob' },
        ],
        fields: { action: ['show', 'member-add', 'member-remove', 'grant', ''], team: teams, account: ['bob', 'alice', 'fz1', ...selectors] },
      },
      '/mail/contacts/list': { base: () => ({}), fields: {} },
      '/mail/contacts/add': { base: () => ({ account: 'bob' }), fields: { account: ['bob', 'alice', 'nobody', ...selectors] } },
      '/mail/contacts/remove': { base: () => ({ account: 'bob' }), fields: { account: ['bob', 'nobody', ...selectors] } },
      '/mail/contacts/accept': { base: () => ({ account: 'bob' }), fields: { account: ['bob', 'nobody', ...selectors] } },
      '/mail/contacts/decline': { base: () => ({ account: 'bob' }), fields: { account: ['bob', 'nobody', ...selectors] } },
      '/mail/policy': { base: () => ({ policy: 'open' }), fields: { policy: ['open', 'contacts_only', 'block_all', 'closed', ''] } },
      '/mail/attention': {
        base: () => ({}),
        more: [{ mode: 'dnd' }, { mode: 'open' }, { mode: 'focus', until: future, account: true }],
        fields: { mode: ['dnd', 'focus', 'open', 'away', ''], until: [future, '2000-01-01T00:00:00Z', '2026-13-01T00:00:00Z', '18:00', 'x'], account: bool },
      },
      '/mail/status': {
        base: () => ({ working_on: 'fuzzing' }),
        more: [{ alias: 'front' }, { alias: 'back', unalias: 'front', role: 'r' }, { parent: me }],
        fields: {
          working_on: text,
          role: text,
          parent: [me, ...text],
          alias: ['front', 'back', 's-abc', 'abcdef12', 'x'.repeat(65), ...selectors],
          unalias: ['front', ...selectors],
        },
      },
    };
    // Tasks and approvals: alice requests one of bob, is assignee of some of bob's, a stranger to
    // one; she reviews several pending approvals (each decided once) and one she may not decide.
    const mine = await alice.client.task.create({ to: 'bob', title: 'fuzz task', instructions: 'i' });
    const forAlice: string[] = [];
    for (let i = 0; i < 4; i++) forAlice.push((await bob.client.task.create({ to: i % 2 ? me : 'alice', title: `for alice ${i}` })).task_id);
    const strangers = await bob.client.task.create({ to: 'bob', title: 'not alice' });
    const done = await bob.client.task.create({ to: 'alice', title: 'finished' });
    await alice.client.task.update({ task_id: done.task_id, state: 'completed', result: { summary: 's' } });
    const taskIds = [mine.task_id, ...forAlice, strangers.task_id, done.task_id, 't-0', 't-', 't-A', `t-${'a'.repeat(65)}`, readable[0]];
    const toReview: string[] = [];
    for (let i = 0; i < 6; i++)
      toReview.push((await bob.client.approval.request({ reviewer: 'alice', action: `spare ${i}`, ...(i < 2 ? { task_id: forAlice[i]! } : {}) })).approval_id);
    const bobReviews = await alice.client.approval.request({ reviewer: 'bob', action: 'ask bob', task_id: mine.task_id });
    const foreignApproval = await bob.client.approval.request({ reviewer: 'bob', action: 'not alice' });
    for (const id of [...toReview, bobReviews.approval_id, foreignApproval.approval_id]) approvals.add(id);
    const approvalIds = [...toReview, bobReviews.approval_id, foreignApproval.approval_id, 'a-0', 'a-', 'a-A', `a-${'a'.repeat(65)}`, mine.task_id];
    const taskTo = ['bob', 'alice', me, 'nobody', '#lobby', 'bob/s-deadbeefdeadbeef', '', { kind: 'direct', participant: 'bob' }, { kind: 'room', room: 'lobby' }];
    const states = [...TASK_STATES, 'done', ''];
    const notes = [...text, 'n'.repeat(TASK_LIMITS.noteBytes), 'n'.repeat(TASK_LIMITS.noteBytes + 1)];
    const titles = [...text, 't'.repeat(TASK_LIMITS.titleBytes), 't'.repeat(TASK_LIMITS.titleBytes + 1)];
    const results = [
      {},
      { summary: 'done' },
      { summary: 's'.repeat(TASK_LIMITS.summaryBytes + 1) },
      { data: { tests: 12 } },
      { data: 'd'.repeat(TASK_LIMITS.dataBytes) },
      { data: 'd'.repeat(TASK_LIMITS.dataBytes - 2) },
      { data: [null, true, 1.5] },
      { refs: [{ kind: 'git', locator: 'abc' }] },
      { refs: Array.from({ length: 9 }, () => ({ kind: 'k', locator: 'l' })) },
      { extra: 1 },
    ];
    const versions = [0, 1, 2, 1e9, -1, 1.5];
    const expiries = [1, 3600, TASK_LIMITS.expiresMaxSecs, TASK_LIMITS.expiresMaxSecs + 1, 0, -1, 1.5];
    const work: Record<string, Omit<RouteSpec, 'path' | 'admin'>> = {
      '/task/create': {
        base: () => ({ to: 'bob', title: 'fuzz' }),
        more: [
          { to: me, title: 't', instructions: 'do it', refs: [{ kind: 'git', locator: 'x' }], parent_task_id: mine.task_id, idempotency_key: 'tk1' },
          { to: '#lobby', title: 'pooled' },
          { to: 'bob', title: 'child of a stranger', parent_task_id: strangers.task_id },
        ],
        fields: {
          to: taskTo,
          title: titles,
          instructions: text,
          refs,
          parent_task_id: taskIds,
          idempotency_key: ['tk1', 'tk2', 'k'.repeat(129), 'bad key'],
          max_attempts: [1, 3, 100, 101, 0, -1, 1.5],
          retry_delay_secs: [0, 10, 3600, 3601, -1, 1.5],
        },
      },
      '/task/get': {
        base: () => ({ task_id: mine.task_id }),
        more: [{ task_id: forAlice[0], wait_secs: 1, after_version: 1e9 }, { task_id: strangers.task_id }],
        fields: { task_id: taskIds, wait_secs: waits, after_version: versions },
      },
      '/task/list': {
        base: () => ({ role: 'assigned' }),
        more: [
          { role: 'requested', state: 'submitted', limit: 1 },
          { role: 'assigned', after: 'c1.zz' },
        ],
        fields: {
          role: ['assigned', 'requested', 'pool', 'both', ''],
          pool: ['#lobby', '#nowhere', 'x'],
          reason: ['lease_exhausted', 'other'],
          state: states,
          after: cursors,
          limit: [1, 20, TASK_LIMITS.listMax, TASK_LIMITS.listMax + 1, 0, -1, 1.5],
        },
      },
      '/task/update': {
        base: () => ({ task_id: forAlice[0], state: 'working' }),
        more: [
          { task_id: forAlice[1], state: 'input_required', note: 'which one?' },
          { task_id: forAlice[2], state: 'completed', result: { summary: 'ok', data: { n: 1 } } },
          { task_id: mine.task_id, state: 'working' },
          { task_id: done.task_id, state: 'working' },
        ],
        fields: { task_id: taskIds, state: states, note: notes, result: results, epoch: [1, 2, 0, -1, 1.5] },
      },
      '/task/claim': {
        base: () => ({ pool: '#lobby' }),
        more: [{ task_id: mine.task_id }, { pool: '#lobby', ttl_secs: 10 }, { pool: '#nowhere' }, { task_id: strangers.task_id }],
        fields: { task_id: taskIds, pool: ['#lobby', 'lobby', '#nowhere', '', 'p'.repeat(200), 1], ttl_secs: [10, 9, 28_800, 28_801, 0, -1, 1.5] },
      },
      '/task/cancel': {
        base: () => ({ task_id: mine.task_id }),
        more: [{ task_id: forAlice[3], reason: 'no' }, { task_id: done.task_id }],
        fields: { task_id: taskIds, reason: notes },
      },
      '/task': {
        base: () => ({ action: 'list', role: 'requested' }),
        more: [
          { action: 'create', to: 'bob', title: 'via tool', instructions: 'i' },
          { action: 'update', task_id: forAlice[0], state: 'working', note: 'n' },
          { action: 'cancel', task_id: mine.task_id, note: 'why' },
        ],
        fields: {
          action: ['create', 'update', 'cancel', 'list', 'get', ''],
          task_id: taskIds,
          to: taskTo,
          title: titles,
          instructions: text,
          parent_task_id: taskIds,
          idempotency_key: ['tk1', 'tk3', 'bad key'],
          state: states,
          note: notes,
          result: results,
          role: ['assigned', 'requested', 'both'],
          after: cursors,
        },
      },
      '/approval/request': {
        base: () => ({ reviewer: 'bob', action: 'deploy' }),
        more: [
          { reviewer: 'bob', action: 'for a task', details: 'd', task_id: forAlice[3], expires_in: 60 },
          { reviewer: 'alice', action: 'self', task_id: done.task_id },
        ],
        fields: {
          reviewer: ['bob', 'alice', 'nobody', me, '#lobby', '', { kind: 'direct', participant: 'bob' }],
          action: [...text, 'a'.repeat(TASK_LIMITS.actionBytes), 'a'.repeat(TASK_LIMITS.actionBytes + 1)],
          details: text,
          task_id: taskIds,
          expires_in: expiries,
        },
      },
      '/approval/decide': {
        base: () => ({ approval_id: toReview[0], decision: 'approved', reason: 'ok' }),
        more: toReview.slice(1).map((id, i) => ({ approval_id: id, decision: i % 2 ? 'approved' : 'rejected', reason: 'r' })),
        fields: { approval_id: approvalIds, decision: ['approved', 'rejected', 'maybe', ''], reason: notes },
      },
      '/approval/get': {
        base: () => ({ approval_id: toReview[0] }),
        more: [{ approval_id: bobReviews.approval_id, wait_secs: 1 }, { approval_id: foreignApproval.approval_id }],
        fields: { approval_id: approvalIds, wait_secs: waits },
      },
      '/approval': {
        base: () => ({ action: 'get', approval_id: toReview[0] }),
        more: [
          { action: 'request', reviewer: 'bob', what: 'deploy', details: 'd' },
          ...toReview.map((id) => ({ action: 'decide', approval_id: id, decision: 'rejected', reason: 'no' })),
        ],
        fields: {
          action: ['request', 'decide', 'get', ''],
          approval_id: approvalIds,
          reviewer: ['bob', 'alice', 'nobody', me],
          what: [...text, 'a'.repeat(TASK_LIMITS.actionBytes + 1)],
          details: text,
          task_id: taskIds,
          decision: ['approved', 'rejected', 'maybe'],
          reason: notes,
        },
      },
    };
    // Leases store no mail: claims, renews and releases of reservations (and a pooled task's id,
    // not supported yet), a lease alice holds and ids that name none.
    const held = await alice.client.lease.claim({ resource: 'path:fz-held/**', root: '/fz' });
    const leaseIds = [held.lease_id, 'l-none', 'l-', 'x', `l-${'a'.repeat(65)}`];
    const epochs = [held.epoch, 0, 2, 1.5, -1, 1e9];
    const ttls = [9, 10, 900, 28_800, 28_801, 1.5, -1];
    const roots = ['/fz', '/fz/./a/../', 'relative', '', '/', `/${'r'.repeat(4096)}`];
    const globs = ['fz/**', 'fz/*.ts', 'a/[b', '', '/abs', '../up', 'g'.repeat(1025), 'é'.repeat(512)];
    const leases: Record<string, Omit<RouteSpec, 'path' | 'admin'>> = {
      '/lease/claim': {
        base: () => ({ resource: 'path:fz/**', root: '/fz' }),
        more: [
          { resource: 'path:fz/*.ts', root: '/fz', mode: 'shared', ttl_secs: 60, reason: 'r' },
          { resource: 't-0123456789', root: '/fz' },
        ],
        fields: {
          resource: [...globs.map((g) => `path:${g}`), 't-1', 'x', 'path:'],
          root: roots,
          mode: ['exclusive', 'shared', 'both'],
          ttl_secs: ttls,
          reason: [...text, 'r'.repeat(513)],
        },
      },
      '/lease/renew': { base: () => ({ lease_id: held.lease_id, epoch: held.epoch }), fields: { lease_id: leaseIds, epoch: epochs, ttl_secs: ttls } },
      '/lease/release': { base: () => ({ lease_id: 'l-none', epoch: 1 }), more: [{ lease_id: held.lease_id, epoch: held.epoch }], fields: { lease_id: leaseIds, epoch: epochs } },
      '/lease/list': {
        base: () => ({}),
        more: [{ root: '/fz', resource_prefix: 'path:fz', holder: 'alice', limit: 2 }],
        fields: {
          resource_prefix: ['path:', 'path:fz/', 't-', '', 'p'.repeat(1030)],
          root: roots,
          holder: ['alice', me, 'bob', '', 'x'.repeat(513)],
          limit: [1, 500, 501, 0, -1, 1.5],
        },
      },
      '/lease/check': {
        base: () => ({ root: '/fz', paths: ['fz/a.ts'] }),
        fields: { root: roots, paths: [[], ['fz/a.ts', 'b'], ['../x'], ['/abs'], [''], Array.from({ length: 10_001 }, (_, i) => `p${i}`)] },
      },
      '/lease/reserve': {
        base: () => ({ action: 'list' }),
        more: [
          { action: 'claim', paths: ['fz2/**', 'fz3/*.md'], root: '/fz', reason: 'fuzz' },
          { action: 'renew', lease_id: held.lease_id, epoch: held.epoch, ttl_secs: 60 },
          { action: 'release', lease_id: 'l-none', epoch: 1 },
        ],
        fields: {
          action: ['claim', 'renew', 'release', 'list', 'get', ''],
          paths: [[], ['fz/**'], globs, Array.from({ length: 65 }, (_, i) => `m${i}`)],
          root: roots,
          shared: bool,
          ttl_secs: ttls,
          reason: [...text, 'r'.repeat(513)],
          lease_id: leaseIds,
          epoch: epochs,
        },
      },
    };
    const ompSession = { id: 'omp-fz-1', slug: 'fz', aliases: ['fzz'], cwd: '/w/fz', last_seen: 1 };
    const ompMessage = { mailbox: 'omp-fz-1', id: 'x1', from: 'omp-fz-1', subject: 's', body: 'b', ts: 1, delivered: false };
    // Another mailbox's mail as the CLI sends it: copies between alice and bob, a timer.
    const copy = { id: 'src-1', from: 'alice', to: 'bob', subject: 's', body: 'b', priority: 'normal', created_at: 1, thread: null, reply_to: null, acked_at: null, origin: 'fz' };
    // Due far ahead: a timer due now would fire and store its reminder, which the import does not count.
    const srcTimer = { id: 'tm-1', account: 'bob', due: Date.UTC(2100, 0, 1), note: 'n', created_at: 1 };
    const mailImport = (): Omit<RouteSpec, 'path' | 'admin'> => ({
      base: () => ({ messages: [copy], timers: [] }),
      more: [
        { messages: [copy, { ...copy, to: 'alice', from: 'bob', thread: { id: 'src-1', to: 'bob' }, reply_to: { id: 'src-1', to: 'bob' }, acked_at: 2 }], timers: [srcTimer] },
        { messages: [], timers: [{ ...srcTimer, id: 'tm-2', team: 'fzteam', set_by: 'alice' }] },
      ],
      fields: {
        messages: [
          [],
          [copy],
          [copy, copy],
          [{ ...copy, to: 'nobody' }],
          [{ ...copy, to: 'mailbox' }],
          [{ ...copy, subject: 'a\u202eb' }],
          [{ ...copy, body: 'x'.repeat(LIMITS.bodyBytes + 1) }],
          [{ ...copy, created_at: -1 }],
          [{ ...copy, priority: 'high' }],
        ],
        timers: [
          [],
          [srcTimer],
          [srcTimer, srcTimer],
          [{ ...srcTimer, team: 'fzteam' }],
          [{ ...srcTimer, due: 'soon' }],
          Array.from({ length: 1001 }, (_, i) => ({ ...srcTimer, id: `t${i}` })),
        ],
      },
    });
    const admin: Record<string, Omit<RouteSpec, 'path' | 'admin'>> = {
      '/admin/account/add': {
        base: () => ({ id: 'fz1' }),
        fields: {
          id: selectors,
          kind: ['agent', 'human', 'service', 'robot'],
          label: text,
          permissions: [{}, { send: false }, { read: true, urgent: true }, { root: true }],
          bind_provider: ['claude', ...selectors],
        },
      },
      '/admin/account/rotate': { base: () => ({ id: 'fz1' }), fields: { id: selectors } },
      '/admin/account/remove': { base: () => ({ id: 'fz2' }), fields: { id: selectors } },
      '/admin/account/list': { base: () => ({}), fields: { id: selectors } },
      '/admin/room/add': { base: () => ({ name: 'fzroom' }), fields: { name: selectors, everyone: bool, open: bool } },
      '/admin/room/set': { base: () => ({ name: 'fzroom', open: true }), fields: { name: selectors, open: bool } },
      '/admin/room/remove': { base: () => ({ name: 'fzroom' }), fields: { name: selectors } },
      '/admin/room/list': { base: () => ({}), fields: { name: selectors } },
      '/admin/room/member/add': { base: () => ({ room: 'fzroom', account: 'fz1' }), fields: { room: selectors, account: selectors } },
      '/admin/room/member/remove': { base: () => ({ room: 'fzroom', account: 'fz1' }), fields: { room: selectors, account: selectors } },
      '/admin/team/create': {
        base: () => ({ name: 'fzt1', members: ['bob'] }),
        fields: { name: selectors, members: [[], ['bob'], ['bob', 'bob'], ['nobody'], Array.from({ length: 257 }, (_, i) => `m${i}`)], open: bool },
      },
      '/admin/team/member/add': { base: () => ({ team: 'fzteam', account: 'fz1' }), fields: { team: teams, account: selectors } },
      '/admin/team/member/remove': { base: () => ({ team: 'fzteam', account: 'fz1' }), fields: { team: teams, account: selectors } },
      '/admin/team/leader/add': { base: () => ({ team: 'fzteam', account: 'bob' }), fields: { team: teams, account: ['bob', 'alice', ...selectors] } },
      '/admin/team/leader/remove': { base: () => ({ team: 'fzteam', account: 'bob' }), fields: { team: teams, account: ['bob', ...selectors] } },
      '/admin/team/grant': {
        base: () => ({ team: 'fzteam', leader: 'bob', capability: 'team.manage_members' }),
        fields: { team: teams, leader: ['bob', 'alice', ...selectors], capability: ['team.manage_members', 'timer.schedule_team', 'team.admin', ''] },
      },
      '/admin/team/revoke': {
        base: () => ({ team: 'fzteam', leader: 'bob', capability: 'timer.schedule_team' }),
        fields: { team: teams, leader: ['bob', ...selectors], capability: ['team.manage_members', 'timer.schedule_team', ''] },
      },
      '/admin/team/list': { base: () => ({}), fields: {} },
      '/admin/team/show': { base: () => ({ team: 'fzteam' }), more: [{ team: 'fzteam', changes: 2 }], fields: { team: teams, changes: [0, 1, 1000, 1001, -1, 1.5] } },
      '/admin/account/policy': {
        base: () => ({ account: 'bob', policy: 'open' }),
        fields: { account: ['bob', 'alice', 'mailbox', 'nobody', ...selectors], policy: ['open', 'contacts_only', 'block_all', ''] },
      },
      '/admin/listener': {
        base: () => ({ account: 'fz1', url: 'http://127.0.0.1:9/bell' }),
        fields: { account: selectors, url: ['http://localhost:9/', 'http://example.com/', 'http://[::1]:9/', 'http://127.0.0.1:99999/', 'x'.repeat(2049), ''] },
      },
      '/admin/listener/remove': { base: () => ({ account: 'fz1' }), fields: { account: selectors } },
      // Wake chains: only safe steps (a program that does nothing, a closed loopback port), since a
      // stored command step runs when mail arrives.
      '/admin/wake/set': {
        base: () => ({ account: 'fz1', steps: [{ kind: 'hooks' }] }),
        more: [{ account: 'bob', steps: [{ kind: 'webhook', url: 'http://127.0.0.1:9/h' }], rooms: true, debounce_ms: 0 }],
        fields: {
          account: selectors,
          session: ['nobody', 's-abc', ...selectors],
          steps: [
            [],
            [{ kind: 'hooks' }],
            [{ kind: 'command', argv: ['/bin/true'] }],
            [{ kind: 'command', argv: ['/bin/true', '{subject}'] }],
            [{ kind: 'command', argv: ['{account}'] }],
            [{ kind: 'webhook', url: 'http://example.com/' }],
            [{ kind: 'codex-app-server', listen: 'ws://127.0.0.1:9' }],
            [{ kind: 'pager' }],
            Array.from({ length: 9 }, () => ({ kind: 'hooks' })),
          ],
          rooms: bool,
          debounce_ms: [0, 250, 60_001, -1, 1.5],
        },
      },
      '/admin/user/create': {
        base: () => ({ id: 'fzuser', password: 'long enough pw' }),
        fields: { id: selectors, display_name: text, password: ['short', 'long enough pw', 'p'.repeat(1025), ''], operator: bool },
      },
      '/admin/user/passwd': { base: () => ({ id: 'fzuser', password: 'another long pw' }), fields: { id: selectors, password: ['short', 'another long pw', 'p'.repeat(1025)] } },
      '/admin/user/revoke-sessions': { base: () => ({ id: 'fzuser' }), fields: { id: selectors } },
      '/admin/wake/list': { base: () => ({}), fields: { account: selectors } },
      '/admin/support/counts': { base: () => ({}), fields: {} },
      '/admin/support/sessions': { base: () => ({}), more: [{ account: 'bob', include_ended: true }], fields: { account: selectors, include_ended: bool } },
      '/admin/wake/clear': { base: () => ({ account: 'fz1' }), fields: { account: selectors, session: selectors } },
      // omp-mail's files as the CLI sends them: sessions of bob (an agent account), their mail.
      '/admin/import/omp-mail': {
        base: () => ({ account: 'bob', sessions: [ompSession], messages: [ompMessage] }),
        more: [
          {
            account: 'bob',
            sessions: [ompSession, { id: 'omp-fz-2' }],
            messages: [
              { ...ompMessage, from: 'omp-fz-2', delivered: true },
              { ...ompMessage, id: 'x2', mailbox: 'omp-fz-2' },
            ],
          },
          { account: 'bob', sessions: [{ id: 'omp-fz-3', aliases: ['abcdef', 'front', '@x', ''] }], messages: [] },
        ],
        fields: {
          account: ['bob', 'alice', 'nobody', 'operator', 'mailbox', ...selectors],
          sessions: [
            [],
            [ompSession],
            [ompSession, ompSession],
            [{ id: 'has space' }],
            [{ id: 'omp-fz-4', slug: 'line\nbreak' }],
            Array.from({ length: 1001 }, (_, i) => ({ id: `s${i}` })),
          ],
          messages: [
            [],
            [ompMessage],
            [ompMessage, ompMessage],
            [{ ...ompMessage, mailbox: 'omp-nowhere' }],
            [{ ...ompMessage, subject: 'a\u202eb' }],
            [{ ...ompMessage, body: 'x'.repeat(LIMITS.bodyBytes + 1) }],
            [{ ...ompMessage, ts: -1 }],
          ],
        },
      },
      '/admin/import/interagentmail': mailImport(),
      '/admin/import/agent-mail': mailImport(),
      // Refused to non-operators; with the operator token this test daemon has no stop hook.
      '/admin/daemon/stop': { base: () => ({}), fields: { when: ['now', 'idle', 'later'] } },
      '/admin/retention/set': {
        base: () => ({ account: 'bob', days: 30 }),
        more: [
          { room: 'fzroom', days: 1 },
          { account: 'bob', days: null },
        ],
        fields: { account: ['bob', 'nobody', ...selectors], room: ['fzroom', ...selectors], days: [1, 36500, 36501, 0, -1, 1.5, null, '30'] },
      },
      '/admin/retention/list': { base: () => ({}), fields: { account: selectors } },
      '/admin/retention/run': { base: () => ({}), fields: { days: [1, null] } },
      // The relay link: every server_url a closed loopback port or refused, so nothing dials out.
      '/admin/connect/configure': {
        base: () => ({ server_url: 'wss://127.0.0.1:9', node_id: 'fznode', node_token: 'tok', human_mailboxes: ['alice'] }),
        fields: {
          server_url: ['wss://127.0.0.1:9', 'ws://192.0.2.1', 'http://x', ''],
          node_id: ['fznode', '', 'UPPER', 'x'.repeat(65)],
          node_token: ['', 'x'.repeat(5000)],
          human_mailboxes: [[], ['bob'], ['nobody'], selectors],
        },
      },
      '/admin/connect/update': {
        base: () => ({}),
        fields: { server_url: ['wss://127.0.0.1:9', 'ws://192.0.2.1', ''], node_id: ['fznode', ''], human_mailboxes: [['alice'], ['nobody']] },
      },
      '/admin/connect/removeuser': { base: () => ({ human_mailbox: 'nobody' }), fields: { human_mailbox: selectors } },
      '/admin/connect/start': { base: () => ({}), fields: {} },
      '/admin/connect/stop': { base: () => ({}), fields: {} },
      '/admin/connect/status': { base: () => ({}), fields: {} },
    };
    // Every operation a bearer reaches has a spec here (a new operation fails this until it is fuzzed).
    for (const p of HTTP_PATHS) assert.ok(mail[p] ?? work[p] ?? leases[p] ?? admin[p], `fuzz spec for ${p}`);
    routes = [
      ...Object.entries(mail).map(([path, s]) => ({ path, admin: false, ...s })),
      ...Object.entries(work).map(([path, s]) => ({ path, admin: false, tasks: true, ...s })),
      ...Object.entries(leases).map(([path, s]) => ({ path, admin: false, ...s })),
      ...Object.entries(admin).map(([path, s]) => ({ path, admin: true, ...s })),
    ];
    tools = OPERATION_NAMES.flatMap((n) => {
      const o = OPERATIONS[n];
      return o.tool ? [{ tool: o.tool, spec: routes.find((r) => r.path === o.path)! }] : [];
    });
  });
  after(async () => {
    const h = await http(d.url, '/health', { method: 'GET' });
    assert.equal(h.status, 200, 'the daemon still answers /health after the fuzzing');
    assert.equal(d.engine.parkedWaits(), 0, 'no wait left parked');
    await d.stop();
  });

  /** A JSON object for a route: a valid body with mutations, a soup of its fields, or anything. */
  const objectFor = (spec: RouteSpec): fc.Arbitrary<unknown> => {
    const names = Object.keys(spec.fields);
    const key = fc.oneof(
      { weight: 4, arbitrary: names.length ? fc.constantFrom(...names) : fc.constant('from') },
      { weight: 1, arbitrary: fc.constantFrom('from', 'extra', '__proto__', 'constructor', 'toString', 'to', 'id') },
      { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
    );
    const setField = key.chain((k) => valueFor(Object.hasOwn(spec.fields, k) ? spec.fields[k]! : ['x']).map((v) => ({ k, v })));
    const starts = [spec.base(), ...(spec.more ?? [])];
    const mutated = fc
      .tuple(
        fc.nat({ max: starts.length - 1 }),
        fc.array(
          fc.oneof(
            setField,
            key.map((k) => ({ k, v: undefined })),
          ),
          { maxLength: 3 },
        ),
      )
      .map(([start, muts]) => {
        const o: Record<string, unknown> = structuredClone(starts[start]!);
        for (const { k, v } of muts) {
          if (v === undefined) delete o[k];
          else Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
        }
        return o;
      });
    const soup = fc.array(setField, { maxLength: 5 }).map((kvs) => {
      const o: Record<string, unknown> = {};
      for (const { k, v } of kvs) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
      return o;
    });
    return fc.oneof({ weight: 6, arbitrary: mutated }, { weight: 2, arbitrary: soup }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) });
  };

  type Body = { bytes: string | Buffer; invalidUtf8: boolean; overCap: boolean };

  const INVALID_UTF8 = [[0xff], [0xc3, 0x28], [0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82]];

  /** The bytes on the wire: the JSON text, or a damaged one. */
  const bodyFor = (spec: RouteSpec): fc.Arbitrary<Body> => {
    const json = objectFor(spec).map((v) => JSON.stringify(v) ?? '');
    return fc.oneof(
      { weight: 12, arbitrary: json.map((t): Body => ({ bytes: t, invalidUtf8: false, overCap: false })) },
      {
        weight: 2,
        arbitrary: fc.tuple(json, fc.nat(), fc.constantFrom(...INVALID_UTF8)).map(([t, at, bad]): Body => {
          const b = Buffer.from(t, 'utf8');
          const i = b.length ? at % b.length : 0;
          return { bytes: Buffer.concat([b.subarray(0, i), Buffer.from(bad), b.subarray(i)]), invalidUtf8: true, overCap: false };
        }),
      },
      { weight: 1, arbitrary: fc.tuple(json, fc.nat()).map(([t, n]): Body => ({ bytes: t.slice(0, t.length ? n % t.length : 0), invalidUtf8: false, overCap: false })) },
      { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((a): Body => ({ bytes: Buffer.from(a), invalidUtf8: false, overCap: false })) },
      {
        weight: 1,
        arbitrary: fc.constantFrom('', ' ', '\ufeff{}', 'null', '[]', '"x"', '1e999', '{"a":1,"a":2}').map((t): Body => ({ bytes: t, invalidUtf8: false, overCap: false })),
      },
      {
        weight: 1,
        arbitrary: fc.tuple(fc.constantFrom(...Object.keys(spec.fields), 'x'), fc.constantFrom(1000, 100_000), fc.boolean()).map(([k, n, arr]): Body => {
          // Nesting far deeper than any JSON.stringify or recursive walk survives, built as text.
          const t = JSON.stringify(spec.base());
          const nested = arr ? `${'['.repeat(n)}0${']'.repeat(n)}` : `${'{"a":'.repeat(n)}0${'}'.repeat(n)}`;
          const bytes = `${t.slice(0, -1)}${t.length > 2 ? ',' : ''}"${k}":${nested}}`;
          return short({ bytes, invalidUtf8: false, overCap: false }, bytes);
        }),
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom(-1, 0, 1).map((delta): Body => {
          // A body exactly at, just under and just over the request cap.
          const n = LIMITS.requestBodyBytes + delta;
          const head = '{"to":"bob","subject":"s","body":"';
          const bytes = head + 'x'.repeat(n - head.length - 2) + '"}';
          return short({ bytes, invalidUtf8: false, overCap: n > LIMITS.requestBodyBytes }, bytes);
        }),
      },
    );
  };

  const expectSuccessShape = (r: RawAnswer, where: string) => {
    assert.ok(r.json && typeof r.json === 'object' && !Array.isArray(r.json), `${where}: a success is a JSON object: ${r.text.slice(0, 200)}`);
    assert.ok(!('error' in r.json), `${where}: a 200 with an error envelope`);
  };

  it('every route: arbitrary, mistyped, oversized and broken bodies get a success or a named refusal that stores nothing', async () => {
    const store = d.engine.store;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 1_000_000 }).chain((i) => {
          const spec = routes[i % routes.length]!;
          return fc.tuple(fc.constant(spec), bodyFor(spec));
        }),
        async ([spec, body]) => {
          const where = `${spec.path} ${String(body.bytes).slice(0, 160)}`;
          const before = await storeSnapshot(store);
          const ledger = await taskLedger(store, approvals);
          const r = await http(d.url, spec.path, { token: spec.admin ? d.operatorToken : aliceSecret, body: body.bytes, fresh: body.overCap });
          assert.ok(r.status !== 500, `${where}: HTTP 500 ${r.text}`);
          const head = await store.headSeq();
          const prior = before.head;
          if (r.status === 200) {
            expectSuccessShape(r, where);
            assert.ok(!body.invalidUtf8, `${where}: invalid UTF-8 accepted`);
            assert.ok(!body.overCap, `${where}: a body over the cap accepted`);
            const asked = approvalIdOf(r.json);
            if (asked) approvals.add(asked);
            const moved = (await taskLedger(store, approvals)) - ledger;
            if (spec.path === '/mail/send' || spec.path === '/mail/reply') {
              // A team send stores one copy per recipient; a held send at most its contact request.
              if (r.json.held) assert.ok(head - prior <= 1, `${where}: a held send stores at most the request`);
              else
                assert.equal(head, prior + (r.json.duplicate ? 0 : Array.isArray(r.json.expanded) ? r.json.expanded.length : 1), `${where}: one send stores one message per copy`);
            } else if (spec.path === '/mail/contacts/add' || spec.path === '/mail/contacts/accept')
              assert.equal(head, prior + r.json.delivered.length, `${where}: accepting delivers the held mail`);
            else if (spec.path === '/mail/contacts/decline') assert.equal(head, prior + r.json.returned, `${where}: declining returns the held mail`);
            else if (spec.path.startsWith('/admin/import/')) assert.equal(head, prior + r.json.messages_created, `${where}: an import stores what it counts`);
            else if (spec.tasks) assert.equal(head, prior + moved, `${where}: every task change and approval step is one message`);
            else assert.equal(head, prior, `${where}: only send, reply, contacts, an import, tasks and approvals store mail`);
            if (!spec.tasks) assert.equal(moved, 0, `${where}: only task and approval operations change tasks`);
          } else {
            const code = assertEnvelope(r, where);
            if (body.overCap) assert.deepEqual([code, r.json.error.field], ['too_large', '(body)'], where);
            else if (body.invalidUtf8) assert.deepEqual([code, r.json.error.field], ['malformed', '(body)'], where);
            await assertUnchanged(store, before, `${where} (${code})`);
            assert.equal(await taskLedger(store, approvals), ledger, `${where} (${code}): a refusal changed a task or an approval`);
          }
        },
      ),
      runs(200),
    );
  });

  it('/mcp: arbitrary JSON-RPC messages and batches, every method, every tool with arbitrary arguments', async () => {
    const store = d.engine.store;
    const toolCall = fc.integer({ min: 0, max: 1_000_000 }).chain((i) => {
      const t = tools[i % tools.length]!;
      return fc.record(
        { name: fc.oneof({ weight: 8, arbitrary: fc.constant(t.tool) }, { weight: 1, arbitrary: valueFor(['m4a_mail_nope', 'tools/call', '']) }), arguments: objectFor(t.spec) },
        { requiredKeys: ['name'] },
      );
    });
    const params = fc.oneof(
      { weight: 6, arbitrary: toolCall },
      { weight: 1, arbitrary: fc.record({ protocolVersion: valueFor([...PROTOCOL_VERSIONS, '2024-11-05', '']) }) },
      { weight: 1, arbitrary: valueFor([{}, [], null]) },
    );
    const msg = fc.record(
      {
        jsonrpc: fc.oneof({ weight: 8, arbitrary: fc.constant('2.0') }, { weight: 1, arbitrary: valueFor(['1.0', 2, null]) }),
        id: fc.oneof({ weight: 6, arbitrary: fc.oneof(fc.nat(), fc.string({ maxLength: 6 })) }, { weight: 1, arbitrary: valueFor([null, 1.5, {}, []]) }),
        method: fc.oneof(
          { weight: 6, arbitrary: fc.constant('tools/call') },
          { weight: 3, arbitrary: fc.constantFrom('initialize', 'ping', 'tools/list', 'notifications/initialized', 'resources/list', 'prompts/get', '') },
          { weight: 1, arbitrary: valueFor(['x']) },
        ),
        params,
        result: fc.constant({}),
        error: fc.constant({ code: 1, message: 'x' }),
      },
      { requiredKeys: [] },
    );
    const payload = fc.oneof({ weight: 6, arbitrary: msg }, { weight: 3, arbitrary: fc.array(msg, { maxLength: 4 }) }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) });
    const nested = (n: number) => `${'['.repeat(n)}"m4a_mail_send"${']'.repeat(n)}`;
    const deepRpc = fc
      .tuple(fc.constantFrom(1000, 100_000), fc.constantFrom(...tools.map((t) => t.tool)))
      .chain(([n, tool]) =>
        fc.constantFrom(
          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":${nested(n)}}}`,
          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${tool}","arguments":{"to":${nested(n)},"message_id":${nested(n)}}}}`,
          `{"jsonrpc":"2.0","id":${nested(n)},"method":"ping"}`,
          `{"jsonrpc":"2.0","id":1,"method":${nested(n)}}`,
          `{"jsonrpc":${nested(n)},"id":1,"method":"ping"}`,
          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":${nested(n)}}`,
          `[${Array.from({ length: 3 }, () => `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"${tool}","arguments":${nested(n)}}}`).join(',')}]`,
        ),
      );
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          { weight: 12, arbitrary: payload.map((p) => ({ p, text: JSON.stringify(p) ?? '' })) },
          { weight: 1, arbitrary: deepRpc.map((text) => short({ p: undefined, text }, text)) },
        ),
        async ({ p, text }) => {
          const where = `/mcp ${text.slice(0, 200)}`;
          const before = await storeSnapshot(store);
          const ledger = await taskLedger(store, approvals);
          const r = await http(d.url, '/mcp', { token: aliceSecret, body: text });
          assert.ok(r.status !== 500, `${where}: HTTP 500 ${r.text}`);
          const prior = before.head;
          if (r.status === 202) {
            assert.equal(r.text, '', `${where}: 202 has no body`);
            assert.equal(await store.headSeq(), prior, `${where}: notifications store nothing`);
            assert.equal(await taskLedger(store, approvals), ledger, `${where}: notifications change no task`);
            return;
          }
          if (r.status !== 200) {
            assertEnvelope(r, where);
            await assertUnchanged(store, before, where);
            assert.equal(await taskLedger(store, approvals), ledger, `${where}: a refusal changed a task or an approval`);
            return;
          }
          const answers: any[] = Array.isArray(r.json) ? r.json : [r.json];
          assert.ok(answers.length > 0, `${where}: an empty batch answer`);
          let created = 0;
          let refusals = 0;
          for (const a of answers) {
            assert.equal(a?.jsonrpc, '2.0', `${where}: jsonrpc`);
            assert.ok(Object.hasOwn(a, 'id'), `${where}: every answer has an id`);
            assert.notEqual(Object.hasOwn(a, 'result'), Object.hasOwn(a, 'error'), `${where}: exactly one of result or error`);
            if (a.error) {
              assert.ok([-32600, -32601, -32602].includes(a.error.code), `${where}: JSON-RPC error code ${a.error.code}`);
              assert.equal(typeof a.error.message, 'string');
              refusals++;
              continue;
            }
            const content = a.result?.content;
            if (!Array.isArray(content)) continue; // initialize, ping, tools/list
            assert.equal(content.length, 1, where);
            assert.equal(content[0].type, 'text', where);
            const out = JSON.parse(content[0].text);
            if (a.result.isError) {
              assert.ok(isErrorCode(out?.error?.code), `${where}: tool error ${content[0].text}`);
              assert.notEqual(out.error.code, 'internal', `${where}: internal error in a tool call`);
              assert.equal(ERROR_TABLE[out.error.code as keyof typeof ERROR_TABLE].mcp, 'tool_error', `${where}: ${out.error.code} must not be a tool result`);
              refusals++;
            } else if (typeof out.message_id === 'string' && typeof out.duplicate === 'boolean' && !out.duplicate) created += Array.isArray(out.expanded) ? out.expanded.length : 1;
            else if (approvalIdOf(out)) approvals.add(approvalIdOf(out)!);
          }
          const moved = (await taskLedger(store, approvals)) - ledger;
          assert.equal(await store.headSeq(), prior + created + moved, `${where}: the store holds exactly the sends and task changes that succeeded`);
          if (!Array.isArray(r.json) && refusals === 1) {
            await assertUnchanged(store, before, where);
            assert.equal(moved, 0, `${where}: a refused tool call changed a task or an approval`);
          }
          if (
            !Array.isArray(p) &&
            p &&
            typeof p === 'object' &&
            (typeof (p as any).id === 'number' || typeof (p as any).id === 'string') &&
            (p as any).jsonrpc === '2.0' &&
            typeof (p as any).method === 'string'
          ) {
            // Compared as sent: JSON has no -0 (an id of -0 goes out as 0).
            assert.equal(r.json.id, JSON.parse(text).id, `${where}: the answer echoes the id`);
          }
        },
      ),
      runs(200),
    );
  });

  it('regression: tools/call with a tool name that is not a string answers -32602, never a 500', async () => {
    // Found by the /mcp property: the name went through String(), which throws on an object whose
    // own toString is not callable and overflows the stack on deep nesting.
    const deepName = `${'['.repeat(100_000)}"m4a_mail_send"${']'.repeat(100_000)}`;
    for (const name of ['{"toString":"x"}', '{"valueOf":1,"toString":2}', deepName, '[1,2]', '5', 'null']) {
      const text = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":${name}}}`;
      const r = await http(d.url, '/mcp', { token: aliceSecret, body: text });
      assert.equal(r.status, 200, `name ${name.slice(0, 40)}: HTTP ${r.status} ${r.text}`);
      assert.equal(r.json.id, 7);
      assert.equal(r.json.error?.code, -32602, `name ${name.slice(0, 40)}`);
    }
  });

  it('regression: reminders the fuzz sets never come due by itself, and a parked wait still ends at once', async () => {
    // Found at M4A_FUZZ_RUNS=30000: a reminder set by one run (in_secs: 1, a team's) arrived from
    // `mailbox` during a later one ("a refused request changed the store"), and a 60 s wait held
    // its request past the client's deadline (the clock's capped timers fired before the wait's
    // deadline, which wait-expiry.ts compares with now(), so it re-armed until real time caught up).
    const store = d.engine.store;
    const call = async (path: string, body: unknown) => {
      const r = await http(d.url, path, { token: aliceSecret, body: JSON.stringify(body) });
      assert.equal(r.status, 200, `${path}: ${r.text}`);
      return r.json;
    };
    const mine = await call('/mail/remind', { in_secs: 1, note: 'fz regression', account: true });
    const team = await call('/mail/timer/team', { team: 'fzteam', in_secs: 1, note: 'fz regression', include_self: true });
    await call('/mail/timer/snooze', { id: mine.id, in_secs: 1 });
    const head = await store.headSeq();
    let cursor: string | undefined;
    for (let page = await call('/mail/inbox', { include_bodies: false, limit: 256 }); ; page = await call('/mail/inbox', { after: cursor, include_bodies: false, limit: 256 })) {
      cursor = page.next_cursor;
      if (page.messages.length === 0) break;
    }
    await d.engine.tickTimers();
    // Far past every due time in the daemon's own terms, and answered well within http()'s deadline.
    const waited = await call('/mail/inbox', { after: cursor, wait_secs: 60 });
    assert.deepEqual(waited.messages, [], 'the wait expired with nothing new');
    const mcp = await http(d.url, '/mcp', {
      token: aliceSecret,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'm4a_mail_inbox', arguments: { after: cursor, wait_secs: 50 } } }),
    });
    assert.equal(mcp.status, 200, mcp.text);
    await d.engine.tickTimers();
    assert.equal(await store.headSeq(), head, 'no reminder arrived');
    const left = (await call('/mail/timer/list', {})).timers.map((t: { id: string }) => t.id);
    for (const id of [mine.id, ...team.timers.filter((t: { to: string }) => t.to === 'alice').map((t: { id: string }) => t.id)])
      assert.ok(left.includes(id), `timer ${id} still pending`);
    for (const id of left) await call('/mail/timer/clear', { id });
  });

  it("paths, methods, Host, Origin and Authorization: only the daemon's own names and a valid bearer get through", async () => {
    const allowedHosts = [`127.0.0.1:${d.port}`, `localhost:${d.port}`];
    const allowedOrigins = allowedHosts.map((h) => `http://${h}`);
    const knownPaths = ['/health', '/mcp', ...routes.map((r) => r.path)];
    // docs/protocol.md: a 405 on /mcp or an operation route carries Allow: POST.
    const documented = new Set(['/mcp', ...HTTP_PATHS]);
    const headerValue = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 30 });
    const arb = fc.record(
      {
        method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
        path: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(...knownPaths) },
          { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...knownPaths), fc.webSegment()).map(([p, s]) => `${p}/${s}`) },
          { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...knownPaths), fc.webQueryParameters()).map(([p, q]) => `${p}?${q}`) },
          { weight: 1, arbitrary: fc.webPath().map((p) => p || '/') },
          {
            weight: 1,
            arbitrary: fc.constantFrom(
              '/',
              '//mail/send',
              '/mail/send/',
              '/MAIL/SEND',
              '/mail/%73end',
              '/../mail/send',
              '/admin',
              '/mcp/',
              '/web/inbox',
              '/web/api/send',
              '/web/api/login',
              '/web/assets/app.js',
              '/web/assets/nope.js',
            ),
          },
        ),
        host: fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom(...allowedHosts) },
          { weight: 1, arbitrary: fc.constantFrom(`LOCALHOST:${d.port}`, `127.0.0.1:${d.port + 1}`, 'localhost', `[::1]:${d.port}`, `evil.example:${d.port}`) },
          { weight: 1, arbitrary: headerValue.filter((h) => h !== '') },
        ),
        origin: fc.oneof(fc.constantFrom(...allowedOrigins, 'null', 'http://evil.example', `https://127.0.0.1:${d.port}`), headerValue),
        auth: fc.oneof(
          fc.constantFrom('alice', 'operator', 'none', 'lower'),
          headerValue.map((v) => `raw:${v}`),
        ),
        body: fc.constantFrom('{}', '', '{"to":"bob","subject":"s","body":"b"}'),
      },
      { requiredKeys: ['method', 'path', 'host', 'auth', 'body'] },
    );
    const store = d.engine.store;
    await fc.assert(
      fc.asyncProperty(arb, async (a) => {
        const headers: Record<string, string> = { host: a.host };
        if (a.origin !== undefined) headers.origin = a.origin;
        if (a.auth === 'alice') headers.authorization = `Bearer ${aliceSecret}`;
        else if (a.auth === 'operator') headers.authorization = `Bearer ${d.operatorToken}`;
        else if (a.auth === 'lower') headers.authorization = `bearer ${aliceSecret}`;
        else if (a.auth.startsWith('raw:')) headers.authorization = a.auth.slice(4);
        const where = `${a.method} ${a.path} ${JSON.stringify(headers)}`;
        const before = await storeSnapshot(store);
        const sendable = a.method !== 'GET' && a.method !== 'HEAD';
        const r = await http(d.url, a.path, { method: a.method, headers, ...(sendable ? { body: a.body } : {}) });
        assert.ok(r.status !== 500, `${where}: HTTP 500 ${r.text}`);
        const hostOk = allowedHosts.includes(a.host.trim().toLowerCase());
        const originOk = a.origin === undefined || allowedOrigins.includes(a.origin.trim());
        if (r.status === 400 && r.text === '') return; // refused by the HTTP parser itself (clientError)
        if (!hostOk || !originOk) {
          if (a.method === 'HEAD') assert.equal(r.status, 403, where);
          else {
            assert.equal(assertEnvelope(r, where), 'forbidden_origin', where);
            assert.equal(r.json.error.field, hostOk ? 'origin' : 'host', where);
          }
        }
        const bare = a.path.split('?')[0]!;
        // The browser door (/, /web/…) authenticates by login cookie and CSRF token, never a bearer:
        // its pages and assets are public, its API (/web/api/…) answers nothing without a login.
        const web = bare === '/' || bare === '/favicon.ico' || bare === '/web' || bare.startsWith('/web/');
        if (web) {
          if (r.status === 200) {
            assert.ok(hostOk && originOk, `${where}: accepted with a foreign Host or Origin`);
            assert.ok(!bare.startsWith('/web/api/') && (a.method === 'GET' || a.method === 'HEAD'), `${where}: the browser API answered without a login`);
          }
          await assertUnchanged(store, before, where);
          return;
        }
        if (r.status === 200) {
          assert.ok(hostOk && originOk, `${where}: accepted with a foreign Host or Origin`);
          if (!(a.path.split('?')[0] === '/health'))
            assert.ok(['alice', 'operator', 'lower'].includes(a.auth) || a.auth === `raw:Bearer ${aliceSecret}`, `${where}: accepted without the bearer`);
        } else if (a.method !== 'HEAD') {
          const code = assertEnvelope(r, where);
          if (code === 'method_not_allowed' && documented.has(a.path.split('?')[0]!)) assert.equal(r.headers.allow, 'POST', `${where}: 405 without Allow: POST`);
          await assertUnchanged(store, before, where);
        }
      }),
      runs(150),
    );
  });
});
