// A2A push notifications against a real daemon, driven by the official SDK's client: the four
// config methods, a config given with SendMessage, the notifications a receiver on loopback gets
// while the assignee moves the task (StreamResponse JSON in order, the token and Authorization the
// config asked for, the daemon's M4A-Signature), configs owned by their account, the loopback rule,
// limits (a replaced config counted once; a cap per account on the daemon), and a restart that
// catches up on a change made while the daemon was down.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Role, StreamResponse, TaskState, type Message, type SendMessageRequest, type Task, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, createAuthenticatingFetchWithRetry, type Client } from '@a2a-js/sdk/client';
import { MailClient } from '../src/client/http-client.js';
import { PUSH_KIND, PUSH_LIMITS, PushConfigs, pushRow } from '../src/doors/a2a/a2a-push.js';
import { A2aPushSender } from '../src/doors/a2a/a2a-push-sender.js';
import { purposeKey, verifyWebhookSignature, WEBHOOK_KEY_FILE } from '../src/wake/webhook-signing.js';
import { raw, startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

const message = (text: string): Message => ({
  messageId: randomUUID(),
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const sendReq = (m: Message, push?: TaskPushNotificationConfig): SendMessageRequest => ({
  tenant: '',
  message: m,
  // Not blocking: the task would otherwise be answered only once it settles.
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: push, returnImmediately: true },
  metadata: undefined,
});
const asTask = (r: Message | Task): Task => {
  assert.ok('id' in r && 'status' in r, 'SendMessage answered with a task');
  return r;
};
const config = (taskId: string, url: string, more: Partial<TaskPushNotificationConfig> = {}): TaskPushNotificationConfig => ({
  tenant: '',
  id: '',
  taskId,
  url,
  token: '',
  authentication: undefined,
  ...more,
});

async function a2aClient(d: TestDaemon, secret: string, agent: string): Promise<Client> {
  const fetchImpl = createAuthenticatingFetchWithRetry(fetch, { headers: async () => ({ authorization: `Bearer ${secret}` }), shouldRetryWithHeaders: async () => undefined });
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl })] });
  return new ClientFactory(options).createFromUrl(`${d.url}/a2a/${agent}/`);
}

async function a2aRefused(p: Promise<unknown>, name: string, code: number): Promise<void> {
  await assert.rejects(p, (e: Error & { envelopeCode?: number; cause?: { name?: string; envelopeCode?: number } }) => {
    const err = e.envelopeCode === undefined && e.cause ? e.cause : e;
    assert.equal(err.name, name, e.message);
    assert.equal(err.envelopeCode, code);
    return true;
  });
}

