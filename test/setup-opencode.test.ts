// `m4a setup opencode` on a temporary HOME: `mcp.m4a` in $XDG_CONFIG_HOME/opencode/opencode.json
// beside the user's servers and comments (a local command with a timeout past a 50 s wait), the
// plugin stub, the guide as a skill, and the two facts that keep opencode from installing
// @opencode-ai/plugin at every start (node_modules/ and the lock entry); idempotent, unsetup
// byte-exact; a project's opencode.json and .opencode/; a user's own lock and node_modules kept.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { runDoctor } from '../src/cli/doctor.js';
import { renderGuide } from '../src/cli/setup/guide.js';
import { OPENCODE_PLUGIN_MODULE, opencodePluginStub } from '../src/cli/setup/program-opencode.js';
import { setupFiles, unsetupFiles, type SetupOptions } from '../src/cli/setup/setup-files.js';
import { BRIDGE, tempDirs, USER } from './support/setup-fixture.js';

const SECRET = 'm4a_s3cr3t_never_in_agent_configs_0123456789';

const tmp = tempDirs();

/** A HOME whose XDG_CONFIG_HOME is elsewhere (setup must follow it). */
function world(): { home: string; xdg: string; env: NodeJS.ProcessEnv } {
  const h = tmp('m4a-opencode-');
  const xdg = join(h, 'xdg');
  mkdirSync(join(xdg, 'mail4agent'), { recursive: true });
  writeFileSync(join(xdg, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { opencode: { secret: SECRET, provider: 'opencode' } } }), { mode: 0o600 });
  return { home: h, xdg, env: { HOME: h, XDG_CONFIG_HOME: xdg, PATH: '', M4A_PORT: '7341' } };
}

