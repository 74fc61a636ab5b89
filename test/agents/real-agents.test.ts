// The real agent programs (Claude Code, Codex, Gemini CLI from npm), wired by `m4a setup`, each in a
// fresh HOME with its own auto-started daemon; only the model behind them is replaced by a scripted
// server on loopback. Slow: run with `npm run test:agents`, not part of `npm test`.
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startScriptedAnthropic } from './support/scripted-anthropic.js';
import { startScriptedOpenAI } from './support/scripted-openai.js';
import { describeRun, makeWorld, NODE_BIN, plain, type ProcInfo, type RunResult, type World } from './support/world.js';

const AGENT_TIMEOUT_MS = 120_000;
const CLAUDE_EXE = realpathSync(join(NODE_BIN, 'claude'));

/** Keeps Claude Code quiet and offline. No API key here: with one, `claude mcp list` first retries
 *  fetching remote settings and policy limits from api.anthropic.com for about 20 s. */
const CLAUDE_QUIET: NodeJS.ProcessEnv = { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1' };
/** Claude Code with the scripted model as its API. */
const claudeEnv = (modelUrl: string): NodeJS.ProcessEnv => ({ ...CLAUDE_QUIET, ANTHROPIC_BASE_URL: modelUrl, ANTHROPIC_API_KEY: 'test-key' });

/** A fresh world, closed (daemon stopped, leftovers killed) when the test ends. */
async function world(t: TestContext): Promise<World> {
  const w = await makeWorld();
  t.after(() => w.close());
  return w;
}

function ok(r: RunResult, what: string): void {
  assert.ok(r.code === 0 && !r.timedOut, `${what} did not succeed:\n${describeRun(r)}`);
}

/** What the session card's attested process is among those seen under a run. */
function attestedProcess(card: any, r: RunResult): ProcInfo {
  const a = card?.attested;
  assert.ok(a && typeof a.pid === 'number', `the card has no attested process: ${JSON.stringify(card)}`);
  const p = r.seen.find((s) => s.pid === a.pid && s.startTime === a.start_time);
  const tree = r.seen.map((s) => `${s.pid}<-${s.ppid} ${s.exe}`).join('\n  ');
  assert.ok(p, `attested pid ${a.pid} (start ${a.start_time}, ${a.exe}) is not a process of this run (spawned ${r.pid}); seen:\n  ${tree}`);
  assert.equal(a.exe, p.exe, 'the card names the executable of that process');
  return p;
}

const parseJson = (text: string | null, what: string): any => {
  assert.ok(text !== null, `${what}: no result came back`);
  try {
    return JSON.parse(text.slice(text.indexOf('{')));
  } catch {
    assert.fail(`${what}: not JSON: ${text}`);
  }
};

async function inboxOf(w: World, secret: string): Promise<any> {
  const res = await fetch(`${w.url}/mail/inbox`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({}),
  });
  const body = await res.json();
  assert.equal(res.status, 200, `inbox: ${JSON.stringify(body)}`);
  return body;
}

function trustClaudeProject(w: World, dir: string): void {
  // What accepting Claude Code's workspace trust dialog for `dir` records.
  const file = join(w.home, '.claude.json');
  const cfg = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  cfg.projects = { ...cfg.projects, [dir]: { ...cfg.projects?.[dir], hasTrustDialogAccepted: true } };
  writeFileSync(file, JSON.stringify(cfg, null, 2));
}

const serverLine = (out: string, name: string): string | undefined =>
  plain(out)
    .split('\n')
    .find((l) => l.replace(/^[^\w]*\s*/, '').startsWith(`${name}:`));

