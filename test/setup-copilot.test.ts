// `m4a setup copilot` on a temporary HOME: the MCP entry in $COPILOT_HOME/mcp-config.json beside
// the user's servers (tools "*", a timeout past a 50 s wait), the hooks as a whole file of ours, the
// guide as a skill; idempotent, unsetup byte-exact; a project's .github. And the pitfall of a
// workspace .mcp.json written for Claude Code: the bridge's account choice and setup's warning.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { isCopilotExtensionHost } from '../src/attest/transparent.js';
import { bridgeAccount } from '../src/cli/bridge-account.js';
import { runDoctor } from '../src/cli/doctor.js';
import { copilotTodo } from '../src/cli/setup/copilot-todo.js';
import { copilotExtensionSource } from '../src/cli/setup/copilot-extension.js';
import { renderGuide } from '../src/cli/setup/guide.js';
import { prepareSetup, setupFiles, unsetupFiles, type SetupOptions } from '../src/cli/setup/setup-files.js';
import { Refusal } from '../src/cli/setup/refusal.js';
import type { Program } from '../src/cli/setup/programs.js';
import { BRIDGE, tempDirs, USER } from './support/setup-fixture.js';

const SECRET = 'm4a_s3cr3t_never_in_agent_configs_0123456789';

const tmp = tempDirs();

function home(accounts: Record<string, { secret: string; provider?: string }> = { claude: { secret: SECRET, provider: 'claude' } }): { home: string; env: NodeJS.ProcessEnv } {
  const h = tmp('m4a-copilot-');
  mkdirSync(join(h, '.config', 'mail4agent'), { recursive: true });
  writeFileSync(join(h, '.config', 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts }), { mode: 0o600 });
  return { home: h, env: { HOME: h, PATH: '', M4A_PORT: '7341', M4A_TOKEN: SECRET } };
}

function put(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
const read = (p: string): string => readFileSync(p, 'utf8');

function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const p = join(dir, name);
    out[relative(dir, p)] = statSync(p).isDirectory() ? '<dir>' : read(p);
  }
  return out;
}

const run = (o: Partial<SetupOptions> & { program: Program; env: NodeJS.ProcessEnv }) => setupFiles({ scope: USER, transport: 'stdio', account: o.program, bridge: BRIDGE, ...o });

const ENTRY = { type: 'local', command: 'm4a', args: ['mcp', '--account', 'copilot'], tools: ['*'], timeout: 120000 };
const HOOKS =
  '{\n  "version": 1,\n  "hooks": {\n' +
  '    "agentStop": [\n      {\n        "type": "command",\n        "bash": "m4a hook copilot-stop --account copilot",\n        "timeoutSec": 600\n      }\n    ],\n' +
  '    "userPromptSubmitted": [\n      {\n        "type": "command",\n        "bash": "m4a hook copilot-prompt --account copilot",\n        "timeoutSec": 30\n      }\n    ],\n' +
  '    "postToolUse": [\n      {\n        "type": "command",\n        "bash": "m4a hook copilot-tool --account copilot",\n        "timeoutSec": 30\n      }\n    ]\n' +
  '  }\n}\n';

// What `copilot mcp add` leaves: two-space JSON, a server of the user's.
const USER_MCP =
  '{\n  "mcpServers": {\n    "linear": {\n      "type": "http",\n      "url": "https://mcp.linear.app/mcp",\n      "tools": [\n        "*"\n      ]\n    }\n  }\n}\n';