interface Got {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A receiver on loopback that keeps what it is sent and answers `status`. */
async function receiver(): Promise<{ url: string; got: Got[]; status: { code: number }; close(): Promise<void> }> {
  const got: Got[] = [];
  const status = { code: 200 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(status.code).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, got, status, close: () => new Promise((r) => server.close(() => r())) };
}

/** The notifications of one task a receiver got, parsed by the SDK, in arrival order. */
const eventsOf = (got: Got[], path: string): StreamResponse[] => got.filter((g) => g.path === path).map((g) => StreamResponse.fromJSON(JSON.parse(g.body)));
const kindsOf = (events: StreamResponse[]): string[] =>
  events.map((e) => (e.payload?.$case === 'statusUpdate' ? `status:${TaskState[e.payload.value.status!.state]}` : (e.payload?.$case ?? '?')));

describe('A2A push notifications', () => {
  let dir: string;
  let d: TestDaemon;
  let rx: Awaited<ReturnType<typeof receiver>>;
  let aliceSecret: string;
  let carolSecret: string;
  let bob: MailClient;
  let bobSecret: string;
  let toBob: Client;
  const update = (taskId: string, state: string, more: Record<string, unknown> = {}) => bob.call<{ version: number }>('/task/update', { task_id: taskId, state, ...more });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'm4a-a2a-push-'));
    rx = await receiver();
    d = await startTestDaemon({ dataDir: dir });
    aliceSecret = (await d.account('alice')).secret;
    carolSecret = (await d.account('carol')).secret;
    ({ client: bob, secret: bobSecret } = await d.account('bob'));
    toBob = await a2aClient(d, aliceSecret, 'bob');
  });
  after(async () => {
    await d.stop();
    await rx.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the card offers push notifications', async () => {
    assert.equal((await toBob.getAgentCard()).capabilities?.pushNotifications, true);
  });

  it('notifies every change in order, with the token, the Authorization and a signature it can check', async () => {
    const task = asTask(await toBob.sendMessage(sendReq(message('Port the lexer'))));
    const made = await toBob.createTaskPushNotificationConfig(
      config(task.id, `${rx.url}/t1`, { id: 'mine', token: 'tok-123', authentication: { scheme: 'Bearer', credentials: 'cred-456' } }),
    );
    assert.equal(made.id, 'mine');
    assert.equal(made.url, `${rx.url}/t1`);
    assert.equal(made.token, '', 'the token is never shown back');
    assert.equal(made.authentication?.credentials ?? '', '', 'nor the credentials');
    assert.equal(made.authentication?.scheme, 'Bearer');

    await update(task.id, 'working', { note: 'lexing' });
    await update(task.id, 'completed', { note: 'ported', result: { summary: 'the lexer is ported', data: { files: 3 } } });
    await until('three notifications', () => rx.got.filter((g) => g.path === '/t1').length === 3);
    const events = eventsOf(rx.got, '/t1');
    assert.deepEqual(kindsOf(events), ['status:TASK_STATE_WORKING', 'artifactUpdate', 'status:TASK_STATE_COMPLETED']);
    const art = events[1]!.payload?.$case === 'artifactUpdate' ? events[1]!.payload.value : undefined;
    assert.equal(art?.taskId, task.id);
    assert.deepEqual(
      art?.artifact?.parts.map((p) => p.content?.$case),
      ['text', 'data'],
    );
    const first = events[0]!.payload?.$case === 'statusUpdate' ? events[0]!.payload.value : undefined;
    assert.equal(first?.contextId, task.contextId);

    const key = readFileSync(join(dir, WEBHOOK_KEY_FILE), 'utf8').trim();
    for (const g of rx.got.filter((x) => x.path === '/t1')) {
      assert.equal(g.headers['x-a2a-notification-token'], 'tok-123');
      assert.equal(g.headers.authorization, 'Bearer cred-456');
      assert.equal(g.headers['content-type'], 'application/a2a+json');
      assert.match(String(g.headers['m4a-event-id']), /^a2a-push-[0-9a-f]{40}$/);
      const header = String(g.headers['m4a-signature']);
      assert.equal(verifyWebhookSignature({ key: purposeKey(key, 'a2a-push'), header, body: g.body }).ok, true);
      // A body any local account can aim at any loopback URL never verifies as a wake webhook.
      assert.equal(verifyWebhookSignature({ key, header, body: g.body }).ok, false);
    }
    // A terminal task never changes: its configs are gone, and a new one is refused.
    await until('configs deleted', async () => (await toBob.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.length === 0);
    await a2aRefused(toBob.createTaskPushNotificationConfig(config(task.id, `${rx.url}/late`)), 'UnsupportedOperationError', -32004);
  });

  it('a config given with SendMessage notifies from the first change', async () => {
    const task = asTask(await toBob.sendMessage(sendReq(message('Measure the build'), config('', `${rx.url}/t2`, { token: 'tok-2' }))));
    const list = await toBob.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
    assert.equal(list.configs.length, 1);
    assert.match(list.configs[0]!.id, /^p-[0-9a-f]{16}$/);
    await update(task.id, 'input_required', { note: 'which target?' });
    await until('notified', () => rx.got.some((g) => g.path === '/t2'));
    assert.deepEqual(kindsOf(eventsOf(rx.got, '/t2')), ['status:TASK_STATE_INPUT_REQUIRED']);
    const st = eventsOf(rx.got, '/t2')[0]!.payload;
    assert.ok(st?.$case === 'statusUpdate');
    assert.deepEqual(
      st.value.status?.message?.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')),
      ['which target?'],
    );
  });

  it('Get, List and Delete see only the caller’s own configs; others’ are not found', async () => {
    const task = asTask(await toBob.sendMessage(sendReq(message('Rename the module'))));
    await toBob.createTaskPushNotificationConfig(config(task.id, `${rx.url}/a`, { id: 'a' }));
    await toBob.createTaskPushNotificationConfig(config(task.id, `${rx.url}/b`, { id: 'b' }));
    // Same id again: replaced, not added.
    await toBob.createTaskPushNotificationConfig(config(task.id, `${rx.url}/b2`, { id: 'b' }));
    const got = await toBob.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'b' });
    assert.equal(got.url, `${rx.url}/b2`);
    const page1 = await toBob.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 1, pageToken: '' });
    assert.deepEqual(
      page1.configs.map((c) => c.id),
      ['a'],
    );
    const page2 = await toBob.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 1, pageToken: page1.nextPageToken });
    assert.deepEqual(
      page2.configs.map((c) => c.id),
      ['b'],
    );
    assert.equal(page2.nextPageToken, '');

    // The assignee is a party of the task, yet sees none of alice's configs.
    const asBob = await a2aClient(d, bobSecret, 'bob');
    assert.equal((await asBob.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.length, 0);
    await a2aRefused(asBob.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'a' }), 'TaskNotFoundError', -32001);
    await a2aRefused(asBob.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'a' }), 'TaskNotFoundError', -32001);
    // A stranger cannot even name the task.
    const asCarol = await a2aClient(d, carolSecret, 'bob');
    await a2aRefused(asCarol.createTaskPushNotificationConfig(config(task.id, `${rx.url}/x`)), 'TaskNotFoundError', -32001);

    await toBob.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'a' });
    await a2aRefused(toBob.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'a' }), 'TaskNotFoundError', -32001);
    await a2aRefused(toBob.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'a' }), 'TaskNotFoundError', -32001);
  });

  it('refuses URLs off this machine, header-splitting tokens and a ninth config, changing nothing', async () => {
    const task = asTask(await toBob.sendMessage(sendReq(message('Audit the deps'))));
    const rpc = (params: unknown) =>
      raw(d.url, '/a2a/bob', { token: aliceSecret, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'CreateTaskPushNotificationConfig', params }) });
    const field = async (params: unknown): Promise<string> => {
      const r = await rpc(params);
      assert.equal(r.json.error?.code, -32602, JSON.stringify(r.json));
      return r.json.error.data[0].fieldViolations[0].field as string;
    };
    for (const url of ['http://169.254.169.254/latest', 'https://example.com/hook', 'http://10.0.0.1/x', 'file:///etc/passwd', 'http://user:pw@127.0.0.1/x', `${d.url}/mail/send`])
      assert.equal(await field({ taskId: task.id, url }), 'url', url);
    assert.equal(await field({ taskId: task.id, url: `${rx.url}/x`, token: 'a\r\nx-evil: 1' }), 'token');
    assert.equal(await field({ taskId: task.id, url: `${rx.url}/x`, authentication: { scheme: 'Bearer', credentials: 'x\ny' } }), 'authentication.credentials');
    assert.equal(await field({ taskId: task.id, url: `${rx.url}/x`, id: '../../etc' }), 'id');
    assert.equal(await field({ url: `${rx.url}/x` }), 'taskId');
    assert.equal((await toBob.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.length, 0, 'nothing was stored');
    for (let i = 0; i < 8; i++) await toBob.createTaskPushNotificationConfig(config(task.id, `${rx.url}/n${i}`, { id: `n${i}` }));
    const ninth = await rpc({ taskId: task.id, url: `${rx.url}/n8`, id: 'n8' });
    assert.equal(ninth.json.error?.code, -32602);
    assert.match(ninth.json.error.message, /at most 8/);
    assert.equal((await toBob.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.length, 8);
  });

  /** CreateTaskPushNotificationConfig as JSON-RPC: the raw answer. */
  const createRaw = (secret: string, params: Record<string, unknown>) =>
    raw(d.url, '/a2a/bob', { token: secret, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'CreateTaskPushNotificationConfig', params }) });
  const countOn = async (client: Client, taskId: string): Promise<number> =>
    (await client.listTaskPushNotificationConfig({ tenant: '', taskId, pageSize: 0, pageToken: '' })).configs.length;

  it(`at most ${PUSH_LIMITS.perAccount} configs of one account on the daemon: the last is taken, the next refused and not stored, a replacement or another account still taken`, async () => {
    const { secret: daveSecret } = await d.account('dave');
    const daveToBob = await a2aClient(d, daveSecret, 'bob');
    const tasks: string[] = [];
    for (let made = 0; made < PUSH_LIMITS.perAccount; made += PUSH_LIMITS.perTask) {
      const t = asTask(await daveToBob.sendMessage(sendReq(message(`Shard ${tasks.length}`))));
      tasks.push(t.id);
      const n = Math.min(PUSH_LIMITS.perTask, PUSH_LIMITS.perAccount - made);
      for (let i = 0; i < n; i++) assert.equal((await createRaw(daveSecret, { taskId: t.id, id: `d${i}`, url: `${rx.url}/dave` })).json.result?.id, `d${i}`);
    }
    const spare = asTask(await daveToBob.sendMessage(sendReq(message('One shard too many')))).id;
    const over = await createRaw(daveSecret, { taskId: spare, id: 'd0', url: `${rx.url}/dave` });
    assert.equal(over.json.error?.code, -32602, JSON.stringify(over.json));
    assert.equal(over.json.error.data[0].fieldViolations[0].field, 'configs');
    assert.match(over.json.error.message, new RegExp(`at most ${PUSH_LIMITS.perAccount} .* on this daemon`));
    assert.equal(await countOn(daveToBob, spare), 0, 'nothing was stored');
    // At the cap, a config of dave's is still replaced, and carol is not held back by dave.
    assert.equal((await createRaw(daveSecret, { taskId: tasks[0]!, id: 'd0', url: `${rx.url}/dave-again` })).json.result?.url, `${rx.url}/dave-again`);
    const carolToBob = await a2aClient(d, carolSecret, 'bob');
    const carolTask = asTask(await carolToBob.sendMessage(sendReq(message('Shard for carol'))));
    assert.equal((await carolToBob.createTaskPushNotificationConfig(config(carolTask.id, `${rx.url}/carol2`, { id: 'c2' }))).id, 'c2');
    // A delete frees one place, exactly one.
    await daveToBob.deleteTaskPushNotificationConfig({ tenant: '', taskId: tasks[0]!, id: 'd0' });
    assert.equal((await createRaw(daveSecret, { taskId: spare, id: 'd0', url: `${rx.url}/dave` })).json.result?.id, 'd0');
    assert.equal((await createRaw(daveSecret, { taskId: spare, id: 'd1', url: `${rx.url}/dave` })).json.error?.code, -32602);
    assert.equal(await countOn(daveToBob, spare), 1);
  });

  it("SendMessage's check holds the place it found until its create: a second send at the last place is refused before it makes a task", async () => {
    // A real A2aPushSender as the watch (the daemon's kind), not started: counting needs no feed, and
    // 255 configs counted in it reach the last place without a task each.
    const watch = new A2aPushSender({
      engine: d.engine,
      post: () => Promise.reject(new Error('nothing is sent here')),
    });
    for (let i = 0; i < PUSH_LIMITS.perAccount - 1; i++) watch.added({ task_id: `t-${i}`, account: 'erin', id: 'p' });
    const configs = new PushConfigs({ store: d.store, hostId: 'h', now: () => Date.now(), watch });
    await d.account('erin');
    const erin = { account: (await d.store.getAccount('erin'))!, session: null };
    const p = { url: `${rx.url}/race`, taskId: '' };
    const first = configs.reserve(erin, p);
    assert.throws(() => configs.reserve(erin, p), /at most 256 push notification configs of one account/);
    first();
    first(); // a second release frees nothing more
    const second = configs.reserve(erin, p);
    assert.throws(() => configs.reserve(erin, p), /at most 256/, 'one release, one place');
    second();
    watch.added({ task_id: 't-last', account: 'erin', id: 'p' });
    assert.throws(() => configs.reserve(erin, p), /at most 256/, 'the watch full: no place to hold');
    watch.removed({ task_id: 't-last', account: 'erin', id: 'p' });
    configs.reserve(erin, p)();
  });

  it('a receiver that fails is retried with the same event; configs outlive a restart', async () => {
    const task = asTask(await toBob.sendMessage(sendReq(message('Bisect the regression'))));
    await toBob.createTaskPushNotificationConfig(config(task.id, `${rx.url}/t3`, { id: 'r' }));
    rx.status.code = 503;
    await update(task.id, 'working');
    await until('first attempt', () => rx.got.some((g) => g.path === '/t3'));
    rx.status.code = 200;
    await until('retried after the 503', () => rx.got.filter((g) => g.path === '/t3').length >= 2, 10_000);
    const before = rx.got.filter((g) => g.path === '/t3');
    assert.equal(new Set(before.map((g) => g.headers['m4a-event-id'])).size, 1, 'the retry is the same event');

    // The daemon's watch list is rebuilt from the store at start.
    await d.close();
    d = await startTestDaemon({ dataDir: dir });
    bob = new MailClient({ url: d.url, token: bobSecret });
    toBob = await a2aClient(d, aliceSecret, 'bob');
    await update(task.id, 'completed', { result: { summary: 'found it' } });
    await until('artifact and completed after the restart', () => eventsOf(rx.got, '/t3').length === 4);
    assert.deepEqual(kindsOf(eventsOf(rx.got, '/t3')), ['status:TASK_STATE_WORKING', 'status:TASK_STATE_WORKING', 'artifactUpdate', 'status:TASK_STATE_COMPLETED']);
  });
});

