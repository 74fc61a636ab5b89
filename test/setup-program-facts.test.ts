// The program facts setup, capabilities and the CLI's help share: each written once.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { capabilities } from '../src/cli/capabilities.js';
import { runDoctor } from '../src/cli/doctor.js';
import { bridgeAccount } from '../src/cli/bridge-account.js';
import { setupFiles, unsetupFiles } from '../src/cli/setup/setup-files.js';
import { readState } from '../src/cli/setup/state.js';
import { PROGRAMS, STDIO_ONLY } from '../src/cli/setup/programs.js';
import { AGENT_PROGRAMS } from '../src/wire/capabilities.js';

const ROOT = new URL('..', import.meta.url).pathname;

test('setup takes exactly the programs attestation names, and capabilities says which are stdio only', () => {
  assert.deepEqual([...PROGRAMS], [...AGENT_PROGRAMS]);
  const c = capabilities();
  assert.deepEqual(c.setup_programs, AGENT_PROGRAMS);
  assert.deepEqual(c.setup_stdio_only, ['copilot']);
  assert.deepEqual(c.setup_user_settings, { gemini: ['security.auth.selectedType', 'GOOGLE_GENAI_USE_GCA', 'GOOGLE_GENAI_USE_VERTEXAI', 'GEMINI_API_KEY'] });
});

test('a stdio-only program refuses --transport http by name and writes nothing; the help names every program', () => {
  const home = mkdtempSync(join(tmpdir(), 'm4a-facts-'));
  try {
    const env = { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: join(home, '.config'), M4A_DATA_DIR: join(home, 'data') };
    const run = (args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args], { encoding: 'utf8', env, cwd: ROOT, timeout: 60_000 });
    for (const p of STDIO_ONLY) {
      const r = run(['setup', p, '--transport', 'http']);
      assert.notEqual(r.status, 0, r.stdout);
      assert.match(r.stderr, new RegExp(`--transport http: ${p} takes the stdio bridge only`));
    }
    assert.deepEqual(readdirSync(home), [], 'nothing written');
    const help = run(['setup', '--help']);
    assert.equal(help.status, 0, help.stderr);
    for (const p of AGENT_PROGRAMS) assert.match(help.stdout, new RegExp(`\\b${p}\\b`));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('doctor in an empty home tells to set up any program attestation names', async () => {
  const home = mkdtempSync(join(tmpdir(), 'm4a-facts-doctor-'));
  try {
    const env = { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: join(home, '.config'), M4A_DATA_DIR: join(home, 'data'), M4A_PORT: '1' };
    const checks = await runDoctor({ project: home }, env);
    const creds = checks.find((c) => c.name === 'credentials');
    assert.equal(creds?.todo, `run \`m4a setup ${AGENT_PROGRAMS.join('|')}\``);
    const agents = checks.find((c) => c.name === 'agents');
    for (const p of AGENT_PROGRAMS) assert.match(agents?.todo ?? '', new RegExp(`\\b${p}\\b`));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test("the bridge under another program than its entry's, with an unreadable credentials file, returns the named account (connecting then says why) instead of throwing", () => {
  const home = mkdtempSync(join(tmpdir(), 'm4a-facts-bridge-'));
  try {
    const env = { HOME: home, PATH: '', M4A_PORT: '7341' };
    const dir = join(home, 'proj');
    mkdirSync(dir);
    setupFiles({ program: 'claude', scope: { kind: 'project', dir }, transport: 'stdio', account: 'claude', bridge: { command: 'm4a', prefix: [], portable: true }, env });
    const creds = join(home, '.config', 'mail4agent', 'credentials.json');
    mkdirSync(join(home, '.config', 'mail4agent'), { recursive: true });
    writeFileSync(creds, JSON.stringify({ version: 1, accounts: { copilot: { secret: 'c'.repeat(40), provider: 'copilot' } } }), { mode: 0o600 });
    setupFiles({ program: 'copilot', scope: { kind: 'user' }, transport: 'stdio', account: 'copilot', bridge: { command: 'm4a', prefix: [], portable: true }, env });
    const copilotEnv = { ...env, COPILOT_AGENT_SESSION_ID: '7a0c2f4e-1111-4222-8333-944455556666' };
    assert.equal((bridgeAccount('claude', copilotEnv, dir) as { account: string }).account, 'copilot');
    writeFileSync(creds, '{ not json', { mode: 0o600 });
    assert.deepEqual(bridgeAccount('claude', copilotEnv, dir), { account: 'claude' });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('unsetup of a project that was deleted since forgets its record instead of failing on the missing directory', () => {
  const home = mkdtempSync(join(tmpdir(), 'm4a-facts-gone-'));
  try {
    const env = { HOME: home, PATH: '', M4A_PORT: '7341' };
    const dir = join(home, 'proj');
    mkdirSync(dir);
    const scope = { kind: 'project' as const, dir };
    setupFiles({ program: 'qwen', scope, transport: 'stdio', account: 'qwen', bridge: { command: 'm4a', prefix: [], portable: true }, env });
    assert.equal(Object.keys(readState(env).setups).length, 1);
    rmSync(dir, { recursive: true });
    const undone = unsetupFiles({ program: 'qwen', scope, env });
    assert.ok(undone.record);
    assert.deepEqual(readState(env).setups, {});
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