describe('m4a setup copilot: files', () => {
  it("user scope under $COPILOT_HOME: the entry beside the user's server, the hooks file, the skill; idempotent; unsetup restores every byte", () => {
    const { home: h, env } = home();
    const ch = join(h, 'copilot-home');
    env.COPILOT_HOME = ch;
    put(join(ch, 'mcp-config.json'), USER_MCP);
    put(join(ch, 'hooks', 'theirs.json'), '{"version":1,"hooks":{"agentStop":[{"type":"command","bash":"echo hi"}]}}\n');
    const before = snapshot(h);

    const files = run({ program: 'copilot', env });
    assert.deepEqual(
      files.filter((f) => !f.path.endsWith('.m4a-backup')).map((f) => [relative(ch, f.path), f.action]),
      [
        ['mcp-config.json', 'updated'],
        [join('skills', 'mail4agent', 'SKILL.md'), 'created'],
        [join('hooks', 'mail4agent.json'), 'created'],
        [join('extensions', 'mail4agent', 'extension.mjs'), 'created'],
      ],
    );
    const mcp = JSON.parse(read(join(ch, 'mcp-config.json'))) as { mcpServers: Record<string, unknown> };
    assert.deepEqual(Object.keys(mcp.mcpServers), ['linear', 'm4a']);
    assert.deepEqual(mcp.mcpServers.m4a, ENTRY);
    assert.ok(read(join(ch, 'mcp-config.json')).startsWith(USER_MCP.slice(0, USER_MCP.lastIndexOf('    }'))), 'the user bytes are kept in front of ours');
    assert.equal(read(join(ch, 'hooks', 'mail4agent.json')), HOOKS);
    assert.equal(read(join(ch, 'skills', 'mail4agent', 'SKILL.md')), renderGuide('copilot', 'file'));
    assert.equal(read(join(ch, 'extensions', 'mail4agent', 'extension.mjs')), copilotExtensionSource(['m4a', 'hook', 'copilot-live', '--account', 'copilot']));
    assert.match(renderGuide('copilot', 'file'), /^---\nname: mail4agent\ndescription: /);
    for (const f of files) if (existsSync(f.path) && statSync(f.path).isFile()) assert.ok(!read(f.path).includes(SECRET), `no secret in ${f.path}`);
    assert.ok(!existsSync(join(h, '.copilot')), 'nothing under ~/.copilot when COPILOT_HOME is set');

    const again = snapshot(h);
    assert.deepEqual(
      run({ program: 'copilot', env }).map((f) => f.action),
      ['unchanged', 'unchanged', 'unchanged', 'unchanged'],
    );
    assert.deepEqual(snapshot(h), again, 'a second run leaves every byte');

    unsetupFiles({ program: 'copilot', scope: USER, env });
    const after = snapshot(h);
    delete after[join('.config', 'mail4agent', 'setup-state.json')];
    const was = { ...before };
    assert.deepEqual(after, was);
  });

  it('without COPILOT_HOME: ~/.copilot; another account replaces our entry and hooks in place', () => {
    const { home: h, env } = home();
    run({ program: 'copilot', env });
    const base = join(h, '.copilot');
    assert.deepEqual(JSON.parse(read(join(base, 'mcp-config.json'))), { mcpServers: { m4a: ENTRY } });
    run({ program: 'copilot', env, account: 'reviewer' });
    assert.deepEqual((JSON.parse(read(join(base, 'mcp-config.json'))) as { mcpServers: { m4a: { args: string[] } } }).mcpServers.m4a.args, ['mcp', '--account', 'reviewer']);
    assert.equal(read(join(base, 'hooks', 'mail4agent.json')), HOOKS.replaceAll('--account copilot', '--account reviewer'));
    unsetupFiles({ program: 'copilot', scope: USER, env });
    assert.deepEqual(readdirSync(h).sort(), ['.config']);
  });

  it('project scope: .github/mcp.json, .github/hooks/mail4agent.json and .github/skills; unsetup removes them and the directories it made', () => {
    const { env } = home();
    const dir = tmp('m4a-copilot-proj-');
    put(join(dir, '.github', 'workflows', 'ci.yml'), 'on: push\n');
    const before = snapshot(dir);
    run({ program: 'copilot', env, scope: { kind: 'project', dir } });
    assert.deepEqual(JSON.parse(read(join(dir, '.github', 'mcp.json'))), { mcpServers: { m4a: ENTRY } });
    assert.equal(read(join(dir, '.github', 'hooks', 'mail4agent.json')), HOOKS);
    assert.ok(existsSync(join(dir, '.github', 'skills', 'mail4agent', 'SKILL.md')));
    assert.ok(existsSync(join(dir, '.github', 'extensions', 'mail4agent', 'extension.mjs')));
    unsetupFiles({ program: 'copilot', scope: { kind: 'project', dir }, env });
    assert.deepEqual(snapshot(dir), before);
  });

  it('--no-hooks writes no hooks file, and turning hooks off later removes ours', () => {
    const { home: h, env } = home();
    const hooks = join(h, '.copilot', 'hooks', 'mail4agent.json');
    const extension = join(h, '.copilot', 'extensions', 'mail4agent', 'extension.mjs');
    run({ program: 'copilot', env, hooks: false });
    assert.ok(!existsSync(hooks) && !existsSync(extension));
    run({ program: 'copilot', env });
    assert.ok(existsSync(hooks) && existsSync(extension));
    run({ program: 'copilot', env, hooks: false });
    assert.ok(!existsSync(hooks) && !existsSync(join(h, '.copilot', 'extensions')));
    assert.ok(existsSync(join(h, '.copilot', 'mcp-config.json')));
  });

  it('refuses a hooks file named like ours that it did not write, and an m4a server of the user, before writing anything', () => {
    const { home: h, env } = home();
    put(join(h, '.copilot', 'hooks', 'mail4agent.json'), '{"version":1,"hooks":{}}\n');
    const before = snapshot(h);
    assert.throws(
      () => run({ program: 'copilot', env }),
      (e: unknown) => e instanceof Refusal && /mail4agent\.json exists and was not written by m4a setup/.test(e.message),
    );
    assert.deepEqual(snapshot(h), before);
    rmSync(join(h, '.copilot', 'hooks'), { recursive: true });
    put(join(h, '.copilot', 'mcp-config.json'), '{"mcpServers":{"m4a":{"type":"local","command":"other"}}}');
    assert.throws(
      () => run({ program: 'copilot', env }),
      (e: unknown) => e instanceof Refusal && /already has an MCP server named "m4a"/.test(e.message),
    );
    assert.ok(!existsSync(join(h, '.copilot', 'hooks')));
  });
});

