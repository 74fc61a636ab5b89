// The A2A door against a real daemon, driven by the official SDK's client (@a2a-js/sdk, A2A 1.0,
// JSON-RPC): the public agent card, SendMessage making a task the assignee gets as mail, GetTask,
// ListTasks, CancelTask, the two streams while the assignee (a second client, over HTTP /task/*)
// moves the task, the blocking SendMessage, and the error codes.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Message, type SendMessageRequest, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, createAuthenticatingFetchWithRetry, type Client } from '@a2a-js/sdk/client';
import type { MailClient } from '../src/client/http-client.js';
import { raw, startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

const textPart = (value: string): Message['parts'][number] => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });
const message = (text: string, extra: Partial<Message> = {}): Message => ({
  messageId: randomUUID(),
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [textPart(text)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
  ...extra,
});
const sendReq = (m: Message): SendMessageRequest => ({ tenant: '', message: m, configuration: undefined, metadata: undefined });
const asTask = (r: Message | Task): Task => {
  assert.ok('id' in r && 'status' in r, 'SendMessage answered with a task');
  return r;
};
const textsOf = (parts: Message['parts']): string[] => parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));

/** A rejection by the SDK carrying this A2A error (its class name and JSON-RPC code). */
async function a2aRefused(p: Promise<unknown>, name: string, code: number): Promise<void> {
  await assert.rejects(p, (e: Error & { envelopeCode?: number; cause?: { name?: string; envelopeCode?: number } }) => {
    const err = e.envelopeCode === undefined && e.cause ? e.cause : e;
    assert.equal(err.name, name, e.message);
    assert.equal(err.envelopeCode, code);
    return true;
  });
}

async function a2aClient(d: TestDaemon, secret: string, agent: string, polling = true): Promise<Client> {
  const fetchImpl = createAuthenticatingFetchWithRetry(fetch, { headers: async () => ({ authorization: `Bearer ${secret}` }), shouldRetryWithHeaders: async () => undefined });
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl })], clientConfig: { polling } });
  // The base ends with / so the card is looked up under it, not one level up.
  return new ClientFactory(options).createFromUrl(`${d.url}/a2a/${agent}/`);
}

