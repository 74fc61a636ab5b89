// A task's change messages carry its structured part (`task: {task_id, state, version}`) to the
// reader over HTTP, from every store kind: the assignee's item for a new task, the requester's for
// an update, the assignee's for a cancel, a whole thread through get; ordinary mail has no `task`.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MailClient } from '../src/client/http-client.js';
import type * as T from '../src/wire/tasks.js';
import { STORE_KINDS, startTestDaemon, type TestDaemon } from './support/test-daemon.js';

const task = <R = T.TaskOut>(c: MailClient, op: string, body: unknown): Promise<R> => c.call<R>(`/task/${op}`, body);

for (const kind of STORE_KINDS) {
  describe(`task messages carry the task's change (${kind})`, () => {
    let d: TestDaemon;
    let alice: MailClient;
    let bob: MailClient;
    before(async () => {
      d = await startTestDaemon({ storeKind: kind });
      alice = (await d.account('alice')).client;
      bob = (await d.account('bob')).client;
    });
    after(() => d.stop());

    it("the assignee's item for a new task, and the requester's for each update, name the state and version", async () => {
      const t = await task(alice, 'create', { to: 'bob', title: 'review fix-42' });
      const handed = (await bob.inbox({})).messages.find((m) => m.message_id === t.thread_id);
      assert.ok(handed, 'the assignee got the task as mail');
      assert.deepEqual(handed.task, { task_id: t.task_id, state: 'submitted', version: 1 });

      await task(bob, 'update', { task_id: t.task_id, state: 'working', note: 'on it' });
      await task(bob, 'update', { task_id: t.task_id, state: 'input_required', note: 'which parser?' });
      const told = (await alice.inbox({ thread_id: t.thread_id })).messages;
      assert.deepEqual(
        told.map((m) => m.task),
        [
          { task_id: t.task_id, state: 'working', version: 2 },
          { task_id: t.task_id, state: 'input_required', version: 3 },
        ],
      );

      // A question answered with plain mail in the thread: part of the thread, not a change.
      const answer = await alice.call<{ message_id: string }>('/mail/reply', { message_id: told[1]!.message_id, body: 'the JSON one' });
      const canceled = await task(alice, 'cancel', { task_id: t.task_id, reason: 'done elsewhere' });
      assert.equal(canceled.version, 4);
      const thread = (await bob.get(t.thread_id, true)).thread ?? [];
      assert.deepEqual(
        thread.map((m) => [m.message_id === answer.message_id ? 'reply' : m.subject, m.task?.state ?? null, m.task?.version ?? null]),
        [
          ['Task: review fix-42', 'submitted', 1],
          ['Task working: review fix-42', 'working', 2],
          ['Task input_required: review fix-42', 'input_required', 3],
          ['reply', null, null],
          ['Task canceled: review fix-42', 'canceled', 4],
        ],
      );
      assert.ok(
        thread.filter((m) => m.task).every((m) => m.task!.task_id === t.task_id),
        'every change names its task',
      );
    });

    it('ordinary mail has no task field, verbose or not', async () => {
      const sent = await alice.send({ to: 'bob', subject: 'plain', body: 'no task here' });
      const item = (await bob.inbox({ verbose: true })).messages.find((m) => m.message_id === sent.message_id);
      assert.ok(item);
      assert.equal('task' in item, false, JSON.stringify(item));
      assert.equal('task' in (await bob.get(sent.message_id)).message, false);
    });
  });
}