describe('m4a setup copilot: a workspace .mcp.json written for Claude Code', () => {
  it("the bridge under Copilot with Claude Code's account speaks as the account set up for Copilot, or refuses with wrong_program", () => {
    const { env } = home({ claude: { secret: SECRET, provider: 'claude' }, copilot: { secret: 'c'.repeat(40), provider: 'copilot' }, shared: { secret: 's'.repeat(40) } });
    const dir = tmp('m4a-copilot-ws-');
    run({ program: 'claude', env, scope: { kind: 'project', dir } });
    const copilotEnv = { ...env, COPILOT_AGENT_SESSION_ID: '7a0c2f4e-1111-4222-8333-944455556666' };

    // Before Copilot is set up: nothing to speak as, so a named refusal.
    const refused = bridgeAccount('claude', copilotEnv, dir);
    assert.ok('error' in refused && refused.error.startsWith('wrong_program: ') && refused.error.includes('m4a setup copilot'), JSON.stringify(refused));

    run({ program: 'copilot', env });
    assert.deepEqual(bridgeAccount('claude', copilotEnv, join(dir, 'src')), {
      account: 'copilot',
      note: 'the entry names claude, set up for claude; running under copilot, this bridge speaks as copilot',
    });
    // A project setup for Copilot in that folder wins over the user's.
    run({ program: 'copilot', env, account: 'shared', scope: { kind: 'project', dir } });
    assert.equal((bridgeAccount('claude', copilotEnv, dir) as { account: string }).account, 'shared');

    // Claude Code itself, an account set up for both, an account no setup made, no account named: as named.
    assert.deepEqual(bridgeAccount('claude', { ...env, CLAUDECODE: '1' }, dir), { account: 'claude' });
    assert.deepEqual(bridgeAccount('claude', { ...copilotEnv, CLAUDECODE: '1' }, dir), { account: 'claude' }, 'Copilot inside Claude Code: the outer program names it');
    assert.deepEqual(bridgeAccount('shared', copilotEnv, dir), { account: 'shared' });
    assert.deepEqual(bridgeAccount('handmade', copilotEnv, dir), { account: 'handmade' });
    assert.deepEqual(bridgeAccount(undefined, copilotEnv, dir), { account: undefined });
  });

  it('setup copilot names the workspaces whose .mcp.json holds an m4a entry (projects set up for Claude Code, and its own project)', () => {
    const { env } = home();
    const dir = tmp('m4a-copilot-ws-');
    run({ program: 'claude', env, scope: { kind: 'project', dir } });
    const user = prepareSetup({ program: 'copilot', scope: USER, transport: 'stdio', account: 'copilot', env, bridge: BRIDGE });
    const todo = copilotTodo(null, user.changes, env);
    assert.equal(todo.length, 2);
    assert.match(todo[0]!, /extension\.mjs brings mail to an idle session; .*copilot --experimental/);
    assert.ok(todo[1]!.includes(join(dir, '.mcp.json')) && todo[1]!.includes('wrong_program'), todo[1]);

    const proj = prepareSetup({ program: 'copilot', scope: { kind: 'project', dir }, transport: 'stdio', account: 'copilot', env, bridge: BRIDGE });
    const ptodo = copilotTodo(dir, proj.changes, env);
    assert.match(ptodo[0]!, /only in a trusted folder/);
    assert.equal(ptodo.filter((t) => t.includes(join(dir, '.mcp.json'))).length, 1, 'named once');
    unsetupFiles({ program: 'claude', scope: { kind: 'project', dir }, env });
    assert.equal(copilotTodo(null, user.changes, env).length, 1, 'the workspace is no longer named');
  });
});

