// The a2a chain step against a real A2A agent (the official SDK's server parts on loopback,
// test/support/a2a-remote-agent.ts) and the real daemon: a task for the account is forwarded and
// the remote agent's working → completed (with a text and a data artifact) comes back as the
// account's updates in the task's thread; a question (input_required) and its answer go round;
// the requester's cancel becomes CancelTask; plain mail is answered by the remote agent as a reply
// from the account; an unreachable agent lets the chain go on; a card naming an interface off
// loopback (or on a link-local address) is refused without a request to it; a polled agent gets
// the bearer from token_file; a restart follows again what it followed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MailError } from '../src/wire/errors.js';
import type { TaskOut } from '../src/wire/tasks.js';
import { MailClient } from '../src/client/http-client.js';
import { parseStep } from '../src/cli/wake-commands.js';
import { startRemoteAgent, TaskState, type RemoteAgent, type Turn } from './support/a2a-remote-agent.js';
import { CLI } from './support/shell-agents.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

/** The remote agent's behaviour, chosen by the first word of the text it is sent. */
async function script(t: Turn): Promise<void> {
  const word = t.text.split(/\s/)[0];
  if (t.rc.task) {
    // A follow-up: the answer to its question.
    t.task();
    t.status(TaskState.TASK_STATE_WORKING, 'thanks');
    t.artifact({ text: `reviewed ${t.text}` });
    t.status(TaskState.TASK_STATE_COMPLETED);
    return;
  }
  if (word === 'plain:') return t.reply(`four (you asked: ${t.text.slice(7)})`);
  t.task();
  if (word === 'ask:') {
    t.status(TaskState.TASK_STATE_WORKING);
    t.status(TaskState.TASK_STATE_INPUT_REQUIRED, 'Which branch?');
    return;
  }
  if (word === 'wait:') {
    t.status(TaskState.TASK_STATE_WORKING, 'waiting');
    await t.canceled();
    return;
  }
  // count: / slow: working, then (when the test opens the gate) a text and a data artifact.
  t.status(TaskState.TASK_STATE_WORKING, 'counting');
  await t.gate(t.text);
  t.artifact({ text: 'two bugs', data: { bugs: [1, 2] } });
  t.artifact({ text: 'in the parser' });
  t.status(TaskState.TASK_STATE_COMPLETED);
}

const states = (t: TaskOut): string[] => t.history.map((h) => h.state);

