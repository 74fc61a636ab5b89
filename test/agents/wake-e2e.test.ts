// Waking agents end to end with the real programs; only the models are scripted servers on loopback.
//
//   A: a real Claude Code session (`claude -p`), wired by `m4a setup claude` (its MCP bridge and its
//      hooks, the Stop hook `m4a hook claude-stop` among them). Its model turns listen mode on with
//      Bash `m4a listen on`, sends "please review …" to codex with m4a_mail_send, and ends its turn:
//      the Stop hook, in listen mode, parks in the daemon waiting for mail.
//   B: a real `codex app-server` on a unix socket, wired by `m4a setup codex` (our MCP server through
//      the stdio bridge). The test's JSON-RPC client stands in for the user's front end: it starts
//      B's thread and one short first turn (the thread then has a rollout), and leaves it idle.
//   The operator sets B's chain with the real CLI (`m4a wake set codex --step codex=unix://…`), and
//   A's (`--step hooks`), so the dispatcher records how A's mail reached it.
//
// Then, with nobody typing: A's send commits → the daemon's dispatcher runs B's chain → the codex
// adapter starts a turn on B's idle thread → B's model gets the fixed wake text, reads the mail with
// m4a_mail_inbox and answers with m4a_mail_send (reply_to A's message) → the reply answers A's
// parked Stop hook, which blocks with a reason naming the reply → Claude Code continues, A's model
// gets that reason, reads its inbox, turns listen mode off and ends; the run finishes.
// Checked afterwards: the receipts of both messages, and that each sender is attested to its program.
// Measured: A's send commit → B's turn/started (and → B's model request); B's reply commit → A's
// model request carrying the Stop hook's reason.
import { it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startScriptedAnthropic, type ScriptedAnthropic } from './support/scripted-anthropic.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from './support/scripted-openai.js';
import { bounded, ownerClient, startAppServer, type AppServer, type OwnerClient, type Seen } from './support/codex-owner.js';
import { describeRun, makeWorld, NODE_BIN, processTree, type RunResult, type World } from './support/world.js';
import { stopHooks } from './support/stop-hooks.js';

const CODEX = join(NODE_BIN, 'codex');
const CLAUDE_EXE = realpathSync(join(NODE_BIN, 'claude'));
/** The whole flow, from `claude -p` starting to its exit. */
const FLOW_MS = 120_000;
const SUBJECT = 'please review the parser change';
const REPLY_SUBJECT = 'Re: please review the parser change';
const REPLY_BODY = 'Reviewed: the parser change looks right; one nit on error messages.';

/** Claude Code quiet and offline, with the scripted model as its API. */
const claudeEnv = (modelUrl: string): NodeJS.ProcessEnv => ({
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_TELEMETRY: '1',
  ANTHROPIC_BASE_URL: modelUrl,
  ANTHROPIC_API_KEY: 'test-key',
  // The listening Stop hook gives up well inside the test's deadline if no mail ever comes.
  M4A_LISTEN_SECS: '100',
});

const mcpTool = (tool: string) => (names: string[]) => names.find((n) => n === tool || n.endsWith(`__${tool}`));

const parseJson = (text: string | null | undefined, what: string): any => {
  assert.ok(typeof text === 'string', `${what}: no result came back`);
  try {
    return JSON.parse(text.slice(text.indexOf('{')));
  } catch {
    assert.fail(`${what}: not JSON: ${text}`);
  }
};

/** The user-side texts of a Responses request (input messages), in order. */
const responsesUserTexts = (body: any): string[] =>
  (Array.isArray(body?.input) ? body.input : [])
    .filter((i: any) => i?.role === 'user')
    .flatMap((i: any) => (Array.isArray(i.content) ? i.content.map((c: any) => String(c?.text ?? '')) : [String(i.content ?? '')]));

/** The function_call_output of a call, as text, in a Responses request body. */
const callOutput = (body: any, callId: string): string | undefined => {
  const it = (Array.isArray(body?.input) ? body.input : []).find((i: any) => i?.type === 'function_call_output' && i.call_id === callId);
  if (!it) return undefined;
  return typeof it.output === 'string' ? it.output : Array.isArray(it.output) ? it.output.map((p: any) => String(p?.text ?? '')).join('') : JSON.stringify(it.output);
};

