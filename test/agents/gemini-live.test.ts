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
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { geminiUserTexts, geminiTool, startScriptedGemini, type ScriptedGemini } from './support/scripted-gemini.js';
import { describeRun, makeWorld, type ProcInfo, type RunResult, type World } from './support/world.js';

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

const parseJson = (text: string | null | undefined, what: string): any => {
  assert.ok(typeof text === 'string', `${what}: no result came back`);
  try {
    // Gemini CLI wraps an MCP tool's text in <untrusted_context> tags.
    return JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1));
  } catch {
    assert.fail(`${what}: not JSON: ${text}`);
  }
};

/** The attested process of a card among those seen under a run. */
function attestedProcess(card: any, r: RunResult): ProcInfo {
  const a = card?.attested;
  assert.ok(a && typeof a.pid === 'number', `the card has no attested process: ${JSON.stringify(card)}`);
  const p = r.seen.find((s) => s.pid === a.pid && s.startTime === a.start_time);
  assert.ok(p, `attested pid ${a.pid} is not a process of this run (spawned ${r.pid}); seen: ${r.seen.map((s) => `${s.pid}<-${s.ppid} ${s.exe}`).join('; ')}`);
  return p;
}

async function peerSend(w: World, secret: string, subject: string, body: string): Promise<any> {
  const res = await fetch(`${w.url}/mail/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: 'gemini', subject, body }),
  });
  const out = await res.json();
  assert.equal(res.status, 200, `send: ${JSON.stringify(out)}`);
  return out;
}

async function peerInbox(w: World, secret: string): Promise<any> {
  const res = await fetch(`${w.url}/mail/inbox`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 200);
  return res.json();
}

/** When the daemon stored a message (its receipt to `recipient`), as the sender sees it. */
async function storedAt(w: World, secret: string, id: string): Promise<number> {
  const rc = JSON.parse(await w.m4a(['receipts', id, '--json'], { env: { M4A_TOKEN: secret } }));
  const t = Date.parse(rc.receipts?.[0]?.stored_at);
  assert.ok(Number.isFinite(t), `no stored_at in ${JSON.stringify(rc)}`);
  return t;
}

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
  t.diagnostic(`gemini -p ran ${r.ms} ms`);
  assert.ok(r.code === 0 && !r.timedOut, `gemini -p did not succeed:\n${describeRun(r)}`);
  assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);
  assert.equal(model.remaining(), 0, `every scripted turn was taken:\n${describeRun(r)}`);
  assert.match(r.stdout, /Read the new mail\. Done\./);

  // BeforeAgent: the mail waiting at the start is named in the first turn's user text.
  const firstReq = model.requests.find((q) => q.turn === 0)!;
  const firstUser = geminiUserTexts(firstReq.body).join('\n');
  assert.ok(firstUser.includes(before.message_id) && firstUser.includes('You have new mail in mail4agent'), `BeforeAgent's context: ${firstUser}`);

  // whoami: Gemini's own process, provider gemini.
  const [whoami, send, inbox] = model.exchanges();
  t.diagnostic(`Gemini's tool names: ${whoami?.name}, ${send?.name}, ${inbox?.name}`);
  const me = parseJson(whoami?.output, 'whoami');
  assert.equal(me.account, 'gemini');
  assert.match(me.address, /^gemini\/s-[0-9a-f]+$/);
  const p = attestedProcess(me.card, r);
  assert.equal(me.card.corroborated.provider, 'gemini', JSON.stringify(me.card));
  assert.equal(me.card.corroborated.cwd, w.project);
  assert.notEqual(p.pid, r.pid, "Gemini's relaunched child, not its launcher");
  t.diagnostic(`card: ${JSON.stringify(me.card)}`);

  // send: the peer has it, from that session.
  const sent = parseJson(send?.output, 'send');
  assert.equal(sent.from, `${me.account}/${me.slug}`);
  const got = (await peerInbox(w, peer.secret)).messages.filter((m: any) => m.subject === 'hello from gemini');
  assert.equal(got.length, 1);
  assert.equal(got[0].from, sent.from);
  assert.equal(got[0].body, 'sent by a real Gemini CLI session');

  // AfterAgent: the turn's end was rejected with the reason, which the next request carries.
  const reasonReq = model.requests.find((q) => q.turn === 3)!;
  const lastUser = geminiUserTexts(reasonReq.body).at(-1) ?? '';
  assert.ok(lastUser.includes(late.message_id) && lastUser.includes('You have new mail in mail4agent'), `AfterAgent's reason: ${lastUser}`);
  assert.ok(!lastUser.includes(before.message_id), 'only mail new since the last notice');
  assert.ok(inbox?.output?.includes(late.message_id), `the model read the new mail: ${inbox?.output}`);

  // ---- 3. unsetup ------------------------------------------------------------------------------
  await w.m4a(['unsetup', 'gemini']);
  assert.equal(readFileSync(settings, 'utf8'), userFile, "the user's settings, byte for byte");

  const fig = { beforeAgent: firstReq.at - (await storedAt(w, peer.secret, before.message_id)), afterAgent: reasonReq.at - (await storedAt(w, peer.secret, late.message_id)) };
  for (const [k, v] of Object.entries(fig)) assert.ok(v >= 0 && v < RUN_MS, `${k}: ${v} ms`);
  console.log(
    `gemini live: send commit → model request with BeforeAgent's context ${fig.beforeAgent} ms (the mail waited for Gemini to start); ` +
      `send commit (as the last answer streamed) → model request with AfterAgent's reason ${fig.afterAgent} ms (gemini -p ran ${r.ms} ms)`,
  );
});