describe('the A2A door', () => {
  let d: TestDaemon;
  let aliceSecret: string;
  let bob: MailClient;
  let carolSecret: string;
  let toBob: Client;
  const update = (taskId: string, state: string, more: Record<string, unknown> = {}) => bob.call<{ version: number }>('/task/update', { task_id: taskId, state, ...more });

  before(async () => {
    d = await startTestDaemon();
    aliceSecret = (await d.account('alice')).secret;
    bob = (await d.account('bob')).client;
    carolSecret = (await d.account('carol')).secret;
    // Declared before the first card is read: a card's skills are kept for 5 s (it needs no secret,
    // so its directory read must not follow the rate of whoever asks).
    await bob.status({ role: 'parser reviewer', working_on: 'the parser in /home/bob/src/parse.ts, see s-0123abcd9f and 0123456789abcdef0123' });
    toBob = await a2aClient(d, aliceSecret, 'bob');
  });
  after(() => d.stop());

  it('serves a public agent card from live sessions, with no session ids, paths or digests', async () => {
    const me = await bob.whoami();
    const res = await raw(d.url, '/a2a/bob/.well-known/agent-card.json', { method: 'GET' });
    assert.equal(res.status, 200);
    const card = res.json;
    assert.equal(card.name, 'bob');
    assert.deepEqual(card.supportedInterfaces, [{ url: `${d.url}/a2a/bob`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]);
    assert.deepEqual(card.capabilities, { streaming: true, pushNotifications: true, extendedAgentCard: false });
    assert.deepEqual(card.defaultInputModes, ['text/plain', 'application/json']);
    assert.equal(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme, 'Bearer');
    assert.deepEqual(card.securityRequirements, [{ schemes: { bearer: { list: [] } } }]);
    assert.equal(card.skills[0].id, 'task');
    const declared = card.skills.find((s: { name: string }) => s.name === 'parser reviewer');
    assert.ok(declared, 'a skill from the declared role');
    assert.match(declared.description, /working on: the parser in …, see … and …$/);
    const text = JSON.stringify(card);
    assert.ok(me.session && !text.includes(me.session), 'no session id');
    for (const leak of ['/home/', 's-0123abcd9f', '0123456789abcdef0123', 'cwd', 'digest']) assert.ok(!text.includes(leak), leak);

    const viaSdk = await toBob.getAgentCard();
    assert.equal(viaSdk.name, 'bob');
    assert.equal(viaSdk.capabilities?.streaming, true);
    assert.equal((await raw(d.url, '/a2a/nobody/.well-known/agent-card.json', { method: 'GET' })).status, 404);
    assert.equal((await raw(d.url, '/a2a/bob/elsewhere', { method: 'GET' })).status, 404);
  });

  it('SendMessage hands bob a task he gets as mail; a retry of the message is the same task', async () => {
    const m = message('Review the parser\nIt drops the last token on CRLF input.');
    const task = asTask(await toBob.sendMessage(sendReq(m)));
    assert.match(task.id, /^t-/);
    assert.equal(task.status?.state, TaskState.TASK_STATE_SUBMITTED);
    assert.equal(task.metadata?.title, 'Review the parser');
    const mail = (await bob.inbox({ include_bodies: true })).messages.find((x) => x.subject === 'Task: Review the parser');
    assert.ok(mail, 'the assignee got the task as mail');
    assert.equal(mail.body, 'Review the parser\nIt drops the last token on CRLF input.');
    assert.equal(task.contextId, mail.message_id, 'the context is the task thread');
    assert.deepEqual(textsOf(task.history[0]!.parts), [mail.body]);
    const again = asTask(await toBob.sendMessage(sendReq({ ...m })));
    assert.equal(again.id, task.id);
  });

  it('GetTask shows the state, the thread as history and the result as an artifact', async () => {
    const task = asTask(await toBob.sendMessage(sendReq(message('Count the bugs'))));
    await update(task.id, 'working', { note: 'on it' });
    await update(task.id, 'completed', { result: { summary: 'two bugs', data: { bugs: [1, 2] } } });
    const got = await toBob.getTask({ tenant: '', id: task.id });
    assert.equal(got.status?.state, TaskState.TASK_STATE_COMPLETED);
    const parts = got.artifacts[0]!.parts;
    assert.deepEqual(textsOf(parts), ['two bugs']);
    assert.deepEqual(
      parts.flatMap((p) => (p.content?.$case === 'data' ? [p.content.value] : [])),
      [{ bugs: [1, 2] }],
    );
    assert.deepEqual(
      got.history.map((h) => h.role),
      [Role.ROLE_USER, Role.ROLE_AGENT, Role.ROLE_AGENT],
    );
    assert.match(textsOf(got.history[2]!.parts)[0]!, /^completed\nResult: two bugs/);
    assert.equal((await toBob.getTask({ tenant: '', id: task.id, historyLength: 1 })).history.length, 1);
    await a2aRefused(toBob.getTask({ tenant: '', id: 't-doesnotexist' }), 'TaskNotFoundError', -32001);
    await a2aRefused(toBob.getTask({ tenant: '', id: 'not a task id' }), 'TaskNotFoundError', -32001);
    const stranger = await a2aClient(d, carolSecret, 'bob');
    await a2aRefused(stranger.getTask({ tenant: '', id: task.id }), 'TaskNotFoundError', -32001);
    const elsewhere = await a2aClient(d, aliceSecret, 'carol');
    await a2aRefused(elsewhere.getTask({ tenant: '', id: task.id }), 'TaskNotFoundError', -32001);
  });

  it('ListTasks lists what the caller asked of this agent, by state, in pages', async () => {
    const a = asTask(await toBob.sendMessage(sendReq(message('list me one'))));
    const b = asTask(await toBob.sendMessage(sendReq(message('list me two'))));
    await update(a.id, 'working');
    const forCarol = await raw(d.url, '/task/create', { token: aliceSecret, body: JSON.stringify({ to: 'carol', title: 'not for bob' }) });
    assert.equal(forCarol.status, 200);
    const list = (p: Partial<Parameters<Client['listTasks']>[0]> = {}) =>
      toBob.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined, ...p });
    const all = await list();
    assert.deepEqual(
      all.tasks.slice(0, 2).map((t) => t.id),
      [a.id, b.id],
      'newest change first',
    );
    assert.equal(all.nextPageToken, '');
    assert.ok(all.tasks.every((t) => t.metadata?.to === 'bob'));
    const working = await list({ status: TaskState.TASK_STATE_WORKING });
    assert.deepEqual(
      working.tasks.map((t) => t.id),
      [a.id],
    );
    const first = await list({ pageSize: 1 });
    assert.equal(first.tasks.length, 1);
    assert.ok(first.nextPageToken);
    const second = await list({ pageSize: 1, pageToken: first.nextPageToken });
    assert.equal(second.tasks[0]!.id, b.id);
    assert.equal(first.tasks[0]!.artifacts.length + first.tasks[0]!.history.length, 0, 'no artifacts or history unless asked');
    const byContext = await list({ contextId: b.contextId, historyLength: 5 });
    assert.deepEqual(
      byContext.tasks.map((t) => t.id),
      [b.id],
    );
    assert.equal(byContext.tasks[0]!.history.length, 1);
  });

  it('CancelTask cancels an open task and refuses a terminal one', async () => {
    const task = asTask(await toBob.sendMessage(sendReq(message('never mind this'))));
    const canceled = await toBob.cancelTask({ tenant: '', id: task.id, metadata: { reason: 'not needed' } });
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    assert.deepEqual(textsOf(canceled.status?.message?.parts ?? []), ['not needed']);
    await a2aRefused(toBob.cancelTask({ tenant: '', id: task.id, metadata: undefined }), 'TaskNotCancelableError', -32002);
    await a2aRefused(toBob.sendMessage(sendReq(message('more', { taskId: task.id }))), 'UnsupportedOperationError', -32004);
    await a2aRefused(toBob.cancelTask({ tenant: '', id: 't-0', metadata: undefined }), 'TaskNotFoundError', -32001);
  });

  it('SendStreamingMessage streams the assignee moving the task to completed, ending with the artifact', async () => {
    const seen: StreamResponse['payload'][] = [];
    for await (const ev of toBob.sendMessageStream(sendReq(message('Stream me a result')))) {
      seen.push(ev.payload);
      const p = ev.payload;
      if (p?.$case === 'task') await update(p.value.id, 'working');
      if (p?.$case === 'statusUpdate' && p.value.status?.state === TaskState.TASK_STATE_WORKING)
        await update(p.value.taskId, 'completed', { result: { summary: 'done', data: { ok: true } } });
    }
    assert.deepEqual(
      seen.map((p) => (p?.$case === 'statusUpdate' ? `status:${p.value.status?.state}` : p?.$case)),
      ['task', `status:${TaskState.TASK_STATE_WORKING}`, 'artifactUpdate', `status:${TaskState.TASK_STATE_COMPLETED}`],
    );
    const art = seen[2];
    assert.ok(art?.$case === 'artifactUpdate');
    assert.deepEqual(
      art.value.artifact!.parts.map((p) => p.content?.value),
      ['done', { ok: true }],
    );
  });

  it('SubscribeToTask follows a question, the answer sent into the task, and the end', async () => {
    const task = asTask(await toBob.sendMessage(sendReq(message('Which branch?'))));
    const states: TaskState[] = [];
    let question = '';
    for await (const ev of toBob.resubscribeTask({ tenant: '', id: task.id })) {
      const p = ev.payload;
      if (p?.$case === 'task') await update(task.id, 'input_required', { note: 'main or dev?' });
      if (p?.$case !== 'statusUpdate') continue;
      states.push(p.value.status!.state);
      if (p.value.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
        question = textsOf(p.value.status.message!.parts)[0]!;
        const answered = asTask(await toBob.sendMessage(sendReq(message('dev', { taskId: task.id, contextId: task.contextId }))));
        assert.equal(answered.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
        const reply = await until('bob has the answer', async () => (await bob.inbox({ include_bodies: true, thread_id: task.contextId })).messages.find((m) => m.body === 'dev'));
        assert.equal(reply.subject, 'Re: Task: Which branch?');
        await update(task.id, 'working');
        await update(task.id, 'completed', { result: { summary: 'dev it is' } });
      }
    }
    assert.equal(question, 'main or dev?');
    assert.deepEqual(states, [TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]);
    await a2aRefused(
      (async () => {
        for await (const ev of toBob.resubscribeTask({ tenant: '', id: task.id })) void ev;
      })(),
      'UnsupportedOperationError',
      -32004,
    );
  });

  it('a stream whose client leaves holds no parked wait', async () => {
    const task = asTask(await toBob.sendMessage(sendReq(message('watch and leave'))));
    const ac = new AbortController();
    const watching = (async () => {
      for await (const ev of toBob.resubscribeTask({ tenant: '', id: task.id }, { signal: ac.signal })) void ev;
    })();
    await until('the stream parked', () => d.engine.parkedWaits() > 0);
    ac.abort();
    await assert.rejects(watching);
    await until('its wait left', () => d.engine.parkedWaits() === 0);
  });

  it('a blocking SendMessage answers once the task is done', async () => {
    const blocking = await a2aClient(d, aliceSecret, 'bob', false);
    const pending = blocking.sendMessage(sendReq(message('Block until done')));
    const mail = await until('bob has the task', async () => (await bob.inbox({})).messages.find((m) => m.subject === 'Task: Block until done'));
    const t = await until('the task exists', async () =>
      (await bob.call<{ tasks: { task_id: string; thread_id: string }[] }>('/task/list', { role: 'assigned' })).tasks.find((x) => x.thread_id === mail.message_id),
    );
    await update(t.task_id, 'completed', { result: { summary: 'blocked and done' } });
    const done = asTask(await pending);
    assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.deepEqual(textsOf(done.artifacts[0]!.parts), ['blocked and done']);
  });

  it('answers refusals with A2A and JSON-RPC error codes', async () => {
    const rpc = async (method: string, params: unknown, headers: Record<string, string> = {}, token: string | null = aliceSecret) =>
      raw(d.url, '/a2a/bob', { ...(token ? { token } : {}), headers: { 'a2a-version': '1.0', ...headers }, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }) });
    const anon = await rpc('GetTask', { id: 't-1' }, {}, null);
    assert.equal(anon.status, 401);
    assert.equal(anon.headers.get('www-authenticate'), 'Bearer');
    assert.equal(anon.json.error.data[0].reason, 'UNAUTHENTICATED');
    const codeOf = async (method: string, params: unknown, headers: Record<string, string> = {}) => (await rpc(method, params, headers)).json.error?.code;
    assert.equal(await codeOf('message/send', {}), -32009);
    assert.equal(await codeOf('GetTask', { id: 't-1' }, { 'a2a-version': '0.3' }), -32009);
    assert.equal(await codeOf('SendMessage', { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ url: 'https://example.com/x.png', mediaType: 'image/png' }] } }), -32005);
    assert.equal(
      await codeOf('SendMessage', { message: { messageId: 'm2', role: 'ROLE_USER', parts: [{ text: 'x' }] }, configuration: { acceptedOutputModes: ['image/png'] } }),
      -32005,
    );
    assert.equal(await codeOf('SendMessage', { message: { messageId: 'm3', parts: [] } }), -32602);
    assert.equal(await codeOf('SendMessage', {}), -32602);
    assert.equal(await codeOf('SendMessage', { message: { messageId: 'm4', parts: [{ text: 'x' }], contextId: 'elsewhere' } }), -32004);
    assert.equal(await codeOf('CreateTaskPushNotificationConfig', { taskId: 't-1', url: 'http://127.0.0.1:1/' }), -32001);
    assert.equal(await codeOf('GetExtendedAgentCard', {}), -32004);
    assert.equal(await codeOf('NoSuchMethod', {}), -32601);
    const notJson = await raw(d.url, '/a2a/bob', { token: aliceSecret, body: '{"jsonrpc":' });
    assert.equal(notJson.json.error.code, -32700);
    const big = await rpc('SendMessage', { message: { messageId: 'm5', parts: [{ text: 'x'.repeat(70_000) }] } });
    assert.equal(big.json.error.code, -32602);
    assert.equal(big.json.error.data[0].fieldViolations[0].field, 'message.parts');
    assert.equal((await raw(d.url, '/a2a/nobody', { token: aliceSecret, body: '{}' })).status, 404);
  });
});
