// The Codex wake adapter against the real `codex app-server` (test/agents/node_modules/.bin/codex, 0.171.0),
// offline: the model is a scripted Responses server on loopback (a custom provider in the world's
// CODEX_HOME). A raw WebSocket client plays the agent's own client (the TUI's part): it starts the
// thread and its turns on an app-server listening on a unix socket; the adapter reaches the same
// app-server there. Shown: an idle thread gets our turn and the model reads the wake text; an
// active turn is steered by urgent mail (expectedTurnId accepted by real codex) while normal mail
// waits and starts its own turn when the active one ends; a thread with no rollout is ok:false;
// with listen=spawn and an untrusted approval policy, the command the model asks for is refused.
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCodexAdapter, type CodexAdapter } from '../../src/wake/codex-app-server.js';
import { RpcConnection, openTransport } from '../../src/wake/codex-rpc.js';
import type { WakeRequest } from '../../src/wake/types.js';
import { bounded, ownerClient, startAppServer, type AppServer, type OwnerClient } from './support/codex-owner.js';
import { startScriptedOpenAI, type OpenAITurn, type ScriptedOpenAI } from './support/scripted-openai.js';
import { makeWorld, NODE_BIN, type World } from './support/world.js';

const CODEX = join(NODE_BIN, 'codex');
const STEP_MS = 20_000;

function wakeRequest(threadId: string, cwd: string, urgent: boolean, text: string): WakeRequest {
  return {
    eventId: `ev-${Math.random().toString(36).slice(2)}`,
    account: 'codex',
    session: { id: 's-codex', lineage: 's-codex', slug: 'codex/project', pid: 1, live: true, provider: 'codex', providerSessionId: threadId, cwd, listening: false },
    mail: [{ message_id: 'm-1', from: 'claude', subject: 'status?', priority: urgent ? 'urgent' : 'normal', thread_id: 'm-1' }],
    urgent,
    text,
  };
}

/** The user-message texts of each model request, in order. */
function userTexts(model: ScriptedOpenAI): string[][] {
  return model.requests.map((r) =>
    (Array.isArray(r.body?.input) ? r.body.input : [])
      .filter((i: any) => i?.role === 'user')
      .flatMap((i: any) => (Array.isArray(i.content) ? i.content.map((c: any) => String(c?.text ?? '')) : [String(i.content ?? '')])),
  );
}
const modelSaw = (model: ScriptedOpenAI, text: string): number => userTexts(model).findIndex((texts) => texts.some((t) => t.includes(text)));

/** The world's CODEX_HOME uses the scripted model. */
function configure(w: World, model: ScriptedOpenAI): void {
  mkdirSync(w.env.CODEX_HOME!, { recursive: true });
  writeFileSync(
    join(w.env.CODEX_HOME!, 'config.toml'),
    `model_provider = "fake"\nmodel = "gpt-5"\n\n[model_providers.fake]\nname = "fake"\nbase_url = "${model.url}/v1"\nwire_api = "responses"\nenv_key = "FAKE_OPENAI_KEY"\n`,
  );
  w.env.FAKE_OPENAI_KEY = 'scripted';
}

/** Another `codex app-server` of the same CODEX_HOME over stdio, driven directly (to set a thread
 *  up the way another Codex process would have), with this package's own JSON-RPC client. */
async function sideServer(w: World, argvExtra: string[]): Promise<{ rpc: RpcConnection; waitFor(method: string): Promise<unknown>; close(): Promise<void> }> {
  // A spawned app-server gets the allow-listed environment: the model key only when named.
  const transport = await openTransport('spawn', { argv: [CODEX, 'app-server', ...argvExtra], env: w.env, envNames: ['FAKE_OPENAI_KEY'], cwd: w.project, timeoutMs: STEP_MS });
  const rpc = new RpcConnection(transport, STEP_MS);
  const seen: string[] = [];
  rpc.onNotification((m) => seen.push(m));
  await rpc.request('initialize', { clientInfo: { name: 'm4a-test-setup', title: null, version: '0' }, capabilities: null });
  rpc.notify('initialized');
  return {
    rpc,
    waitFor: (method) =>
      bounded(
        method,
        (async () => {
          while (!seen.includes(method)) await new Promise((r) => setTimeout(r, 20));
        })(),
      ),
    close: async () => {
      rpc.close();
      await new Promise((r) => setTimeout(r, 200));
    },
  };
}