describe('Copilot CLI extension host in attestation', () => {
  it('is its own binary running the extension bootstrap, as Copilot 1.0.102 starts it; nothing else', () => {
    const bin = '/x/node_modules/@github/copilot-linux-x64/copilot';
    assert.equal(isCopilotExtensionHost([bin, '/home/u/.cache/copilot/pkg/linux-x64/1.0.102/preloads/extension_bootstrap.mjs']), true);
    assert.equal(isCopilotExtensionHost([bin, '--experimental', '-i', 'hello']), false, 'the CLI itself');
    assert.equal(isCopilotExtensionHost([bin, '-p', '/tmp/preloads/extension_bootstrap.mjs', 'x']), false);
    assert.equal(isCopilotExtensionHost([bin, '/tmp/preloads/extension_bootstrap.mjs.bak']), false);
  });
});

describe('m4a doctor: copilot', () => {
  it("finds the entry and its account, names the workspace .mcp.json, and says whether the extension can run (Copilot's experimental setting)", async () => {
    const { home: h, env } = home({ claude: { secret: SECRET, provider: 'claude' }, copilot: { secret: 'c'.repeat(40), provider: 'copilot' } });
    const project = tmp('m4a-copilot-doctor-');
    run({ program: 'claude', env, scope: { kind: 'project', dir: project } });
    run({ program: 'copilot', env });
    const denv = { ...env, M4A_DATA_DIR: join(h, 'no-daemon'), M4A_PORT: '1' };
    const checks = await runDoctor({ project }, denv);
    const entry = checks.find((c) => c.name === 'copilot (user)');
    assert.equal(entry?.status, 'ok', JSON.stringify(checks.map((c) => c.name)));
    assert.match(entry.detail, /stdio bridge m4a mcp --account copilot in .*\.copilot\/mcp-config\.json/);
    const ws = checks.find((c) => c.name === 'copilot workspace entry');
    assert.equal(ws?.status, 'warn');
    assert.ok(ws.detail.includes(join(project, '.mcp.json')), ws.detail);
    assert.equal(checks.find((c) => c.name === 'copilot user idle wake')?.status, 'warn');
    put(join(h, '.copilot', 'settings.json'), '{\n  "experimental": true\n}\n');
    assert.equal((await runDoctor({ project }, denv)).find((c) => c.name === 'copilot user idle wake')?.status, 'ok');
  });
});
