// Qwen Code live, configured only by what `m4a setup qwen` wrote (its trusted, always-loaded m4a
// entry, the Stop and UserPromptSubmit hooks, the QWEN.md section) plus the scripted model's own
// settings (its background memory requests off) and the OpenAI-compatible provider variables. Only
// the model is replaced, by a scripted chat completions server on loopback; the run is headless
// (`qwen -p`) without --yolo, so the m4a tools are usable only because the entry is trusted.
//
//   1. Mail waiting before the run reaches the first model request as UserPromptSubmit's context.
//   2. The model calls whoami (attested to Qwen Code's own process, provider qwen) and send (the
//      peer gets it from that address).
//   3. Mail committed while the model writes its last answer makes the Stop hook block; the next
//      model request carries the reason, and the model reads the inbox; the next Stop lets it end.
//   4. Qwen rewrote settings.json as it started ("$version": 4); unsetup still removes only ours.
// Printed: send commit → the model request with the context, and → the one with the Stop reason.
import { it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contentText, startScriptedChat, type ScriptedChat } from './support/scripted-chat.js';
import {
  assertListenWake,
  assertPeerGot,
  assertRanClean,
  assertTurnEndWake,
  assertUnsetupGivesBack,
  assertBounded,
  assertWhoami,
  commitToRequest,
  parseJson,
  peerCall,
  sendWhenHookParked,
} from './support/hook-wake-checks.js';
import { makeWorld } from './support/world.js';

const RUN_MS = 150_000;
/** The user's own settings: what the scripted model needs (no background memory or skill
 *  requests, which would take its scripted turns) and no telemetry. */
const USER_SETTINGS = `{
  // mine
  "privacy": {
    "usageStatisticsEnabled": false
  },
  "memory": {
    "enableManagedAutoMemory": false,
    "enableManagedAutoDream": false,
    "enableAutoSkill": false
  }
}
`;

const qwenEnv = (modelUrl: string): NodeJS.ProcessEnv => ({ OPENAI_API_KEY: 'test-key', OPENAI_BASE_URL: `${modelUrl}/v1`, OPENAI_MODEL: 'scripted' });
const mcpTool = (tool: string) => (names: string[]) => names.find((n) => n === `mcp__m4a__${tool}`);

/** Every text a chat request carries (system and user messages, tool results), for finding context. */
const allText = (body: any): string => (Array.isArray(body?.messages) ? body.messages.map((m: any) => contentText(m?.content)).join('\n') : '');
const lastUser = (body: any): string => contentText((Array.isArray(body?.messages) ? body.messages : []).filter((m: any) => m?.role === 'user').at(-1)?.content);

it('Qwen Code: whoami and send through the trusted entry setup wrote, attested as Qwen; UserPromptSubmit and Stop bring mail', { timeout: 300_000 }, async (t: TestContext) => {
  const w = await makeWorld('m4a-qwen-live-');
  let model: ScriptedChat | null = null;
  let abandoned = false;
  t.after(async () => {
    abandoned = true;
    await model?.close();
    await w.close();
  });
  const settings = join(w.home, '.qwen', 'settings.json');
  mkdirSync(join(w.home, '.qwen'), { recursive: true });
  writeFileSync(settings, USER_SETTINGS);
  const peer = JSON.parse(await w.m4a(['admin', 'account', 'add', 'codex', '--json']));

  const setup = JSON.parse(await w.m4a(['setup', 'qwen', '--json']));
  assert.deepEqual(
    setup.files.map((f: any) => [f.path, f.action]),
    [
      [`${settings}.m4a-backup`, 'created'],
      [settings, 'updated'],
      [join(w.home, '.qwen', 'QWEN.md'), 'created'],
    ],
  );
  const doctor = JSON.parse(await w.m4a(['doctor', '--json']).catch((e: Error) => e.message.slice(e.message.indexOf('{'))));
  const qwenCheck = (doctor.checks ?? doctor).find((c: any) => c.name === 'qwen (user)');
  assert.equal(qwenCheck?.status, 'ok', `doctor: ${JSON.stringify(qwenCheck)}`);

  const before = await peerCall(w, peer.secret, '/mail/send', { to: 'qwen', subject: 'waiting before you started', body: 'first' });
  let late: any = null;
  // The last answer is held until mail has committed: it arrives as the turn ends.
  let releaseLast: () => void = () => {};
  const lastGate = new Promise<void>((r) => (releaseLast = r));
  model = await startScriptedChat([
    { tool: mcpTool('m4a_mail_whoami'), input: {} },
    { tool: mcpTool('m4a_mail_send'), input: { to: 'codex', subject: 'hello from qwen', body: 'sent by a real Qwen Code session' } },
    { text: 'Said hello to codex.', gate: lastGate },
    { tool: mcpTool('m4a_mail_inbox'), input: {} }, // after the Stop hook's reason
    { text: 'Read the new mail. Done.' },
  ]);
  const m = model;
  void (async () => {
    const deadline = Date.now() + RUN_MS;
    while (!abandoned && Date.now() < deadline && !m.requests.some((q) => q.turn === 2)) await new Promise((r) => setTimeout(r, 10));
    if (abandoned) return;
    late = await peerCall(w, peer.secret, '/mail/send', { to: 'qwen', subject: 'arrived as you finished', body: 'second' }).catch(() => null);
    releaseLast();
  })();

  const r = await w.run('qwen', ['-p', 'Check your mail identity and say hello to codex.'], { env: qwenEnv(model.url), timeoutMs: RUN_MS });
  assertRanClean(t, 'qwen -p', r, model);
  assert.match(r.stdout, /Read the new mail\. Done\./);
  const tools = model.toolNames();
  // alwaysLoadTools: offered as they are, not behind Qwen's tool_search.
  assert.ok(tools.includes('mcp__m4a__m4a_mail_send') && tools.includes('mcp__m4a__m4a_mail_inbox'), `the m4a tools are loaded, not deferred: ${tools.join(', ')}`);

  // UserPromptSubmit: the mail waiting at the start is named in the first request.
  const firstReq = model.requests.find((q) => q.turn === 0)!;
  assert.ok(allText(firstReq.body).includes(before.message_id), `UserPromptSubmit's context reached the model: ${allText(firstReq.body).slice(-1500)}`);

  // whoami: Qwen Code's own process, provider qwen.
  const [whoami, send, inbox] = model.exchanges();
  const me = parseJson(whoami?.output, 'whoami');
  t.diagnostic(`card: ${JSON.stringify(me.card)}`);
  assertWhoami(me, r, w, 'qwen', "Qwen's innermost process, not its launcher");
  await assertPeerGot(w, peer.secret, me, send?.output, 'hello from qwen', 'sent by a real Qwen Code session');

  // Stop: the reason became the next user turn, and the model read the mail.
  const reasonReq = model.requests.find((q) => q.turn === 3)!;
  assertTurnEndWake("the Stop hook's reason", lastUser(reasonReq.body), late, before, inbox);

  // Qwen rewrote the file as it started; unsetup removes only our entries from that.
  const rewritten = readFileSync(settings, 'utf8');
  assert.match(rewritten, /"\$version": 4/, 'Qwen Code rewrote settings.json');
  await assertUnsetupGivesBack(w, 'qwen', settings, USER_SETTINGS.replace(/\n\}\n$/, ',\n  "$version": 4\n}\n'), "the user's settings as Qwen rewrites them, byte for byte");

  const fig = { prompt: await commitToRequest(w, peer.secret, before.message_id, firstReq), stop: await commitToRequest(w, peer.secret, late.message_id, reasonReq) };
  assertBounded(fig, RUN_MS);
  console.log(
    `qwen live: send commit → model request with UserPromptSubmit's context ${fig.prompt} ms (the mail waited for Qwen to start); ` +
      `send commit (as the last answer streamed) → model request with the Stop hook's reason ${fig.stop} ms (qwen -p ran ${r.ms} ms)`,
  );
});