describe('codex app-server wake adapter with the real codex 0.171.0', { timeout: 180_000 }, () => {
  let w: World;
  let model: ScriptedOpenAI;
  let server: AppServer;
  let own: OwnerClient;
  let adapter: CodexAdapter;
  const events: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const WAKE = 'You have new mail in mail4agent (1 message):\n- m-1 from claude: "status?"\nMail comes from other agents, not from your user.';
  const script: OpenAITurn[] = [
    { text: 'first turn done' }, // the owner's first turn: the thread gets a rollout
    { text: 'read the mail (idle wake)' }, // our turn on the idle thread
    { tool: 'exec_command', input: { cmd: 'true' }, gate }, // the owner's long turn, held
    { text: 'long turn done' }, // …its next request carries the steered text
    { text: 'read the mail (deferred wake)' }, // the deferred turn
  ];

  before(async () => {
    w = await makeWorld('m4a-codex-as-');
    model = await startScriptedOpenAI(script);
    configure(w, model);
    server = await startAppServer(CODEX, join(w.root, 'app-server.sock'), { cwd: w.project, env: w.env, timeoutMs: STEP_MS });
    own = await ownerClient(server.sock);
    adapter = createCodexAdapter({ kind: 'codex-app-server', listen: `unix://${server.sock}` }, { pollMs: 1_000, log: (e) => events.push(e) });
  });

  after(async () => {
    release?.();
    await adapter?.close();
    own?.close();
    server?.kill();
    await model?.close();
    await w?.close();
  });

  let threadId = '';

  it('idle thread: our turn/start runs, and the scripted model receives the wake text', async (t: TestContext) => {
    const st = await own.request('thread/start', { cwd: w.project, approvalPolicy: 'never', sandbox: 'danger-full-access' });
    threadId = st.thread.id;
    await own.request('turn/start', { threadId, input: [{ type: 'text', text: 'hello', text_elements: [] }] });
    await own.waitFor('first turn completed', (n) => n.method === 'turn/completed' && n.params.threadId === threadId);

    const t0 = Date.now();
    const r = await bounded('wake', adapter.wake(wakeRequest(threadId, w.project, false, WAKE), new AbortController().signal));
    const tWake = Date.now() - t0;
    assert.equal(r.ok, true, r.detail);
    const turnId = /^turn (\S+) started on thread /.exec(r.detail)?.[1];
    assert.ok(turnId, r.detail);
    const started = await own.waitFor('our turn started', (n) => n.method === 'turn/started' && n.params.turn.id === turnId);
    await own.waitFor('our turn completed', (n) => n.method === 'turn/completed' && n.params.turn.id === turnId);
    const at = modelSaw(model, WAKE);
    assert.ok(at >= 0, `the model never saw the wake text: ${JSON.stringify(userTexts(model))}`);
    assert.equal(model.requests[at]!.turn, 1);
    t.diagnostic(`wake() answered in ${tWake} ms; turn/started ${started.at - t0} ms after wake() (incl. connect+initialize)`);
  });

  it('active turn: urgent mail steers it (expectedTurnId accepted by codex); normal mail waits and gets its own turn after it', async (t: TestContext) => {
    const ts = await own.request('turn/start', { threadId, input: [{ type: 'text', text: 'a long task', text_elements: [] }] });
    const longTurn: string = ts.turn.id;
    await own.waitFor('long turn started', (n) => n.method === 'turn/started' && n.params.turn.id === longTurn);

    const normal = await bounded('normal wake', adapter.wake(wakeRequest(threadId, w.project, false, `${WAKE} (normal)`), new AbortController().signal));
    assert.equal(normal.ok, true, normal.detail);
    assert.match(normal.detail, /not interrupted; deferred/);
    assert.equal(adapter.deferred().length, 1);

    // Codex itself checks the precondition the adapter relies on: a wrong expectedTurnId is refused.
    const wrong = await own.request('turn/steer', { threadId, input: [{ type: 'text', text: 'x', text_elements: [] }], expectedTurnId: 'not-the-running-turn' }).then(
      () => 'accepted',
      (err: Error) => err.message,
    );
    t.diagnostic(`turn/steer with a wrong expectedTurnId: ${wrong}`);
    assert.match(wrong, /^expected active turn id `not-the-running-turn` but found `\S+` \(-32600\)$/);
    const t0 = Date.now();
    const urgent = await bounded('urgent wake', adapter.wake(wakeRequest(threadId, w.project, true, `${WAKE} (urgent)`), new AbortController().signal));
    const tSteer = Date.now() - t0;
    assert.deepEqual(urgent, { ok: true, detail: `urgent: steered turn ${longTurn} on thread ${threadId}` });

    const tRelease = Date.now();
    release();
    const done = await own.waitFor('long turn completed', (n) => n.method === 'turn/completed' && n.params.turn.id === longTurn);
    const steeredAt = modelSaw(model, '(urgent)');
    assert.equal(model.requests[steeredAt]?.turn, 3, 'the steered text reached the model within the long turn');
    const next = await own.waitFor('the deferred turn started', (n) => n.method === 'turn/started' && n.at >= done.at && n.params.turn.id !== longTurn);
    await own.waitFor('the deferred turn completed', (n) => n.method === 'turn/completed' && n.params.turn.id === next.params.turn.id);
    assert.equal(model.requests[modelSaw(model, '(normal)')]?.turn, 4, 'the normal mail came as a turn of its own, after the long one');
    assert.deepEqual(adapter.deferred(), []);
    assert.ok(events.includes('codex.deferred.started'));
    t.diagnostic(
      `turn/steer answered ${tSteer} ms after wake(); deferred turn started ${next.at - done.at} ms after the long turn completed (${next.at - tRelease} ms after the model was released)`,
    );
  });

  it('a thread with no rollout (started by another app-server, never ran a turn): ok:false, no turn', async (t: TestContext) => {
    const elsewhere = await sideServer(w, []);
    const { thread } = await elsewhere.rpc.request<any>('thread/start', { cwd: w.project });
    await elsewhere.close();
    const before = model.requests.length;
    const t0 = Date.now();
    const r = await bounded('no-rollout wake', adapter.wake(wakeRequest(thread.id, w.project, false, WAKE), new AbortController().signal));
    assert.equal(r.ok, false);
    assert.match(r.detail, new RegExp(`thread ${thread.id} has no rollout .*no rollout found for thread id ${thread.id}`));
    assert.equal(model.requests.length, before, 'no model request: no turn ran');
    t.diagnostic(`no rollout: ok:false in ${Date.now() - t0} ms: ${r.detail}`);
  });
});

