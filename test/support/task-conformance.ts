// The store contract of tasks and approvals (TaskStore), run inside the store conformance suite
// against every store. Each case gets a fresh store from the suite's `store()`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApprovalRecord, Store, TaskQuery, TaskRecord } from '../../src/store/types.js';

// ---- fixtures (exported for store-specific tests)

export function task(id: string, over: Partial<TaskRecord> = {}): TaskRecord {
  return {
    id,
    threadId: `m-${id}`,
    fromAccount: 'alice',
    fromSession: null,
    fromAddress: 'alice',
    toAccount: 'bob',
    toLineage: null,
    toAddress: 'bob',
    title: `title of ${id}`,
    instructions: null,
    refs: [],
    parentTaskId: null,
    state: 'submitted',
    history: [{ state: 'submitted', at: 1_000, by: 'alice' }],
    result: null,
    createdAt: 1_000,
    updatedAt: 1_000,
    version: 1,
    lastSeq: 1,
    idempotencyKey: null,
    ...over,
  };
}

export function approval(id: string, over: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return {
    id,
    threadId: `m-${id}`,
    requesterAccount: 'bob',
    requesterSession: null,
    requesterAddress: 'bob',
    reviewerAccount: 'carol',
    action: `action of ${id}`,
    details: null,
    taskId: null,
    state: 'pending',
    reason: null,
    createdAt: 1_000,
    expiresAt: null,
    decidedAt: null,
    ...over,
  };
}

export const taskQuery = (account: string, over: Partial<TaskQuery> = {}): TaskQuery => ({ account, role: 'assigned', state: null, before: null, limit: 100, ...over });
const ids = (ts: { id: string }[]): string[] => ts.map((t) => t.id);

/** Creates and insists it was created. */
async function create(store: Store, t: TaskRecord, since = 0): Promise<TaskRecord> {
  const out = await store.createTask(t, since);
  if (out.kind !== 'created') throw new Error(`expected created, got ${out.kind}`);
  return out.task;
}

/** Every field set, nested JSON in the result, a note on one transition and not on another. */
const FULL = task('t-full', {
  threadId: 'm-thread-1',
  fromSession: 's-aaaa',
  fromAddress: 'alice/s-aaaa',
  toLineage: 's-bbbb',
  toAddress: 'bob/web',
  title: 'Review the branch « ü » 🚀',
  instructions: 'Look at src/store.\nThen say.',
  refs: [
    { kind: 'file', locator: '/src/a.ts', digest: 'sha256:00ff' },
    { kind: 'url', locator: 'https://example.org/x' },
  ],
  parentTaskId: 't-parent',
  state: 'completed',
  history: [
    { state: 'submitted', at: 1_000, by: 'alice/s-aaaa' },
    { state: 'working', at: 1_100, by: 'bob/web', note: 'on it' },
    { state: 'completed', at: 1_200, by: 'bob/web', note: '' },
  ],
  result: {
    summary: 'done',
    data: { n: 3, ok: true, nothing: null, list: [1, 'two', { three: [null, false, 2.5] }], text: 'a\u0000b "q" ü 🚀', nested: { deep: { deeper: {} } } },
    refs: [{ kind: 'commit', locator: 'abc123' }],
  },
  createdAt: 1_000,
  updatedAt: 1_200,
  version: 3,
  lastSeq: 42,
  idempotencyKey: 'key-1',
});