/** This world's running `m4a hook <name>` processes (found by the daemon's data directory). */
function hookProcesses(dataDir: string, name: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').includes(`hook ${name}`)) continue;
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`M4A_DATA_DIR=${dataDir}`)) out.push(Number(pid));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

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
  let sent: any = null;
  const m = model;
  void (async () => {
    const deadline = Date.now() + RUN_MS;
    let since = 0;
    while (!abandoned && Date.now() < deadline) {
      if (m.requests.some((q) => q.turn === 1) && hookProcesses(w.dataDir, 'gemini-after-agent').length > 0) {
        since ||= Date.now();
        if (Date.now() - since >= 1_000) break;
      } else since = 0;
      await new Promise((r) => setTimeout(r, 20));
    }
    if (!abandoned) sent = await peerSend(w, peer.secret, 'while you listened', 'third').catch(() => null);
  })();
  // --yolo: the model turns listen mode on with Gemini's shell tool.
  const r = await w.run('gemini', ['-p', 'Listen for mail.', '-m', MODEL, '--yolo'], { env: { ...geminiEnv(model.url), M4A_LISTEN_SECS: '90' }, timeoutMs: RUN_MS });
  t.diagnostic(`gemini -p ran ${r.ms} ms`);
  assert.ok(r.code === 0 && !r.timedOut, `gemini -p did not succeed:\n${describeRun(r)}`);
  assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);
  assert.equal(model.remaining(), 0, `every scripted turn was taken:\n${describeRun(r)}`);
  const [on, inbox, off] = model.exchanges();
  assert.match(on?.output ?? '', /listen mode on for gemini\/s-/, `m4a listen on: ${on?.output}`);
  assert.ok(sent, 'the mail was sent while AfterAgent listened');
  const reasonReq = model.requests.find((q) => q.turn === 2)!;
  const reason = geminiUserTexts(reasonReq.body).at(-1) ?? '';
  assert.ok(reason.includes(sent.message_id), `AfterAgent's reason names the mail: ${reason}`);
  assert.ok(inbox?.output?.includes(sent.message_id), `the model read it: ${inbox?.output}`);
  assert.match(off?.output ?? '', /listen mode off/, `m4a listen off: ${off?.output}`);
  const rc = JSON.parse(await w.m4a(['receipts', sent.message_id, '--json'], { env: { M4A_TOKEN: peer.secret } }));
  assert.deepEqual(
    rc.receipts[0].signalled.map((s: any) => s.adapter),
    ['wait'],
    `the mail answered the parked hook: ${JSON.stringify(rc)}`,
  );
  const stored = Date.parse(rc.receipts[0].stored_at);
  const fig = { surfaced: Date.parse(rc.receipts[0].surfaced_at) - stored, request: reasonReq.at - stored };
  for (const [k, v] of Object.entries(fig)) assert.ok(v >= 0 && v < RUN_MS, `${k}: ${v} ms`);
  console.log(`gemini listen: send commit → the parked AfterAgent hook answered ${fig.surfaced} ms, → model request with its reason ${fig.request} ms (gemini -p ran ${r.ms} ms)`);
});