describe('codex app-server wake adapter, listen=spawn, an untrusted approval policy: the approval is refused', { timeout: 120_000 }, () => {
  it('the command the model asks for is declined by the adapter, does not run, and the model hears so', async (t: TestContext) => {
    const w = await makeWorld('m4a-codex-approve-');
    const model = await startScriptedOpenAI([
      { text: 'setup done' },
      { tool: 'exec_command', input: { cmd: 'touch approved.txt' } },
      { text: 'the command was declined; I will wait' },
    ]);
    const events: { event: string; fields: Record<string, unknown> }[] = [];
    let adapter: CodexAdapter | null = null;
    try {
      configure(w, model);
      // The thread: started and run once by another app-server process (which then exits), with
      // the approval policy `untrusted`, so even `touch` needs an approval.
      const setup = await sideServer(w, []);
      const { thread } = await setup.rpc.request<any>('thread/start', { cwd: w.project, approvalPolicy: 'untrusted', sandbox: 'read-only' });
      await setup.rpc.request('turn/start', { threadId: thread.id, input: [{ type: 'text', text: 'setup', text_elements: [] }] });
      await setup.waitFor('turn/completed');
      await setup.close();

      adapter = createCodexAdapter(
        // No -c approval_policy: 0.171.0 refuses "untrusted" in config; the thread keeps its own.
        // The model provider's key reaches a spawned app-server only when the step names it.
        { kind: 'codex-app-server', listen: 'spawn', argv: [CODEX, 'app-server'], env: ['FAKE_OPENAI_KEY'] },
        { env: w.env, cwd: w.project, log: (event, fields) => events.push({ event, fields }) },
      );
      const t0 = Date.now();
      const r = await bounded('wake', adapter.wake(wakeRequest(thread.id, w.project, false, 'You have new mail (approval test)'), new AbortController().signal));
      assert.equal(r.ok, true, r.detail);
      const tWake = Date.now() - t0;
      await bounded(
        'the model hears back',
        (async () => {
          while (model.remaining() > 0 || model.exchanges()[0]?.output == null) await new Promise((res) => setTimeout(res, 50));
        })(),
      );
      const refused = events.filter((e) => e.event === 'codex.refused');
      assert.deepEqual(
        refused.map((e) => [e.fields.method, e.fields.threadId, e.fields.known]),
        [['item/commandExecution/requestApproval', thread.id, true]],
      );
      assert.equal(existsSync(join(w.project, 'approved.txt')), false, 'the declined command did not run');
      const out = model.exchanges()[0]!.output!;
      t.diagnostic(`wake (spawn + initialize + read + resume + turn/start) ${tWake} ms; the model got back: ${out.slice(0, 160)}`);
      assert.deepEqual(model.problems, []);
    } finally {
      await adapter?.close();
      await model.close();
      await w.close();
    }
  });
});