export function runTaskConformance(store: () => Store): void {
  describe('tasks', () => {
    it('keeps every field of a task: refs, history with notes, a result of nested JSON, and nulls', async () => {
      const created = await store().createTask(FULL, 0);
      assert.deepEqual(created, { kind: 'created', task: FULL });
      assert.deepEqual(await store().getTask(FULL.id), FULL);
      const bare = task('t-bare');
      assert.deepEqual(await create(store(), bare), bare);
      assert.deepEqual(await store().getTask('t-bare'), bare);
      const odd = task('t-odd', { result: { data: null } });
      await create(store(), odd);
      assert.deepEqual((await store().getTask('t-odd'))?.result, { data: null }, 'a null result datum is kept, not dropped');
      const scalar = task('t-scalar', { result: { data: 'just text' } });
      await create(store(), scalar);
      assert.deepEqual((await store().getTask('t-scalar'))?.result, { data: 'just text' });
      assert.equal(await store().getTask('t-none'), null);
    });

    it('hands back copies: changing what went in or came out changes nothing stored', async () => {
      const t = task('t-1', { refs: [{ kind: 'file', locator: '/a' }], result: { data: { n: 1 } } });
      await create(store(), t);
      t.refs.push({ kind: 'file', locator: '/b' });
      (t.result?.data as { n: number }).n = 2;
      const got = (await store().getTask('t-1')) as TaskRecord;
      assert.deepEqual(got.refs, [{ kind: 'file', locator: '/a' }]);
      assert.deepEqual(got.result, { data: { n: 1 } });
      got.history.push({ state: 'working', at: 2, by: 'x' });
      assert.equal((await store().getTask('t-1'))?.history.length, 1);
    });

    it('rejects a second task with an existing id and keeps the first', async () => {
      await create(store(), task('t-1', { title: 'first' }));
      await assert.rejects(store().createTask(task('t-1', { title: 'second' }), 0));
      assert.equal((await store().getTask('t-1'))?.title, 'first');
    });

    describe('idempotency', () => {
      it('answers a retry with the same key within the window with the first task, creating nothing', async () => {
        const first = await create(store(), task('t-1', { idempotencyKey: 'k', createdAt: 5_000 }));
        const again = await store().createTask(task('t-2', { idempotencyKey: 'k', createdAt: 6_000, title: 'other' }), 5_000);
        assert.deepEqual(again, { kind: 'duplicate', task: first });
        assert.equal(await store().getTask('t-2'), null);
      });

      it('creates a new task once the first is older than the window, and then matches the newest', async () => {
        await create(store(), task('t-1', { idempotencyKey: 'k', createdAt: 1_000 }));
        const second = await create(store(), task('t-2', { idempotencyKey: 'k', createdAt: 5_000 }), 1_001);
        assert.equal(second.id, 't-2');
        const retry = await store().createTask(task('t-3', { idempotencyKey: 'k', createdAt: 5_500 }), 0);
        assert.deepEqual(retry, { kind: 'duplicate', task: second }, 'the newest within the window');
        assert.equal(await store().getTask('t-3'), null);
      });

      it('keeps keys per requesting account, and a task without a key is never a retry', async () => {
        await create(store(), task('t-1', { idempotencyKey: 'k' }));
        assert.equal((await store().createTask(task('t-2', { fromAccount: 'carol', idempotencyKey: 'k' }), 0)).kind, 'created');
        assert.equal((await store().createTask(task('t-3', { toAccount: 'dave', idempotencyKey: 'k' }), 0)).kind, 'duplicate', 'the assignee does not scope it');
        assert.equal((await store().createTask(task('t-4'), 0)).kind, 'created');
        assert.equal((await store().createTask(task('t-5'), 0)).kind, 'created');
        assert.equal((await store().createTask(task('t-6', { idempotencyKey: 'k2' }), 0)).kind, 'created');
      });

      it('of two creations with one key at once, one is created and the other is its duplicate', async () => {
        const outs = await Promise.all([store().createTask(task('t-1', { idempotencyKey: 'k' }), 0), store().createTask(task('t-2', { idempotencyKey: 'k' }), 0)]);
        assert.deepEqual(outs.map((o) => o.kind).sort(), ['created', 'duplicate']);
        assert.equal(outs[0]?.task.id, outs[1]?.task.id);
        assert.equal((await store().listTasks(taskQuery('bob'))).length, 1);
      });
    });

    describe('updateTask', () => {
      const moved = (t: TaskRecord): TaskRecord => ({
        ...t,
        state: 'completed',
        history: [...t.history, { state: 'working', at: 2_000, by: 'bob', note: 'started' }, { state: 'completed', at: 3_000, by: 'bob' }],
        result: { summary: 'all good', data: { files: ['a', 'b'], count: 2 }, refs: [{ kind: 'file', locator: '/out' }] },
        updatedAt: 3_000,
        version: t.version + 1,
        lastSeq: 7,
      });

      it('replaces state, history, result, updatedAt, version and lastSeq from the version it was read at, and nothing else', async () => {
        const t = await create(store(), task('t-1', { instructions: 'do it', refs: [{ kind: 'file', locator: '/in' }] }));
        const next = moved(t);
        // Fields outside the changing set are the store's: a caller's other values are ignored.
        const out = await store().updateTask({ ...next, title: 'changed', toAccount: 'mallory', fromAccount: 'mallory', refs: [], idempotencyKey: 'x', createdAt: 1 }, 1);
        assert.deepEqual(out, next);
        assert.deepEqual(await store().getTask('t-1'), next);
        const cleared = { ...next, state: 'working' as const, result: null, version: 3, lastSeq: 9 };
        assert.deepEqual(await store().updateTask(cleared, 2), cleared, 'a result can be cleared');
        assert.deepEqual(await store().getTask('t-1'), cleared);
      });

      it('changes nothing and answers null from a stale version, or for an unknown task', async () => {
        const t = await create(store(), task('t-1'));
        assert.equal(await store().updateTask(moved(t), 2), null, 'a version it never had');
        assert.equal(await store().updateTask(moved(t), 0), null);
        assert.deepEqual(await store().getTask('t-1'), t);
        const first = moved(t);
        assert.deepEqual(await store().updateTask(first, 1), first);
        assert.equal(await store().updateTask({ ...moved(t), state: 'failed', lastSeq: 99 }, 1), null, 'another change came first');
        assert.deepEqual(await store().getTask('t-1'), first);
        assert.equal(await store().updateTask(task('t-none'), 1), null);
        assert.equal(await store().getTask('t-none'), null, 'an update creates nothing');
      });

      it('of two updates from one version at once, exactly one wins', async () => {
        const t = await create(store(), task('t-1'));
        const a = { ...moved(t), state: 'completed' as const, lastSeq: 10 };
        const b = { ...moved(t), state: 'failed' as const, lastSeq: 11 };
        const outs = await Promise.all([store().updateTask(a, 1), store().updateTask(b, 1)]);
        assert.equal(outs.filter((o) => o !== null).length, 1, JSON.stringify(outs));
        assert.deepEqual(await store().getTask('t-1'), outs[0] ?? outs[1]);
      });
    });

    describe('listTasks', () => {
      /** bob is assigned five tasks by alice (lastSeq 10…50, created in another order), and more. */
      async function fill(): Promise<void> {
        for (const [id, seq] of [
          ['t-c', 30],
          ['t-a', 10],
          ['t-e', 50],
          ['t-b', 20],
          ['t-d', 40],
        ] as const) {
          await create(store(), task(id, { lastSeq: seq, state: seq % 20 === 0 ? 'working' : 'submitted' }));
        }
        await create(store(), task('t-x', { fromAccount: 'bob', toAccount: 'alice', lastSeq: 35 }));
        await create(store(), task('t-y', { fromAccount: 'carol', toAccount: 'dave', lastSeq: 45 }));
        await create(store(), task('t-z', { fromAccount: 'bobby', toAccount: 'bobby', lastSeq: 60 }));
      }

      it('lists the tasks assigned to an account, newest change first, paged by the lastSeq cursor', async () => {
        await fill();
        const bob = (over: Partial<TaskQuery>) => store().listTasks(taskQuery('bob', over));
        assert.deepEqual(ids(await bob({})), ['t-e', 't-d', 't-c', 't-b', 't-a']);
        assert.deepEqual(ids(await bob({ limit: 2 })), ['t-e', 't-d']);
        assert.deepEqual(ids(await bob({ limit: 2, before: 40 })), ['t-c', 't-b']);
        assert.deepEqual(ids(await bob({ limit: 2, before: 20 })), ['t-a']);
        assert.deepEqual(ids(await bob({ limit: 2, before: 10 })), []);
        assert.deepEqual(ids(await bob({ before: 45 })), ['t-d', 't-c', 't-b', 't-a'], 'a cursor between two tasks');
        assert.deepEqual(await bob({ limit: 0 }), []);
        assert.deepEqual((await bob({ limit: 1 }))[0], await store().getTask('t-e'), 'whole records');
        assert.deepEqual(await store().listTasks(taskQuery('nobody')), []);
      });

      it('lists the tasks an account requested apart from those assigned to it', async () => {
        await fill();
        assert.deepEqual(ids(await store().listTasks(taskQuery('alice', { role: 'requested' }))), ['t-e', 't-d', 't-c', 't-b', 't-a']);
        assert.deepEqual(ids(await store().listTasks(taskQuery('alice'))), ['t-x']);
        assert.deepEqual(ids(await store().listTasks(taskQuery('bob', { role: 'requested' }))), ['t-x']);
        assert.deepEqual(ids(await store().listTasks(taskQuery('bob', { role: 'requested', before: 35 }))), []);
        assert.deepEqual(ids(await store().listTasks(taskQuery('bobby', { role: 'requested' }))), ['t-z'], 'a self-assigned task is in both lists');
        assert.deepEqual(ids(await store().listTasks(taskQuery('bobby'))), ['t-z']);
      });

      it('keeps to one state when asked, with the cursor and the limit', async () => {
        await fill();
        const working = (over: Partial<TaskQuery> = {}) => store().listTasks(taskQuery('bob', { state: 'working', ...over }));
        assert.deepEqual(ids(await working()), ['t-d', 't-b']);
        assert.deepEqual(ids(await working({ limit: 1 })), ['t-d']);
        assert.deepEqual(ids(await working({ before: 40 })), ['t-b']);
        assert.deepEqual(ids(await store().listTasks(taskQuery('bob', { state: 'submitted', limit: 2 }))), ['t-e', 't-c']);
        assert.deepEqual(ids(await store().listTasks(taskQuery('alice', { role: 'requested', state: 'working' }))), ['t-d', 't-b']);
        assert.deepEqual(await store().listTasks(taskQuery('bob', { state: 'completed' })), []);
      });

      it('moves a task by its latest change: an update with a new lastSeq puts it first, in its new state', async () => {
        await fill();
        const a = (await store().getTask('t-a')) as TaskRecord;
        await store().updateTask({ ...a, state: 'working', version: 2, lastSeq: 70 }, 1);
        assert.deepEqual(ids(await store().listTasks(taskQuery('bob'))), ['t-a', 't-e', 't-d', 't-c', 't-b']);
        assert.deepEqual(ids(await store().listTasks(taskQuery('bob', { state: 'working' }))), ['t-a', 't-d', 't-b']);
        assert.deepEqual(ids(await store().listTasks(taskQuery('bob', { state: 'submitted' }))), ['t-e', 't-c']);
        assert.deepEqual(ids(await store().listTasks(taskQuery('bob', { before: 70 }))), ['t-e', 't-d', 't-c', 't-b']);
      });

      it('breaks a tie of lastSeq by id, highest first', async () => {
        for (const id of ['t-m', 't-o', 't-n']) await create(store(), task(id, { lastSeq: 5 }));
        assert.deepEqual(ids(await store().listTasks(taskQuery('bob'))), ['t-o', 't-n', 't-m']);
      });
    });

    it('lists the children of a task oldest first, up to the limit', async () => {
      await create(store(), task('t-p'));
      for (const [id, at] of [
        ['t-3', 3_000],
        ['t-1', 1_000],
        ['t-2b', 2_000],
        ['t-2a', 2_000],
      ] as const) {
        await create(store(), task(id, { parentTaskId: 't-p', createdAt: at }));
      }
      await create(store(), task('t-other', { parentTaskId: 't-q', createdAt: 500 }));
      assert.deepEqual(ids(await store().taskChildren('t-p', 10)), ['t-1', 't-2a', 't-2b', 't-3'], 'a tie of createdAt by id');
      assert.deepEqual(ids(await store().taskChildren('t-p', 2)), ['t-1', 't-2a']);
      assert.deepEqual(await store().taskChildren('t-p', 0), []);
      assert.deepEqual(await store().taskChildren('t-1', 10), []);
      assert.deepEqual((await store().taskChildren('t-q', 10))[0], await store().getTask('t-other'));
    });
  });

  describe('approvals', () => {
    it('keeps every field of an approval, and nulls', async () => {
      const full = approval('a-1', {
        threadId: 'm-t-1',
        requesterSession: 's-bbbb',
        requesterAddress: 'bob/web',
        details: 'drops table x\nthen y',
        taskId: 't-1',
        expiresAt: 9_000,
      });
      await store().createApproval(full);
      assert.deepEqual(await store().getApproval('a-1'), full);
      await store().createApproval(approval('a-2'));
      assert.deepEqual(await store().getApproval('a-2'), approval('a-2'));
      assert.equal(await store().getApproval('a-none'), null);
    });

    it('rejects a second approval with an existing id and keeps the first', async () => {
      await store().createApproval(approval('a-1', { action: 'first' }));
      await assert.rejects(store().createApproval(approval('a-1', { action: 'second' })));
      assert.equal((await store().getApproval('a-1'))?.action, 'first');
    });

    it('records a decision once: a second one answers null and changes nothing', async () => {
      await store().createApproval(approval('a-1', { taskId: 't-1', expiresAt: 9_000 }));
      await store().createApproval(approval('a-2'));
      const decided = { ...approval('a-1', { taskId: 't-1', expiresAt: 9_000 }), state: 'approved' as const, reason: 'looks safe', decidedAt: 2_000 };
      assert.deepEqual(await store().decideApproval('a-1', 'approved', 'looks safe', 2_000), decided);
      assert.deepEqual(await store().getApproval('a-1'), decided);
      assert.equal(await store().decideApproval('a-1', 'rejected', 'changed my mind', 3_000), null);
      assert.equal(await store().decideApproval('a-1', 'approved', 'again', 3_000), null);
      assert.deepEqual(await store().getApproval('a-1'), decided);
      assert.deepEqual(await store().getApproval('a-2'), approval('a-2'), 'another approval is untouched');
      assert.deepEqual(await store().decideApproval('a-2', 'rejected', 'no', 4_000), { ...approval('a-2'), state: 'rejected', reason: 'no', decidedAt: 4_000 });
      assert.equal(await store().decideApproval('a-none', 'approved', 'x', 1), null);
      assert.equal(await store().getApproval('a-none'), null);
    });

    it('of two decisions at once, exactly one is recorded', async () => {
      await store().createApproval(approval('a-1'));
      const outs = await Promise.all([store().decideApproval('a-1', 'approved', 'yes', 2_000), store().decideApproval('a-1', 'rejected', 'no', 2_001)]);
      const won = outs.filter((o) => o !== null);
      assert.equal(won.length, 1, JSON.stringify(outs));
      assert.deepEqual(await store().getApproval('a-1'), won[0]);
    });
  });

  describe('tasks and approvals of a name used again', () => {
    /** Tasks to, from and beside alice (alicex shares her prefix), approvals for her and others. */
    async function fill(): Promise<void> {
      await create(store(), task('t-to', { fromAccount: 'bob', toAccount: 'alice', lastSeq: 1 }));
      await create(store(), task('t-from', { fromAccount: 'alice', toAccount: 'bob', idempotencyKey: 'k', lastSeq: 2 }));
      await create(store(), task('t-self', { fromAccount: 'alice', toAccount: 'alice', idempotencyKey: 'k-self', lastSeq: 3 }));
      await create(store(), task('t-x', { fromAccount: 'alicex', toAccount: 'alicex', idempotencyKey: 'k', lastSeq: 4 }));
      await create(store(), task('t-bob', { fromAccount: 'bob', toAccount: 'carol', idempotencyKey: 'k', lastSeq: 5 }));
      await store().createApproval(approval('a-alice', { reviewerAccount: 'alice', requesterAccount: 'bob', taskId: 't-from' }));
      await store().createApproval(approval('a-by-alice', { reviewerAccount: 'bob', requesterAccount: 'alice', taskId: 't-to' }));
      await store().createApproval(approval('a-x', { reviewerAccount: 'alicex' }));
    }

    async function assertAliceGone(): Promise<void> {
      assert.equal(await store().getTask('t-to'), null, 'assigned to her: gone');
      assert.equal(await store().getTask('t-self'), null, 'assigned to her by herself: gone');
      assert.deepEqual(
        await store().getTask('t-from'),
        task('t-from', { fromAccount: 'alice', toAccount: 'bob', idempotencyKey: null, lastSeq: 2 }),
        "asked for by her: the assignee's, its retry handle gone",
      );
      assert.deepEqual(await store().listTasks(taskQuery('alice')), []);
      assert.deepEqual(ids(await store().listTasks(taskQuery('alice', { role: 'requested' }))), ['t-from']);
      assert.deepEqual(ids(await store().listTasks(taskQuery('alicex'))), ['t-x'], 'a name she prefixes is another account');
      assert.equal((await store().getTask('t-x'))?.idempotencyKey, 'k');
      assert.equal((await store().getTask('t-bob'))?.idempotencyKey, 'k');
      assert.equal(await store().getApproval('a-alice'), null, 'hers to review: gone');
      assert.notEqual(await store().getApproval('a-by-alice'), null, 'asked for by her: the reviewer’s');
      assert.notEqual(await store().getApproval('a-x'), null);
      // Her key is free for a new account of the name; others' keys still hold.
      assert.equal((await store().createTask(task('t-new', { fromAccount: 'alice', idempotencyKey: 'k' }), 0)).kind, 'created');
      assert.equal((await store().createTask(task('t-new2', { fromAccount: 'bob', idempotencyKey: 'k' }), 0)).kind, 'duplicate');
      assert.equal((await store().createTask(task('t-new3', { fromAccount: 'alicex', idempotencyKey: 'k' }), 0)).kind, 'duplicate');
    }

    it('removing an account deletes the tasks assigned to it and the approvals it was to review; what it asked for stays', async () => {
      for (const id of ['alice', 'alicex', 'bob']) await store().addAccount(accountOf(id));
      await fill();
      assert.deepEqual(await store().removeAccount('alice'), { messages: 0 });
      await assertAliceGone();
    });

    it('a new account starts with no task or approval left under its name', async () => {
      await fill();
      assert.equal(await store().addAccount(accountOf('alice')), 'ok');
      await assertAliceGone();
      await create(store(), task('t-later', { fromAccount: 'bob', toAccount: 'alice', lastSeq: 8 }));
      assert.equal(await store().addAccount(accountOf('alice')), 'exists');
      assert.deepEqual(ids(await store().listTasks(taskQuery('alice'))), ['t-later'], 'a refused creation deletes nothing');
    });
  });
}

function accountOf(id: string) {
  return {
    id,
    kind: 'agent' as const,
    label: id,
    permissions: { send: true, read: true, urgent: false, operator: false },
    bindProvider: null,
    secretDigest: `digest-${id}`,
    createdAt: 1_000,
  };
}
