// m4a setup's file writers on a temporary HOME against realistic existing files: the entry is
// exactly right, every other byte is kept, a second run changes nothing, unsetup restores the
// original byte for byte, and a file that cannot be parsed is refused before anything is written.
import { after, describe, it } from 'node:test';
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { parse as parseToml } from '@decimalturn/toml-patch';
import { parse as parseJsonc, type ParseError } from 'jsonc-parser';
import { DIST_MAIN, resolveBridge, type Bridge } from '../src/cli/setup/bridge-command.js';
import { renderGuide } from '../src/cli/setup/guide.js';
import { Refusal } from '../src/cli/setup/refusal.js';
import { setupFiles, unsetupFiles, type SetupOptions } from '../src/cli/setup/setup-files.js';
import type { Program, Scope } from '../src/cli/setup/programs.js';

const FIX = new URL('./fixtures/setup/', import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(name, FIX), 'utf8');
const BRIDGE: Bridge = { command: 'm4a', prefix: [], portable: true };
const SECRET = 'm4a_s3cr3t_never_in_agent_configs_0123456789';
const USER: Scope = { kind: 'user' };

const temps: string[] = [];
after(() => temps.forEach((d) => rmSync(d, { recursive: true, force: true })));

function home(): { home: string; env: NodeJS.ProcessEnv } {
  const h = mkdtempSync(join(tmpdir(), 'm4a-setup-'));
  temps.push(h);
  // A secret in both places a careless writer could copy it from.
  mkdirSync(join(h, '.config', 'mail4agent'), { recursive: true });
  writeFileSync(join(h, '.config', 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { claude: { secret: SECRET, provider: 'claude' } } }), {
    mode: 0o600,
  });
  return { home: h, env: { HOME: h, PATH: '', M4A_PORT: '7341', M4A_TOKEN: SECRET } };
}

function project(): string {
  const d = mkdtempSync(join(tmpdir(), 'm4a-proj-'));
  temps.push(d);
  return d;
}

