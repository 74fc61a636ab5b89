// The Codex app-server wake adapter against a fake app-server that speaks the 0.171.0 protocol
// (test/support/fake-codex-app-server.ts): the exact requests it sends, the thread states it
// handles, approvals refused, mail deferred past an active turn, faults (overload, timeout, abort,
// a dropped connection), and the three transports (ws://, unix://, spawn over stdio).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { createCodexAdapter, type CodexAdapter, type CodexAdapterOptions } from '../src/wake/codex-app-server.js';
import type { WakeRequest, WakeSession } from '../src/wake/types.js';
import { FakeCodexAppServer, type FakeOptions } from './support/fake-codex-app-server.js';

const FAKE = fileURLToPath(new URL('./support/fake-codex-app-server.ts', import.meta.url));
const REPO = fileURLToPath(new URL('../', import.meta.url));
const TEXT = 'You have new mail in mail4agent (1 message):\n- m-1 from claude: "hello"';
const CWD = '/example/project-a'; // a name only: the fake never touches it

const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function session(over: Partial<WakeSession> = {}): WakeSession {
  return { id: 's-abc', lineage: 's-abc', slug: 'codex/project-a', pid: 4242, live: true, provider: 'codex', providerSessionId: null, cwd: CWD, listening: false, ...over };
}
let n = 0;
function request(s: WakeSession | null, urgent = false): WakeRequest {
  return {
    eventId: `ev-${++n}`,
    account: 'codex',
    session: s,
    mail: [{ message_id: 'm-1', from: 'claude', subject: 'hello', priority: urgent ? 'urgent' : 'normal', thread_id: 'm-1' }],
    urgent,
    text: TEXT,
  };
}
const signal = (): AbortSignal => new AbortController().signal;

async function world(
  fakeOpts: FakeOptions = {},
  adapterOpts: CodexAdapterOptions = {},
): Promise<{ fake: FakeCodexAppServer; adapter: CodexAdapter; listen: string; events: { event: string; fields: any }[] }> {
  const fake = new FakeCodexAppServer(fakeOpts);
  const listen = await fake.listen();
  const events: { event: string; fields: any }[] = [];
  const adapter = createCodexAdapter(
    { kind: 'codex-app-server', listen },
    { requestTimeoutMs: 2_000, pollMs: 50, log: (event, fields) => events.push({ event, fields }), ...adapterOpts },
  );
  cleanups.push(
    () => adapter.close(),
    () => fake.close(),
  );
  return { fake, adapter, listen, events };
}

