// Gemini CLI live, configured only by what `m4a setup gemini` wrote (its trusted m4a entry, the
// AfterAgent and BeforeAgent hooks, the GEMINI.md section) plus the user's own settings: the auth
// choice setup leaves to the user, and the scripted model's quiet switches. Only the model is
// replaced, by a scripted Gemini API on loopback (support/scripted-gemini.ts); the run is headless
// (`gemini -p`) without --yolo, so the m4a tools are usable only because the entry is trusted.
//
//   1. Without an auth choice setup says what to set, and `gemini -p` exits 41; doctor agrees.
//   2. With it: mail waiting before the run reaches the first model request as BeforeAgent's
//      context; the model calls whoami (attested to Gemini's own process, provider gemini) and send
//      (the peer gets it from that address); mail committed while the model writes its last answer
//      makes AfterAgent reject the end of the turn, and the model's next request carries the reason
//      and reads the inbox; the next AfterAgent lets the run end.
//   3. unsetup gives back the user's settings byte for byte.
// Printed: send commit → the model request with BeforeAgent's context (that is, Gemini's start)
// and send commit → the model request with AfterAgent's reason.
import { it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { geminiUserTexts, geminiTool, startScriptedGemini, type ScriptedGemini } from './support/scripted-gemini.js';
import {
  assertBounded,
  assertListenWake,
  assertPeerGot,
  assertRanClean,
  assertTurnEndWake,
  assertUnsetupGivesBack,
  assertWhoami,
  commitToRequest,
  parseJson,
  peerCall,
  sendWhenHookParked,
} from './support/hook-wake-checks.js';
import { describeRun, makeWorld, type World } from './support/world.js';

const RUN_MS = 150_000;
const MODEL = 'gemini-2.5-flash';
/** The user's own settings: no telemetry, no update checks (the scripted model's quiet switches). */
const USER_SETTINGS = '{\n  // mine\n  "privacy": { "usageStatisticsEnabled": false },\n  "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false }\n}\n';
/** The auth choice the user makes (setup writes none). */
const AUTH = '  "security": { "auth": { "selectedType": "gemini-api-key" } },\n';

const geminiEnv = (modelUrl: string): NodeJS.ProcessEnv => ({
  GEMINI_API_KEY: 'test-key',
  GOOGLE_GEMINI_BASE_URL: modelUrl,
  // The user trusting the project folder (untrusted: exit 55, and no MCP server connects).
  GEMINI_CLI_TRUST_WORKSPACE: 'true',
});

/** The peer's mail to gemini. */
const peerSend = (w: World, secret: string, subject: string, body: string): Promise<any> => peerCall(w, secret, '/mail/send', { to: 'gemini', subject, body });

it('Gemini CLI: whoami and send through the trusted entry setup wrote, attested as Gemini; BeforeAgent and AfterAgent bring mail', { timeout: 300_000 }, async (t: TestContext) => {
  const w = await makeWorld('m4a-gemini-live-');
  let model: ScriptedGemini | null = null;
  t.after(async () => {
    await model?.close();
    await w.close();
  });
  const settings = join(w.home, '.gemini', 'settings.json');
  mkdirSync(join(w.home, '.gemini'), { recursive: true });
  writeFileSync(settings, USER_SETTINGS);
  const peer = JSON.parse(await w.m4a(['admin', 'account', 'add', 'codex', '--json']));

  // ---- 1. setup; without an auth choice, setup and doctor say so and a headless run exits 41 ----
  const setup = JSON.parse(await w.m4a(['setup', 'gemini', '--json']));
  const written = JSON.parse(readFileSync(settings, 'utf8').replace('// mine', ''));
  assert.equal(written.mcpServers.m4a.trust, true, 'the entry is trusted');
  assert.equal(written.security, undefined, 'setup chose no auth method');
  assert.ok(
    setup.todo.some((x: string) => x.includes('security.auth.selectedType') && x.includes('exits 41')),
    `setup names the auth setting: ${setup.todo.join(' | ')}`,
  );
  const doctorBefore = JSON.parse(await w.m4a(['doctor', '--json']).catch((e: Error) => e.message.slice(e.message.indexOf('{'))));
  const authCheck = (d: any): any => (d.checks ?? d).find((c: any) => c.name === 'gemini auth');
  assert.equal(authCheck(doctorBefore)?.status, 'warn', JSON.stringify(authCheck(doctorBefore)));
  const noAuth = await w.run('gemini', ['-p', 'hello', '-m', MODEL], { env: geminiEnv('http://127.0.0.1:9'), timeoutMs: RUN_MS });
  assert.equal(noAuth.code, 41, `without an auth choice gemini -p exits 41:\n${describeRun(noAuth)}`);

  // The user makes the choice.
  writeFileSync(settings, readFileSync(settings, 'utf8').replace('{\n', `{\n${AUTH}`));
  // What unsetup must give back: the user's file with the user's own edit.
  const userFile = USER_SETTINGS.replace('{\n', `{\n${AUTH}`);
  const doctorAfter = JSON.parse(await w.m4a(['doctor', '--json']).catch((e: Error) => e.message.slice(e.message.indexOf('{'))));
  assert.equal(authCheck(doctorAfter)?.status, 'ok', JSON.stringify(authCheck(doctorAfter)));

  // ---- 2. the live run -------------------------------------------------------------------------
  const before = await peerSend(w, peer.secret, 'waiting before you started', 'first');
  let late: any = null;
  model = await startScriptedGemini([
    { tool: geminiTool('m4a_mail_whoami'), input: {} },
    { tool: geminiTool('m4a_mail_send'), input: { to: 'codex', subject: 'hello from gemini', body: 'sent by a real Gemini CLI session' } },
    {
      // Held while mail commits: it arrives as the turn ends.
      text: 'Said hello to codex.',
      onRequest: async () => {
        late = await peerSend(w, peer.secret, 'arrived as you finished', 'second');
      },
    },
    { tool: geminiTool('m4a_mail_inbox'), input: {} }, // after AfterAgent's reason
    { text: 'Read the new mail. Done.' },
  ]);
  const r = await w.run('gemini', ['-p', 'Check your mail identity and say hello to codex.', '-m', MODEL], { env: geminiEnv(model.url), timeoutMs: RUN_MS });
  assertRanClean(t, 'gemini -p', r, model);
  assert.match(r.stdout, /Read the new mail\. Done\./);

  // BeforeAgent: the mail waiting at the start is named in the first turn's user text.
  const firstReq = model.requests.find((q) => q.turn === 0)!;
  const firstUser = geminiUserTexts(firstReq.body).join('\n');
  assert.ok(firstUser.includes(before.message_id) && firstUser.includes('You have new mail in mail4agent'), `BeforeAgent's context: ${firstUser}`);

  // whoami: Gemini's own process, provider gemini.
  const [whoami, send, inbox] = model.exchanges();
  t.diagnostic(`Gemini's tool names: ${whoami?.name}, ${send?.name}, ${inbox?.name}`);
  const me = parseJson(whoami?.output, 'whoami');
  t.diagnostic(`card: ${JSON.stringify(me.card)}`);
  assertWhoami(me, r, w, 'gemini', "Gemini's relaunched child, not its launcher");

  // send: the peer has it, from that session.
  await assertPeerGot(w, peer.secret, me, send?.output, 'hello from gemini', 'sent by a real Gemini CLI session');

  // AfterAgent: the turn's end was rejected with the reason, which the next request carries.
  const reasonReq = model.requests.find((q) => q.turn === 3)!;
  assertTurnEndWake("AfterAgent's reason", geminiUserTexts(reasonReq.body).at(-1) ?? '', late, before, inbox);

  // ---- 3. unsetup ------------------------------------------------------------------------------
  await assertUnsetupGivesBack(w, 'gemini', settings, userFile, "the user's settings, byte for byte");

  const fig = {
    beforeAgent: await commitToRequest(w, peer.secret, before.message_id, firstReq),
    afterAgent: await commitToRequest(w, peer.secret, late.message_id, reasonReq),
  };
  assertBounded(fig, RUN_MS);
  console.log(
    `gemini live: send commit → model request with BeforeAgent's context ${fig.beforeAgent} ms (the mail waited for Gemini to start); ` +
      `send commit (as the last answer streamed) → model request with AfterAgent's reason ${fig.afterAgent} ms (gemini -p ran ${r.ms} ms)`,
  );
});

it('Gemini CLI in listen mode: AfterAgent waits for mail instead of ending the run, and mail wakes it', { timeout: 300_000 }, async (t: TestContext) => {
  const w = await makeWorld('m4a-gemini-listen-');
  let model: ScriptedGemini | null = null;
  let abandoned = false;
  t.after(async () => {
    abandoned = true;
    await model?.close();
    await w.close();
  });
  mkdirSync(join(w.home, '.gemini'), { recursive: true });
  writeFileSync(join(w.home, '.gemini', 'settings.json'), USER_SETTINGS.replace('{\n', `{\n${AUTH}`));
  const peer = JSON.parse(await w.m4a(['admin', 'account', 'add', 'codex', '--json']));
  await w.m4a(['setup', 'gemini']);
  // The operator's chain, so the receipt records how the mail reached the session.
  await w.m4a(['wake', 'set', 'gemini', '--step', 'hooks']);
  const shell = (command: string) => ({ tool: 'run_shell_command', input: { command, description: command } });
  model = await startScriptedGemini([
    shell('m4a listen on'),
    { text: 'Waiting for mail.' }, // the turn ends: AfterAgent listens
    { tool: geminiTool('m4a_mail_inbox'), input: {} }, // after AfterAgent's reason
    shell('m4a listen off'),
    { text: 'Read it. Done.' },
  ]);
  // Mail is sent once AfterAgent has been waiting for a second.
  const sentMail = sendWhenHookParked(
    w,
    model,
    'gemini-after-agent',
    1,
    RUN_MS,
    () => abandoned,
    () => peerSend(w, peer.secret, 'while you listened', 'third'),
  );
  // --yolo: the model turns listen mode on with Gemini's shell tool.
  const r = await w.run('gemini', ['-p', 'Listen for mail.', '-m', MODEL, '--yolo'], { env: { ...geminiEnv(model.url), M4A_LISTEN_SECS: '90' }, timeoutMs: RUN_MS });
  assertRanClean(t, 'gemini -p', r, model);
  const reasonReq = model.requests.find((q) => q.turn === 2)!;
  const fig = await assertListenWake(w, peer.secret, 'gemini', 'AfterAgent', sentMail(), geminiUserTexts(reasonReq.body).at(-1) ?? '', reasonReq, model.exchanges(), RUN_MS);
  console.log(`gemini listen: send commit → the parked AfterAgent hook answered ${fig.surfaced} ms, → model request with its reason ${fig.request} ms (gemini -p ran ${r.ms} ms)`);
});
