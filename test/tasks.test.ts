// Tasks and approvals over HTTP against a real daemon (each store kind): who may move a task where,
// that every change is mail in the task's thread to the other party, waits on a task's version,
// lists, parents, idempotency, and approvals that move a linked task and are decided once.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MailClient } from '../src/client/http-client.js';
import { STORE_KINDS, startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

const call = <T = any>(c: MailClient, path: string, body: unknown): Promise<T> => c.call<T>(path, body);
const refused = async (p: Promise<unknown>, code: string, detail: Record<string, unknown> = {}): Promise<void> => {
  await assert.rejects(p, (e: any) => {
    assert.equal(e.code, code, e.message);
    for (const [k, v] of Object.entries(detail)) assert.deepEqual(e.details?.[k] ?? e[k], v, k);
    return true;
  });
};

for (const kind of STORE_KINDS) {
  describe(`tasks (${kind})`, () => {
    let d: TestDaemon;
    let alice: MailClient;
    let bob: MailClient;
    let carol: MailClient;
    before(async () => {
      d = await startTestDaemon({ storeKind: kind });
      alice = (await d.account('alice')).client;
      bob = (await d.account('bob')).client;
      carol = (await d.account('carol')).client;
    });
    after(() => d.stop());

    it('hands a task over as mail, and only the right party moves it, each change mail in its thread', async () => {
      const t = await call(alice, '/task/create', { to: 'bob', title: 'review branch fix-42', instructions: 'look at the parser', refs: [{ kind: 'git', locator: 'fix-42' }] });
      assert.match(t.task_id, /^t-/);
      assert.equal(t.state, 'submitted');
      assert.equal(t.version, 1);
      assert.equal(t.to, 'bob');
      const inbox = await bob.inbox({ include_bodies: true });
      const m = inbox.messages.find((x) => x.subject === 'Task: review branch fix-42');
      assert.ok(m, 'the assignee got the task as mail');
      assert.equal(m.body, 'look at the parser');
      assert.equal(m.message_id, t.thread_id, 'the task lives in the thread its mail started');

      await refused(call(alice, '/task/update', { task_id: t.task_id, state: 'working' }), 'invalid_transition', { from: 'submitted', to: 'working' });
      await refused(call(carol, '/task/get', { task_id: t.task_id }), 'not_task_party');
      await refused(call(carol, '/task/update', { task_id: t.task_id, state: 'working' }), 'not_task_party');
      await refused(call(bob, '/task/update', { task_id: t.task_id, state: 'input_required' }), 'malformed');
      await refused(call(bob, '/task/update', { task_id: t.task_id, state: 'canceled' }), 'invalid_transition');

      const w = await call(bob, '/task/update', { task_id: t.task_id, state: 'working', note: 'on it' });
      assert.equal(w.version, 2);
      const q = await call(bob, '/task/update', { task_id: t.task_id, state: 'input_required', note: 'which parser?' });
      assert.equal(q.state, 'input_required');
      const a = await alice.inbox({ include_bodies: true, thread_id: t.thread_id });
      assert.deepEqual(
        a.messages.map((x) => x.subject),
        ['Task working: review branch fix-42', 'Task input_required: review branch fix-42'],
      );
      assert.match(a.messages[1]!.body ?? '', /which parser\?/);
      await call(bob, '/task/update', { task_id: t.task_id, state: 'working' });
      const done = await call(bob, '/task/update', { task_id: t.task_id, state: 'completed', result: { summary: 'two bugs', data: { bugs: [1, 2], ok: false } } });
      assert.equal(done.state, 'completed');
      assert.deepEqual(done.result, { summary: 'two bugs', data: { bugs: [1, 2], ok: false } });
      assert.deepEqual(
        done.history.map((h: { state: string }) => h.state),
        ['submitted', 'working', 'input_required', 'working', 'completed'],
      );
      await refused(call(bob, '/task/update', { task_id: t.task_id, state: 'failed' }), 'task_terminal', { state: 'completed' });
      await refused(call(alice, '/task/cancel', { task_id: t.task_id }), 'task_terminal');
      const got = await call(alice, '/task/get', { task_id: t.task_id });
      assert.equal(got.version, 5);
    });

    it('waits for the next change of a task, and answers at once when it has passed after_version', async () => {
      const t = await call(alice, '/task/create', { to: 'bob', title: 'wait for me' });
      const parked = call(alice, '/task/get', { task_id: t.task_id, wait_secs: 20, after_version: 1 });
      await until('the wait is parked', () => d.engine.parkedWaits() > 0);
      await call(bob, '/task/update', { task_id: t.task_id, state: 'working' });
      const seen = await parked;
      assert.equal(seen.version, 2);
      assert.equal(seen.state, 'working');
      const now = await call(alice, '/task/get', { task_id: t.task_id, wait_secs: 20, after_version: 0 });
      assert.equal(now.version, 2);
    });

    it('lists by role and state, newest change first, in pages', async () => {
      const ids: string[] = [];
      for (const n of [1, 2, 3]) ids.push((await call(carol, '/task/create', { to: 'bob', title: `page ${n}` })).task_id);
      await call(bob, '/task/update', { task_id: ids[0], state: 'working' });
      const first = await call(carol, '/task/list', { role: 'requested', limit: 2 });
      assert.deepEqual(
        first.tasks.map((x: { task_id: string }) => x.task_id),
        [ids[0], ids[2]],
      );
      assert.ok(first.next_cursor);
      const second = await call(carol, '/task/list', { role: 'requested', limit: 2, after: first.next_cursor });
      assert.deepEqual(
        second.tasks.map((x: { task_id: string }) => x.task_id),
        [ids[1]],
      );
      const working = await call(bob, '/task/list', { role: 'assigned', state: 'working' });
      assert.ok(working.tasks.some((x: { task_id: string }) => x.task_id === ids[0]));
      assert.ok(!working.tasks.some((x: { task_id: string }) => x.task_id === ids[1]));
    });

    it('links children to a parent, refuses unknown rooms, and returns the first task for a repeated key', async () => {
      const parent = await call(alice, '/task/create', { to: 'bob', title: 'parent' });
      const child = await call(bob, '/task/create', { to: 'carol', title: 'child', parent_task_id: parent.task_id });
      await refused(call(carol, '/task/create', { to: 'bob', title: 'x', parent_task_id: parent.task_id }), 'not_task_party');
      const p = await call(alice, '/task/get', { task_id: parent.task_id });
      assert.deepEqual(p.children, [{ task_id: child.task_id, title: 'child', state: 'submitted' }]);
      await refused(call(alice, '/task/create', { to: '#anywhere', title: 'pooled' }), 'unknown_room');
      const before = (await bob.inbox({})).messages.length;
      const one = await call(alice, '/task/create', { to: 'bob', title: 'once', idempotency_key: 'k-1' });
      const two = await call(alice, '/task/create', { to: 'bob', title: 'once', idempotency_key: 'k-1' });
      assert.equal(two.task_id, one.task_id);
      assert.equal((await bob.inbox({})).messages.length, before + 1, 'the retry sent nothing');
      // Retries at the same moment (a client that does not wait for the first answer): one task, one mail.
      const asAlice = await d.engine.callerFor((await d.store.getAccount('alice'))!, null);
      const req = { to: { kind: 'direct' as const, participant: 'bob' }, title: 'racing', idempotency_key: 'k-race' };
      const racing = await Promise.all(Array.from({ length: 6 }, () => d.engine.tasks.create(asAlice, req)));
      assert.equal(new Set(racing.map((t) => t.task_id)).size, 1);
      assert.equal((await bob.inbox({})).messages.filter((m) => m.subject === 'Task: racing').length, 1, 'one mail for the racing retries');
    });

    it('a task keeps at most 1,000 changes: past them only a final state is taken', async () => {
      const t = await call(alice, '/task/create', { to: 'bob', title: 'endless' });
      const row = (await d.store.getTask(t.task_id))!;
      const filler = Array.from({ length: 999 }, (_, i) => ({ state: i % 2 ? ('working' as const) : ('input_required' as const), at: row.createdAt, by: 'bob', note: 'q' }));
      assert.ok(await d.store.updateTask({ ...row, state: 'working', history: [...row.history, ...filler], version: row.version + 1 }, row.version));
      await refused(call(bob, '/task/update', { task_id: t.task_id, state: 'input_required', note: 'again?' }), 'too_large', { field: 'history', limit: 1000 });
      assert.equal((await call(alice, '/task/get', { task_id: t.task_id })).history.length, 1000, 'nothing changed');
      assert.equal((await call(bob, '/task/update', { task_id: t.task_id, state: 'completed' })).state, 'completed');
    });

    it('approvals: a linked task waits in auth_required, the reviewer decides once, the task returns to working', async () => {
      const t = await call(alice, '/task/create', { to: 'bob', title: 'migrate' });
      await call(bob, '/task/update', { task_id: t.task_id, state: 'working' });
      const a = await call(bob, '/approval/request', { reviewer: 'carol', action: 'run the migration', details: 'drops a column', task_id: t.task_id });
      assert.match(a.approval_id, /^a-/);
      assert.equal(a.state, 'pending');
      assert.equal((await call(alice, '/task/get', { task_id: t.task_id })).state, 'auth_required');
      await refused(call(bob, '/task/update', { task_id: t.task_id, state: 'completed' }), 'invalid_transition');
      const ask = (await carol.inbox({ include_bodies: true })).messages.find((m) => m.subject === 'Approval: run the migration');
      assert.ok(ask, 'the reviewer got the request as mail');
      await refused(call(alice, '/approval/decide', { approval_id: a.approval_id, decision: 'approved', reason: 'me' }), 'not_reviewer');
      const parked = call(bob, '/approval/get', { approval_id: a.approval_id, wait_secs: 20 });
      await until('the approval wait is parked', () => d.engine.parkedWaits() > 0);
      const dec = await call(carol, '/approval/decide', { approval_id: a.approval_id, decision: 'approved', reason: 'backup taken' });
      assert.equal(dec.state, 'approved');
      assert.equal((await parked).state, 'approved');
      await refused(call(carol, '/approval/decide', { approval_id: a.approval_id, decision: 'rejected', reason: 'again' }), 'approval_decided', { state: 'approved' });
      const back = await call(bob, '/task/get', { task_id: t.task_id });
      assert.equal(back.state, 'working');
      assert.deepEqual(
        back.history.map((h: { state: string }) => h.state),
        ['submitted', 'working', 'auth_required', 'working'],
      );
      const told = (await bob.inbox({ include_bodies: true })).messages.find((m) => m.subject === 'Approval approved: run the migration');
      assert.ok(told, 'the requester got the decision as mail');
    });

    it('an approval not decided in time is expired and cannot be decided', async () => {
      const a = await call(alice, '/approval/request', { reviewer: 'carol', action: 'ship it', expires_in: 1 });
      await until('it expired', async () => (await call(alice, '/approval/get', { approval_id: a.approval_id })).state === 'expired', 5_000, 100);
      await refused(call(carol, '/approval/decide', { approval_id: a.approval_id, decision: 'approved', reason: 'late' }), 'approval_expired');
    });
  });
}