const ms = (iso: string): number => {
  const t = Date.parse(iso);
  assert.ok(Number.isFinite(t), `not a time: ${iso}`);
  return t;
};

async function until<T>(what: string, deadlineMs: number, probe: () => Promise<T | undefined> | T | undefined, everyMs = 100): Promise<T> {
  return bounded(
    what,
    (async () => {
      for (;;) {
        const v = await probe();
        if (v !== undefined) return v;
        await new Promise((r) => setTimeout(r, everyMs));
      }
    })(),
    deadlineMs,
  );
}

it('A (Claude Code) mails B (Codex app-server): B is woken, reads, replies; the reply wakes A in listen mode; nobody types', { timeout: 180_000 }, async (t: TestContext) => {
  const w: World = await makeWorld('m4a-wake-e2e-');
  let server: AppServer | null = null;
  let own: OwnerClient | null = null;
  let modelA: ScriptedAnthropic | null = null;
  let modelB: ScriptedOpenAI | null = null;
  t.after(async () => {
    own?.close();
    server?.kill();
    await modelA?.close();
    await modelB?.close();
    await w.close(); // stops the daemon, kills what the world's programs (claude) left running
  });

  // ---- the models -------------------------------------------------------------------------------
  let idA = ''; // A's message, as B's model read it in its inbox
  // B's model answers with its reply only once A's Stop hook has been running for a second (it
  // parks in the daemon within a few hundred ms), as a real model's think time would allow: the
  // reply then has to wake A in listen mode, instead of being found by the hook's first look.
  let abandoned = false;
  t.after(() => void (abandoned = true));
  let hookSeenAt = 0;
  let gateOpenedAt = 0;
  const aListens: Promise<void> = (async () => {
    const deadline = Date.now() + FLOW_MS;
    while (!abandoned && Date.now() < deadline) {
      if (stopHooks(w.dataDir).length === 0) hookSeenAt = 0;
      else if (hookSeenAt === 0) hookSeenAt = Date.now();
      else if (Date.now() - hookSeenAt >= 1_000) return void (gateOpenedAt = Date.now());
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  modelB = await startScriptedOpenAI(
    [
      { text: 'Ready.' }, // the front end's first turn: the thread gets a rollout
      { tool: mcpTool('m4a_mail_inbox'), input: {} }, // the wake turn: read the mail
      {
        tool: mcpTool('m4a_mail_send'),
        gate: aListens,
        input: (body) => {
          // Answer the message the inbox showed: its id and sender come from the tool output.
          const inbox = parseJson(callOutput(body, 'call_scripted_1'), "B's inbox");
          const m = (inbox.messages as any[]).find((x) => x.subject === SUBJECT);
          idA = String(m?.message_id ?? '');
          return { to: String(m?.from ?? 'claude'), subject: REPLY_SUBJECT, body: REPLY_BODY, reply_to: idA };
        },
      },
      { text: 'Replied to claude.' },
    ],
    { whileMissing: { tool: 'exec_command', input: { cmd: 'sleep 1' }, max: 20 } },
  );
  modelA = await startScriptedAnthropic([
    { tool: 'Bash', input: { command: 'm4a listen on', description: 'Turn mail listen mode on' } },
    { tool: 'mcp__m4a__m4a_mail_send', input: { to: 'codex', subject: SUBJECT, body: 'Please review the parser change in src/parse.ts and tell me what you think.' } },
    { text: 'Asked codex for a review; waiting for the answer.' }, // ends the turn: the Stop hook listens
    { tool: 'mcp__m4a__m4a_mail_inbox', input: {} }, // after the Stop hook's reason
    { tool: 'Bash', input: { command: 'm4a listen off', description: 'Turn mail listen mode off' } },
    { text: 'Codex reviewed it. Done.' },
  ]);

  // ---- setup with the real CLI ------------------------------------------------------------------
  const codexDir = join(w.root, 'codex-project');
  mkdirSync(codexDir, { recursive: true });
  mkdirSync(w.env.CODEX_HOME!, { recursive: true });
  writeFileSync(
    join(w.env.CODEX_HOME!, 'config.toml'),
    `model = "gpt-5"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\nname = "scripted"\nbase_url = "${modelB.url}/v1"\nwire_api = "responses"\nenv_key = "SCRIPTED_MODEL_KEY"\n`,
  );
  await w.m4a(['setup', 'codex']);
  await w.m4a(['setup', 'claude', '--user']);

  // ---- B: the app-server, its thread, one first turn; then idle ---------------------------------
  const sock = join(w.root, 'app-server.sock');
  server = await startAppServer(CODEX, sock, { cwd: codexDir, env: { ...w.env, SCRIPTED_MODEL_KEY: 'test-key' } });
  own = await ownerClient(sock);
  const { thread } = await own.request('thread/start', { cwd: codexDir, approvalPolicy: 'never', sandbox: 'danger-full-access' });
  const threadId: string = thread.id;
  const first = await own.request('turn/start', { threadId, input: [{ type: 'text', text: 'Hello; wait for mail.', text_elements: [] }] });
  await own.waitFor('the first turn completed', (n) => n.method === 'turn/completed' && n.params.turn.id === first.turn.id, 60_000);
  assert.equal(modelB.remaining(), 3, 'the first turn took exactly one scripted answer');

  // B's session is on record once its MCP bridge has talked to the daemon.
  const codexSession = await until(
    'a codex session on record',
    30_000,
    async () => {
      const peers = JSON.parse(await w.m4a(['peers', '--json', '--account', 'claude']));
      return (peers.accounts as any[]).find((a) => a.id === 'codex')?.sessions?.find((s: any) => s.live);
    },
    250,
  );
  t.diagnostic(`B's session ${codexSession.address}: card ${JSON.stringify(codexSession.card)}`);

  // ---- the operator's chains --------------------------------------------------------------------
  const setB = JSON.parse(await w.m4a(['wake', 'set', 'codex', '--step', `codex=unix://${sock}`, '--json']));
  assert.deepEqual(setB.chain.steps, [{ kind: 'codex-app-server', listen: `unix://${sock}` }]);
  await w.m4a(['wake', 'set', 'claude', '--step', 'hooks', '--json']);

  // ---- A runs; everything after this happens without the test's help -----------------------------
  const turnsBefore = own.seen.filter((n) => n.method === 'turn/started').length;
  const claudeRun: Promise<RunResult> = w.run(
    'claude',
    ['-p', 'Ask codex to review the parser change and wait for its answer.', '--output-format', 'json', '--allowedTools', 'Bash,mcp__m4a__m4a_mail_send,mcp__m4a__m4a_mail_inbox'],
    { cwd: w.project, env: claudeEnv(modelA.url), timeoutMs: FLOW_MS },
  );
  const wakeStarted: Seen = await own.waitFor(
    'B: a turn started by the wake',
    (n) => n.method === 'turn/started' && n.params.threadId === threadId && n.params.turn.id !== first.turn.id,
    FLOW_MS,
  );
  await own.waitFor('B: the wake turn completed', (n) => n.method === 'turn/completed' && n.params.turn.id === wakeStarted.params.turn.id, FLOW_MS);
  const r = await claudeRun;
  t.diagnostic(`claude -p ran ${r.ms} ms`);
  assert.ok(r.code === 0 && !r.timedOut, `claude -p did not succeed:\n${describeRun(r)}`);
  const out = JSON.parse(r.stdout);
  assert.equal(out.is_error, false, r.stdout);
  assert.equal(out.result, 'Codex reviewed it. Done.');

  // ---- A's side, as its model saw it ------------------------------------------------------------
  assert.deepEqual(modelA.problems, [], `offered to A: ${modelA.toolNames().join(', ')}`);
  assert.equal(modelA.remaining(), 0, "every one of A's scripted turns was taken");
  const [listenOn, sendA, inboxA, listenOff] = modelA.exchanges(); // tool turns only
  assert.match(listenOn?.result ?? '', /listen mode on for claude\/s-[0-9a-f]+/, `m4a listen on: ${listenOn?.result}`);
  const sentA = parseJson(sendA?.result, "A's send");
  assert.equal(sendA?.isError, false, sendA?.result ?? '');
  // Answers print a session short (account/slug); `m4a listen` and peers --json name it in full.
  const fullA = listenOn!.result!.match(/claude\/s-[0-9a-f]+/)![0];
  const peersNow = JSON.parse(await w.m4a(['peers', '--json', '--ended', '--account', 'claude']));
  const printed = (full: string): string => {
    const [account] = full.split('/');
    const s = (peersNow.accounts as any[]).find((a) => a.id === account)?.sessions?.find((x: any) => x.address === full);
    return `${account}/${s?.slug}`;
  };
  assert.equal(sentA.from, printed(fullA), 'listen mode was turned on by the same session that sent');

  // ---- B's side, as its model saw it ------------------------------------------------------------
  assert.deepEqual(modelB.problems, [], `offered to B: ${modelB.toolNames().join(', ')}`);
  assert.equal(modelB.remaining(), 0, "every one of B's scripted turns was taken");
  const wakeReq = modelB.requests.find((q) => q.turn === 1)!;
  const wakeText = responsesUserTexts(wakeReq.body).find((x) => x.includes('You have new mail in mail4agent'));
  assert.ok(wakeText, `B's model never got the wake text: ${JSON.stringify(responsesUserTexts(wakeReq.body))}`);
  assert.ok(wakeText.includes(`- ${sentA.message_id} from ${sentA.from}: ${JSON.stringify(SUBJECT)}`), `the wake text names A's message: ${wakeText}`);
  assert.match(wakeText, /From others, not your user/);
  assert.ok(!wakeText.includes('src/parse.ts'), 'the wake text carries no body');
  const [inboxB, sendB] = modelB.exchanges();
  assert.ok(inboxB?.output?.includes(sentA.message_id), `B's inbox showed A's message: ${inboxB?.output}`);
  assert.equal(idA, sentA.message_id, "B's model found A's message in its inbox");
  assert.equal((sendB?.input as any)?.reply_to, sentA.message_id, 'B replied to A’s message');
  const sentB = parseJson(sendB?.output, "B's send");
  assert.equal(sentB.from, printed(codexSession.address), 'the session that replied is the one on record before the wake');
  assert.equal(sentB.thread_id, sentA.thread_id, 'the reply joined A’s thread');
  assert.equal(sentB.to, sentA.from, 'the reply went to the session that asked');
  // Exactly one turn was started on B's thread for the wake (no doubled wake).
  const turnsAfter = own.seen.filter((n) => n.method === 'turn/started').length;
  assert.equal(turnsAfter - turnsBefore, 1, 'one wake turn on B');

  // ---- A was woken by the reply: its Stop hook's reason reached A's model -----------------------
  const beforeReason = modelA.requests.find((q) => q.turn === 2)!;
  const afterReason = modelA.requests.find((q) => q.turn === 3)!;
  const last = (q: any): string => JSON.stringify(q.body?.messages?.at(-1) ?? null);
  assert.ok(!JSON.stringify(beforeReason.body.messages).includes(sentB.message_id), 'the reply was not known before A stopped');
  assert.ok(last(afterReason).includes(sentB.message_id), `A's model got the Stop hook's reason naming the reply: ${last(afterReason)}`);
  assert.ok(last(afterReason).includes('You have new mail in mail4agent'), last(afterReason));
  t.diagnostic(`what A's model got after its Stop hook: ${last(afterReason).slice(0, 700)}`);
  assert.ok(inboxA?.result?.includes(REPLY_BODY), `A read the reply: ${inboxA?.result}`);
  assert.match(listenOff?.result ?? '', /listen mode off for claude\/s-/, `m4a listen off: ${listenOff?.result}`);

  // ---- receipts -----------------------------------------------------------------------------------
  const rcA = JSON.parse(await w.m4a(['receipts', sentA.message_id, '--json', '--account', 'claude']));
  t.diagnostic(`receipts of A's message: ${JSON.stringify(rcA)}`);
  assert.equal(rcA.receipts.length, 1);
  const toB = rcA.receipts[0];
  assert.equal(toB.recipient, 'codex');
  assert.deepEqual(
    toB.signalled.map((s: any) => [s.adapter, s.ok]),
    [['codex-app-server', true]],
  );
  assert.match(toB.signalled[0].detail, /^withheld/, "the sender sees which step and when, not the recipient's details");
  const rcAasB = JSON.parse(await w.m4a(['receipts', sentA.message_id, '--json', '--account', 'codex']));
  assert.equal(rcAasB.receipts[0].signalled[0].detail, `turn ${wakeStarted.params.turn.id} started on thread ${threadId}`, 'the recipient sees the detail');
  assert.ok(toB.surfaced_at !== null, 'A’s message surfaced to B (its inbox read)');
  assert.ok(ms(toB.surfaced_at) >= ms(toB.signalled[0].at) - 5, 'surfaced after it was signalled');

  const rcB = JSON.parse(await w.m4a(['receipts', sentB.message_id, '--json', '--account', 'codex']));
  t.diagnostic(`receipts of B's reply: ${JSON.stringify(rcB)}`);
  assert.equal(rcB.receipts.length, 1);
  const toA = rcB.receipts[0];
  assert.equal(toA.recipient, sentA.from, 'receipts name the recipient as answers print it');
  assert.deepEqual(
    toA.signalled.map((s: any) => [s.adapter, s.ok]),
    [['wait', true]],
  );
  assert.match(toA.signalled[0].detail, new RegExp(`answered the parked inbox read of ${fullA}$`));
  assert.ok(toA.surfaced_at !== null, 'the reply surfaced to A');

  // ---- attestation: each sender is its own program -------------------------------------------------
  const peers = JSON.parse(await w.m4a(['peers', '--json', '--ended', '--account', 'claude']));
  const card = (address: string): any => {
    const [account] = address.split('/');
    const s = (peers.accounts as any[]).find((a) => a.id === account)?.sessions?.find((x: any) => x.address === address);
    assert.ok(s, `${address} is not among the peers: ${JSON.stringify(peers)}`);
    return s.card;
  };
  const cardA = card(fullA);
  const procA = r.seen.find((p) => p.pid === cardA.attested.pid && p.startTime === cardA.attested.start_time);
  assert.ok(procA, `A's attested process ${cardA.attested.pid} is not a process of the claude run (pid ${r.pid})`);
  assert.equal(realpathSync(procA.exe), CLAUDE_EXE, `A's mail is attested to ${procA.exe}, not Claude Code`);
  assert.equal(cardA.corroborated.provider, 'claude');
  assert.equal(cardA.corroborated.provider_session_id, out.session_id);
  const cardB = card(codexSession.address);
  const treeB = processTree(server.pid);
  const procB = treeB.find((p) => p.pid === cardB.attested.pid && p.startTime === cardB.attested.start_time);
  assert.ok(procB, `B's attested process ${cardB.attested.pid} is not in the app-server's tree: ${treeB.map((p) => `${p.pid} ${p.exe}`).join('; ')}`);
  assert.ok(procB.exe.includes('@openai/codex') && /\/codex$/.test(procB.exe), `B's mail is attested to ${procB.exe}, not Codex`);
  assert.equal(cardB.corroborated.provider, 'codex');

  const sendReqB = modelB.requests.find((q) => q.turn === 2)!;
  t.diagnostic(`B's model held its reply ${Math.max(0, gateOpenedAt - sendReqB.at)} ms, until A's Stop hook had run for 1 s`);
  // ---- the figures ----------------------------------------------------------------------------------
  const commitA = ms(toB.stored_at);
  const commitB = ms(toA.stored_at);
  const fig = {
    sendToSignalled: ms(toB.signalled[0].at) - commitA,
    sendToTurnStarted: wakeStarted.at - commitA,
    sendToModelB: wakeReq.at - commitA,
    replyToModelA: afterReason.at - commitB,
  };
  for (const [k, v] of Object.entries(fig)) assert.ok(v >= 0 && v < FLOW_MS, `${k}: ${v} ms`);
  console.log(
    `wake e2e: A's send commit → codex adapter signalled ${fig.sendToSignalled} ms, → B's turn/started ${fig.sendToTurnStarted} ms, → B's model request ${fig.sendToModelB} ms; ` +
      `B's reply commit → A's model gets the Stop hook's reason ${fig.replyToModelA} ms (claude -p ran ${r.ms} ms)`,
  );
});