it('Qwen Code in listen mode, with QWEN_HOME: the Stop hook waits for mail instead of ending the run, and mail wakes it', { timeout: 300_000 }, async (t: TestContext) => {
  const w = await makeWorld('m4a-qwen-listen-');
  let model: ScriptedChat | null = null;
  let abandoned = false;
  t.after(async () => {
    abandoned = true;
    await model?.close();
    await w.close();
  });
  // Qwen's global directory moved by QWEN_HOME: setup writes there, and Qwen reads it from there.
  const qwenHome = join(w.root, 'qwen-home');
  mkdirSync(qwenHome, { recursive: true });
  writeFileSync(join(qwenHome, 'settings.json'), USER_SETTINGS);
  const peer = JSON.parse(await w.m4a(['admin', 'account', 'add', 'codex', '--json']));
  await w.m4a(['setup', 'qwen'], { env: { QWEN_HOME: qwenHome } });
  assert.match(readFileSync(join(qwenHome, 'settings.json'), 'utf8'), /"m4a": \{/, 'the entry is in $QWEN_HOME/settings.json');
  // The operator's chain, so the receipt records how the mail reached the session.
  await w.m4a(['wake', 'set', 'qwen', '--step', 'hooks']);
  const shell = (command: string) => ({ tool: (names: string[]) => names.find((n) => n === 'run_shell_command' || n === 'shell'), input: { command, description: command } });
  model = await startScriptedChat([
    shell('m4a listen on'),
    { text: 'Waiting for mail.' }, // the turn ends: the Stop hook listens
    { tool: mcpTool('m4a_mail_inbox'), input: {} }, // after the Stop hook's reason
    shell('m4a listen off'),
    { text: 'Read it. Done.' },
  ]);
  // Mail is sent once the Stop hook has been waiting for a second.
  const sentMail = sendWhenHookParked(
    w,
    model,
    'qwen-stop',
    1,
    RUN_MS,
    () => abandoned,
    () => peerCall(w, peer.secret, '/mail/send', { to: 'qwen', subject: 'while you listened', body: 'third' }),
  );
  // --yolo: the model turns listen mode on with Qwen's shell tool.
  const r = await w.run('qwen', ['-p', 'Listen for mail.', '--yolo'], { env: { ...qwenEnv(model.url), QWEN_HOME: qwenHome, M4A_LISTEN_SECS: '90' }, timeoutMs: RUN_MS });
  assertRanClean(t, 'qwen -p', r, model);
  const reasonReq = model.requests.find((q) => q.turn === 2)!;
  const fig = await assertListenWake(w, peer.secret, 'qwen', 'the Stop hook', sentMail(), lastUser(reasonReq.body), reasonReq, model.exchanges(), RUN_MS);
  console.log(`qwen listen: send commit → the parked Stop hook answered ${fig.surfaced} ms, → model request with its reason ${fig.request} ms (qwen -p ran ${r.ms} ms)`);
});