function put(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
const read = (p: string): string => readFileSync(p, 'utf8');

/** Every file and directory under `dir` but our own state (mail4agent/). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    if (name === 'mail4agent' || name.startsWith(`mail4agent/`)) continue;
    const p = join(dir, name);
    out[relative(dir, p)] = statSync(p).isDirectory() ? '<dir>' : read(p);
  }
  return out;
}

const run = (o: Partial<SetupOptions> & { env: NodeJS.ProcessEnv }) =>
  setupFiles({ program: 'opencode', scope: USER, transport: 'stdio', account: 'opencode', bridge: BRIDGE, ...o });

const ENTRY = { type: 'local', command: ['m4a', 'mcp', '--account', 'opencode'], enabled: true, timeout: 120000 };
const USER_CONFIG = `{
  "$schema": "https://opencode.ai/config.json",
  // my model
  "model": "anthropic/claude-sonnet-4",
  "mcp": {
    "files": { "type": "local", "command": ["npx", "files-mcp"], "enabled": true }, // keep
  },
}
`;

describe('setup writers: opencode', () => {
  it('user scope: mcp.m4a beside the user servers and comments, plugin, skill, install guard; idempotent; unsetup byte-exact', () => {
    const { xdg, env } = world();
    const dir = join(xdg, 'opencode');
    put(join(dir, 'opencode.json'), USER_CONFIG);
    const before = snapshot(xdg);
    run({ env });
    const text = read(join(dir, 'opencode.json'));
    const cfg = parseJsonc(text) as { mcp: Record<string, unknown>; model: string };
    assert.deepEqual(cfg.mcp.m4a, ENTRY);
    assert.deepEqual(cfg.mcp.files, { type: 'local', command: ['npx', 'files-mcp'], enabled: true });
    assert.ok(text.startsWith(USER_CONFIG.slice(0, USER_CONFIG.indexOf('},') + 2)), 'the text before our entry is untouched');
    assert.match(text, /\/\/ my model/);
    assert.match(text, /\/\/ keep/);
    // The plugin: imports this package's plugin module, names the account, no secret.
    const plugin = read(join(dir, 'plugin', 'mail4agent.js'));
    assert.equal(plugin, opencodePluginStub('opencode'));
    assert.ok(plugin.includes(JSON.stringify(OPENCODE_PLUGIN_MODULE)));
    assert.match(plugin, /export const Mail4agent = mail4agent\(\{ account: "opencode" \}\);/);
    assert.equal(read(join(dir, 'skill', 'mail4agent', 'SKILL.md')), renderGuide('opencode', 'file'));
    assert.match(read(join(dir, 'skill', 'mail4agent', 'SKILL.md')), /^---\nname: mail4agent\ndescription: /);
    // opencode's own check: node_modules/ exists and the lock lists the package under packages[""].
    assert.ok(statSync(join(dir, 'node_modules')).isDirectory());
    const lock = JSON.parse(read(join(dir, 'package-lock.json'))) as { packages: Record<string, { dependencies: Record<string, string> }> };
    assert.ok(lock.packages['']!.dependencies['@opencode-ai/plugin']);
    for (const [name, content] of Object.entries(snapshot(xdg))) assert.ok(!content.includes(SECRET), `${name} holds no secret`);
    // A second run changes nothing.
    const once = snapshot(xdg);
    run({ env });
    assert.deepEqual(snapshot(xdg), once);
    unsetupFiles({ program: 'opencode', scope: USER, env });
    const left = snapshot(xdg);
    delete left['opencode/opencode.json.m4a-backup'];
    assert.deepEqual(left, before);
  });

  it('XDG_CONFIG_HOME unset: ~/.config/opencode; an existing opencode.jsonc (written by opencode) is the file edited', () => {
    const h = tmp('m4a-opencode-home-');
    mkdirSync(join(h, '.config', 'mail4agent'), { recursive: true });
    const env = { HOME: h, PATH: '' };
    const jsonc = join(h, '.config', 'opencode', 'opencode.jsonc');
    put(jsonc, '{\n  "$schema": "https://opencode.ai/config.json"\n}');
    run({ env });
    assert.deepEqual((parseJsonc(read(jsonc)) as { mcp: unknown }).mcp, { m4a: ENTRY });
    assert.ok(!existsSync(join(h, '.config', 'opencode', 'opencode.json')));
    unsetupFiles({ program: 'opencode', scope: USER, env });
    assert.equal(read(jsonc), '{\n  "$schema": "https://opencode.ai/config.json"\n}');
    assert.deepEqual(readdirSync(join(h, '.config', 'opencode')), ['opencode.jsonc']);
  });

  it("a user's own lock and node_modules: the lock entry is added once and removed exactly; a lock that lists the package is left as it is", () => {
    const { xdg, env } = world();
    const dir = join(xdg, 'opencode');
    const lock = '{\n  "name": "opencode",\n  "lockfileVersion": 3,\n  "packages": {\n    "": {\n      "dependencies": {\n        "left-pad": "^1.3.0"\n      }\n    }\n  }\n}\n';
    put(join(dir, 'package-lock.json'), lock);
    put(join(dir, 'node_modules', 'left-pad', 'index.js'), 'module.exports = 1;\n');
    run({ env });
    const deps = (JSON.parse(read(join(dir, 'package-lock.json'))) as { packages: Record<string, { dependencies: Record<string, string> }> }).packages['']!.dependencies;
    assert.deepEqual(Object.keys(deps), ['left-pad', '@opencode-ai/plugin']);
    unsetupFiles({ program: 'opencode', scope: USER, env });
    assert.equal(read(join(dir, 'package-lock.json')), lock);
    assert.deepEqual(readdirSync(join(dir, 'node_modules')), ['left-pad']);

    const listed = lock.replace('"left-pad": "^1.3.0"', '"@opencode-ai/plugin": "1.18.33"');
    writeFileSync(join(dir, 'package-lock.json'), listed);
    run({ env });
    assert.equal(read(join(dir, 'package-lock.json')), listed, 'a lock that lists the package already is not touched');
    unsetupFiles({ program: 'opencode', scope: USER, env });
    assert.equal(read(join(dir, 'package-lock.json')), listed);
  });

  it("project scope: DIR/opencode.json, DIR/.opencode/{plugin,skill,node_modules,package-lock.json} and the guard in the user's folder; unsetup leaves both as they were", () => {
    const { xdg, env } = world();
    const project = tmp('m4a-opencode-project-');
    put(join(project, 'README.md'), '# app\n');
    put(join(xdg, 'opencode', 'opencode.json'), USER_CONFIG);
    const before = { project: snapshot(project), user: snapshot(xdg) };
    run({ env, scope: { kind: 'project', dir: project } });
    assert.deepEqual((JSON.parse(read(join(project, 'opencode.json'))) as { mcp: unknown }).mcp, { m4a: ENTRY });
    assert.ok(existsSync(join(project, '.opencode', 'plugin', 'mail4agent.js')));
    assert.ok(existsSync(join(project, '.opencode', 'skill', 'mail4agent', 'SKILL.md')));
    // opencode installs into every config folder once any has a plugin: both are guarded.
    for (const folder of [join(project, '.opencode'), join(xdg, 'opencode')]) {
      assert.ok(statSync(join(folder, 'node_modules')).isDirectory(), folder);
      assert.ok(existsSync(join(folder, 'package-lock.json')), folder);
    }
    assert.equal(read(join(xdg, 'opencode', 'opencode.json')), USER_CONFIG, "the user's config is not touched");
    unsetupFiles({ program: 'opencode', scope: { kind: 'project', dir: project }, env });
    assert.deepEqual(snapshot(project), before.project);
    assert.deepEqual(snapshot(xdg), before.user);
  });

  it("the user's folder guard serves the user and a project setup: it stays until the last of them is undone", () => {
    const { xdg, env } = world();
    const project = tmp('m4a-opencode-both-');
    const guard = join(xdg, 'opencode', 'node_modules', '.mail4agent');
    const lock = join(xdg, 'opencode', 'package-lock.json');
    run({ env, scope: { kind: 'project', dir: project } });
    run({ env });
    unsetupFiles({ program: 'opencode', scope: USER, env });
    assert.ok(existsSync(guard) && existsSync(lock), 'the project setup still needs the guard');
    assert.ok(!existsSync(join(xdg, 'opencode', 'plugin')), "the user setup's own files are gone");
    unsetupFiles({ program: 'opencode', scope: { kind: 'project', dir: project }, env });
    assert.ok(!existsSync(join(xdg, 'opencode')), 'nothing of ours is left');
  });

  it('--no-hooks: the entry and the skill only, no plugin and no install guard; http: a remote entry naming the variable', () => {
    const { xdg, env } = world();
    const dir = join(xdg, 'opencode');
    run({ env, hooks: false });
    assert.ok(!existsSync(join(dir, 'plugin')));
    assert.ok(!existsSync(join(dir, 'node_modules')));
    assert.ok(!existsSync(join(dir, 'package-lock.json')));
    run({ env, transport: 'http' });
    const entry = (JSON.parse(read(join(dir, 'opencode.json'))) as { mcp: { m4a: unknown } }).mcp.m4a;
    assert.deepEqual(entry, { type: 'remote', url: 'http://127.0.0.1:7341/mcp', headers: { Authorization: 'Bearer {env:M4A_TOKEN}' }, enabled: true, timeout: 120000 });
    assert.ok(existsSync(join(dir, 'plugin', 'mail4agent.js')));
    unsetupFiles({ program: 'opencode', scope: USER, env });
    assert.deepEqual(readdirSync(xdg), ['mail4agent']);
  });

  it('doctor: finds mcp.m4a and its account, and the plugin; names the start-time install when its guard is gone', async () => {
    const { xdg, env } = world();
    const project = tmp('m4a-opencode-doctor-');
    run({ env });
    const denv = { ...env, M4A_DATA_DIR: join(xdg, 'no-daemon'), M4A_PORT: '1' };
    const checks = await runDoctor({ project }, denv);
    const entry = checks.find((c) => c.name === 'opencode (user)');
    assert.equal(entry?.status, 'ok', JSON.stringify(entry));
    assert.match(entry.detail, /stdio bridge m4a mcp --account opencode in .*opencode\.json/);
    const plugin = checks.find((c) => c.name === 'opencode plugin (user)');
    assert.ok(plugin, JSON.stringify(checks.map((c) => c.name)));
    assert.doesNotMatch(plugin.detail, /will install/);
    rmSync(join(xdg, 'opencode', 'node_modules'), { recursive: true });
    const again = (await runDoctor({ project }, denv)).find((c) => c.name === 'opencode plugin (user)');
    assert.equal(again?.status, 'fail');
    assert.match(again.detail, /will install @opencode-ai\/plugin into .* at every start/);
  });
});