function put(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

const read = (p: string): string => readFileSync(p, 'utf8');
const json = (p: string): Record<string, unknown> => {
  const errors: ParseError[] = [];
  const v = parseJsonc(read(p), errors, { allowTrailingComma: true }) as Record<string, unknown>;
  assert.deepEqual(errors, [], `${p} parses`);
  return v;
};

/** Every file and directory under dir (credentials excluded), with file contents. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const p = join(dir, name);
    out[relative(dir, p)] = statSync(p).isDirectory() ? '<dir>' : read(p);
  }
  return out;
}

/** The one contiguous piece inserted into orig to give now (fails if any original byte moved). */
function insertedPart(orig: string, now: string): string {
  let p = 0;
  while (p < orig.length && orig[p] === now[p]) p++;
  let s = 0;
  while (s < orig.length - p && orig[orig.length - 1 - s] === now[now.length - 1 - s]) s++;
  assert.equal(p + s, orig.length, 'every original byte is kept, in order, around one inserted piece');
  return now.slice(p, now.length - s);
}

const run = (o: Partial<SetupOptions> & { program: Program; env: NodeJS.ProcessEnv }) => setupFiles({ scope: USER, transport: 'stdio', account: o.program, bridge: BRIDGE, ...o });
const actions = (files: { path: string; action: string }[]): string[] => files.map((f) => f.action);

function assertNoSecret(paths: string[]): void {
  for (const p of paths) if (existsSync(p) && statSync(p).isFile()) assert.ok(!read(p).includes(SECRET), `no secret in ${p}`);
}

describe('setup writers: Claude Code', () => {
  it('user scope: adds mcpServers.m4a to a busy ~/.claude.json, idempotent, unsetup restores it byte for byte', () => {
    const { home: h, env } = home();
    const file = join(h, '.claude.json');
    const orig = fixture('claude.json');
    put(file, orig);

    const first = run({ program: 'claude', env });
    assert.deepEqual(first, [
      { path: `${file}.m4a-backup`, action: 'created' },
      { path: file, action: 'updated' },
      { path: join(h, '.claude', 'skills', 'mail4agent', 'SKILL.md'), action: 'created' },
      { path: join(h, '.claude', 'settings.json'), action: 'created' },
    ]);
    const now = read(file);
    const v = json(file);
    assert.deepEqual((v.mcpServers as Record<string, unknown>).m4a, { type: 'stdio', command: 'm4a', args: ['mcp', '--account', 'claude'] });
    const o = JSON.parse(orig) as Record<string, unknown>;
    delete (v.mcpServers as Record<string, unknown>).m4a;
    assert.deepEqual(v, o, 'nothing else changed in meaning');
    const part = insertedPart(orig, now);
    assert.match(part, /^,\n {4}"m4a": \{\n {6}"type": "stdio",\n/, "inserted after the other server, in the file's indentation");
    assert.equal(read(`${file}.m4a-backup`), orig, 'backup of the original');

    const skill = read(join(h, '.claude', 'skills', 'mail4agent', 'SKILL.md'));
    assert.match(skill, /^---\nname: mail4agent\ndescription: [^\n]+\n---\n/);

    const snap = snapshot(h);
    assert.deepEqual(actions(run({ program: 'claude', env })), ['unchanged', 'unchanged', 'unchanged'], 'second run changes nothing');
    assert.deepEqual(snapshot(h), snap, 'every file byte-identical, no second backup');

    const undone = unsetupFiles({ program: 'claude', scope: USER, env });
    assert.deepEqual(actions(undone.files), ['restored', 'removed', 'removed', 'removed']);
    assert.equal(read(file), orig, 'byte-identical to the original');
    assert.ok(!existsSync(join(h, '.claude')), 'directories setup created are gone');
    assert.ok(!existsSync(`${file}.m4a-backup`), 'the now redundant backup is gone');
    assert.ok(!existsSync(join(h, '.config', 'mail4agent', 'setup-state.json')), 'no state left');
    assert.ok(existsSync(join(h, '.config', 'mail4agent', 'credentials.json')), 'credentials kept');
  });

  it('user scope: a ~/.claude.json without mcpServers gets the object, and unsetup removes it again', () => {
    const { home: h, env } = home();
    const file = join(h, '.claude.json');
    const orig = '{\n  "numStartups": 1,\n  "projects": {}\n}\n';
    put(file, orig);
    run({ program: 'claude', env });
    assert.deepEqual(json(file), { numStartups: 1, projects: {}, mcpServers: { m4a: { type: 'stdio', command: 'm4a', args: ['mcp', '--account', 'claude'] } } });
    insertedPart(orig, read(file));
    unsetupFiles({ program: 'claude', scope: USER, env });
    assert.equal(read(file), orig);
  });

  it('project scope: creates .mcp.json, approves m4a in an existing settings.local.json, installs the skill; unsetup undoes all', () => {
    const { env } = home();
    const dir = project();
    const local = join(dir, '.claude', 'settings.local.json');
    const origLocal = fixture('settings.local.json');
    put(local, origLocal);
    const before = snapshot(dir);

    const files = run({ program: 'claude', env, scope: { kind: 'project', dir } });
    assert.deepEqual(files, [
      { path: join(dir, '.mcp.json'), action: 'created' },
      { path: `${local}.m4a-backup`, action: 'created' },
      { path: local, action: 'updated' },
      { path: join(dir, '.claude', 'skills', 'mail4agent', 'SKILL.md'), action: 'created' },
      { path: join(dir, '.claude', 'settings.json'), action: 'created' },
    ]);
    assert.equal(
      read(join(dir, '.mcp.json')),
      '{\n  "mcpServers": {\n    "m4a": {\n      "type": "stdio",\n      "command": "m4a",\n      "args": [\n        "mcp",\n        "--account",\n        "claude"\n      ]\n    }\n  }\n}\n',
    );
    assert.deepEqual(json(local).enabledMcpjsonServers, ['github', 'm4a']);
    assert.equal(insertedPart(origLocal, read(local)), ',\n    "m4a"');
    assertNoSecret(Object.keys(snapshot(dir)).map((p) => join(dir, p)));

    const snap = snapshot(dir);
    run({ program: 'claude', env, scope: { kind: 'project', dir } });
    assert.deepEqual(snapshot(dir), snap, 'idempotent');

    unsetupFiles({ program: 'claude', scope: { kind: 'project', dir }, env });
    assert.deepEqual(snapshot(dir), before, 'the project is exactly as before');
  });

  it('project scope without .claude/: creates settings.local.json with enabledMcpjsonServers, then removes the directory', () => {
    const { env } = home();
    const dir = project();
    run({ program: 'claude', env, scope: { kind: 'project', dir } });
    assert.deepEqual(json(join(dir, '.claude', 'settings.local.json')), { enabledMcpjsonServers: ['m4a'] });
    unsetupFiles({ program: 'claude', scope: { kind: 'project', dir }, env });
    assert.deepEqual(readdirSync(dir), []);
  });

  it('http transport: type http, the env reference in the header, timeout 120000; never the secret', () => {
    const { home: h, env } = home();
    run({ program: 'claude', env, transport: 'http' });
    assert.deepEqual((json(join(h, '.claude.json')).mcpServers as Record<string, unknown>).m4a, {
      type: 'http',
      url: 'http://127.0.0.1:7341/mcp',
      headers: { Authorization: 'Bearer ${M4A_TOKEN}' },
      timeout: 120000,
    });
    assertNoSecret([join(h, '.claude.json')]);
  });

  it('switching transport replaces our own entry; unsetup still restores the original', () => {
    const { home: h, env } = home();
    const file = join(h, '.claude.json');
    const orig = fixture('claude.json');
    put(file, orig);
    run({ program: 'claude', env });
    assert.deepEqual(actions(run({ program: 'claude', transport: 'http', env: { ...env, M4A_PORT: '7400' } })), ['updated', 'unchanged', 'unchanged']);
    assert.equal((json(file).mcpServers as Record<string, Record<string, unknown>>).m4a!.url, 'http://127.0.0.1:7400/mcp');
    unsetupFiles({ program: 'claude', scope: USER, env });
    assert.equal(read(file), orig);
  });

  it('keeps servers the user added after setup, and removes only ours', () => {
    const { home: h, env } = home();
    const file = join(h, '.claude.json');
    put(file, fixture('claude.json'));
    run({ program: 'claude', env });
    const withMine = read(file).replace('"hasCompletedOnboarding": true', '"hasCompletedOnboarding": true,\n  "theme": "dark"');
    writeFileSync(file, withMine.replace(/("m4a": \{[\s\S]*?\n {4}\})/, '$1,\n    "later": { "command": "later" }'));
    unsetupFiles({ program: 'claude', scope: USER, env });
    const v = json(file);
    assert.deepEqual(Object.keys(v.mcpServers as object), ['github', 'later']);
    assert.equal(v.theme, 'dark');
  });
});

describe('setup writers: Codex', () => {
  const expectedStdio = {
    command: 'm4a',
    args: ['mcp', '--account', 'codex'],
    env_vars: ['M4A_DATA_DIR', 'M4A_PORT', 'M4A_URL', 'M4A_CREDENTIALS', 'XDG_CONFIG_HOME', 'XDG_DATA_HOME'],
    startup_timeout_sec: 30,
    tool_timeout_sec: 120,
  };

  it('appends a marked [mcp_servers.m4a] block to a commented config.toml and a section to AGENTS.md; unsetup restores both', () => {
    const { home: h, env } = home();
    const toml = join(h, '.codex', 'config.toml');
    const agents = join(h, '.codex', 'AGENTS.md');
    const origToml = fixture('codex-config.toml');
    const origAgents = fixture('AGENTS.md');
    put(toml, origToml);
    put(agents, origAgents);

    assert.deepEqual(actions(run({ program: 'codex', env })), ['created', 'updated', 'created', 'updated', 'created']);
    const text = read(toml);
    assert.ok(text.startsWith(origToml), 'every byte of the original kept, comments included');
    const block = text.slice(origToml.length);
    assert.match(block, /^\n# >>> mail4agent \(managed by m4a setup; m4a unsetup removes it\) >>>\n\[mcp_servers\.m4a\]\n[\s\S]*\n# <<< mail4agent <<<\n$/);
    const parsed = JSON.parse(JSON.stringify(parseToml(text))) as { model: string; profiles: unknown; mcp_servers: Record<string, unknown> };
    assert.deepEqual(parsed.mcp_servers.m4a, expectedStdio);
    assert.deepEqual(parsed.mcp_servers.other, { command: 'npx', args: ['-y', 'other-mcp'], env: { OTHER_URL: 'http://localhost:9000' } });
    assert.equal(parsed.model, 'gpt-5-codex');
    assert.deepEqual(parsed.profiles, { x: { model: 'o3', model_reasoning_effort: 'high' } });

    const a = read(agents);
    assert.ok(a.startsWith(origAgents));
    assert.match(a.slice(origAgents.length), /^\n<!-- >>> mail4agent >>> -->\n## mail4agent[\s\S]*\n<!-- <<< mail4agent <<< -->\n$/);

    const snap = snapshot(h);
    assert.deepEqual(actions(run({ program: 'codex', env })), ['unchanged', 'unchanged', 'unchanged']);
    assert.deepEqual(snapshot(h), snap);

    unsetupFiles({ program: 'codex', scope: USER, env });
    assert.equal(read(toml), origToml);
    assert.equal(read(agents), origAgents);
  });

  it('a file without a final newline, under CODEX_HOME: still exact', () => {
    const { home: h, env } = home();
    const codexHome = join(h, 'elsewhere');
    const toml = join(codexHome, 'config.toml');
    const orig = fixture('codex-config.toml').trimEnd();
    put(toml, orig);
    run({ program: 'codex', env: { ...env, CODEX_HOME: codexHome } });
    assert.deepEqual(JSON.parse(JSON.stringify(parseToml(read(toml)))).mcp_servers.m4a, expectedStdio);
    assert.ok(existsSync(join(codexHome, 'AGENTS.md')) && !existsSync(join(h, '.codex')), 'CODEX_HOME is where Codex reads');
    unsetupFiles({ program: 'codex', scope: USER, env: { ...env, CODEX_HOME: codexHome } });
    assert.equal(read(toml), orig);
    assert.ok(!existsSync(join(codexHome, 'AGENTS.md')));
  });

  it('http transport: url and bearer_token_env_var (never an inline bearer_token), both timeouts', () => {
    const { env } = home();
    const dir = project();
    run({ program: 'codex', env, transport: 'http', scope: { kind: 'project', dir } });
    const text = read(join(dir, '.codex', 'config.toml'));
    assert.deepEqual(JSON.parse(JSON.stringify(parseToml(text))), {
      mcp_servers: { m4a: { url: 'http://127.0.0.1:7341/mcp', bearer_token_env_var: 'M4A_TOKEN', startup_timeout_sec: 30, tool_timeout_sec: 120 } },
    });
    assert.ok(!/bearer_token\s*=/.test(text));
    assertNoSecret([join(dir, '.codex', 'config.toml'), join(dir, 'AGENTS.md')]);
    unsetupFiles({ program: 'codex', scope: { kind: 'project', dir }, env });
    assert.deepEqual(readdirSync(dir), []);
  });

  it('refuses a config.toml that already defines mcp_servers.m4a, writing nothing anywhere', () => {
    const { home: h, env } = home();
    put(join(h, '.codex', 'config.toml'), '[mcp_servers.m4a]\ncommand = "mine"\n');
    const before = snapshot(h);
    assert.throws(
      () => run({ program: 'codex', env }),
      (e: unknown) => e instanceof Refusal && /already defines \[mcp_servers\.m4a\]/.test(e.message),
    );
    assert.deepEqual(snapshot(h), before);
  });

  it('refuses broken TOML, naming the file and the error; nothing written, no backup', () => {
    const { home: h, env } = home();
    const toml = join(h, '.codex', 'config.toml');
    put(toml, 'model = "o3"\n[profiles.x\nmodel = "y"\n');
    put(join(h, '.codex', 'AGENTS.md'), fixture('AGENTS.md'));
    const before = snapshot(h);
    assert.throws(
      () => run({ program: 'codex', env }),
      (e: unknown) => e instanceof Refusal && e.message.includes(toml) && /line|\(\d+, \d+\)/.test(e.message),
    );
    assert.deepEqual(snapshot(h), before);
  });

  it('refuses when our table cannot be added (mcp_servers is an inline table)', () => {
    const { home: h, env } = home();
    put(join(h, '.codex', 'config.toml'), 'mcp_servers = { other = { command = "x" } }\n');
    const before = snapshot(h);
    assert.throws(() => run({ program: 'codex', env }), /invalid TOML/);
    assert.deepEqual(snapshot(h), before);
  });
});

describe('setup writers: Gemini CLI', () => {
  it('adds mcpServers.m4a to a commented, 4-space settings.json and a GEMINI.md section; unsetup restores', () => {
    const { home: h, env } = home();
    const file = join(h, '.gemini', 'settings.json');
    const orig = fixture('gemini-settings.json');
    put(file, orig);
    assert.deepEqual(actions(run({ program: 'gemini', env, hooks: false })), ['created', 'updated', 'created']);
    const v = json(file);
    assert.deepEqual((v.mcpServers as Record<string, unknown>).m4a, { command: 'm4a', args: ['mcp', '--account', 'gemini'], timeout: 120000, trust: true });
    const part = insertedPart(orig, read(file));
    assert.match(part, /^,\n {8}"m4a": \{\n {12}"command": "m4a",/, "the file's own 4-space indentation");
    assert.ok(read(file).includes('// theme chosen in /settings'), 'comments kept');
    assert.match(read(join(h, '.gemini', 'GEMINI.md')), /^<!-- >>> mail4agent >>> -->\n## mail4agent/);

    const snap = snapshot(h);
    run({ program: 'gemini', env, hooks: false });
    assert.deepEqual(snapshot(h), snap);
    unsetupFiles({ program: 'gemini', scope: USER, env });
    assert.equal(read(file), orig);
    assert.ok(!existsSync(join(h, '.gemini', 'GEMINI.md')));
  });

  it('http transport: url, type http, Authorization header with ${M4A_TOKEN}, timeout', () => {
    const { env } = home();
    const dir = project();
    run({ program: 'gemini', env, transport: 'http', scope: { kind: 'project', dir } });
    assert.deepEqual(json(join(dir, '.gemini', 'settings.json')), {
      mcpServers: { m4a: { url: 'http://127.0.0.1:7341/mcp', type: 'http', headers: { Authorization: 'Bearer ${M4A_TOKEN}' }, timeout: 120000, trust: true } },
      // The hooks run the m4a command whatever the transport.
      hooks: {
        AfterAgent: [{ hooks: [{ type: 'command', command: 'm4a hook gemini-after-agent --account gemini', name: 'mail4agent', timeout: 600000 }] }],
        BeforeAgent: [{ hooks: [{ type: 'command', command: 'm4a hook gemini-before-agent --account gemini', name: 'mail4agent', timeout: 30000 }] }],
      },
    });
    assert.ok(existsSync(join(dir, 'GEMINI.md')));
    assertNoSecret([join(dir, '.gemini', 'settings.json'), join(dir, 'GEMINI.md')]);
  });
});

describe('setup writers: Cursor', () => {
  it('user scope: adds m4a beside another server in a tab-indented mcp.json, no rules file; unsetup restores', () => {
    const { home: h, env } = home();
    const file = join(h, '.cursor', 'mcp.json');
    const orig = fixture('cursor-mcp.json');
    put(file, orig);
    assert.deepEqual(actions(run({ program: 'cursor', env })), ['created', 'updated', 'created']);
    assert.deepEqual(json(file), { mcpServers: { linear: { url: 'https://mcp.linear.app/sse' }, m4a: { type: 'stdio', command: 'm4a', args: ['mcp', '--account', 'cursor'] } } });
    assert.match(insertedPart(orig, read(file)), /^,\n\t\t"m4a": \{\n\t\t\t"type"/);
    const snap = snapshot(h);
    run({ program: 'cursor', env });
    assert.deepEqual(snapshot(h), snap);
    unsetupFiles({ program: 'cursor', scope: USER, env });
    assert.equal(read(file), orig);
  });

  it('project scope, http: ${env:M4A_TOKEN} and a rule file; both removed by unsetup', () => {
    const { env } = home();
    const dir = project();
    run({ program: 'cursor', env, transport: 'http', scope: { kind: 'project', dir } });
    assert.deepEqual(json(join(dir, '.cursor', 'mcp.json')), { mcpServers: { m4a: { url: 'http://127.0.0.1:7341/mcp', headers: { Authorization: 'Bearer ${env:M4A_TOKEN}' } } } });
    assert.match(read(join(dir, '.cursor', 'rules', 'mail4agent.mdc')), /^---\ndescription: .+\nglobs:\nalwaysApply: false\n---\n/);
    unsetupFiles({ program: 'cursor', scope: { kind: 'project', dir }, env });
    assert.deepEqual(readdirSync(dir), []);
  });
});

describe('setup writers: refusals and ownership', () => {
  it('a truncated JSON file is refused with its name and position; nothing written anywhere, no backup', () => {
    const { home: h, env } = home();
    const file = join(h, '.claude.json');
    put(file, fixture('claude.json').slice(0, 300));
    const before = snapshot(h);
    assert.throws(
      () => run({ program: 'claude', env }),
      (e: unknown) => e instanceof Refusal && e.message.includes(file) && /line \d+, column \d+/.test(e.message),
    );
    assert.deepEqual(snapshot(h), before);
  });

  it('checks every target before writing any: a broken second file stops the first from being written', () => {
    const { env } = home();
    const dir = project();
    put(join(dir, '.claude', 'settings.local.json'), '{ "permissions": ');
    const before = snapshot(dir);
    assert.throws(() => run({ program: 'claude', env, scope: { kind: 'project', dir } }), /settings\.local\.json/);
    assert.deepEqual(snapshot(dir), before, 'no .mcp.json, no skill, no backup');
  });

  it('an m4a entry setup did not write is refused, replaced with --force, and put back by unsetup', () => {
    const { home: h, env } = home();
    const file = join(h, '.cursor', 'mcp.json');
    const orig = '{\n  "mcpServers": {\n    "m4a": { "command": "my-own-m4a" }\n  }\n}\n';
    put(file, orig);
    assert.throws(
      () => run({ program: 'cursor', env }),
      (e: unknown) => e instanceof Refusal && /did not write/.test(e.message),
    );
    assert.equal(read(file), orig);
    assert.ok(!existsSync(`${file}.m4a-backup`));
    run({ program: 'cursor', env, force: true });
    assert.deepEqual((json(file).mcpServers as Record<string, unknown>).m4a, { type: 'stdio', command: 'm4a', args: ['mcp', '--account', 'cursor'] });
    assert.equal(read(`${file}.m4a-backup`), orig);
    unsetupFiles({ program: 'cursor', scope: USER, env });
    assert.equal(read(file), orig);
  });

  it('a skill file setup did not write is refused without --force', () => {
    const { home: h, env } = home();
    const skill = join(h, '.claude', 'skills', 'mail4agent', 'SKILL.md');
    put(skill, '---\nname: mail4agent\n---\nmine\n');
    assert.throws(() => run({ program: 'claude', env }), /was not written by m4a setup/);
    assert.ok(!existsSync(join(h, '.claude.json')), 'the MCP file was not created either');
  });

  it("keeps each file's style: CRLF, minified JSON, mode 0600, a symlinked settings file", () => {
    const { home: h, env } = home();
    const crlf = '{\r\n  "ui": {\r\n    "theme": "Dracula"\r\n  }\r\n}\r\n';
    const dotfile = join(h, 'dotfiles', 'gemini.json');
    put(dotfile, crlf);
    mkdirSync(join(h, '.gemini'));
    symlinkSync(dotfile, join(h, '.gemini', 'settings.json'));
    put(join(h, '.gemini', 'GEMINI.md'), '# Mine\r\n\r\nUse tabs.\r\n');
    const mini = '{"mcpServers":{"linear":{"url":"https://mcp.linear.app/sse"}}}';
    put(join(h, '.cursor', 'mcp.json'), mini);
    const claude = join(h, '.claude.json');
    put(claude, fixture('claude.json'));
    chmodSync(claude, 0o600);

    for (const program of ['gemini', 'cursor', 'claude'] as const) run({ program, env });
    assert.ok(lstatSync(join(h, '.gemini', 'settings.json')).isSymbolicLink(), 'still a symlink');
    assert.match(insertedPart(crlf, read(dotfile)), /^,\r\n {2}"mcpServers": \{\r\n {4}"m4a": \{\r\n/, 'written through the symlink, in CRLF');
    assert.ok(!/[^\r]\n/.test(read(join(h, '.gemini', 'GEMINI.md'))), 'the section uses CRLF too');
    assert.equal(insertedPart(mini, read(join(h, '.cursor', 'mcp.json'))), ',"m4a":{"type":"stdio","command":"m4a","args":["mcp","--account","cursor"]}');
    assert.equal(statSync(claude).mode & 0o777, 0o600, 'mode kept');

    for (const program of ['gemini', 'cursor', 'claude'] as const) unsetupFiles({ program, scope: USER, env });
    assert.equal(read(dotfile), crlf);
    assert.equal(read(join(h, '.cursor', 'mcp.json')), mini);
    assert.equal(read(join(h, '.gemini', 'GEMINI.md')), '# Mine\r\n\r\nUse tabs.\r\n');
  });

  it('unsetup with nothing recorded changes nothing', () => {
    const { home: h, env } = home();
    const before = snapshot(h);
    const r = unsetupFiles({ program: 'gemini', scope: USER, env });
    assert.equal(r.record, null);
    assert.deepEqual(snapshot(h), before);
  });

  it('all four programs twice: the second run leaves every file byte-identical; unsetup of all leaves HOME as it was', () => {
    const { home: h, env } = home();
    put(join(h, '.claude.json'), fixture('claude.json'));
    put(join(h, '.codex', 'config.toml'), fixture('codex-config.toml'));
    put(join(h, '.gemini', 'settings.json'), fixture('gemini-settings.json'));
    const before = snapshot(h);
    for (const program of ['claude', 'codex', 'gemini', 'cursor'] as const) run({ program, env });
    const once = snapshot(h);
    for (const program of ['claude', 'codex', 'gemini', 'cursor'] as const) run({ program, env });
    assert.deepEqual(snapshot(h), once);
    assertNoSecret(
      Object.keys(once)
        .filter((p) => !p.includes('credentials'))
        .map((p) => join(h, p)),
    );
    for (const program of ['cursor', 'claude', 'gemini', 'codex'] as const) unsetupFiles({ program, scope: USER, env });
    assert.deepEqual(snapshot(h), before);
  });
});

describe('setup: the bridge command and the guide', () => {
  it('uses plain m4a only when the m4a on PATH is this package', () => {
    const bin = project();
    const other = project();
    const main = join(project(), 'main.js');
    writeFileSync(main, '', { mode: 0o755 });
    symlinkSync(main, join(bin, 'm4a'));
    writeFileSync(join(other, 'm4a'), '#!/bin/sh\n', { mode: 0o755 });
    assert.deepEqual(resolveBridge({ PATH: bin }, main, '/usr/bin/node'), { command: 'm4a', prefix: [], portable: true });
    assert.deepEqual(
      resolveBridge({ PATH: `${other}:${bin}` }, main, '/usr/bin/node'),
      { command: '/usr/bin/node', prefix: [main], portable: false },
      "the first m4a on PATH is someone else's",
    );
    assert.deepEqual(resolveBridge({ PATH: '' }, main, '/usr/bin/node'), { command: '/usr/bin/node', prefix: [main], portable: false });
    assert.match(DIST_MAIN, /[/\\]dist[/\\]cli[/\\]main\.js$/);
  });

  it('node + main.js in the entry when m4a is not on PATH', () => {
    const { home: h, env } = home();
    run({ program: 'gemini', env, bridge: resolveBridge(env) });
    const entry = (json(join(h, '.gemini', 'settings.json')).mcpServers as Record<string, { command: string; args: string[] }>).m4a!;
    assert.equal(entry.command, process.execPath);
    assert.deepEqual(entry.args, [DIST_MAIN, 'mcp', '--account', 'gemini']);
  });

  it('one short guide: the five-line checklist, what new mail means, the loop guard; rendered per program', () => {
    const section = renderGuide('codex', 'section');
    assert.ok(section.split('\n').length <= 40, 'under ~40 lines');
    const checklist = section.split('\n').filter((l) => /^\d\. /.test(l));
    assert.equal(checklist.length, 5, 'a five-line checklist');
    for (const [i, step] of [/^1\. Read/, /^2\. Act/, /^3\. Reply .*m4a_mail_reply.*Just `m4a_mail_ack`/, /^4\. Ack what you skip/, /^5\. .*sessions share one queue/].entries())
      assert.match(checklist[i]!, step);
    for (const tool of ['m4a_mail_inbox', 'm4a_mail_reply {message_id, body}', 'm4a_mail_send', 'm4a_mail_ack', 'm4a_mail_peers', 'm4a_mail_whoami'])
      assert.ok(section.includes(tool), tool);
    assert.match(section, /"You have new mail" means mail not yet shown to you\. It stays in the inbox until acknowledged/);
    assert.match(section, /Loop guard: agents that keep answering each other with no person .* quieted.*no acknowledgement-only replies/);
    for (const must of [/in the chat/, /self-contained/, /not the user's instructions/, /never mail secrets/, /approval/]) assert.match(section, must);
    const body = section.replace(/^## /, '');
    for (const rendered of [renderGuide('claude', 'file'), renderGuide('cursor', 'file'), renderGuide('gemini', 'section')])
      assert.ok(rendered.replace(/^#+ /m, '').includes(body), 'the same text everywhere');
  });
});

// ---- the hooks that wake agents (AGENT-INTEGRATIONS §2.1, §4.3, §5.3, §6.2) ----

type Json = Record<string, any>;

/** Claude Code's and Codex's matcher group: one command handler, timeout in seconds. */
const group = (command: string, timeout: number, matcher?: string): Json => ({ ...(matcher !== undefined ? { matcher } : {}), hooks: [{ type: 'command', command, timeout }] });
const geminiGroup = (command: string, timeoutMs: number): Json => ({ hooks: [{ type: 'command', command, name: 'mail4agent', timeout: timeoutMs }] });

/** Every byte of orig is in now, in order (what a setup that only inserts must leave). */
function assertKeptInOrder(orig: string, now: string): void {
  let i = 0;
  for (const ch of now) if (ch === orig[i]) i++;
  assert.equal(i, orig.length, 'every original byte kept, in order');
}

describe('setup writers: hooks', () => {
  it("Claude Code user: appends our groups after the user's own Stop and PostToolUse hooks, keeps permissions; idempotent; unsetup restores the bytes", () => {
    const { home: h, env } = home();
    const file = join(h, '.claude', 'settings.json');
    const orig = fixture('claude-settings.json');
    put(file, orig);

    const files = run({ program: 'claude', env });
    assert.deepEqual(files.slice(-2), [
      { path: `${file}.m4a-backup`, action: 'created' },
      { path: file, action: 'updated' },
    ]);
    const v = json(file) as Json;
    const o = JSON.parse(orig) as Json;
    assert.deepEqual(v.hooks, {
      Stop: [o.hooks.Stop[0], group('m4a hook claude-stop --account claude', 600)],
      PostToolUse: [o.hooks.PostToolUse[0], group('m4a hook claude-tool --account claude', 30, '*')],
      UserPromptSubmit: [group('m4a hook claude-prompt --account claude', 30)],
      SessionStart: [group('m4a hook claude-prompt --account claude', 30, 'startup|resume')],
    });
    assert.deepEqual({ ...v, hooks: o.hooks }, o, 'permissions, env, model and the rest unchanged');
    assert.deepEqual(Object.keys(v), Object.keys(o), 'no member moved');
    assertKeptInOrder(orig, read(file));
    assert.match(
      read(file),
      /\n {6}\},\n {6}\{\n {8}"hooks": \[\n {10}\{\n {12}"type": "command",\n {12}"command": "m4a hook claude-stop --account claude",\n {12}"timeout": 600\n/,
      "after the user's group, in the file's indentation",
    );
    assert.equal(read(`${file}.m4a-backup`), orig);

    const snap = snapshot(h);
    assert.ok(actions(run({ program: 'claude', env })).every((a) => a === 'unchanged'));
    assert.deepEqual(snapshot(h), snap, 'no duplicate group, no byte changed');

    unsetupFiles({ program: 'claude', scope: USER, env });
    assert.equal(read(file), orig, 'byte-identical');
    assert.ok(!existsSync(`${file}.m4a-backup`));
  });

  it('Claude Code project: creates .claude/settings.json holding only the hooks; unsetup removes it and the directory', () => {
    const { env } = home();
    const dir = project();
    run({ program: 'claude', env, scope: { kind: 'project', dir } });
    assert.deepEqual(json(join(dir, '.claude', 'settings.json')), {
      hooks: {
        Stop: [group('m4a hook claude-stop --account claude', 600)],
        UserPromptSubmit: [group('m4a hook claude-prompt --account claude', 30)],
        SessionStart: [group('m4a hook claude-prompt --account claude', 30, 'startup|resume')],
        PostToolUse: [group('m4a hook claude-tool --account claude', 30, '*')],
      },
    });
    assert.ok(!('hooks' in json(join(dir, '.claude', 'settings.local.json'))), 'hooks go to the shared settings, not the local approval file');
    unsetupFiles({ program: 'claude', scope: { kind: 'project', dir }, env });
    assert.deepEqual(readdirSync(dir), []);
  });

  it("Codex: $CODEX_HOME/hooks.json beside the user's hooks (seconds); project: .codex/hooks.json; both undone exactly", () => {
    const { home: h, env } = home();
    const codexHome = join(h, 'codex-home');
    const file = join(codexHome, 'hooks.json');
    const orig = fixture('codex-hooks.json');
    put(file, orig);
    const e = { ...env, CODEX_HOME: codexHome };
    run({ program: 'codex', env: e });
    const v = json(file);
    const o = JSON.parse(orig) as Json;
    assert.deepEqual(v, {
      hooks: {
        SessionStart: o.hooks.SessionStart,
        Stop: [o.hooks.Stop[0], group('m4a hook codex-stop --account codex', 600)],
        UserPromptSubmit: [group('m4a hook codex-prompt --account codex', 30)],
      },
    });
    assertKeptInOrder(orig, read(file));
    assert.ok(!existsSync(join(h, '.codex')), 'CODEX_HOME, not ~/.codex');
    const snap = snapshot(h);
    run({ program: 'codex', env: e });
    assert.deepEqual(snapshot(h), snap);
    unsetupFiles({ program: 'codex', scope: USER, env: e });
    assert.equal(read(file), orig);

    const dir = project();
    run({ program: 'codex', env, scope: { kind: 'project', dir } });
    assert.deepEqual(json(join(dir, '.codex', 'hooks.json')), {
      hooks: { Stop: [group('m4a hook codex-stop --account codex', 600)], UserPromptSubmit: [group('m4a hook codex-prompt --account codex', 30)] },
    });
    unsetupFiles({ program: 'codex', scope: { kind: 'project', dir }, env });
    assert.deepEqual(readdirSync(dir), []);
  });

  it('Gemini CLI: AfterAgent and BeforeAgent in the same commented settings.json, timeouts in milliseconds; unsetup restores', () => {
    const { home: h, env } = home();
    const file = join(h, '.gemini', 'settings.json');
    const orig = fixture('gemini-settings.json');
    put(file, orig);
    run({ program: 'gemini', env });
    const v = json(file) as Json;
    assert.deepEqual(v.hooks, {
      AfterAgent: [geminiGroup('m4a hook gemini-after-agent --account gemini', 600000)],
      BeforeAgent: [geminiGroup('m4a hook gemini-before-agent --account gemini', 30000)],
    });
    assert.deepEqual(v.mcpServers.m4a, { command: 'm4a', args: ['mcp', '--account', 'gemini'], timeout: 120000, trust: true });
    assertKeptInOrder(orig, read(file));
    assert.match(read(file), /\n {4}"hooks": \{\n {8}"AfterAgent": \[\n {12}\{/, "the file's own 4-space indentation");
    const snap = snapshot(h);
    run({ program: 'gemini', env });
    assert.deepEqual(snapshot(h), snap);
    unsetupFiles({ program: 'gemini', scope: USER, env });
    assert.equal(read(file), orig);
  });

  it("Cursor user: appends to the flat stop list after the user's hook, keeps version 1; idempotent; unsetup restores", () => {
    const { home: h, env } = home();
    const file = join(h, '.cursor', 'hooks.json');
    const orig = fixture('cursor-hooks.json');
    put(file, orig);
    assert.deepEqual(actions(run({ program: 'cursor', env })), ['created', 'created', 'updated']);
    const o = JSON.parse(orig) as Json;
    assert.deepEqual(json(file), {
      version: 1,
      hooks: { afterFileEdit: o.hooks.afterFileEdit, stop: [o.hooks.stop[0], { command: 'm4a hook cursor-stop --account cursor', timeout: 600, loop_limit: 5 }] },
    });
    assert.equal(
      insertedPart(orig, read(file)),
      ',\n      {\n        "command": "m4a hook cursor-stop --account cursor",\n        "timeout": 600,\n        "loop_limit": 5\n      }',
      "one object after the user's, no inner hooks wrapper",
    );
    const snap = snapshot(h);
    run({ program: 'cursor', env });
    assert.deepEqual(snapshot(h), snap);
    unsetupFiles({ program: 'cursor', scope: USER, env });
    assert.equal(read(file), orig);
  });

  it('Cursor project: a new hooks.json is exactly {"version":1,"hooks":{"stop":[ours]}}; unsetup removes it', () => {
    const { env } = home();
    const dir = project();
    run({ program: 'cursor', env, scope: { kind: 'project', dir } });
    const text = read(join(dir, '.cursor', 'hooks.json'));
    assert.deepEqual(JSON.parse(text), { version: 1, hooks: { stop: [{ command: 'm4a hook cursor-stop --account cursor', timeout: 600, loop_limit: 5 }] } });
    assert.ok(text.startsWith('{\n  "version": 1,\n  "hooks": {'), 'version first');
    unsetupFiles({ program: 'cursor', scope: { kind: 'project', dir }, env });
    assert.deepEqual(readdirSync(dir), []);
  });

  it('the command is quoted for the shell when the bridge path needs it', () => {
    const { home: h, env } = home();
    const bridge: Bridge = { command: '/opt/my node/bin/node', prefix: ["/srv/it's/dist/cli/main.js"], portable: false };
    run({ program: 'cursor', env, bridge });
    const cmd = ((json(join(h, '.cursor', 'hooks.json')) as Json).hooks.stop as Json[])[0]!.command as string;
    assert.equal(cmd, `'/opt/my node/bin/node' '/srv/it'\\''s/dist/cli/main.js' hook cursor-stop --account cursor`);
    const r = spawnSync('sh', ['-c', `printf '%s\\n' ${cmd.replace(/ hook .*/, '')}`], { encoding: 'utf8' });
    assert.equal(r.stdout, "/opt/my node/bin/node\n/srv/it's/dist/cli/main.js\n", 'the shell reads back the two words');
  });

  it('refuses a hooks file it cannot use (unparseable, "hooks" not an object, another Cursor version) before writing anything', () => {
    const cases: [string, string, RegExp][] = [
      ['.claude/settings.json', '{ "hooks": { "Stop": [ ', /cannot parse .*line \d+, column \d+/],
      ['.claude/settings.json', '{ "hooks": [] }', /"hooks" is an array, not an object/],
      ['.claude/settings.json', '{ "hooks": { "Stop": {} } }', /"hooks\.Stop" is an object, not an array/],
      ['.cursor/hooks.json', '{ "version": 2, "hooks": {} }', /"version" is 2, not 1/],
    ];
    for (const [rel, text, why] of cases) {
      const { home: h, env } = home();
      put(join(h, rel), text);
      const before = snapshot(h);
      const program = rel.startsWith('.claude') ? 'claude' : 'cursor';
      assert.throws(
        () => run({ program, env }),
        (e: unknown) => e instanceof Refusal && e.message.includes(join(h, rel)) && why.test(e.message),
        `${rel}: ${text}`,
      );
      assert.deepEqual(snapshot(h), before, 'no MCP entry, guide, backup or state either');
    }
  });

  it('--no-hooks writes no hook; turning hooks off later removes them and restores the file byte for byte', () => {
    const { home: h, env } = home();
    const claude = join(h, '.claude', 'settings.json');
    const gemini = join(h, '.gemini', 'settings.json');
    put(claude, fixture('claude-settings.json'));
    put(gemini, fixture('gemini-settings.json'));
    const before = snapshot(h);

    run({ program: 'cursor', env, hooks: false });
    assert.ok(!existsSync(join(h, '.cursor', 'hooks.json')));
    run({ program: 'gemini', env, hooks: false });
    const mcpOnly = read(gemini);
    assert.ok(!('hooks' in json(gemini)));
    run({ program: 'claude', env, hooks: false });
    assert.equal(read(claude), fixture('claude-settings.json'));
    assert.ok(!existsSync(`${claude}.m4a-backup`));

    for (const program of ['cursor', 'gemini', 'claude'] as const) run({ program, env });
    assert.ok(existsSync(join(h, '.cursor', 'hooks.json')));
    assert.ok('hooks' in json(gemini) && ((json(claude) as Json).hooks.Stop as unknown[]).length === 2);

    const off = run({ program: 'claude', env, hooks: false });
    assert.deepEqual(off.slice(-2), [
      { path: claude, action: 'restored' },
      { path: `${claude}.m4a-backup`, action: 'removed' },
    ]);
    assert.equal(read(claude), fixture('claude-settings.json'));
    assert.deepEqual(actions(run({ program: 'cursor', env, hooks: false })).slice(-1), ['removed']);
    assert.ok(!existsSync(join(h, '.cursor', 'hooks.json')));
    run({ program: 'gemini', env, hooks: false });
    assert.equal(read(gemini), mcpOnly, 'only the hooks left the file');

    for (const program of ['cursor', 'gemini', 'claude'] as const) unsetupFiles({ program, scope: USER, env });
    assert.deepEqual(snapshot(h), before);
  });

  it('another account or bridge replaces our group in place (no duplicate); unsetup still restores the original', () => {
    const { home: h, env } = home();
    const file = join(h, '.claude', 'settings.json');
    const orig = fixture('claude-settings.json');
    put(file, orig);
    run({ program: 'claude', env });
    run({ program: 'claude', env, account: 'claude-2', bridge: { command: '/usr/bin/node', prefix: ['/opt/m4a/dist/cli/main.js'], portable: false } });
    const v = json(file) as Json;
    assert.deepEqual(v.hooks.Stop, [JSON.parse(orig).hooks.Stop[0], group('/usr/bin/node /opt/m4a/dist/cli/main.js hook claude-stop --account claude-2', 600)]);
    assert.equal(JSON.stringify(v).split('hook claude-prompt').length - 1, 2, 'UserPromptSubmit and SessionStart, once each');
    assert.ok(!read(file).includes('m4a hook claude-stop --account claude"'));
    unsetupFiles({ program: 'claude', scope: USER, env });
    assert.equal(read(file), orig);
  });

  it('our group edited by hand is left as the user made it, not duplicated, and removed by unsetup; without a record an identical group is not added twice', () => {
    const { home: h, env } = home();
    const file = join(h, '.cursor', 'hooks.json');
    const orig = fixture('cursor-hooks.json');
    put(file, orig);
    run({ program: 'cursor', env });
    writeFileSync(file, read(file).replace('"loop_limit": 5', '"loop_limit": 2'));
    const edited = read(file);
    run({ program: 'cursor', env });
    assert.equal(read(file), edited, 'left as edited, nothing appended');
    unsetupFiles({ program: 'cursor', scope: USER, env });
    assert.equal(read(file), orig);

    // The state is lost, the hook is still there: recognised by its command.
    run({ program: 'cursor', env });
    const once = read(file);
    rmSync(join(h, '.config', 'mail4agent', 'setup-state.json'));
    run({ program: 'cursor', env });
    assert.equal(read(file), once);
    assert.equal(((json(file) as Json).hooks.stop as unknown[]).length, 2);
    unsetupFiles({ program: 'cursor', scope: USER, env });
    assert.equal(read(file), orig, 'recognised as ours again, so unsetup removes it');
  });

  it('keeps hooks the user added after setup, in the same arrays, and removes only ours', () => {
    const { home: h, env } = home();
    const file = join(h, '.claude', 'settings.json');
    run({ program: 'claude', env });
    const v = json(file) as Json;
    v.hooks.Stop.push(group('say done', 5));
    v.hooks.Notification = [group('notify-send claude', 5)];
    writeFileSync(file, `${JSON.stringify(v, null, 2)}\n`);
    unsetupFiles({ program: 'claude', scope: USER, env });
    assert.deepEqual(json(file), { hooks: { Stop: [group('say done', 5)], Notification: [group('notify-send claude', 5)] } });
  });

  it('reads a state file from before hooks (one edit per file) and undoes it', () => {
    const { home: h, env } = home();
    const file = join(h, '.claude.json');
    const orig = fixture('claude.json');
    put(file, orig);
    run({ program: 'claude', env, hooks: false });
    const statePath = join(h, '.config', 'mail4agent', 'setup-state.json');
    const state = JSON.parse(read(statePath)) as Json;
    for (const f of state.setups['claude user'].files) {
      f.edit = f.edits[0];
      delete f.edits;
    }
    writeFileSync(statePath, JSON.stringify(state));
    unsetupFiles({ program: 'claude', scope: USER, env });
    assert.equal(read(file), orig);
    assert.ok(!existsSync(join(h, '.claude')));
  });
});
