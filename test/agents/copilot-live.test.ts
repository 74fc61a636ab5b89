// GitHub Copilot CLI, the real program, configured only by `m4a setup copilot` (plus its BYOK
// variables: the scripted chat-completions server on loopback is its model, offline, no GitHub
// account). Run in a loopback-only network namespace by `npm run test:agents`.
//
//   1. whoami and send through the entry setup wrote: the session is the copilot process that
//      spawned the bridge, provider copilot, its session id the one Copilot reports.
//   2. A trusted folder whose .mcp.json `m4a setup claude --project` wrote (Claude Code's account):
//      Copilot loads that entry over its own, and the bridge speaks as Copilot's account.
//   3. Mail at turn end: in listen mode the agentStop hook (`m4a hook copilot-stop`) parks; mail
//      sent then blocks the stop with the wake text, Copilot's next model request carries it, and the
//      model reads its inbox. Measured: send commit → that model request.
import { it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { copilotByok } from './support/copilot-tmux.js';
import { startScriptedChat, userTexts, type ScriptedChat } from './support/scripted-chat.js';
import { AGENT_MODULES, describeRun, makeWorld, type ProcInfo, type RunResult, type World } from './support/world.js';

const RUN_MS = 120_000;
const COPILOT_EXE = realpathSync(join(AGENT_MODULES, '@github', 'copilot-linux-x64', 'copilot'));

const copilotEnv = (model: ScriptedChat): NodeJS.ProcessEnv => ({
  ...copilotByok(model),
  // A listening agentStop hook gives up well inside the test's deadline if no mail comes.
  M4A_LISTEN_SECS: '100',
});

/** Copilot names MCP tools `<server>-<tool>`. */
const tool = (name: string) => (names: string[]) => names.find((n) => n === `m4a-${name}`);

function ok(r: RunResult, what: string): void {
  assert.ok(r.code === 0 && !r.timedOut, `${what} did not succeed:\n${describeRun(r)}`);
}

const parseJson = (text: string | null | undefined, what: string): any => {
  assert.ok(typeof text === 'string', `${what}: no result came back`);
  try {
    return JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1));
  } catch {
    assert.fail(`${what}: not JSON: ${text}`);
  }
};

/** The session id Copilot prints at the end of a -p run. */
const resumeId = (r: RunResult): string => {
  const m = /copilot --resume=([0-9a-f-]{36})/.exec(r.stdout + r.stderr);
  assert.ok(m, `no session id in the output:\n${describeRun(r)}`);
  return m[1]!;
};

function attestedProcess(card: any, r: RunResult): ProcInfo {
  const a = card?.attested;
  assert.ok(a && typeof a.pid === 'number', `the card has no attested process: ${JSON.stringify(card)}`);
  const p = r.seen.find((s) => s.pid === a.pid && s.startTime === a.start_time);
  assert.ok(p, `attested pid ${a.pid} (${a.exe}) is not a process of this run; seen:\n  ${r.seen.map((s) => `${s.pid}<-${s.ppid} ${s.exe}`).join('\n  ')}`);
  return p;
}