describe('the a2a chain step', () => {
  let d: TestDaemon;
  let alice: MailClient;
  let bob: MailClient;
  let remote: RemoteAgent;
  const create = (to: string, title: string, instructions: string) => alice.call<TaskOut>('/task/create', { to: { kind: 'direct', participant: to }, title, instructions });
  const task = (id: string) => alice.call<TaskOut>('/task/get', { task_id: id });
  const taskIn = (id: string, state: string) => until(`task ${id} ${state}`, async () => ((await task(id)).state === state ? task(id) : null));
  const chain = (account: string, steps: unknown[]) => d.operator.admin.wakeSet({ account, steps: steps as never, debounce_ms: 0 });
  // The operator sees why (a sender sees the detail withheld).
  const signalled = async (messageId: string) => (await d.operator.receipts(messageId)).receipts[0]?.signalled ?? [];

  before(async () => {
    d = await startTestDaemon();
    alice = (await d.account('alice')).client;
    bob = (await d.account('bob')).client;
    remote = await startRemoteAgent(script);
    await chain('bob', [{ kind: 'a2a', url: remote.cardUrl }]);
  });
  after(async () => {
    await d.stop();
    await remote.close();
  });

  it('forwards a task for the account; the remote working and completed (text and data) come back as its updates', async () => {
    const t = await create('bob', 'Count the bugs', 'count: the parser');
    const working = await taskIn(t.task_id, 'working');
    const seen = remote.agent.seen.find((s) => s.text === 'count: the parser');
    assert.ok(seen, 'the remote agent got the instructions');
    assert.equal(seen.messageId, t.thread_id, 'the message id is our message id (a retry is the same message)');
    assert.equal(seen.metadata?.title, 'Count the bugs');
    assert.equal(seen.intoTask, '', 'a new remote task');
    assert.deepEqual(states(working), ['submitted', 'working']);
    assert.equal(working.history[1]!.by, 'bob', 'moved by the account the step delivers for');
    assert.equal(working.history[1]!.note, 'counting');
    assert.ok((await bob.get(t.thread_id)).message.acked_at, 'the forwarded mail is acknowledged as bob');
    const [attempt] = await signalled(t.thread_id);
    assert.equal(attempt?.adapter, 'a2a');
    assert.equal(attempt?.ok, true);

    remote.agent.open('count: the parser');
    const done = await taskIn(t.task_id, 'completed');
    assert.deepEqual(states(done), ['submitted', 'working', 'completed'], 'each state once');
    assert.equal(done.history[2]!.by, 'bob');
    assert.deepEqual(done.result, { summary: 'two bugs in the parser', data: { bugs: [1, 2] } });
    // The row moves before its mail is posted (tasks.ts transition): wait for the third message.
    const thread = await until('the completed mail in the thread', async () => {
      const th = (await alice.get(t.thread_id, true)).thread ?? [];
      return th.length >= 3 ? th : null;
    });
    assert.deepEqual(
      thread.map((m) => [m.subject, m.task?.state]),
      [
        ['Task: Count the bugs', 'submitted'],
        ['Task working: Count the bugs', 'working'],
        ['Task completed: Count the bugs', 'completed'],
      ],
    );
    assert.match(thread[2]!.body ?? '', /Result: two bugs in the parser/);
    assert.equal((await remote.task(seen.taskId))?.status?.state, TaskState.TASK_STATE_COMPLETED);
  });

  it('input_required round trip: the remote asks, the requester answers in the thread, the remote completes', async () => {
    const t = await create('bob', 'Review it', 'ask: review the branch');
    const asked = await taskIn(t.task_id, 'input_required');
    assert.equal(asked.history.at(-1)!.note, 'Which branch?');
    assert.equal(asked.history.at(-1)!.by, 'bob');
    const question = await until('the question as mail', async () =>
      (await alice.inbox({ include_bodies: true })).messages.find((m) => m.subject === 'Task input_required: Review it'),
    );
    assert.equal(question.thread_id, t.thread_id);
    const answer = await alice.reply({ message_id: question.message_id, body: 'fix-42' });
    const done = await taskIn(t.task_id, 'completed');
    const first = remote.agent.seen.find((s) => s.text === 'ask: review the branch')!;
    const second = remote.agent.seen.find((s) => s.text === 'fix-42');
    assert.ok(second, 'the answer reached the remote agent');
    assert.equal(second.intoTask, first.taskId, 'into the remote task');
    assert.equal(second.contextId, first.contextId);
    assert.equal(second.messageId, answer.message_id);
    assert.deepEqual(states(done), ['submitted', 'working', 'input_required', 'working', 'completed']);
    assert.equal(done.result?.summary, 'reviewed fix-42');
    // Acknowledged once the whole wake is handled, which may come after the remote's last update.
    await until('the answer acknowledged as bob', async () => (await bob.get(answer.message_id)).message.acked_at);
  });

  it("the requester's cancel becomes CancelTask on the remote", async () => {
    const t = await create('bob', 'Wait for it', 'wait: forever');
    await taskIn(t.task_id, 'working');
    const remoteId = remote.agent.seen.find((s) => s.text === 'wait: forever')!.taskId;
    const canceled = await alice.call<TaskOut>('/task/cancel', { task_id: t.task_id, reason: 'not needed' });
    await until('CancelTask on the remote', () => remote.agent.canceled.includes(remoteId));
    await until('the remote task canceled', async () => (await remote.task(remoteId))?.status?.state === TaskState.TASK_STATE_CANCELED);
    // The remote's canceled is our own doing: nothing more is said in the thread.
    await d.wake.idle();
    await new Promise((r) => setTimeout(r, 300));
    const after = await task(t.task_id);
    assert.equal(after.state, 'canceled');
    assert.equal(after.version, canceled.version);
    assert.equal(after.history.at(-1)!.by.split('/')[0], 'alice');
  });

  it('plain mail is answered by the remote agent, as a reply from the account in the thread', async () => {
    const sent = await alice.send({ to: { kind: 'direct', participant: 'bob' }, subject: 'Sum', body: 'plain: what is 2+2?' });
    const reply = await until('the reply', async () => (await alice.inbox({ include_bodies: true })).messages.find((m) => m.reply_to === sent.message_id));
    assert.equal(reply.from, 'bob');
    assert.equal(reply.subject, 'Re: Sum');
    assert.equal(reply.body, 'four (you asked: what is 2+2?)');
    assert.equal(reply.thread_id, sent.message_id);
    // The step acknowledges what it forwarded once the whole wake is handled, after the reply.
    await until('acknowledged as bob', async () => (await bob.get(sent.message_id)).message.acked_at);
    const seen = remote.agent.seen.find((s) => s.messageId === sent.message_id);
    assert.equal(seen?.text, 'plain: what is 2+2?');
  });

  it('an unreachable agent: ok:false in the receipts, and the next step of the chain runs', async () => {
    await d.account('uma');
    const closed = await new Promise<number>((r) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as AddressInfo;
        s.close(() => r(port));
      });
    });
    const hooked: string[] = [];
    const receiver = createServer((req, res) => {
      hooked.push(String(req.headers['m4a-event-id']));
      res.statusCode = 204;
      res.end();
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      await chain('uma', [
        { kind: 'a2a', url: `http://127.0.0.1:${closed}/.well-known/agent-card.json` },
        { kind: 'webhook', url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` },
      ]);
      const sent = await alice.send({ to: { kind: 'direct', participant: 'uma' }, subject: 'Hello', body: 'plain: anyone?' });
      const attempts = await until('both steps tried', async () => ((await signalled(sent.message_id)).length === 2 ? signalled(sent.message_id) : null));
      assert.deepEqual(
        attempts.map((a) => [a.adapter, a.ok]),
        [
          ['a2a', false],
          ['webhook', true],
        ],
      );
      assert.match(attempts[0]!.detail, /failed 1/);
      assert.match(attempts[0]!.detail, /ECONNREFUSED/);
      assert.equal(hooked.length, 1, 'the webhook ran');
      const uma = await d.operator.receipts(sent.message_id);
      assert.equal(uma.receipts[0]!.acked_at, null, 'not acknowledged: nothing was forwarded');
    } finally {
      await new Promise<void>((r) => receiver.close(() => r()));
    }
  });

  it('a card whose interface is off loopback, or link-local, is refused without a request to it', async () => {
    // [::ffff:127.0.0.1] reaches this very server, but it is not a loopback name the rule admits:
    // any request to it would be recorded.
    const offLoopback = await startRemoteAgent(script, { interfaceUrl: (base) => base.replace('127.0.0.1', '[::ffff:127.0.0.1]') + '/rpc' });
    const metadata = await startRemoteAgent(script, { interfaceUrl: () => 'https://169.254.169.254/rpc' });
    try {
      await d.account('vic');
      await d.account('wes');
      await chain('vic', [{ kind: 'a2a', url: offLoopback.cardUrl }]);
      await chain('wes', [{ kind: 'a2a', url: metadata.cardUrl, allow_remote: true }]);
      for (const [who, agent, why] of [
        ['vic', offLoopback, /the host must be on this machine/],
        ['wes', metadata, /link-local/],
      ] as const) {
        const t = await create(who, 'Look', 'count: nothing');
        const [a] = await until(`the a2a attempt for ${who}`, async () => ((await signalled(t.thread_id)).length ? signalled(t.thread_id) : null));
        assert.equal(a!.ok, false);
        assert.match(a!.detail, /interface .* refused/);
        assert.match(a!.detail, why);
        assert.deepEqual(
          agent.requests.map((r) => `${r.method} ${r.path}`),
          ['GET /.well-known/agent-card.json'],
          'only the card was read',
        );
        assert.equal((await task(t.task_id)).state, 'submitted');
      }
    } finally {
      await offLoopback.close();
      await metadata.close();
    }
  });

  it('wake set refuses a card URL the rule refuses, and a token_file that is not an absolute, readable path', async () => {
    await d.account('xan');
    const refused = async (step: Record<string, unknown>, field: string, reason: RegExp) =>
      assert.rejects(
        chain('xan', [{ kind: 'a2a', ...step }]),
        (e: unknown) => e instanceof MailError && e.code === 'malformed' && e.details.field === field && typeof e.details.reason === 'string' && reason.test(e.details.reason),
      );
    await refused({ url: 'http://192.0.2.7/.well-known/agent-card.json' }, 'url', /must be on this machine/);
    await refused({ url: 'http://192.0.2.7/.well-known/agent-card.json', allow_remote: true }, 'url', /https/);
    await refused({ url: 'https://169.254.169.254/card.json', allow_remote: true }, 'url', /link-local/);
    await refused({ url: remote.cardUrl, token_file: 'token.txt' }, 'token_file', /absolute/);
    await refused({ url: remote.cardUrl, token_file: '/nonexistent/m4a-token' }, 'token_file', /cannot be read/);
    assert.equal(
      (await d.operator.admin.wakeList()).chains.find((c) => c.account === 'xan'),
      undefined,
      'nothing stored',
    );
  });

  it('a polled agent (no streaming) gets the bearer from token_file; m4a wake shows the path, never the secret', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'm4a-a2a-token-'));
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'sekrit-token-123\n', { mode: 0o600 });
    const polled = await startRemoteAgent(script, { streaming: false, token: 'sekrit-token-123' });
    try {
      await d.account('pat');
      const env = { ...process.env, M4A_DATA_DIR: d.dataDir };
      const cli = (args: string[]) =>
        new Promise<{ code: number; out: string }>((resolve) =>
          execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', env, timeout: 30_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, out: stdout + stderr })),
        );
      const set = await cli(['wake', 'set', 'pat', '--step', `a2a=${polled.cardUrl}`, '--token-file', tokenFile, '--debounce-ms', '0', '--json']);
      assert.equal(set.code, 0, set.out);
      assert.deepEqual(JSON.parse(set.out).chain.steps, [{ kind: 'a2a', url: polled.cardUrl, token_file: tokenFile }]);
      const list = await cli(['wake', 'list']);
      assert.match(list.out, new RegExp(`a2a=${polled.cardUrl.replace(/[.]/g, '\\.')} token_file=${tokenFile}`));
      assert.ok(!list.out.includes('sekrit'), 'the secret is never shown');

      const t = await create('pat', 'Count slowly', 'slow: polled');
      await taskIn(t.task_id, 'working');
      polled.agent.open('slow: polled');
      const done = await taskIn(t.task_id, 'completed');
      assert.deepEqual(done.result, { summary: 'two bugs in the parser', data: { bugs: [1, 2] } });
      const rpcs = polled.requests.filter((r) => r.path === '/rpc');
      assert.ok(
        rpcs.some((r) => r.rpc === 'GetTask'),
        'polled with GetTask',
      );
      assert.ok(!rpcs.some((r) => r.rpc === 'SubscribeToTask'), 'no subscription to an agent that does not stream');
      assert.ok(
        rpcs.every((r) => r.authorization === 'Bearer sekrit-token-123'),
        'every call carries the bearer',
      );
    } finally {
      await polled.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('CLI: a2a=<card> with --allow-remote and --token-file', () => {
    assert.deepEqual(parseStep('a2a=https://agent.example/.well-known/agent-card.json', { allowRemote: true, tokenFile: '/etc/m4a/token' }), {
      kind: 'a2a',
      url: 'https://agent.example/.well-known/agent-card.json',
      allow_remote: true,
      token_file: '/etc/m4a/token',
    });
    assert.throws(() => parseStep('a2a', {}), /card URL/);
  });
});

describe('the a2a chain step and a removed account', () => {
  it('removing the account deletes its links and conversations: a new account of the name inherits none', async () => {
    const d = await startTestDaemon();
    const remote = await startRemoteAgent(script);
    try {
      const alice = (await d.account('alice')).client;
      await d.account('bob');
      await d.operator.admin.wakeSet({ account: 'bob', steps: [{ kind: 'a2a', url: remote.cardUrl }] as never, debounce_ms: 0 });
      const t = await alice.call<TaskOut>('/task/create', { to: { kind: 'direct', participant: 'bob' }, title: 'linked', instructions: 'slow: wait' });
      const sent = await alice.send({ to: { kind: 'direct', participant: 'bob' }, subject: 'Sum', body: 'plain: 1+1?' });
      await until(
        'a link and a conversation',
        async () => (await d.store.listRecords('a2a_link', 'bob|', 10)).length > 0 && (await d.store.listRecords('a2a_conversation', 'bob|', 10)).length > 0,
      );
      assert.ok(t.task_id && sent.message_id);
      await d.operator.admin.accountRemove('bob');
      assert.deepEqual(await d.store.listRecords('a2a_link', 'bob|', 10), []);
      assert.deepEqual(await d.store.listRecords('a2a_conversation', 'bob|', 10), []);
    } finally {
      await d.stop();
      await remote.close();
    }
  });
});

describe('the a2a chain step across a restart', () => {
  it('follows again, after a restart, the remote tasks it followed', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'm4a-a2a-restart-'));
    const remote = await startRemoteAgent(script);
    let d = await startTestDaemon({ dataDir });
    try {
      const alice = await d.account('alice');
      await d.account('bob');
      await d.operator.admin.wakeSet({ account: 'bob', steps: [{ kind: 'a2a', url: remote.cardUrl }], debounce_ms: 0 });
      const t = await alice.client.call<TaskOut>('/task/create', { to: { kind: 'direct', participant: 'bob' }, title: 'Survive', instructions: 'slow: across a restart' });
      await until('working', async () => (await alice.client.call<TaskOut>('/task/get', { task_id: t.task_id })).state === 'working');
      await d.stop();
      // The remote agent finishes while the daemon is down.
      remote.agent.open('slow: across a restart');
      const remoteId = remote.agent.seen.find((s) => s.text === 'slow: across a restart')!.taskId;
      await until('the remote task completed', async () => (await remote.task(remoteId))?.status?.state === TaskState.TASK_STATE_COMPLETED);

      d = await startTestDaemon({ dataDir });
      const client = new MailClient({ url: d.url, token: alice.secret });
      try {
        const done = await until('completed after the restart', async () => {
          const x = await client.call<TaskOut>('/task/get', { task_id: t.task_id });
          return x.state === 'completed' && x;
        });
        assert.deepEqual(states(done), ['submitted', 'working', 'completed']);
        assert.deepEqual(done.result, { summary: 'two bugs in the parser', data: { bugs: [1, 2] } });
      } finally {
        client.close();
      }
    } finally {
      await d.stop();
      await remote.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
