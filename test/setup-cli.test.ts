// `m4a setup` / `m4a unsetup` end to end: a real CLI process on a temporary HOME, the daemon
// auto-started on a free port, the account and credentials created, the written entry used.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SetupResult } from '../src/cli/setup/result.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** How the CLI is run: the throwaway entry until main.ts registers setup; then [dist/cli/main.js].
 *  tsx by absolute URL, because the auto-started daemon inherits it and runs in the data directory. */
const CLI = [join(ROOT, 'dist/cli/main.js')];
const DIST_MAIN = join(ROOT, 'dist/cli/main.js');

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

function cleanEnv(home: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(M4A_|XDG_|CODEX_HOME$|CLAUDE|CODEX_|GEMINI_|CURSOR_)/.test(k)) env[k] = v;
  return { ...env, HOME: home, M4A_DATA_DIR: join(home, 'data'), ...extra };
}

function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const p = join(dir, name);
    out[relative(dir, p)] = statSync(p).isDirectory() ? '<dir>' : readFileSync(p, 'utf8');
  }
  return out;
}

/** Talks JSON-RPC to an MCP stdio server: initialize, then one tool call. */
async function callTool(command: string, args: string[], env: NodeJS.ProcessEnv, tool: string): Promise<Record<string, unknown>> {
  const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const answer = new Promise<Record<string, unknown>>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no answer from ${command} ${args.join(' ')}: ${err}`)), 20_000);
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      for (const line of out.split('\n')) {
        if (!line.trim()) continue;
        const m = JSON.parse(line) as { id?: number; result?: { content?: { text: string }[] }; error?: unknown };
        if (m.id !== 2) continue;
        clearTimeout(timer);
        if (m.error) return reject(new Error(JSON.stringify(m.error)));
        return resolve(JSON.parse(m.result!.content![0]!.text) as Record<string, unknown>);
      }
    });
  });
  const send = (o: unknown): void => void child.stdin.write(`${JSON.stringify(o)}\n`);
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'setup-test', version: '1' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: tool, arguments: {} } });
  try {
    return await answer;
  } finally {
    child.stdin.end();
    child.kill();
  }
}

describe('m4a setup / unsetup (CLI, auto-started daemon)', () => {
  let home: string;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const m4a = (args: string[], e: NodeJS.ProcessEnv = env) => {
    const r = spawnSync(process.execPath, [...CLI, ...args], { encoding: 'utf8', env: e, timeout: 60_000 });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const creds = () => join(home, '.config', 'mail4agent', 'credentials.json');
  const secretOf = (name: string): string => (JSON.parse(readFileSync(creds(), 'utf8')) as { accounts: Record<string, { secret: string }> }).accounts[name]!.secret;

  before(async () => {
    home = mkdtempSync(join(tmpdir(), 'm4a-setup-cli-'));
    dir = join(home, 'project');
    mkdirSync(dir);
    writeFileSync(join(dir, 'README.md'), '# a project\n');
    env = cleanEnv(home, { M4A_PORT: String(await freePort()) });
  });

  after(() => {
    try {
      m4a(['daemon', 'stop']);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('usage errors exit 2 and touch nothing', () => {
    const cases = [
      ['setup', 'claude', '--project', dir, '--user'],
      ['setup', 'vim'],
      ['setup', 'claude', '--transport', 'carrier-pigeon'],
      ['setup', 'claude', '--project', join(home, 'missing')],
      ['setup', 'claude', '--project', home],
      ['unsetup', 'emacs'],
    ];
    for (const args of cases) {
      const r = m4a(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    }
    assert.deepEqual(readdirSync(home).sort(), ['project'], 'no daemon started, no file written');
  });

  it('a daemon that cannot be reached exits 3 before writing any file', async () => {
    const other = mkdtempSync(join(tmpdir(), 'm4a-setup-down-'));
    try {
      const r = m4a(['setup', 'gemini'], cleanEnv(other, { M4A_URL: `http://127.0.0.1:${await freePort()}` }));
      assert.equal(r.status, 3, r.stderr);
      assert.deepEqual(readdirSync(other), []);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('setup claude --project creates the account, stores its secret (0600) and writes no secret anywhere else', () => {
    const r = m4a(['setup', 'claude', '--project', dir, '--json']);
    assert.equal(r.status, 0, r.stderr);
    const result = SetupResult.parse(JSON.parse(r.stdout));
    assert.equal(result.program, 'claude');
    assert.equal(result.scope, 'project');
    assert.equal(result.account, 'claude');
    assert.equal(result.account_created, true);
    assert.equal(result.secret_rotated, false);
    assert.equal(result.transport, 'stdio');
    assert.deepEqual(
      result.files.map((f) => [relative(dir, f.path), f.action]),
      [
        ['.mcp.json', 'created'],
        ['.claude/settings.local.json', 'created'],
        ['.claude/skills/mail4agent/SKILL.md', 'created'],
        ['.claude/settings.json', 'created'],
      ],
    );
    assert.ok(
      result.todo.some((t) => /workspace trust/.test(t)),
      'says what approval still needs',
    );
    assert.ok(
      result.todo.some((t) => t.includes(join(dir, '.claude', 'settings.json')) && /hooks/.test(t)),
      'says the hooks need the trust dialog too',
    );

    assert.equal(statSync(creds()).mode & 0o777, 0o600);
    const stored = (JSON.parse(readFileSync(creds(), 'utf8')) as { accounts: Record<string, { secret: string; provider: string }> }).accounts.claude!;
    assert.ok(stored.secret.length >= 16);
    assert.equal(stored.provider, 'claude');
    assert.ok(!r.stdout.includes(stored.secret) && !r.stderr.includes(stored.secret), 'the secret is not printed');
    for (const [p, text] of Object.entries(tree(dir))) assert.ok(!text.includes(stored.secret), `no secret in ${p}`);
    const entry = (JSON.parse(readFileSync(join(dir, '.mcp.json'), 'utf8')) as { mcpServers: { m4a: { type: string; args: string[] } } }).mcpServers.m4a;
    assert.equal(entry.type, 'stdio');
    assert.deepEqual(entry.args.slice(-3), ['mcp', '--account', 'claude']);
  });

  it('the entry it wrote runs a working bridge that answers as the account', async () => {
    assert.ok(existsSync(DIST_MAIN), 'run `npm run build` first (the entry runs the built CLI)');
    const entry = (JSON.parse(readFileSync(join(dir, '.mcp.json'), 'utf8')) as { mcpServers: { m4a: { command: string; args: string[] } } }).mcpServers.m4a;
    const me = await callTool(entry.command, entry.args, env, 'm4a_mail_whoami');
    assert.equal(me.account, 'claude');
  });

  it("the Stop hook it wrote runs under sh -c with Claude Code's Stop JSON: exit 0, quiet with no mail, blocks with new mail", () => {
    const settings = JSON.parse(readFileSync(join(dir, '.claude', 'settings.json'), 'utf8')) as { hooks: Record<string, { hooks: { command: string; timeout: number }[] }[]> };
    const stop = settings.hooks.Stop!;
    assert.equal(stop.length, 1);
    const { command, timeout } = stop[0]!.hooks[0]!;
    assert.ok(timeout > 540, 'outlasts the listen-mode long poll');
    assert.match(command, / hook claude-stop --account claude$/);
    // The Stop payload Claude Code sends (AGENT-INTEGRATIONS §2.2).
    const input = JSON.stringify({
      session_id: 'abc123',
      transcript_path: '/tmp/abc123.jsonl',
      cwd: dir,
      permission_mode: 'default',
      hook_event_name: 'Stop',
      stop_hook_active: false,
      last_assistant_message: 'Done.',
    });
    const hook = () => spawnSync('sh', ['-c', command], { input, encoding: 'utf8', env, cwd: dir, timeout: 60_000 });
    const quiet = hook();
    assert.equal(quiet.status, 0, quiet.stderr);
    assert.equal(quiet.stderr, '', 'reached the daemon as the account (a failing hook says why on stderr)');
    assert.equal(quiet.stdout, '', 'no mail: Claude may stop');

    // Another program, set up without hooks, sends mail to claude.
    const other = m4a(['setup', 'cursor', '--no-hooks', '--json']);
    assert.equal(other.status, 0, other.stderr);
    assert.deepEqual(
      SetupResult.parse(JSON.parse(other.stdout)).files.map((f) => relative(home, f.path)),
      ['.cursor/mcp.json'],
      '--no-hooks: no hooks.json',
    );
    const sent = m4a(['send', '--account', 'cursor', '--json', 'claude', 'are you there?', 'ping']);
    assert.equal(sent.status, 0, sent.stderr);
    const id = (JSON.parse(sent.stdout) as { message_id: string }).message_id;
    const woken = hook();
    assert.equal(woken.status, 0, woken.stderr);
    const out = JSON.parse(woken.stdout) as { decision: string; reason: string };
    assert.equal(out.decision, 'block');
    assert.ok(out.reason.includes(id), 'the reason names the new message');
    assert.equal(m4a(['unsetup', 'cursor']).status, 0);
  });

  it('running it again reports the account as existing and changes nothing', () => {
    const before = { project: tree(dir), config: tree(join(home, '.config')) };
    const r = m4a(['setup', 'claude', '--project', dir, '--json']);
    assert.equal(r.status, 0, r.stderr);
    const result = SetupResult.parse(JSON.parse(r.stdout));
    assert.equal(result.account_created, false);
    assert.equal(result.secret_rotated, false);
    assert.ok(result.files.every((f) => f.action === 'unchanged'));
    assert.deepEqual({ project: tree(dir), config: tree(join(home, '.config')) }, before, 'files, credentials and state byte-identical');
  });

  it('an existing account without a stored secret is rotated, and the output says so', () => {
    const old = secretOf('claude');
    rmSync(creds());
    const r = m4a(['setup', 'claude', '--project', dir]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /rotated: the old secret stops working/);
    assert.notEqual(secretOf('claude'), old);
  });

  it('an unparseable agent file is refused with exit 1 and nothing changes', () => {
    const gemini = join(dir, '.gemini');
    mkdirSync(gemini);
    writeFileSync(join(gemini, 'settings.json'), '{ "ui": { "theme": ');
    const before = { project: tree(dir), config: tree(join(home, '.config')) };
    const r = m4a(['setup', 'gemini', '--project', dir, '--json']);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /refused/);
    assert.ok(r.stderr.includes(join(gemini, 'settings.json')));
    assert.deepEqual({ project: tree(dir), config: tree(join(home, '.config')) }, before);
    rmSync(gemini, { recursive: true });
  });

  it('unsetup restores the project and keeps the account and credentials', () => {
    const secret = secretOf('claude');
    const r = m4a(['unsetup', 'claude', '--project', dir, '--json']);
    assert.equal(r.status, 0, r.stderr);
    const result = SetupResult.parse(JSON.parse(r.stdout));
    assert.ok(result.files.every((f) => f.action === 'removed'));
    assert.ok(result.todo.some((t) => /kept/.test(t)));
    assert.deepEqual(tree(dir), { 'README.md': '# a project\n' });
    assert.equal(secretOf('claude'), secret);
    const again = m4a(['unsetup', 'claude', '--project', dir]);
    assert.equal(again.status, 0);
    assert.match(again.stdout, /nothing to remove/);
  });
});