describe('m4a setup, then each program lists the m4a server', () => {
  it('claude, --project: listed, and connected once the folder is trusted (setup pre-approved the server)', async (t: TestContext) => {
    const w = await world(t);
    const setup = JSON.parse(await w.m4a(['setup', 'claude', '--project', w.project, '--json']));
    assert.equal(setup.account, 'claude');
    assert.deepEqual(JSON.parse(readFileSync(join(w.project, '.claude', 'settings.local.json'), 'utf8')).enabledMcpjsonServers, ['m4a']);

    const untrusted = await w.run('claude', ['mcp', 'list'], { env: CLAUDE_QUIET, timeoutMs: AGENT_TIMEOUT_MS });
    ok(untrusted, 'claude mcp list');
    t.diagnostic(`claude mcp list (project scope, folder not trusted, ${untrusted.ms} ms): ${serverLine(untrusted.stdout, 'm4a')}`);
    assert.match(serverLine(untrusted.stdout, 'm4a') ?? '', /^m4a: m4a mcp --account claude - /, untrusted.stdout);

    trustClaudeProject(w, w.project);
    const trusted = await w.run('claude', ['mcp', 'list'], { env: CLAUDE_QUIET, timeoutMs: AGENT_TIMEOUT_MS });
    ok(trusted, 'claude mcp list');
    t.diagnostic(`claude mcp list (project scope, folder trusted, ${trusted.ms} ms): ${serverLine(trusted.stdout, 'm4a')}`);
    assert.match(serverLine(trusted.stdout, 'm4a') ?? '', /^m4a: m4a mcp --account claude - [✔✓] Connected$/, describeRun(trusted));
  });

  it('claude, --user: connected in any folder, trusted or not', async (t: TestContext) => {
    const w = await world(t);
    await w.m4a(['setup', 'claude', '--user']);
    const r = await w.run('claude', ['mcp', 'list'], { env: CLAUDE_QUIET, timeoutMs: AGENT_TIMEOUT_MS });
    ok(r, 'claude mcp list');
    t.diagnostic(`claude mcp list (user scope, untrusted folder, ${r.ms} ms): ${serverLine(r.stdout, 'm4a')}`);
    assert.match(serverLine(r.stdout, 'm4a') ?? '', /^m4a: m4a mcp --account claude - [✔✓] Connected$/, describeRun(r));
  });

  it('codex: the configured m4a server, enabled, running the bridge for the codex account', async (t: TestContext) => {
    const w = await world(t);
    await w.m4a(['setup', 'codex']);
    const text = await w.run('codex', ['mcp', 'list'], { timeoutMs: AGENT_TIMEOUT_MS });
    ok(text, 'codex mcp list');
    for (const line of plain(text.stdout).trimEnd().split('\n')) t.diagnostic(`codex mcp list: ${line.trimEnd()}`);
    const r = await w.run('codex', ['mcp', 'list', '--json'], { timeoutMs: AGENT_TIMEOUT_MS });
    ok(r, 'codex mcp list --json');
    const servers = JSON.parse(r.stdout) as any[];
    const m4a = servers.find((s) => s.name === 'm4a');
    assert.ok(m4a, `m4a is not among ${r.stdout}`);
    assert.equal(m4a.enabled, true);
    assert.deepEqual(
      { type: m4a.transport.type, command: m4a.transport.command, args: m4a.transport.args },
      { type: 'stdio', command: 'm4a', args: ['mcp', '--account', 'codex'] },
    );
    assert.ok(m4a.transport.env_vars.includes('M4A_PORT') && m4a.transport.env_vars.includes('M4A_DATA_DIR'), 'the daemon location reaches the bridge');
  });

  it('gemini: connected (in a trusted workspace; untrusted folders connect no MCP server)', async (t: TestContext) => {
    const w = await world(t);
    await w.m4a(['setup', 'gemini']);
    // Gemini CLI prints the list on stderr when it is not on a terminal.
    const untrusted = await w.run('gemini', ['mcp', 'list'], { timeoutMs: AGENT_TIMEOUT_MS });
    t.diagnostic(`gemini mcp list (untrusted folder, ${untrusted.ms} ms): ${serverLine(untrusted.stdout + untrusted.stderr, 'm4a')}`);
    const r = await w.run('gemini', ['mcp', 'list'], { env: { GEMINI_CLI_TRUST_WORKSPACE: 'true' }, timeoutMs: AGENT_TIMEOUT_MS });
    ok(r, 'gemini mcp list');
    const line = serverLine(r.stdout + r.stderr, 'm4a');
    t.diagnostic(`gemini mcp list (GEMINI_CLI_TRUST_WORKSPACE=true, ${r.ms} ms): ${line}`);
    assert.match(line ?? '', /m4a: m4a mcp --account gemini \(stdio\) - Connected$/, describeRun(r));
  });
});

