// The store contract of pooled tasks (TaskRecord.pool and failReason, poolTasks, the dead-letter
// filter of listTasks), run inside the lease conformance suite against every store.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store, TaskPool, TaskRecord } from '../../src/store/types.js';
import { task, taskQuery } from './task-conformance.js';

// ---- fixtures (exported for store-specific tests)

export const pool = (over: Partial<TaskPool> = {}): TaskPool => ({
  room: 'ops',
  attempt: 0,
  maxAttempts: 3,
  retryDelaySecs: null,
  availableAt: null,
  leaseId: null,
  leaseEpoch: null,
  ...over,
});

/** A task offered to #ops that nobody holds: no assignee account, the room as its address. */
export function pooled(id: string, over: Partial<TaskRecord> = {}, p: Partial<TaskPool> = {}): TaskRecord {
  return task(id, { toAccount: '', toLineage: null, toAddress: `#${p.room ?? 'ops'}`, pool: pool(p), ...over });
}

const ids = (ts: { id: string }[]): string[] => ts.map((t) => t.id);

export function runPoolConformance(store: () => Store): void {
  async function create(t: TaskRecord): Promise<TaskRecord> {
    const out = await store().createTask(t, 0);
    if (out.kind !== 'created') throw new Error(`expected created, got ${out.kind}`);
    return out.task;
  }

  describe('pooled tasks', () => {
    it('keeps every pool field and the fail reason through create, get, lists and children', async () => {
      const full = pooled(
        't-full',
        { state: 'failed', failReason: 'lease_exhausted', parentTaskId: 't-parent', lastSeq: 9, toAccount: 'bob', toAddress: 'bob/s-b1' },
        { attempt: 3, maxAttempts: 3, retryDelaySecs: 30, availableAt: 5_000, leaseId: 'l-abc', leaseEpoch: 7 },
      );
      assert.deepEqual(await create(full), full);
      assert.deepEqual(await store().getTask('t-full'), full);
      const open = pooled('t-open', { lastSeq: 8 });
      assert.deepEqual(await create(open), open);
      assert.deepEqual(await store().getTask('t-open'), open);
      assert.deepEqual(await store().listTasks(taskQuery('alice', { role: 'requested' })), [full, open]);
      assert.deepEqual(await store().listTasks(taskQuery('bob')), [full]);
      assert.deepEqual(await store().taskChildren('t-parent', 10), [full]);
      assert.deepEqual(await store().poolTasks({ room: 'ops', limit: 10 }), [full, open]);
    });

    it('gives back an ordinary task with neither key, however it was written', async () => {
      const plain = task('t-1');
      assert.deepEqual(await create({ ...plain, pool: null, failReason: null }), plain);
      assert.deepEqual(await store().getTask('t-1'), plain);
      assert.deepEqual(await store().listTasks(taskQuery('bob')), [plain]);
    });

    it('updateTask writes the pool and the fail reason from the version it was read at', async () => {
      const t = await create(pooled('t-1'));
      const claimed = { ...t, state: 'working' as const, version: 2, lastSeq: 5, pool: pool({ attempt: 1, leaseId: 'l-1', leaseEpoch: 1 }) };
      assert.deepEqual(await store().updateTask(claimed, 1), claimed);
      assert.deepEqual(await store().getTask('t-1'), claimed);
      const back = { ...claimed, state: 'submitted' as const, version: 3, lastSeq: 6, pool: pool({ attempt: 1, availableAt: 9_000 }) };
      assert.deepEqual(await store().updateTask(back, 2), back);
      assert.equal(await store().updateTask({ ...back, pool: pool({ attempt: 9 }) }, 2), null, 'a stale version writes no pool');
      assert.deepEqual(await store().getTask('t-1'), back);
      const failed = { ...back, state: 'failed' as const, version: 4, lastSeq: 7, failReason: 'lease_exhausted', pool: pool({ attempt: 3 }) };
      assert.deepEqual(await store().updateTask(failed, 3), failed);
      assert.deepEqual(await store().getTask('t-1'), failed);
    });

    it('updateTask moves a pooled task to its claimant and back to the room; an ordinary task keeps its assignee', async () => {
      const t = await create(pooled('t-h'));
      const claimed = {
        ...t,
        state: 'working' as const,
        version: 2,
        toAccount: 'carol',
        toLineage: 'lin-c',
        toAddress: 'carol/s-c1',
        pool: pool({ attempt: 1, leaseId: 'l-9', leaseEpoch: 4 }),
      };
      assert.deepEqual(await store().updateTask(claimed, 1), claimed);
      assert.deepEqual(ids(await store().listTasks(taskQuery('carol'))), ['t-h'], 'the claimant lists it as assigned');
      const back = { ...claimed, state: 'submitted' as const, version: 3, toAccount: '', toLineage: null, toAddress: '#ops', pool: pool({ attempt: 1 }) };
      assert.deepEqual(await store().updateTask(back, 2), back);
      assert.deepEqual(await store().listTasks(taskQuery('carol')), []);
      const plain = await create(task('t-o'));
      const moved = await store().updateTask({ ...plain, state: 'working', version: 2, toAccount: 'mallory', toAddress: 'mallory' }, 1);
      assert.equal(moved?.toAccount, plain.toAccount, "an ordinary task's assignee never changes");
      assert.equal(moved?.toAddress, plain.toAddress);
    });

    it('never lists an unclaimed pooled task as assigned to anyone; its requester lists it', async () => {
      await create(pooled('t-p1', { lastSeq: 1 }));
      await create(pooled('t-p2', { lastSeq: 2, fromAccount: 'bob' }, { room: 'dev' }));
      await create(task('t-b', { lastSeq: 3 }));
      for (const who of ['', 'bob', 'alice', 'ops', '#ops']) {
        assert.deepEqual(ids(await store().listTasks(taskQuery(who))), who === 'bob' ? ['t-b'] : [], who);
        assert.deepEqual(await store().listTasks(taskQuery(who, { state: 'submitted' })), who === 'bob' ? [await store().getTask('t-b')] : [], who);
      }
      assert.deepEqual(ids(await store().listTasks(taskQuery('alice', { role: 'requested' }))), ['t-b', 't-p1']);
      assert.deepEqual(ids(await store().listTasks(taskQuery('bob', { role: 'requested' }))), ['t-p2']);
    });

    it('lists failed tasks by their fail reason (the dead-letter list) when asked, with state, cursor and limit', async () => {
      await create(task('t-f1', { state: 'failed', failReason: 'lease_exhausted', lastSeq: 10 }));
      await create(task('t-f2', { state: 'failed', lastSeq: 20 }));
      await create(task('t-f3', { state: 'failed', failReason: 'other', lastSeq: 30 }));
      await create(task('t-ok', { lastSeq: 40 }));
      await create(task('t-f4', { state: 'failed', failReason: 'lease_exhausted', fromAccount: 'carol', lastSeq: 45 }));
      await create(pooled('t-pf', { state: 'failed', failReason: 'lease_exhausted', lastSeq: 50 }));
      const mine = (over: Parameters<typeof taskQuery>[1]) =>
        store()
          .listTasks(taskQuery('alice', { role: 'requested', ...over }))
          .then(ids);
      assert.deepEqual(await mine({ state: 'failed', failReason: 'lease_exhausted' }), ['t-pf', 't-f1']);
      assert.deepEqual(await mine({ failReason: 'lease_exhausted' }), ['t-pf', 't-f1'], 'without a state');
      assert.deepEqual(await mine({ failReason: 'lease_exhausted', limit: 1 }), ['t-pf']);
      assert.deepEqual(await mine({ failReason: 'lease_exhausted', before: 50 }), ['t-f1']);
      assert.deepEqual(await mine({ state: 'failed' }), ['t-pf', 't-f3', 't-f2', 't-f1'], 'no reason asked: every failed task');
      assert.deepEqual(await mine({ state: 'failed', failReason: null }), ['t-pf', 't-f3', 't-f2', 't-f1']);
      assert.deepEqual(await mine({ state: 'completed', failReason: 'lease_exhausted' }), []);
      assert.deepEqual(ids(await store().listTasks(taskQuery('bob', { failReason: 'lease_exhausted' }))), ['t-f4', 't-f1'], 'assigned');
    });

    it('offers the unclaimed tasks of a pool available by then, oldest created first, id breaking ties', async () => {
      await create(pooled('t-p1', { createdAt: 3_000, lastSeq: 1 }));
      await create(pooled('t-p4', { createdAt: 1_000, lastSeq: 2 }));
      await create(pooled('t-p2', { createdAt: 1_000, lastSeq: 3 }));
      await create(pooled('t-p3', { createdAt: 2_000, lastSeq: 4 }, { availableAt: 6_000, attempt: 1 }));
      await create(pooled('t-p5', { createdAt: 500, lastSeq: 5 }, { availableAt: 5_000, attempt: 1 }));
      await create(pooled('t-w', { createdAt: 100, lastSeq: 6, state: 'working' }, { attempt: 1, leaseId: 'l-1', leaseEpoch: 1 }));
      await create(pooled('t-done', { createdAt: 100, lastSeq: 7, state: 'completed' }));
      await create(pooled('t-dev', { createdAt: 100, lastSeq: 8 }, { room: 'dev' }));
      await create(task('t-plain', { createdAt: 100, lastSeq: 9 }));
      const offered = (at: number, limit = 10) => store().poolTasks({ room: 'ops', offeredAt: at, limit }).then(ids);
      assert.deepEqual(await offered(5_000), ['t-p5', 't-p2', 't-p4', 't-p1'], 'availableAt ≤ offeredAt');
      assert.deepEqual(await offered(4_999), ['t-p2', 't-p4', 't-p1']);
      assert.deepEqual(await offered(6_000), ['t-p5', 't-p2', 't-p4', 't-p3', 't-p1']);
      assert.deepEqual(await offered(6_000, 2), ['t-p5', 't-p2']);
      assert.deepEqual(await offered(6_000, 0), []);
      assert.deepEqual(ids(await store().poolTasks({ room: 'dev', offeredAt: 6_000, limit: 10 })), ['t-dev']);
      assert.deepEqual(await store().poolTasks({ room: 'nowhere', offeredAt: 6_000, limit: 10 }), []);
      assert.deepEqual((await store().poolTasks({ room: 'ops', offeredAt: 6_000, limit: 1 }))[0], await store().getTask('t-p5'), 'whole records');
      // Claimed (working), it is offered no more.
      const p5 = (await store().getTask('t-p5')) as TaskRecord;
      await store().updateTask({ ...p5, state: 'working', version: 2, lastSeq: 20, pool: pool({ attempt: 2, availableAt: 5_000, leaseId: 'l-2', leaseEpoch: 2 }) }, 1);
      assert.deepEqual(await offered(6_000), ['t-p2', 't-p4', 't-p3', 't-p1']);
    });

    it('lists every task of a pool, newest change first, paged by the lastSeq cursor', async () => {
      await create(pooled('t-a', { lastSeq: 10 }));
      await create(pooled('t-c', { lastSeq: 30, state: 'working' }, { attempt: 1, leaseId: 'l-1', leaseEpoch: 1 }));
      await create(pooled('t-b', { lastSeq: 20, state: 'failed', failReason: 'lease_exhausted' }));
      await create(pooled('t-d2', { lastSeq: 40, state: 'completed' }));
      await create(pooled('t-d1', { lastSeq: 40 }));
      await create(pooled('t-dev', { lastSeq: 50 }, { room: 'dev' }));
      await create(task('t-plain', { lastSeq: 60 }));
      const all = (over: { before?: number | null; limit?: number } = {}) =>
        store()
          .poolTasks({ room: 'ops', limit: 10, ...over })
          .then(ids);
      assert.deepEqual(await all(), ['t-d2', 't-d1', 't-c', 't-b', 't-a'], 'a tie of lastSeq by id, highest first');
      assert.deepEqual(await all({ before: null }), ['t-d2', 't-d1', 't-c', 't-b', 't-a']);
      assert.deepEqual(await all({ limit: 2 }), ['t-d2', 't-d1']);
      assert.deepEqual(await all({ before: 40, limit: 2 }), ['t-c', 't-b']);
      assert.deepEqual(await all({ before: 10 }), []);
      assert.deepEqual(await all({ limit: 0 }), []);
      assert.deepEqual(ids(await store().poolTasks({ room: 'dev', limit: 10 })), ['t-dev']);
    });
  });
}