async function http(w: World, secret: string, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${w.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const out = await res.json();
  assert.equal(res.status, 200, `${path}: ${JSON.stringify(out)}`);
  return out;
}

/** The processes of one world (found by its data directory) whose command line holds `part`. */
function worldProcesses(dataDir: string, part: string): { pid: number; cmd: string }[] {
  const out: { pid: number; cmd: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      if (!cmd.includes(part)) continue;
      if (readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(`M4A_DATA_DIR=${dataDir}`)) out.push({ pid: Number(name), cmd });
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

async function until<T>(what: string, ms: number, probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function world(t: TestContext): Promise<World> {
  const w = await makeWorld('m4a-copilot-');
  t.after(() => w.close());
  return w;
}

it('copilot -p, wired only by m4a setup copilot: whoami and send, attested to the copilot process as provider copilot', { timeout: 180_000 }, async (t) => {
  const w = await world(t);
  const setup = await w.m4a(['setup', 'copilot']);
  t.diagnostic(setup);
  const codex = JSON.parse(await w.m4a(['admin', 'account', 'add', 'codex', '--json']));
  const model = await startScriptedChat([
    { tool: tool('m4a_mail_whoami'), input: {} },
    { tool: tool('m4a_mail_send'), input: { to: 'codex', subject: 'hello from copilot', body: 'sent by a real Copilot CLI session' } },
    { text: 'done' },
  ]);
  t.after(() => model.close());

  const r = await w.run('copilot', ['-p', 'check your mail identity and say hello to codex', '--allow-all-tools'], { cwd: w.project, env: copilotEnv(model), timeoutMs: RUN_MS });
  t.diagnostic(`copilot -p ran ${r.ms} ms`);
  ok(r, 'copilot -p');
  assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);
  assert.equal(model.remaining(), 0, 'every scripted turn was taken');
  const sessionId = resumeId(r);

  const [whoami, send] = model.exchanges();
  const me = parseJson(whoami?.output, 'whoami');
  assert.match(me.address, /^copilot\/s-[0-9a-f]+$/);
  assert.equal(me.account, 'copilot');
  const p = attestedProcess(me.card, r);
  assert.equal(realpathSync(p.exe), COPILOT_EXE, `the attested process runs ${p.exe}, not Copilot`);
  assert.notEqual(p.pid, r.pid, 'not the node loader: the copilot binary it starts');
  assert.equal(me.card.corroborated.provider, 'copilot');
  assert.equal(me.card.corroborated.cwd, w.project);
  assert.equal(me.card.corroborated.provider_session_id, sessionId, 'the provider session id is the one Copilot reports');

  const sent = parseJson(send?.output, 'send');
  assert.equal(sent.from, `${me.account}/${me.slug}`);
  const inbox = await http(w, codex.secret, '/mail/inbox', {});
  const got = inbox.messages.filter((m: any) => m.subject === 'hello from copilot');
  assert.equal(got.length, 1, JSON.stringify(inbox));
  assert.equal(got[0].from, sent.from);
  assert.equal(got[0].body, 'sent by a real Copilot CLI session');
});

it("a trusted folder holding Claude Code's .mcp.json: Copilot loads that entry, and the bridge speaks as Copilot's account, not Claude's", { timeout: 180_000 }, async (t) => {
  const w = await world(t);
  await w.m4a(['setup', 'claude', '--project', w.project]);
  const setup = await w.m4a(['setup', 'copilot']);
  assert.match(setup, new RegExp(`Copilot also loads ${join(w.project, '.mcp.json').replace(/[.]/g, '\\.')}`), setup);
  const model = await startScriptedChat([{ tool: tool('m4a_mail_whoami'), input: {} }, { text: 'done' }]);
  t.after(() => model.close());

  const running = w.run('copilot', ['-p', 'who am I in the mailbox?', '--allow-all-tools', '--trust-folder'], { cwd: w.project, env: copilotEnv(model), timeoutMs: RUN_MS });
  // Which entries ran: the bridges of this world, by their arguments.
  const args = new Set<string>();
  let done = false;
  void running.finally(() => (done = true));
  while (!done) {
    for (const pid of worldProcesses(w.dataDir, ' mcp --account ')) args.add(pid.cmd.slice(pid.cmd.indexOf(' mcp ') + 1));
    await new Promise((res) => setTimeout(res, 20));
  }
  const r = await running;
  ok(r, 'copilot -p --trust-folder');
  assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);
  assert.deepEqual([...args], ['mcp --account claude'], "the entry that ran is Claude Code's, from the workspace's .mcp.json");
  const me = parseJson(model.exchanges()[0]?.output, 'whoami');
  assert.equal(me.account, 'copilot', `the bridge from .mcp.json spoke as ${me.account}`);
  assert.equal(me.card.corroborated.provider, 'copilot');
  assert.equal(realpathSync(attestedProcess(me.card, r).exe), COPILOT_EXE);
});

it('mail at turn end: listen mode parks the agentStop hook; mail blocks the stop, the model gets the reason and reads its inbox', { timeout: 240_000 }, async (t) => {
  const w = await world(t);
  await w.m4a(['setup', 'copilot']);
  // The operator's chain for the account: its hooks (so the receipts say how the mail reached it).
  await w.m4a(['wake', 'set', 'copilot', '--step', 'hooks', '--json']);
  const codex = JSON.parse(await w.m4a(['admin', 'account', 'add', 'codex', '--json']));
  const model = await startScriptedChat([
    { tool: 'bash', input: { command: 'm4a listen on', description: 'Turn mail listen mode on' } },
    { text: 'Waiting for mail.' }, // ends the turn: the agentStop hook listens
    { tool: tool('m4a_mail_inbox'), input: {} }, // after the hook's reason
    { tool: 'bash', input: { command: 'm4a listen off', description: 'Turn mail listen mode off' } },
    { text: 'Read it. Done.' },
  ]);
  t.after(() => model.close());

  const running = w.run('copilot', ['-p', 'wait for mail and read it', '--allow-all-tools'], { cwd: w.project, env: copilotEnv(model), timeoutMs: RUN_MS });
  // The hook has parked in the daemon for a second: mail now must wake it, not be found by its first look.
  let seenAt = 0;
  await until('the agentStop hook listening', RUN_MS, () => {
    if (worldProcesses(w.dataDir, 'hook copilot-stop').length === 0) return void (seenAt = 0);
    if (seenAt === 0) return void (seenAt = Date.now());
    return Date.now() - seenAt >= 1_000 ? true : undefined;
  });
  assert.equal(model.remaining(), 3, 'the first turn ended after listen on and one text');
  const sent = await http(w, codex.secret, '/mail/send', { to: 'copilot', subject: 'build is green', body: 'The build on main passed; go ahead and merge.' });
  const r = await running;
  t.diagnostic(`copilot -p ran ${r.ms} ms`);
  ok(r, 'copilot -p');
  assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);
  assert.equal(model.remaining(), 0, 'every scripted turn was taken');

  const [listenOn, inbox, listenOff] = model.exchanges();
  assert.match(listenOn?.output ?? '', /listen mode on for copilot\/s-[0-9a-f]+/, `m4a listen on: ${listenOn?.output}`);
  const woken = model.requests.find((q) => q.turn === 2)!;
  const reason = userTexts(woken.body).at(-1) ?? '';
  assert.ok(reason.includes('You have new mail in mail4agent') && reason.includes(sent.message_id), `the model's next prompt is the hook's reason naming the mail: ${reason}`);
  assert.ok(!reason.includes('go ahead and merge'), 'the reason carries no body');
  assert.ok(inbox?.output?.includes('go ahead and merge'), `the model read the mail: ${inbox?.output}`);
  assert.match(listenOff?.output ?? '', /listen mode off for copilot\/s-/);

  const rc = await http(w, codex.secret, '/mail/receipts', { message_id: sent.message_id });
  t.diagnostic(`receipts: ${JSON.stringify(rc)}`);
  const to = rc.receipts[0];
  assert.deepEqual(
    to.signalled.map((s: any) => [s.adapter, s.ok]),
    [['wait', true]],
  );
  assert.ok(to.surfaced_at !== null, 'the mail surfaced to the Copilot session');
  const commit = Date.parse(to.stored_at);
  const figure = woken.at - commit;
  assert.ok(figure >= 0 && figure < RUN_MS, `send commit → model request: ${figure} ms`);
  console.log(`copilot wake at turn end (agentStop in listen mode): send commit → Copilot's model request carrying the reason ${figure} ms (copilot -p ran ${r.ms} ms)`);
});
