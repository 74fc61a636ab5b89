// Pooled tasks on two daemons (each with its own data directory, HTTP door and store connections)
// sharing one PostgreSQL schema and one clock the test moves: a claim taken through one daemon
// whose lease expires goes back to the pool exactly once although both sweep at the same moment
// (one history entry, one room mail), also for many at once and for a lease a dead daemon ended
// without acting on it (both survivors recover it); 200 concurrent claims of one task through both
// daemons have exactly one winner and only lease_conflict (or, claiming from the pool, no task)
// for the rest.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MailClient } from '../../src/client/http-client.js';
import { ManualClock } from '../../src/engine/clock.js';
import { MailError } from '../../src/wire/errors.js';
import type { TaskClaimResponse, TaskOut } from '../../src/wire/tasks.js';
import type { LeaseRecord } from '../../src/store/types.js';
import { recordingLogger, type LogLine } from '../support/recording-logger.js';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { freshSchema, kept, pgSkip } from './support/pg.js';

const WORKERS = Array.from({ length: 10 }, (_, i) => `w${i}`);

describe('postgres: pooled tasks on two daemons sharing one store', { skip: pgSkip }, () => {
  const clock = new ManualClock(Date.UTC(2026, 11, 1));
  let dir: string;
  let d1: TestDaemon;
  let d2: TestDaemon;
  /** Each account's client on daemon 1 and on daemon 2. */
  const on = new Map<string, [MailClient, MailClient]>();
  const opened: MailClient[] = [];
  const logged: [LogLine[], LogLine[]] = [[], []];
  /** The leases each daemon's expiry sweep ended (its store's expireLeases answers). */
  const expiredBy: [string[], string[]] = [[], []];
  const sweeps = [0, 0];
  const a = (id: string) => on.get(id)![0];
  const b = (id: string) => on.get(id)![1];

  before(async () => {
    const { spec } = await freshSchema('pool_daemons');
    dir = mkdtempSync(join(tmpdir(), 'm4a-pool-daemons-'));
    // The session sweep is left to the test (its interval is wall-clock time).
    d1 = await startTestDaemon({ dataDir: join(dir, 'd1'), store: spec, clock, sweepMs: 3_600_000, log: recordingLogger(logged[0]) });
    d2 = await startTestDaemon({ dataDir: join(dir, 'd2'), store: spec, clock, sweepMs: 3_600_000, log: recordingLogger(logged[1]) });
    for (const [i, d] of [d1, d2].entries()) {
      const store = d.engine.store;
      const expire = store.expireLeases.bind(store);
      store.expireLeases = async (now: number, limit: number): Promise<LeaseRecord[]> => {
        sweeps[i]!++;
        const ended = await expire(now, limit);
        expiredBy[i]!.push(...ended.map((l) => l.id));
        return ended;
      };
    }
    await d1.operator.admin.roomAdd('pool');
    await d1.operator.admin.roomAdd('race');
    for (const id of ['lead', ...WORKERS]) {
      const { client, secret } = await d1.account(id);
      const other = new MailClient({ url: d2.url, token: secret });
      opened.push(other);
      on.set(id, [client, other]);
      for (const room of ['pool', 'race']) await d1.operator.admin.memberAdd(room, id);
    }
  });
  after(async () => {
    const errors = logged.flat().filter((l) => l.level === 'error');
    assert.deepEqual(errors, [], 'no daemon logged an error');
    for (const c of opened) c.close();
    await d1?.stop();
    await d2?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Moves the clock: both daemons' sweeps start at that moment; then waits for both to end. */
  const pass = async (ms: number) => {
    clock.advance(ms);
    await Promise.all([d1.engine.leases.tick(), d2.engine.leases.tick()]);
  };

  /** The task as the other daemon reads it, with its returns counted in history and in mail. */
  async function returns(id: string): Promise<{ task: TaskOut; history: number; mail: number; roomMail: number }> {
    const task = await b('lead').task.get({ task_id: id });
    const thread = (await a('lead').get(task.thread_id, true)).thread ?? [];
    const back = (m: { task?: { task_id: string; state: string; version: number } }) => m.task?.task_id === id && m.task.state === 'submitted' && m.task.version > 1;
    const inbox = await b('w9').inbox({ thread_id: task.thread_id, include_acked: true });
    return {
      task,
      history: task.history.filter((h) => h.note?.startsWith('back in the pool')).length,
      mail: thread.filter(back).length,
      roomMail: inbox.messages.filter(back).length,
    };
  }

  it(
    'a claim through A whose lease expires is returned once although both daemons sweep: one history entry, one room mail',
    kept(async () => {
      const t = await a('lead').task.create({ to: '#pool', title: 'expiring claim', max_attempts: 3 });
      const got = await a('w0').task.claim({ task_id: t.task_id, ttl_secs: 30 });
      assert.equal(got.lease?.epoch, 1);
      await pass(29_999);
      assert.equal((await b('lead').task.get({ task_id: t.task_id })).state, 'working', 'not before its expiry');
      await pass(1);
      await pass(1_000); // and both sweep once more
      const r = await returns(t.task_id);
      assert.equal(r.task.state, 'submitted');
      assert.equal(r.task.pool?.attempt, 1);
      assert.equal(r.history, 1, 'one "back in the pool" entry');
      assert.equal(r.mail, 1, 'one return in the thread');
      assert.equal(r.roomMail, 1, 'the room is told once');
      assert.equal(r.task.history.at(-1)?.note, 'back in the pool: the claim expired (attempt 1 of 3)');
      assert.deepEqual(await d1.engine.store.unsettledLeases(100), [], 'settled');
      // The next claim, through B, takes the next epoch.
      const again = await b('w1').task.claim({ task_id: t.task_id, ttl_secs: 30 });
      assert.equal(again.lease?.epoch, 2);
      assert.equal(again.lease?.attempt, 2);
      await b('w1').task.update({ task_id: t.task_id, state: 'completed', epoch: 2 });
    }),
  );

  it(
    '5 × 20 claims through both daemons expiring at the same moment: each ended by one sweep, each task returned exactly once',
    kept(async (ctx) => {
      // Five races: which daemon's sweep gets there first differs from one to the next.
      for (let round = 0; round < 5; round++) {
        const tasks = await Promise.all(Array.from({ length: 20 }, (_, i) => a('lead').task.create({ to: '#pool', title: `batch ${round}.${i}`, max_attempts: 2 })));
        const leases = await Promise.all(tasks.map((t, i) => on.get(WORKERS[i % WORKERS.length]!)![i % 2]!.task.claim({ task_id: t.task_id, ttl_secs: 60 })));
        expiredBy[0].length = expiredBy[1].length = 0;
        sweeps.fill(0);
        await pass(60_000);
        await pass(1_000);
        // Both swept; each lease was ended by exactly one of them.
        assert.deepEqual(
          [...expiredBy[0], ...expiredBy[1]].sort(),
          leases.map((l) => l.lease!.lease_id).sort(),
          `round ${round}: every lease ended once, by one daemon or the other`,
        );
        assert.ok(sweeps[0]! > 0 && sweeps[1]! > 0, `both daemons swept (${sweeps.join(', ')} sweeps)`);
        ctx.diagnostic(`round ${round}: expired by daemon 1: ${expiredBy[0].length}, by daemon 2: ${expiredBy[1].length} (sweeps: ${sweeps.join(', ')})`);
        for (const t of tasks) {
          const r = await returns(t.task_id);
          assert.deepEqual([r.task.state, r.history, r.mail, r.roomMail], ['submitted', 1, 1, 1], `task ${t.task_id}: state, history entries, thread mail, room mail`);
        }
      }
    }),
  );

  it(
    'a lease a dead daemon ended without acting on it is returned once when both daemons recover it',
    kept(async () => {
      const t = await a('lead').task.create({ to: '#pool', title: 'orphaned end', max_attempts: 3 });
      const got = await b('w2').task.claim({ task_id: t.task_id, ttl_secs: 600 });
      // What a daemon that died right after ending the lease leaves: ended, not settled, the task still working.
      const ended = await d1.engine.store.expireLeases(clock.now() + 600_000, 100);
      assert.deepEqual(
        ended.map((l) => l.id),
        [got.lease!.lease_id],
      );
      assert.equal((await a('lead').task.get({ task_id: t.task_id })).state, 'working');
      // Either daemon takes up another's unsettled end only after a while (it may be acting on it).
      await pass(600_000 + 6_000);
      await pass(1_000);
      const r = await returns(t.task_id);
      assert.deepEqual([r.task.state, r.history, r.mail, r.roomMail], ['submitted', 1, 1, 1]);
      assert.deepEqual(await d2.engine.store.unsettledLeases(100), []);
    }),
  );

  it(
    '200 concurrent claims of one task through both daemons: exactly one winner, lease_conflict for every other',
    kept(async () => {
      const t = await a('lead').task.create({ to: '#race', title: 'contended' });
      const claims = Array.from({ length: 200 }, (_, i) =>
        on.get(WORKERS[i % WORKERS.length]!)![Math.floor(i / WORKERS.length) % 2]!.task.claim({ task_id: t.task_id, ttl_secs: 600 }),
      );
      const settled = await Promise.allSettled(claims);
      const won = settled.filter((s): s is PromiseFulfilledResult<TaskClaimResponse> => s.status === 'fulfilled');
      const other = settled.flatMap((s) => (s.status === 'rejected' && !(s.reason instanceof MailError && s.reason.code === 'lease_conflict') ? [String(s.reason)] : []));
      assert.deepEqual(other, [], 'no error of another kind');
      assert.equal(won.length, 1, 'exactly one winner');
      const w = won[0]!.value;
      assert.equal(w.lease?.epoch, 1);
      const live = (await b('lead').lease.list({ resource_prefix: t.task_id })).leases;
      assert.deepEqual(
        live.map((l) => l.lease_id),
        [w.lease.lease_id],
        'one live lease',
      );
      const task = await b('lead').task.get({ task_id: t.task_id });
      assert.equal(task.state, 'working');
      assert.equal(task.pool?.lease_id, w.lease.lease_id);
      assert.equal(task.history.length, 2, 'submitted, then claimed once');
    }),
  );

  it(
    '200 concurrent pool claims through both daemons with one task on offer: one gets it, the others no task',
    kept(async () => {
      const t = await a('lead').task.create({ to: '#race', title: 'the only one on offer' });
      const claims = Array.from({ length: 200 }, (_, i) => on.get(WORKERS[i % WORKERS.length]!)![Math.floor(i / WORKERS.length) % 2]!.task.claim({ pool: '#race', ttl_secs: 600 }));
      const settled = await Promise.allSettled(claims);
      const failed = settled.flatMap((s) => (s.status === 'rejected' ? [String(s.reason)] : []));
      assert.deepEqual(failed, [], 'no error');
      const answers = settled.map((s) => (s as PromiseFulfilledResult<TaskClaimResponse>).value);
      const won = answers.filter((x) => x.task !== null);
      assert.equal(won.length, 1, 'exactly one winner');
      assert.equal(won[0]!.task!.task_id, t.task_id);
      assert.equal(answers.filter((x) => x.task === null && x.lease === null).length, 199, 'the others: no task');
      const task = await a('lead').task.get({ task_id: t.task_id });
      assert.equal(task.history.length, 2, 'submitted, then claimed once');
      assert.equal(task.pool?.attempt, 1);
    }),
  );
});
