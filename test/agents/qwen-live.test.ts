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
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contentText, startScriptedChat, type ScriptedChat } from './support/scripted-chat.js';
import { describeRun, makeWorld, type ProcInfo, type RunResult, type World } from './support/world.js';

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

const parseJson = (text: string | null | undefined, what: string): any => {
  assert.ok(typeof text === 'string', `${what}: no result came back`);
  try {
    return JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1));
  } catch {
    assert.fail(`${what}: not JSON: ${text}`);
  }
};

function attestedProcess(card: any, r: RunResult): ProcInfo {
  const a = card?.attested;
  assert.ok(a && typeof a.pid === 'number', `the card has no attested process: ${JSON.stringify(card)}`);
  const p = r.seen.find((s) => s.pid === a.pid && s.startTime === a.start_time);
  assert.ok(p, `attested pid ${a.pid} is not a process of this run (spawned ${r.pid}); seen: ${r.seen.map((s) => `${s.pid}<-${s.ppid} ${s.exe}`).join('; ')}`);
  return p;
}

async function peerCall(w: World, secret: string, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${w.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const out = await res.json();
  assert.equal(res.status, 200, `${path}: ${JSON.stringify(out)}`);
  return out;
}

async function storedAt(w: World, secret: string, id: string): Promise<number> {
  const rc = JSON.parse(await w.m4a(['receipts', id, '--json'], { env: { M4A_TOKEN: secret } }));
  const t = Date.parse(rc.receipts?.[0]?.stored_at);
  assert.ok(Number.isFinite(t), `no stored_at in ${JSON.stringify(rc)}`);
  return t;
}

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
  t.diagnostic(`qwen -p ran ${r.ms} ms`);
  assert.ok(r.code === 0 && !r.timedOut, `qwen -p did not succeed:\n${describeRun(r)}`);
  assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);
  assert.equal(model.remaining(), 0, `every scripted turn was taken:\n${describeRun(r)}`);
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
  assert.equal(me.account, 'qwen');
  assert.match(me.address, /^qwen\/s-[0-9a-f]+$/);
  const p = attestedProcess(me.card, r);
  assert.equal(me.card.corroborated.provider, 'qwen', JSON.stringify(me.card));
  assert.equal(me.card.corroborated.cwd, w.project);
  assert.notEqual(p.pid, r.pid, "Qwen's innermost process, not its launcher");

  const sent = parseJson(send?.output, 'send');
  assert.equal(sent.from, `${me.account}/${me.slug}`);
  const got = (await peerCall(w, peer.secret, '/mail/inbox', {})).messages.filter((x: any) => x.subject === 'hello from qwen');
  assert.equal(got.length, 1);
  assert.equal(got[0].from, sent.from);
  assert.equal(got[0].body, 'sent by a real Qwen Code session');

  // Stop: the reason became the next user turn, and the model read the mail.
  assert.ok(late, 'the late mail was sent');
  const reasonReq = model.requests.find((q) => q.turn === 3)!;
  const reason = lastUser(reasonReq.body);
  assert.ok(reason.includes(late.message_id) && reason.includes('You have new mail in mail4agent'), `the Stop hook's reason: ${reason}`);
  assert.ok(!reason.includes(before.message_id), 'only mail new since the last notice');
  assert.ok(inbox?.output?.includes(late.message_id), `the model read the new mail: ${inbox?.output}`);

  // Qwen rewrote the file as it started; unsetup removes only our entries from that.
  const rewritten = readFileSync(settings, 'utf8');
  assert.match(rewritten, /"\$version": 4/, 'Qwen Code rewrote settings.json');
  await w.m4a(['unsetup', 'qwen']);
  assert.equal(readFileSync(settings, 'utf8'), USER_SETTINGS.replace(/\n\}\n$/, ',\n  "$version": 4\n}\n'), "the user's settings as Qwen rewrites them, byte for byte");

  const fig = { prompt: firstReq.at - (await storedAt(w, peer.secret, before.message_id)), stop: reasonReq.at - (await storedAt(w, peer.secret, late.message_id)) };
  for (const [k, v] of Object.entries(fig)) assert.ok(v >= 0 && v < RUN_MS, `${k}: ${v} ms`);
  console.log(
    `qwen live: send commit → model request with UserPromptSubmit's context ${fig.prompt} ms (the mail waited for Qwen to start); ` +
      `send commit (as the last answer streamed) → model request with the Stop hook's reason ${fig.stop} ms (qwen -p ran ${r.ms} ms)`,
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
  let sent: any = null;
  const m = model;
  void (async () => {
    const deadline = Date.now() + RUN_MS;
    let since = 0;
    while (!abandoned && Date.now() < deadline) {
      if (m.requests.some((q) => q.turn === 1) && hookProcesses(w.dataDir, 'qwen-stop').length > 0) {
        since ||= Date.now();
        if (Date.now() - since >= 1_000) break;
      } else since = 0;
      await new Promise((r) => setTimeout(r, 20));
    }
    if (!abandoned) sent = await peerCall(w, peer.secret, '/mail/send', { to: 'qwen', subject: 'while you listened', body: 'third' }).catch(() => null);
  })();
  // --yolo: the model turns listen mode on with Qwen's shell tool.
  const r = await w.run('qwen', ['-p', 'Listen for mail.', '--yolo'], { env: { ...qwenEnv(model.url), QWEN_HOME: qwenHome, M4A_LISTEN_SECS: '90' }, timeoutMs: RUN_MS });
  t.diagnostic(`qwen -p ran ${r.ms} ms`);
  assert.ok(r.code === 0 && !r.timedOut, `qwen -p did not succeed:\n${describeRun(r)}`);
  assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);
  assert.equal(model.remaining(), 0, `every scripted turn was taken:\n${describeRun(r)}`);
  const [on, inbox, off] = model.exchanges();
  assert.match(on?.output ?? '', /listen mode on for qwen\/s-/, `m4a listen on: ${on?.output}`);
  assert.ok(sent, 'the mail was sent while the Stop hook listened');
  const reasonReq = model.requests.find((q) => q.turn === 2)!;
  assert.ok(lastUser(reasonReq.body).includes(sent.message_id), `the Stop hook's reason names the mail: ${lastUser(reasonReq.body)}`);
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
  console.log(`qwen listen: send commit → the parked Stop hook answered ${fig.surfaced} ms, → model request with its reason ${fig.request} ms (qwen -p ran ${r.ms} ms)`);
});