describe('A2A push notifications: the daemon-wide count', () => {
  let dir: string;
  let d: TestDaemon;
  let rx: Awaited<ReturnType<typeof receiver>>;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'm4a-a2a-push-count-'));
    rx = await receiver();
  });
  after(async () => {
    await d.stop();
    await rx.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a replaced config is counted once: one place under the cap, many replacements leave it for another account', async () => {
    d = await startTestDaemon({ dataDir: dir });
    const alice = (await d.account('alice')).secret;
    await d.account('bob');
    const carol = (await d.account('carol')).secret;
    const create = (secret: string, params: Record<string, unknown>) =>
      raw(d.url, '/a2a/bob', { token: secret, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'CreateTaskPushNotificationConfig', params }) });
    const task = asTask(await (await a2aClient(d, alice, 'bob')).sendMessage(sendReq(message('Profile the cache')))).id;
    const carolTask = asTask(await (await a2aClient(d, carol, 'bob')).sendMessage(sendReq(message('Check the cache key')))).id;
    assert.equal((await create(alice, { taskId: task, id: 'same', url: `${rx.url}/same` })).json.result?.id, 'same');
    // The rest of the daemon's share, up to one place, as configs of the assignee's (written to the
    // store and loaded at start: creating them one by one would take the test's whole budget).
    const at = d.engine.clock.now();
    const history = (await d.engine.tasks.get(await d.engine.callerFor((await d.store.getAccount('bob'))!, null), { task_id: task })).history.length;
    const seeds = Array.from({ length: PUSH_LIMITS.perDaemon - 2 }, (_, i) =>
      pushRow({ task_id: task, id: `seed-${i}`, account: 'bob', url: `${rx.url}/seed`, host: d.hostId, created_at: new Date(at).toISOString(), sent: history, result: 'null' }, at),
    );
    await d.store.insertRecords(seeds);
    await d.close();
    d = await startTestDaemon({ dataDir: dir });
    assert.equal((await d.store.listRecords(PUSH_KIND, '', PUSH_LIMITS.perDaemon * 2)).length, PUSH_LIMITS.perDaemon - 1);

    for (let i = 0; i < 50; i++) assert.equal((await create(alice, { taskId: task, id: 'same', url: `${rx.url}/same-${i}` })).json.result?.id, 'same');
    // The last place is carol's; the next config is refused, until a delete frees the place.
    assert.equal((await create(carol, { taskId: carolTask, id: 'c1', url: `${rx.url}/carol` })).json.result?.id, 'c1');
    const full = await create(carol, { taskId: carolTask, id: 'c2', url: `${rx.url}/carol` });
    assert.equal(full.json.error?.data?.[0]?.reason, 'RATE_LIMITED', JSON.stringify(full.json));
    await (await a2aClient(d, carol, 'bob')).deleteTaskPushNotificationConfig({ tenant: '', taskId: carolTask, id: 'c1' });
    assert.equal((await create(carol, { taskId: carolTask, id: 'c2', url: `${rx.url}/carol` })).json.result?.id, 'c2');
  });
});