describe('a real session speaks through m4a, attested as itself', () => {
  it('claude -p: whoami names the claude process and its session id; its mail reaches codex from that address', async (t: TestContext) => {
    const w = await world(t);
    await w.m4a(['setup', 'claude', '--project', w.project]);
    const codex = JSON.parse(await w.m4a(['admin', 'account', 'add', 'codex', '--json']));
    assert.equal(typeof codex.secret, 'string');

    const model = await startScriptedAnthropic([
      { tool: 'mcp__m4a__m4a_mail_whoami', input: {} },
      { tool: 'mcp__m4a__m4a_mail_send', input: { to: 'codex', subject: 'hello from claude', body: 'sent by a real Claude Code session' } },
      { text: 'done' },
    ]);
    t.after(() => model.close());
    const r = await w.run(
      'claude',
      ['-p', 'check your mail identity and say hello to codex', '--output-format', 'json', '--allowedTools', 'mcp__m4a__m4a_mail_whoami,mcp__m4a__m4a_mail_send'],
      { cwd: w.project, env: claudeEnv(model.url), timeoutMs: AGENT_TIMEOUT_MS },
    );
    t.diagnostic(`claude -p ran ${r.ms} ms`);
    ok(r, 'claude -p');
    const out = JSON.parse(r.stdout);
    assert.equal(out.is_error, false, r.stdout);
    assert.equal(out.result, 'done');
    assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);
    assert.equal(model.remaining(), 0, 'every scripted turn was taken');

    const [whoami, send] = model.exchanges();
    assert.equal(whoami?.isError, false, `whoami failed: ${whoami?.result}`);
    const me = parseJson(whoami.result, 'whoami');
    assert.match(me.address, /^claude\/s-[0-9a-f]+$/);
    assert.equal(me.account, 'claude');

    // The session is the claude process that spawned the bridge, not the bridge.
    const p = attestedProcess(me.card, r);
    assert.equal(realpathSync(p.exe), CLAUDE_EXE, `the attested process runs ${p.exe}, not Claude Code`);
    assert.equal(me.card.corroborated.provider, 'claude');
    assert.equal(typeof out.session_id, 'string');
    assert.equal(me.card.corroborated.provider_session_id, out.session_id, 'the provider session id is the one Claude Code reports');
    assert.equal(me.card.corroborated.cwd, w.project);

    assert.equal(send?.isError, false, `send failed: ${send?.result}`);
    const sent = parseJson(send.result, 'send');
    assert.equal(sent.from, `${me.account}/${me.slug}`, 'answers print the session short: account/slug');

    const inbox = await inboxOf(w, codex.secret);
    const got = inbox.messages.filter((m: any) => m.subject === 'hello from claude');
    assert.equal(got.length, 1, JSON.stringify(inbox));
    assert.equal(got[0].from, sent.from);
    assert.equal(got[0].body, 'sent by a real Claude Code session');
    assert.equal(got[0].message_id, sent.message_id);
  });

  it('codex exec: whoami names the codex process', async (t: TestContext) => {
    const w = await world(t);
    const model = await startScriptedOpenAI(
      [
        { tool: (names) => names.find((n) => n === 'm4a_mail_whoami' || n.endsWith('__m4a_mail_whoami')), input: {} },
        {
          tool: (names) => names.find((n) => n === 'm4a_mail_send' || n.endsWith('__m4a_mail_send')),
          input: { to: 'claude', subject: 'hello from codex', body: 'sent by a real Codex session' },
        },
        { text: 'done' },
      ],
      { whileMissing: { tool: 'exec_command', input: { cmd: 'sleep 1' }, max: 30 } },
    );
    t.after(() => model.close());
    // The scripted model as Codex's provider; m4a setup appends its [mcp_servers.m4a] after this.
    const codexHome = w.env.CODEX_HOME!;
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(
      join(codexHome, 'config.toml'),
      `model = "scripted-model"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\nname = "scripted"\nbase_url = "${model.url}/v1"\nwire_api = "responses"\nenv_key = "SCRIPTED_MODEL_KEY"\n`,
    );
    await w.m4a(['setup', 'codex']);
    const claude = JSON.parse(await w.m4a(['admin', 'account', 'add', 'claude', '--json']));

    const r = await w.run('codex', ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', '--json', 'check your mail identity and say hello to claude'], {
      cwd: w.project,
      env: { SCRIPTED_MODEL_KEY: 'test-key' },
      timeoutMs: AGENT_TIMEOUT_MS,
    });
    t.diagnostic(`codex exec ran ${r.ms} ms; the model waited ${model.waits()} s for the m4a tools to be offered`);
    ok(r, 'codex exec');
    assert.deepEqual(model.problems, [], `offered: ${model.toolNames().join(', ')}`);
    assert.equal(model.remaining(), 0, 'every scripted turn was taken');
    const events = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    const threadId = events.find((e) => e.type === 'thread.started')?.thread_id;

    const [whoami, send] = model.exchanges();
    t.diagnostic(`codex MCP tool names: ${whoami?.name}, ${send?.name}`);
    const me = parseJson(whoami?.output ?? null, 'whoami');
    assert.match(me.address, /^codex\/s-[0-9a-f]+$/);
    const p = attestedProcess(me.card, r);
    assert.notEqual(p.pid, r.pid, 'not the node launcher: the codex binary it starts');
    assert.ok(p.exe.includes('@openai/codex') && /\/codex$/.test(p.exe), `the attested process runs ${p.exe}, not Codex`);
    assert.equal(me.card.corroborated.provider, 'codex');
    t.diagnostic(`codex thread ${threadId}; card provider_session_id ${me.card.corroborated.provider_session_id ?? '(none)'}`);
    if (me.card.corroborated.provider_session_id !== undefined) assert.equal(me.card.corroborated.provider_session_id, threadId);

    const sent = parseJson(send?.output ?? null, 'send');
    assert.equal(sent.from, `${me.account}/${me.slug}`, 'answers print the session short: account/slug');
    const inbox = await inboxOf(w, claude.secret);
    const got = inbox.messages.filter((m: any) => m.subject === 'hello from codex');
    assert.equal(got.length, 1, JSON.stringify(inbox));
    assert.equal(got[0].from, sent.from);
  });
});
