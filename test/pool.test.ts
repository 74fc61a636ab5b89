// Pooled tasks against a real daemon on an injected clock: a task for a room is offered to its
// members, a claim takes it under an exclusive lease and makes the claimant its assignee, every
// update carries the lease's epoch, an ended claim returns it to the pool (with backoff), and after
// max_attempts it fails lease_exhausted in the dead-letter list, its requester told: never dropped.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import type { MailClient } from '../src/client/http-client.js';
import type { MailError } from '../src/wire/errors.js';
import { STORE_KINDS, startTestDaemon, type TestDaemon } from './support/test-daemon.js';

const call = <T = any>(c: MailClient, path: string, body: unknown): Promise<T> => c.call<T>(path, body);

async function refused(p: Promise<unknown>, code: string, details: Record<string, unknown> = {}): Promise<MailError> {
  try {
    await p;
  } catch (e) {
    const err = e as MailError;
    assert.equal(err.code, code, err.message);
    for (const [k, v] of Object.entries(details)) assert.deepEqual(err.details[k], v, k);
    return err;
  }
  assert.fail(`expected ${code}`);
}

for (const kind of STORE_KINDS) {
  describe(`pooled tasks (${kind})`, () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 1));
    let d: TestDaemon;
    let req: MailClient;
    let w1: MailClient;
    let w2: MailClient;
    let outsider: MailClient;
    /** Moves the clock and lets the daemon act on what expired. */
    const pass = async (ms: number) => {
      clock.advance(ms);
      await d.engine.leases.tick();
    };

    before(async () => {
      d = await startTestDaemon({ storeKind: kind, clock });
      req = (await d.account('lead')).client;
      w1 = (await d.account('w1')).client;
      w2 = (await d.account('w2')).client;
      outsider = (await d.account('outsider')).client;
      await d.operator.admin.roomAdd('workers');
      for (const m of ['lead', 'w1', 'w2']) await d.operator.admin.memberAdd('workers', m);
    });
    after(() => d.stop());

    it('a task for a room is offered to its members, claimed by one, and updated only with the live epoch', async () => {
      const t = await call(req, '/task/create', { to: '#workers', title: 'port the lexer', instructions: 'all of it' });
      assert.equal(t.to, '#workers');
      assert.deepEqual(t.pool, { room: '#workers', attempt: 0, max_attempts: 3 });
      const offered = (await w1.inbox({})).messages.find((m) => m.subject === 'Task: port the lexer');
      assert.ok(offered, 'members get the offer as room mail');
      await refused(call(outsider, '/task/get', { task_id: t.task_id }), 'not_task_party');
      await refused(call(outsider, '/task/claim', { task_id: t.task_id }), 'not_task_party');

      const got = await call(w1, '/task/claim', { task_id: t.task_id, ttl_secs: 60 });
      assert.equal(got.task.state, 'working');
      assert.match(got.task.to, /^w1/);
      assert.equal(got.lease.epoch, 1);
      assert.equal(got.lease.attempt, 1);
      assert.equal(got.task.pool.lease_id, got.lease.lease_id);
      assert.equal(got.lease.reason, 'pooled task', "any account lists leases: the title is the room's only");
      const conflict = await refused(call(w2, '/task/claim', { task_id: t.task_id }), 'lease_conflict');
      assert.match(String((conflict.details.holders as Array<Record<string, string>>)[0]!.holder), /^w1/);
      assert.deepEqual(
        (await call(w1, '/task/list', { role: 'assigned' })).tasks.map((x: { task_id: string }) => x.task_id),
        [t.task_id],
      );

      await refused(call(w1, '/task/update', { task_id: t.task_id, state: 'input_required', note: 'which lexer?' }), 'lease_lost');
      await refused(call(w1, '/task/update', { task_id: t.task_id, state: 'input_required', note: 'which lexer?', epoch: 7 }), 'lease_lost');
      await refused(call(w2, '/task/update', { task_id: t.task_id, state: 'completed', epoch: 1 }), 'not_task_party');
      const done = await call(w1, '/task/update', { task_id: t.task_id, state: 'completed', epoch: 1, result: { summary: 'ported' } });
      assert.equal(done.state, 'completed');
      // The lease ended with the task.
      assert.deepEqual((await call(w1, '/lease/list', { resource_prefix: t.task_id })).leases, []);
      const told = (await req.inbox({ include_bodies: true })).messages.filter((m) => m.thread_id === t.thread_id).map((m) => m.subject);
      assert.deepEqual(told, ['Task working: port the lexer', 'Task completed: port the lexer']);
    });

    it('an expired claim returns the task to the pool; a stale epoch is fenced out; max_attempts ends it in the dead-letter list', async () => {
      const t = await call(req, '/task/create', { to: '#workers', title: 'flaky job', max_attempts: 2 });
      const first = await call(w1, '/task/claim', { task_id: t.task_id, ttl_secs: 30 });
      await pass(31_000);
      const back = await call(req, '/task/get', { task_id: t.task_id });
      assert.equal(back.state, 'submitted');
      assert.equal(back.to, '#workers');
      assert.equal(back.pool.attempt, 1);
      assert.equal(back.pool.lease_id, undefined);
      assert.match(back.history.at(-1).note, /back in the pool: the claim expired \(attempt 1 of 2\)/);
      assert.match(back.history.at(-1).by, /^mailbox/);
      const roomMail = (await w2.inbox({})).messages.filter((m) => m.thread_id === t.thread_id).map((m) => m.subject);
      assert.ok(roomMail.includes('Task submitted: flaky job'), `the room is told: ${roomMail.join(', ')}`);
      await refused(call(w1, '/task/update', { task_id: t.task_id, state: 'completed', epoch: first.lease.epoch }), 'not_task_party');

      // The same holder takes it again: its old epoch no longer writes (the fencing token grew).
      const second = await call(w1, '/task/claim', { task_id: t.task_id });
      assert.equal(second.lease.epoch, first.lease.epoch + 1);
      assert.equal(second.lease.attempt, 2);
      await refused(call(w1, '/task/update', { task_id: t.task_id, state: 'completed', epoch: first.lease.epoch }), 'lease_lost');
      await refused(call(w1, '/lease/renew', { lease_id: first.lease.lease_id, epoch: first.lease.epoch }), 'lease_lost');
      await call(w1, '/lease/release', { lease_id: second.lease.lease_id, epoch: second.lease.epoch });
      const failed = await call(req, '/task/get', { task_id: t.task_id });
      assert.equal(failed.state, 'failed');
      assert.equal(failed.fail_reason, 'lease_exhausted');
      assert.match(failed.history.at(-1).note, /^lease_exhausted: claimed 2 times/);
      const dead = await call(req, '/task/list', { role: 'requested', state: 'failed', reason: 'lease_exhausted' });
      assert.deepEqual(
        dead.tasks.map((x: { task_id: string }) => x.task_id),
        [t.task_id],
      );
      const mail = (await req.inbox({})).messages.filter((m) => m.thread_id === t.thread_id).map((m) => m.subject);
      assert.ok(mail.includes('Task failed: flaky job'), 'the requester is told');
      assert.deepEqual(await call(w1, '/task/claim', { pool: '#workers' }), { task: null, lease: null }, 'nothing left on offer');
    });

    it('a returned task waits out its backoff, doubling; a pool claim takes the oldest on offer', async () => {
      const slow = await call(req, '/task/create', { to: '#workers', title: 'backoff', retry_delay_secs: 10, max_attempts: 5 });
      const c1 = await call(w1, '/task/claim', { pool: '#workers' });
      assert.equal(c1.task.task_id, slow.task_id);
      await call(w1, '/lease/release', { lease_id: c1.lease.lease_id, epoch: c1.lease.epoch });
      const waiting = await call(req, '/task/get', { task_id: slow.task_id });
      assert.equal(waiting.pool.available_at, new Date(clock.now() + 10_000).toISOString());
      const younger = await call(req, '/task/create', { to: '#workers', title: 'younger' });
      assert.equal((await call(w2, '/task/claim', { pool: '#workers' })).task.task_id, younger.task_id, 'the waiting one is not on offer');
      await refused(call(w2, '/task/claim', { task_id: slow.task_id }), 'invalid_transition');
      await pass(10_000);
      const c2 = await call(w1, '/task/claim', { pool: '#workers' });
      assert.equal(c2.task.task_id, slow.task_id);
      await call(w1, '/lease/release', { lease_id: c2.lease.lease_id, epoch: c2.lease.epoch });
      assert.equal((await call(req, '/task/get', { task_id: slow.task_id })).pool.available_at, new Date(clock.now() + 20_000).toISOString(), 'doubled');
    });

    it('claims at once: each task goes to exactly one claimant', async () => {
      const tasks = await Promise.all(Array.from({ length: 3 }, (_, i) => call(req, '/task/create', { to: '#workers', title: `race ${i}` })));
      const got = await Promise.all(Array.from({ length: 12 }, (_, i) => call(i % 2 ? w1 : w2, '/task/claim', { pool: '#workers', ttl_secs: 600 })));
      const taken = got.filter((g) => g.task).map((g) => g.task.task_id);
      assert.deepEqual([...taken].sort(), tasks.map((t) => t.task_id).sort(), 'every task once, none twice');
      assert.equal(got.filter((g) => !g.task).length, 9);
    });

    it('refuses bad input by name and changes nothing', async () => {
      await refused(call(req, '/task/create', { to: 'w1', title: 'x', max_attempts: 2 }), 'malformed', { field: 'max_attempts' });
      await refused(call(req, '/task/create', { to: '#workers', title: 'x', max_attempts: 0 }), 'malformed');
      await refused(call(req, '/task/create', { to: '#workers', title: 'x', max_attempts: 101 }), 'too_large');
      await refused(call(req, '/task/create', { to: '#workers', title: 'x', retry_delay_secs: 3601 }), 'too_large');
      await refused(call(outsider, '/task/create', { to: '#workers', title: 'x' }), 'permission_denied');
      await refused(call(w1, '/task/claim', {}), 'malformed');
      await refused(call(w1, '/task/claim', { pool: '#workers', task_id: 't-1' }), 'malformed');
      await refused(call(w1, '/task/claim', { pool: '#workers', ttl_secs: 9 }), 'malformed');
      await refused(call(outsider, '/task/claim', { pool: '#workers' }), 'permission_denied');
      const plain = await call(req, '/task/create', { to: 'w1', title: 'plain' });
      await refused(call(w1, '/task/claim', { task_id: plain.task_id }), 'malformed', { field: 'task_id' });
      await refused(call(w1, '/task/update', { task_id: plain.task_id, state: 'working', epoch: 1 }), 'malformed', { field: 'epoch' });
      assert.equal((await call(req, '/task/get', { task_id: plain.task_id })).state, 'submitted');
    });
    it('a stray lease a crash left (taken, the task never moved) is ended by the next claim once it is older than any claim in flight', async () => {
      const t = await call(req, '/task/create', { to: '#workers', title: 'stray' });
      const now = clock.now();
      const stray = await d.store.claimLease(
        {
          id: 'l-stray1',
          space: `task:${t.task_id}`,
          resource: t.task_id,
          mode: 'exclusive',
          holderAccount: 'w2',
          holderSession: null,
          holderLineage: null,
          holderAddress: 'w2',
          reason: null,
          createdAt: now,
          expiresAt: now + 900_000,
          attempt: 1,
        },
        { now, maxPerHolder: 64, conflicts: () => true },
      );
      assert.equal(stray.kind, 'claimed');
      await refused(call(w1, '/task/claim', { task_id: t.task_id }), 'lease_conflict');
      await pass(31_000);
      const got = await call(w1, '/task/claim', { task_id: t.task_id });
      assert.match(got.task.to, /^w1/);
      assert.equal((await d.store.getLease('l-stray1'))?.endReason, 'released');
      await call(w1, '/task/update', { task_id: t.task_id, state: 'completed', epoch: got.lease.epoch });
    });

    it('a claim whose task ended without it (a crash between the two) ends at the next session sweep, not at its TTL', async () => {
      const t = await call(req, '/task/create', { to: '#workers', title: 'left over' });
      const got = await call(w1, '/task/claim', { task_id: t.task_id, ttl_secs: 28_800 });
      const row = (await d.store.getTask(t.task_id))!;
      // The completion committed; the daemon died before ending the lease.
      assert.ok(await d.store.updateTask({ ...row, state: 'completed', version: row.version + 1 }, row.version));
      assert.equal((await call(w1, '/lease/list', { resource_prefix: t.task_id })).leases.length, 1);
      await d.engine.sweepSessions();
      assert.deepEqual((await call(w1, '/lease/list', { resource_prefix: t.task_id })).leases, []);
      assert.equal((await d.store.getLease(got.lease.lease_id))?.endReason, 'released');
    });

    it('an account made after a task (a later one of a name) never holds it: by id not_task_party, by pool skipped', async () => {
      await d.operator.admin.roomAdd('later');
      await d.operator.admin.memberAdd('later', 'lead');
      const t = await call(req, '/task/create', { to: '#later', title: 'older than its claimant' });
      clock.advance(1_000);
      const late = (await d.account('late')).client;
      await d.operator.admin.memberAdd('later', 'late');
      await refused(call(late, '/task/claim', { task_id: t.task_id }), 'not_task_party');
      assert.deepEqual(await call(late, '/task/claim', { pool: '#later' }), { task: null, lease: null });
      assert.equal((await call(req, '/task/get', { task_id: t.task_id })).state, 'submitted');
    });

    it('a member who leaves the room gives back the tasks of it that it holds', async () => {
      await d.operator.admin.roomAdd('leavers');
      for (const m of ['lead', 'w1']) await d.operator.admin.memberAdd('leavers', m);
      const t = await call(req, '/task/create', { to: '#leavers', title: 'left behind' });
      const got = await call(w1, '/task/claim', { task_id: t.task_id });
      await d.operator.admin.memberRemove('leavers', 'w1');
      const back = await call(req, '/task/get', { task_id: t.task_id });
      assert.equal(back.state, 'submitted');
      assert.match(back.history.at(-1).note, /back in the pool/);
      await refused(call(w1, '/task/update', { task_id: t.task_id, state: 'completed', epoch: got.lease.epoch }), 'not_task_party');
    });
  });
}
