// Retention on the real daemon with a hand-moved clock: per account or room, acknowledged mail
// older than N days goes (room mail once every member acknowledged it; never an open task's
// thread), with its wake records; old wake records go whatever is set; unread counts and cursors
// are unchanged; a run's counts are in its answer and in retention.list.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/engine/clock.js';
import { MailError } from '../src/wire/errors.js';
import type { RetentionRunOut } from '../src/wire/retention.js';
import { startTestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

const DAY = 24 * 3600_000;

async function refused(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof MailError && e.code === code);
}

describe('retention', () => {
  it('deletes what was handled and is old, keeps the rest, and counts it', async () => {
    const clock = new ManualClock();
    const d = await startTestDaemon({ clock });
    try {
      const { client: alice } = await d.account('alice');
      const { client: bob } = await d.account('bob');
      const { client: carol } = await d.account('carol');
      await d.operator.admin.roomAdd('ops');
      for (const a of ['alice', 'bob', 'carol']) await d.operator.admin.memberAdd('ops', a);

      const m1 = (await alice.send({ to: 'bob', subject: 'acked', body: 'x' })).message_id;
      const m2 = (await alice.send({ to: 'bob', subject: 'unacked', body: 'x' })).message_id;
      const c1 = (await alice.send({ to: 'carol', subject: 'no setting', body: 'x' })).message_id;
      const r1 = (await alice.send({ to: '#ops', subject: 'all acked', body: 'x' })).message_id;
      const r2 = (await alice.send({ to: '#ops', subject: 'alice has not', body: 'x' })).message_id;
      const task = await alice.task.create({ to: 'bob', title: 'open work' });
      // The first inbox read records "surfaced" for each message: a record keyed by its id.
      const first = await bob.inbox({ include_acked: true, limit: 1 });
      assert.equal(first.messages[0]?.message_id, m1);
      const cursor = first.next_cursor as string;
      await bob.inbox({ include_acked: true });
      await until('surfaced records', async () => (await d.store.getRecord('surfaced', `${m1}|bob`)) && (await d.store.getRecord('surfaced', `${m2}|bob`)));
      await bob.ack([m1, r1, r2, task.thread_id]);
      await carol.ack([c1, r1, r2]);
      await alice.ack([r1]);

      await refused(d.operator.admin.retentionSet({ account: 'bob', room: 'ops', days: 10 }), 'malformed');
      await refused(d.operator.admin.retentionSet({ days: 10 }), 'malformed');
      await refused(d.operator.admin.retentionSet({ account: 'nobody', days: 10 }), 'unknown_participant');
      await refused(d.operator.admin.retentionSet({ room: 'nowhere', days: 10 }), 'unknown_room');
      await refused(d.operator.admin.retentionSet({ account: 'bob', days: 0 }), 'malformed');
      await refused((bob as unknown as { admin: typeof d.operator.admin }).admin.retentionList(), 'permission_denied');
      assert.deepEqual(await d.operator.admin.retentionSet({ account: 'bob', days: 10 }), { account: 'bob', days: 10 });
      await d.operator.admin.retentionSet({ room: 'ops', days: 10 });
      await d.operator.admin.retentionSet({ account: 'alice', days: 10 });
      assert.deepEqual(await d.operator.admin.retentionSet({ account: 'alice', days: null }), { account: 'alice', days: null });
      const listed = await d.operator.admin.retentionList();
      assert.deepEqual(
        listed.settings.map((s) => [s.account ?? `#${s.room}`, s.days]),
        [
          ['bob', 10],
          ['#ops', 10],
        ],
      );
      assert.equal(listed.records_days, 30);
      assert.equal(listed.last_run, null);

      const unread = async () => Promise.all([alice, bob, carol].map(async (c) => (await c.unread()).unread));
      const before = await unread();
      assert.deepEqual(before, [1, 1, 0], "alice: r2; bob: m2 (the task's message acked)");

      // Eleven days on, the daemon's own run (shortly after start, then hourly) does it.
      clock.advance(11 * DAY);
      const sched = await until('the scheduled run', async () => (await d.operator.admin.retentionList()).last_run);
      assert.equal(sched.by, 'schedule');
      assert.equal(sched.ran, true);
      assert.equal(sched.messages_deleted, 2, 'm1 and r1');
      assert.deepEqual(
        sched.targets.map((t) => [t.account ?? `#${t.room}`, t.deleted]),
        [
          ['bob', 1],
          ['#ops', 1],
        ],
      );
      assert.equal(sched.records_pruned, 0, 'no wake record is 30 days old yet');
      await refused(bob.get(m1), 'unknown_message');
      await refused(bob.get(r1), 'unknown_message');
      for (const [c, id] of [
        [bob, m2],
        [bob, r2],
        [bob, task.thread_id],
        [carol, c1],
      ] as const)
        assert.equal((await c.get(id)).message.message_id, id);
      assert.deepEqual(await unread(), before, 'unread counts are unchanged');
      assert.equal(await d.store.getRecord('surfaced', `${m1}|bob`), null, "a deleted message's records go with it");
      assert.notEqual(await d.store.getRecord('surfaced', `${m2}|bob`), null);
      const after = await bob.inbox({ include_acked: true, after: cursor });
      assert.deepEqual(
        after.messages.map((m) => m.message_id),
        [m2, r2, task.thread_id],
        'a cursor taken before the run reads on after it',
      );

      // New acknowledged mail stays; a task's thread goes once the task is terminal; room mail
      // once the last member acknowledged it. The operator's run answers its counts.
      const m3 = (await alice.send({ to: 'bob', subject: 'new', body: 'x' })).message_id;
      await bob.ack(m3);
      await bob.task.update({ task_id: task.task_id, state: 'completed' });
      await alice.ack(r2);
      const now = await d.operator.admin.retentionRun();
      assert.equal(now.by, 'operator');
      assert.equal(now.messages_deleted, 2);
      assert.deepEqual(
        now.targets.map((t) => [t.account ?? `#${t.room}`, t.deleted]),
        [
          ['bob', 1],
          ['#ops', 1],
        ],
      );
      assert.deepEqual((await d.operator.admin.retentionList()).last_run, now);
      await refused(bob.get(task.thread_id), 'unknown_message');
      await refused(bob.get(r2), 'unknown_message');
      assert.equal((await bob.get(m3)).message.message_id, m3);
      assert.equal((await bob.get(m2)).message.message_id, m2);
      assert.equal((await carol.get(c1)).message.message_id, c1, 'an account without a setting keeps its mail');
      assert.deepEqual(await unread(), [1, 1, 0], "alice: the task's completion; bob: m2");

      // Thirty days on, wake records go whatever is set: m2 stays (unacknowledged), its record goes.
      clock.advance(30 * DAY);
      const late = await until('the next scheduled run', async () => {
        const r = (await d.operator.admin.retentionList()).last_run as RetentionRunOut;
        return r.by === 'schedule' && Date.parse(r.started_at) > Date.parse(sched.started_at) && r;
      });
      assert.equal(late.messages_deleted, 1, 'm3 is old now too');
      assert.ok((late.records.surfaced ?? 0) >= 1, 'old surfaced records pruned');
      assert.equal(
        late.records_pruned,
        Object.values(late.records).reduce((a, n) => a + n, 0),
      );
      assert.equal(await d.store.getRecord('surfaced', `${m2}|bob`), null);
      assert.equal((await bob.get(m2)).message.message_id, m2);
      await refused(bob.get(m3), 'unknown_message');
      assert.equal((await bob.unread()).unread, 1);
      assert.deepEqual(d.engine.retention.stats, { runs: 3, messagesDeleted: 5, recordsPruned: late.records_pruned, failures: 0 });
    } finally {
      await d.stop();
    }
  });

  it('keeps wake records for the days the operator sets, across a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'm4a-retention-'));
    const clock = new ManualClock();
    let d = await startTestDaemon({ clock, dataDir });
    try {
      const { client: alice } = await d.account('alice');
      const { client: bob } = await d.account('bob');
      const m = (await alice.send({ to: 'bob', subject: 'kept', body: 'x' })).message_id;
      await bob.inbox({});
      await until('the surfaced record', async () => d.store.getRecord('surfaced', `${m}|bob`));

      const admin = () => d.operator.admin;
      await refused(admin().retentionSet({ records_days: 0 }), 'malformed');
      await refused(admin().retentionSet({ records_days: 1.5 }), 'malformed');
      await assert.rejects(
        admin().retentionSet({ records_days: 3651 }),
        (e: unknown) => e instanceof MailError && e.code === 'too_large' && e.details.field === 'records_days' && e.details.limit === 3650,
      );
      await refused(admin().retentionSet({ days: 5 }), 'malformed');
      await refused(admin().retentionSet({ account: 'bob' }), 'malformed');
      await refused(admin().retentionSet({ account: 'nobody', days: 5, records_days: 5 }), 'unknown_participant');
      assert.equal((await admin().retentionList()).records_days, 30, 'a refused request changed nothing');

      assert.deepEqual(await admin().retentionSet({ records_days: 5 }), { records_days: 5 });
      assert.deepEqual(await admin().retentionList(), { settings: [], records_days: 5, last_run: null });
      await d.stop();

      // Kept across a restart: a record of the store, as the settings are.
      d = await startTestDaemon({ clock, dataDir });
      assert.equal((await admin().retentionList()).records_days, 5);
      clock.advance(4 * DAY);
      const early = await admin().retentionRun();
      assert.equal(early.records_days, 5);
      assert.equal(early.records.surfaced, 0, 'four days old: kept');
      assert.notEqual(await d.store.getRecord('surfaced', `${m}|bob`), null);
      clock.advance(2 * DAY);
      // The hourly run the clock just passed may have been the one to prune it; the operator's
      // run waits for it.
      await admin().retentionRun();
      assert.equal(await d.store.getRecord('surfaced', `${m}|bob`), null, 'six days old: pruned');
      assert.ok(d.engine.retention.stats.recordsPruned >= 1);
      assert.equal((await (await d.account('carol')).client.unread()).unread, 0);

      assert.deepEqual(await admin().retentionSet({ account: 'bob', days: 9, records_days: 30 }), { account: 'bob', days: 9, records_days: 30 });
      const listed = await admin().retentionList();
      assert.equal(listed.records_days, 30);
      assert.deepEqual(
        listed.settings.map((x) => [x.account, x.days]),
        [['bob', 9]],
      );
    } finally {
      await d.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