async function until(what: string, cond: () => boolean, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The methods a connection sent after initialize, in order. */
const methods = (fake: FakeCodexAppServer): string[] =>
  fake
    .requests()
    .map((r) => r.method)
    .filter((m) => m !== 'initialize');
const textInput = [{ type: 'text', text: TEXT, text_elements: [] }];

describe('codex app-server wake adapter (fake app-server, protocol 0.171.0)', () => {
  it('the fake refuses requests before initialize, and a second initialize, as codex does', async () => {
    const fake = new FakeCodexAppServer();
    const listen = await fake.listen();
    cleanups.push(() => fake.close());
    const ws = new WebSocket(listen);
    await new Promise((r) => ws.once('open', r));
    const replies: any[] = [];
    ws.on('message', (d) => replies.push(JSON.parse((d as Buffer).toString('utf8')))); // ws's default binaryType: one Buffer
    ws.send(JSON.stringify({ method: 'thread/list', id: 1, params: {} }));
    ws.send(JSON.stringify({ method: 'initialize', id: 2, params: { clientInfo: { name: 't', title: null, version: '0' }, capabilities: null } }));
    ws.send(JSON.stringify({ method: 'initialize', id: 3, params: { clientInfo: { name: 't', title: null, version: '0' }, capabilities: null } }));
    await until('three replies', () => replies.length === 3);
    ws.close();
    assert.deepEqual(replies[0], { id: 1, error: { code: -32600, message: 'Not initialized' } });
    assert.equal(replies[1].result.platformOs, 'linux');
    assert.deepEqual(replies[2], { id: 3, error: { code: -32600, message: 'Already initialized' } });
  });

  it('idle thread: initialize once, thread/read, then turn/start with only the wake text', async () => {
    const { fake, adapter } = await world();
    const tid = fake.addThread({ cwd: CWD, state: 'idle' });
    const r = await adapter.wake(request(session({ providerSessionId: tid })), signal());
    assert.equal(r.ok, true, r.detail);
    const turnId = fake.threads.get(tid)!.turns[0]!.id;
    assert.equal(r.detail, `turn ${turnId} started on thread ${tid}`);
    const inbound = fake.log.filter((e) => e.dir === 'in').map((e) => e.msg);
    assert.deepEqual(inbound[0], {
      method: 'initialize',
      id: 1,
      params: {
        clientInfo: { name: 'm4a', title: 'm4a mailbox', version: '0' },
        capabilities: { experimentalApi: false, requestAttestation: false, optOutNotificationMethods: inbound[0].params.capabilities.optOutNotificationMethods },
      },
    });
    assert.deepEqual(inbound[1], { method: 'initialized' });
    assert.deepEqual(fake.requests().slice(1), [
      { conn: 1, method: 'thread/read', params: { threadId: tid } },
      { conn: 1, method: 'turn/start', params: { threadId: tid, input: textInput } },
    ]);
    // A second wake reuses the connection: no second initialize.
    fake.completeTurn(tid);
    const r2 = await adapter.wake(request(session({ providerSessionId: tid })), signal());
    assert.equal(r2.ok, true, r2.detail);
    assert.equal(fake.requests('initialize').length, 1);
    assert.equal(fake.connections(), 1);
  });

  it('no thread id: thread/list by cwd (every top-level source kind, newest first) picks the latest thread', async () => {
    const { fake, adapter } = await world();
    fake.addThread({ cwd: CWD, state: 'idle', updatedAt: 100 });
    const newest = fake.addThread({ cwd: CWD, state: 'idle', updatedAt: 300, source: 'exec' });
    fake.addThread({ cwd: '/elsewhere', state: 'idle', updatedAt: 500 });
    const r = await adapter.wake(request(session({ providerSessionId: null })), signal());
    assert.equal(r.ok, true, r.detail);
    assert.deepEqual(fake.requests('thread/list')[0]!.params, {
      cwd: CWD,
      sourceKinds: ['cli', 'vscode', 'exec', 'appServer'],
      sortKey: 'updated_at',
      sortDirection: 'desc',
      archived: false,
      limit: 1,
    });
    assert.equal(fake.requests('turn/start')[0]!.params.threadId, newest);
  });

  it('a thread notLoaded on this app-server is resumed (metadata only), then gets its turn', async () => {
    const { fake, adapter } = await world();
    const tid = fake.addThread({ cwd: CWD, state: 'notLoaded' });
    const r = await adapter.wake(request(session({ providerSessionId: tid })), signal());
    assert.equal(r.ok, true, r.detail);
    assert.deepEqual(methods(fake), ['thread/read', 'thread/resume', 'turn/start']);
    assert.deepEqual(fake.requests('thread/resume')[0]!.params, { threadId: tid, excludeTurns: true });
  });

  it('a thread with no rollout: ok:false with the reason, and no turn', async () => {
    const { fake, adapter } = await world();
    const tid = fake.addThread({ cwd: CWD, state: 'noRollout' });
    const r = await adapter.wake(request(session({ providerSessionId: tid })), signal());
    assert.equal(r.ok, false);
    assert.match(r.detail, new RegExp(`thread ${tid} has no rollout .*no rollout found for thread id ${tid}`));
    assert.deepEqual(methods(fake), ['thread/read', 'thread/resume']);
  });

  it('a thread another Codex process holds, a session of another program, systemError, an unknown status: ok:false', async () => {
    const { fake, adapter } = await world();
    const held = fake.addThread({ cwd: CWD, state: 'heldElsewhere' });
    let r = await adapter.wake(request(session({ providerSessionId: held })), signal());
    assert.deepEqual([r.ok, /held by another Codex process/.test(r.detail)], [false, true], r.detail);
    r = await adapter.wake(request(session({ provider: 'claude', providerSessionId: 'c0ffee' })), signal());
    assert.deepEqual(r, { ok: false, detail: 'session s-abc is not a Codex session (provider claude)' });
    r = await adapter.wake(request(null), signal());
    assert.equal(r.ok, false);
    const broken = fake.addThread({ cwd: CWD, state: 'systemError' });
    r = await adapter.wake(request(session({ providerSessionId: broken })), signal());
    assert.deepEqual([r.ok, /systemError/.test(r.detail)], [false, true], r.detail);
    const weird = fake.addThread({ cwd: CWD, state: 'weird' });
    r = await adapter.wake(request(session({ providerSessionId: weird })), signal());
    assert.deepEqual([r.ok, /status "terminal"/.test(r.detail)], [false, true], r.detail);
    assert.equal(fake.requests('turn/start').length, 0);
  });

  it('urgent mail steers the active turn with expectedTurnId = the running turn', async () => {
    const { fake, adapter } = await world();
    const tid = fake.addThread({ cwd: CWD, state: 'active' });
    const running = fake.activeTurn(tid)!;
    const r = await adapter.wake(request(session({ providerSessionId: tid }), true), signal());
    assert.deepEqual(r, { ok: true, detail: `urgent: steered turn ${running} on thread ${tid}` });
    assert.deepEqual(methods(fake), ['thread/read', 'thread/turns/list', 'turn/steer']);
    assert.deepEqual(fake.requests('thread/turns/list')[0]!.params, { threadId: tid, limit: 1, sortDirection: 'desc', itemsView: 'notLoaded' });
    assert.deepEqual(fake.requests('turn/steer')[0]!.params, { threadId: tid, input: textInput, expectedTurnId: running });
    assert.deepEqual(fake.threads.get(tid)!.turns[0]!.inputs, ['an earlier prompt', TEXT]);
  });

  it('normal mail does not interrupt an active turn: deferred, then a turn starts when the thread goes idle', async (t) => {
    const { fake, adapter, events } = await world({}, { pollMs: 60_000 }); // the notification, not the poll
    const tid = fake.addThread({ cwd: CWD, state: 'active' });
    const r = await adapter.wake(request(session({ providerSessionId: tid })), signal());
    assert.equal(r.ok, true);
    assert.match(r.detail, /^turn active on thread .*: not interrupted; deferred/);
    assert.deepEqual(methods(fake), ['thread/read']);
    assert.equal(adapter.deferred().length, 1);
    // A second mail while it waits: one turn later, both texts in it.
    const second = { ...request(session({ providerSessionId: tid })), text: `${TEXT}\n- m-2 from gemini: "again"` };
    assert.equal((await adapter.wake(second, signal())).ok, true);
    assert.deepEqual(adapter.deferred()[0]!.eventIds.length, 2);
    const ended = Date.now();
    fake.completeTurn(tid);
    await until('the deferred turn/start', () => fake.requests('turn/start').length === 1);
    t.diagnostic(`deferred turn/start ${Date.now() - ended} ms after the active turn completed`);
    assert.deepEqual(fake.requests('turn/start')[0]!.params, { threadId: tid, input: [{ type: 'text', text: `${TEXT}\n\n${second.text}`, text_elements: [] }] });
    assert.equal(fake.requests('turn/steer').length, 0, 'normal mail never steers');
    assert.deepEqual(adapter.deferred(), []);
    assert.equal(events.find((e) => e.event === 'codex.deferred.started')?.fields.turnId, fake.threads.get(tid)!.turns[1]!.id);
  });

  it('a deferred wake also starts by polling when no notification comes, and gives up after deferForMs', async () => {
    const { fake, adapter, events } = await world({}, { pollMs: 30, deferForMs: 300 });
    const a = fake.addThread({ cwd: CWD, state: 'active' });
    assert.equal((await adapter.wake(request(session({ providerSessionId: a })), signal())).ok, true);
    // End the turn behind the adapter's back (no notification): the poll sees idle.
    const th = fake.threads.get(a)!;
    th.turns[0]!.status = 'completed';
    th.status = { type: 'idle' };
    await until('the polled turn/start', () => fake.requests('turn/start').length === 1);
    const b = fake.addThread({ cwd: CWD, state: 'active' });
    assert.equal((await adapter.wake(request(session({ providerSessionId: b })), signal())).ok, true);
    await until('expiry', () => events.some((e) => e.event === 'codex.deferred.expired'), 3_000);
    assert.equal(fake.requests('turn/start').length, 1);
    assert.deepEqual(adapter.deferred(), []);
  });

  it('approval and input requests from the server are refused with the schema refusal; unknown ones get an error', async () => {
    const { fake, adapter, events } = await world();
    const tid = fake.addThread({ cwd: CWD, state: 'notLoaded' });
    assert.equal((await adapter.wake(request(session({ providerSessionId: tid })), signal())).ok, true); // resumed: subscribed
    const turnId = fake.activeTurn(tid)!;
    const ask = (method: string, params: Record<string, unknown> = {}): Promise<any> => fake.serverRequest(tid, method, { turnId, itemId: 'call_1', ...params });
    assert.deepEqual((await ask('item/commandExecution/requestApproval', { command: 'rm -rf /', environmentId: 'local' })).result, { decision: 'decline' });
    assert.deepEqual((await ask('item/fileChange/requestApproval')).result, { decision: 'decline' });
    assert.deepEqual((await ask('item/permissions/requestApproval', { permissions: { network: { enabled: true } } })).result, { permissions: {}, scope: 'turn' });
    assert.deepEqual((await ask('mcpServer/elicitation/request', { serverName: 'x', mode: 'form' })).result, { action: 'decline', content: null, _meta: null });
    assert.deepEqual((await ask('item/tool/requestUserInput', { questions: [] })).result, { answers: {} });
    assert.deepEqual((await ask('execCommandApproval')).result, { decision: { denied: { rejection: 'mail4agent runs this turn unattended: nobody can approve' } } });
    assert.deepEqual((await ask('applyPatchApproval')).result.decision.denied !== undefined, true);
    const unknown = await ask('account/chatgptAuthTokens/refresh');
    assert.deepEqual(unknown.error, { code: -32601, message: 'm4a does not handle account/chatgptAuthTokens/refresh' });
    assert.equal(events.filter((e) => e.event === 'codex.refused').length, 8);
  });

  it('an approval request that arrives with our own turn is declined at once', async () => {
    const { fake, adapter } = await world({ approvalOnTurn: 'item/commandExecution/requestApproval' });
    const tid = fake.addThread({ cwd: CWD, state: 'notLoaded' });
    assert.equal((await adapter.wake(request(session({ providerSessionId: tid })), signal())).ok, true);
    await until('the reply', () => fake.replies().length === 1);
    assert.deepEqual(fake.replies()[0], { id: 0, result: { decision: 'decline' } });
  });

  it('-32001 overloaded is retried with backoff', async () => {
    const { fake, adapter } = await world();
    const tid = fake.addThread({ cwd: CWD, state: 'idle' });
    fake.overload('turn/start', 2);
    const r = await adapter.wake(request(session({ providerSessionId: tid })), signal());
    assert.equal(r.ok, true, r.detail);
    assert.equal(fake.requests('turn/start').length, 3);
  });

  it('a request that gets no answer times out; an abort ends the wake at once; both settle with ok:false', async () => {
    const { fake, adapter, listen } = await world({}, { requestTimeoutMs: 200 });
    const tid = fake.addThread({ cwd: CWD, state: 'idle' });
    fake.stall('thread/read');
    let t0 = Date.now();
    let r = await adapter.wake(request(session({ providerSessionId: tid })), signal());
    assert.deepEqual(r, { ok: false, detail: 'thread/read: no answer within 200 ms' });
    assert.ok(Date.now() - t0 < 1_500);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 30);
    t0 = Date.now();
    const patient = createCodexAdapter({ kind: 'codex-app-server', listen }, { requestTimeoutMs: 10_000 });
    cleanups.push(() => patient.close());
    r = await patient.wake(request(session({ providerSessionId: tid })), ac.signal);
    assert.equal(r.ok, false);
    assert.match(r.detail, /^aborted/);
    assert.ok(Date.now() - t0 < 1_000, `${Date.now() - t0} ms`);
    const pre = new AbortController();
    pre.abort();
    assert.deepEqual(await adapter.wake(request(session({ providerSessionId: tid })), pre.signal), { ok: false, detail: 'aborted before start' });
  });

  it('a dropped connection is reopened lazily on the next wake (initialize again); an unreachable or remote target is ok:false', async () => {
    const { fake, adapter, events } = await world();
    const tid = fake.addThread({ cwd: CWD, state: 'idle' });
    assert.equal((await adapter.wake(request(session({ providerSessionId: tid })), signal())).ok, true);
    fake.dropConnections();
    await until('close seen', () => events.some((e) => e.event === 'codex.closed'));
    fake.completeTurn(tid);
    assert.equal((await adapter.wake(request(session({ providerSessionId: tid })), signal())).ok, true);
    assert.equal(fake.requests('initialize').length, 2);
    const dead = createCodexAdapter({ kind: 'codex-app-server', listen: 'ws://127.0.0.1:1' });
    const r = await dead.wake(request(session({ providerSessionId: tid })), signal());
    assert.equal(r.ok, false);
    assert.match(r.detail, /cannot connect to ws:\/\/127\.0\.0\.1:1/);
    const remote = createCodexAdapter({ kind: 'codex-app-server', listen: 'ws://192.0.2.1:4000' });
    assert.deepEqual(await remote.wake(request(session({ providerSessionId: tid })), signal()), { ok: false, detail: 'ws:// listeners must be on loopback, not 192.0.2.1' });
    await Promise.all([dead.close(), remote.close()]);
  });

  it('unix://PATH: WebSocket over a unix socket', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'm4a-codex-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const fake = new FakeCodexAppServer();
    const listen = await fake.listen({ unix: join(dir, 'as.sock') });
    const adapter = createCodexAdapter({ kind: 'codex-app-server', listen });
    cleanups.push(
      () => adapter.close(),
      () => fake.close(),
    );
    const tid = fake.addThread({ cwd: CWD, state: 'idle' });
    const r = await adapter.wake(request(session({ providerSessionId: tid })), signal());
    assert.equal(r.ok, true, r.detail);
  });

  it('listen=spawn: starts the app-server over stdio JSON lines, resumes the thread, and close() stops the process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'm4a-codex-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const logFile = join(dir, 'fake.log');
    const tid = '01a22cd8-5a23-7591-a812-49eaf65ba934';
    const scenario = { threads: [{ id: tid, cwd: CWD, state: 'notLoaded' }] };
    const adapter = createCodexAdapter(
      { kind: 'codex-app-server', listen: 'spawn', argv: [process.execPath, '--import', 'tsx', FAKE], env: ['FAKE_CODEX_SCENARIO', 'FAKE_CODEX_LOG'] },
      { cwd: REPO, env: { ...process.env, FAKE_CODEX_SCENARIO: JSON.stringify(scenario), FAKE_CODEX_LOG: logFile } },
    );
    const r = await adapter.wake(request(session({ providerSessionId: tid })), signal());
    assert.equal(r.ok, true, r.detail);
    await adapter.close();
    const lines = readFileSync(logFile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const sent = lines.filter((l) => l.dir === 'in').map((l) => l.msg.method);
    assert.deepEqual(sent, ['initialize', 'initialized', 'thread/read', 'thread/resume', 'turn/start']);
    const pid = lines[0].pid as number;
    await until('the spawned app-server exits', () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
  });
});
