// m4a setup for Qwen Code and Gemini CLI's unattended use, on a temporary HOME: Qwen's entry and
// Claude-shaped hooks in its settings.json (wherever QWEN_HOME puts it), the QWEN.md section, every
// other byte kept, and unsetup byte-exact, also after Qwen itself rewrote the file (it adds
// "$version": 4 at every start: the fixture *-rewritten files are what Qwen Code 0.24.4 made of the
// files beside them). Gemini: `trust` on the entry, the auth choice left to the user and named.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { parse as parseJsonc, type ParseError } from 'jsonc-parser';
import { geminiAuthSource } from '../src/cli/setup/gemini-auth.js';
import { qwenHome } from '../src/cli/setup/program-qwen.js';
import { setupFiles, unsetupFiles, type SetupOptions } from '../src/cli/setup/setup-files.js';
import { BRIDGE, tempDirs, USER } from './support/setup-fixture.js';

const FIX = new URL('./fixtures/setup/', import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(name, FIX), 'utf8');
const SECRET = 'm4a_s3cr3t_never_in_agent_configs_qwen_0123456789';

const temp = tempDirs();

function home(extra: NodeJS.ProcessEnv = {}): { home: string; env: NodeJS.ProcessEnv } {
  const h = temp('m4a-setup-qwen-');
  mkdirSync(join(h, '.config', 'mail4agent'), { recursive: true });
  writeFileSync(join(h, '.config', 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { qwen: { secret: SECRET, provider: 'qwen' } } }), { mode: 0o600 });
  return { home: h, env: { HOME: h, PATH: '', M4A_PORT: '7341', M4A_TOKEN: SECRET, ...extra } };
}

function put(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
const read = (p: string): string => readFileSync(p, 'utf8');
type Json = Record<string, any>;
const json = (p: string): Json => {
  const errors: ParseError[] = [];
  const v = parseJsonc(read(p), errors) as Json;
  assert.deepEqual(errors, [], `${p} parses`);
  return v;
};
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const p = join(dir, name);
    out[relative(dir, p)] = statSync(p).isDirectory() ? '<dir>' : read(p);
  }
  return out;
}
const run = (o: Partial<SetupOptions> & { env: NodeJS.ProcessEnv }) => setupFiles({ program: 'qwen', scope: USER, transport: 'stdio', account: 'qwen', bridge: BRIDGE, ...o });
const group = (command: string, timeout: number): Json => ({ hooks: [{ type: 'command', command, timeout }] });
const QWEN_ENTRY = { command: 'm4a', args: ['mcp', '--account', 'qwen'], trust: true, alwaysLoadTools: true, timeout: 120000 };

describe('setup writers: Qwen Code', () => {
  it("user scope: entry, Stop and UserPromptSubmit hooks after the user's own, a QWEN.md section; idempotent; unsetup restores byte for byte", () => {
    const { home: h, env } = home();
    const file = join(h, '.qwen', 'settings.json');
    const orig = fixture('qwen-settings.json');
    put(file, orig);
    assert.deepEqual(
      run({ env }).map((f) => [relative(h, f.path), f.action]),
      [
        ['.qwen/settings.json.m4a-backup', 'created'],
        ['.qwen/settings.json', 'updated'],
        ['.qwen/QWEN.md', 'created'],
      ],
    );
    const v = json(file);
    assert.deepEqual(v.mcpServers, { docs: { httpUrl: 'https://docs.example.com/mcp', timeout: 30000 }, m4a: QWEN_ENTRY });
    assert.deepEqual(v.hooks, {
      Stop: [{ hooks: [{ type: 'command', command: 'notify-send done', timeout: 5 }] }, group('m4a hook qwen-stop --account qwen', 600)],
      UserPromptSubmit: [group('m4a hook qwen-prompt --account qwen', 30)],
    });
    // The exact text Qwen Code was started on to make the rewritten fixture.
    assert.equal(read(file), fixture('qwen-settings-set-up-rewritten.json').replace(/,\n {2}"\$version": 4\n\}\n$/, '\n}\n'));
    assert.ok(read(file).includes('// model from /model'), 'comments kept');
    assert.match(read(join(h, '.qwen', 'QWEN.md')), /^<!-- >>> mail4agent >>> -->\n## mail4agent: mail between agent sessions\n/);
    assert.ok(!read(file).includes(SECRET) && !read(join(h, '.qwen', 'QWEN.md')).includes(SECRET), 'no secret');

    const snap = snapshot(h);
    assert.deepEqual(
      run({ env }).map((f) => f.action),
      ['unchanged', 'unchanged'],
    );
    assert.deepEqual(snapshot(h), snap, 'a second run changes no byte');
    unsetupFiles({ program: 'qwen', scope: USER, env });
    assert.equal(read(file), orig);
    assert.ok(!existsSync(join(h, '.qwen', 'QWEN.md')));
    assert.ok(!existsSync(`${file}.m4a-backup`));
  });

  it('after Qwen Code rewrote settings.json ("$version": 4), unsetup removes only our entries', () => {
    const { home: h, env } = home();
    const file = join(h, '.qwen', 'settings.json');
    put(file, fixture('qwen-settings.json'));
    run({ env });
    // What Qwen Code 0.24.4 wrote when it started on that file.
    put(file, fixture('qwen-settings-set-up-rewritten.json'));
    unsetupFiles({ program: 'qwen', scope: USER, env });
    assert.equal(read(file), fixture('qwen-settings-rewritten.json'), "the user's file as Qwen rewrites it, byte for byte");
    // The original stays beside it: the file is not what it was.
    assert.equal(read(`${file}.m4a-backup`), fixture('qwen-settings.json'));
  });

  it('a settings.json setup created, then rewritten by Qwen: unsetup leaves only what Qwen added', () => {
    const { home: h, env } = home();
    const file = join(h, '.qwen', 'settings.json');
    run({ env });
    const ours = read(file);
    assert.deepEqual(json(file), {
      mcpServers: { m4a: QWEN_ENTRY },
      hooks: { Stop: [group('m4a hook qwen-stop --account qwen', 600)], UserPromptSubmit: [group('m4a hook qwen-prompt --account qwen', 30)] },
    });
    // Qwen's rewrite: its version member appended after the last one.
    put(file, ours.replace(/\n\}\n$/, ',\n  "$version": 4\n}\n'));
    unsetupFiles({ program: 'qwen', scope: USER, env });
    assert.deepEqual(json(file), { $version: 4 });
    assert.ok(!existsSync(join(h, '.qwen', 'QWEN.md')));
  });

  it('QWEN_HOME moves the global directory (absolute, ~/…, relative to the current directory); empty means unset', () => {
    const { home: h, env } = home();
    assert.equal(qwenHome({ HOME: h }), join(h, '.qwen'));
    assert.equal(qwenHome({ HOME: h, QWEN_HOME: '' }), join(h, '.qwen'));
    assert.equal(qwenHome({ HOME: h, QWEN_HOME: '~/cfg/qwen' }), join(h, 'cfg', 'qwen'));
    assert.equal(qwenHome({ HOME: h, QWEN_HOME: 'rel/q' }), join(process.cwd(), 'rel', 'q'));
    const q = join(h, 'elsewhere');
    run({ env: { ...env, QWEN_HOME: q } });
    assert.deepEqual(json(join(q, 'settings.json')).mcpServers.m4a, QWEN_ENTRY);
    assert.ok(existsSync(join(q, 'QWEN.md')));
    assert.ok(!existsSync(join(h, '.qwen')), 'nothing in ~/.qwen');
    unsetupFiles({ program: 'qwen', scope: USER, env: { ...env, QWEN_HOME: q } });
    assert.ok(!existsSync(q), 'the directories setup created are gone');
  });

  it('project scope, http: .qwen/settings.json with httpUrl and ${M4A_TOKEN}, QWEN.md at the root, no secret; unsetup leaves the project empty', () => {
    const { env } = home();
    const dir = temp('m4a-proj-qwen-');
    run({ env, transport: 'http', scope: { kind: 'project', dir } });
    assert.deepEqual(json(join(dir, '.qwen', 'settings.json')), {
      mcpServers: { m4a: { httpUrl: 'http://127.0.0.1:7341/mcp', headers: { Authorization: 'Bearer ${M4A_TOKEN}' }, trust: true, alwaysLoadTools: true, timeout: 120000 } },
      hooks: { Stop: [group('m4a hook qwen-stop --account qwen', 600)], UserPromptSubmit: [group('m4a hook qwen-prompt --account qwen', 30)] },
    });
    for (const p of [join(dir, '.qwen', 'settings.json'), join(dir, 'QWEN.md')]) assert.ok(!read(p).includes(SECRET), `no secret in ${p}`);
    unsetupFiles({ program: 'qwen', scope: { kind: 'project', dir }, env });
    assert.deepEqual(readdirSync(dir), []);
  });

  it('--no-hooks: the entry and the guide only; a later run with hooks adds them, one without removes them again', () => {
    const { home: h, env } = home();
    const file = join(h, '.qwen', 'settings.json');
    run({ env, hooks: false });
    assert.equal(json(file).hooks, undefined);
    run({ env });
    assert.equal(json(file).hooks.Stop.length, 1);
    run({ env, hooks: false });
    assert.deepEqual(json(file), { mcpServers: { m4a: QWEN_ENTRY } });
  });
});

describe('setup for Gemini CLI: unattended use', () => {
  it('the entry is trusted; no auth block is written', () => {
    const { home: h, env } = home();
    setupFiles({ program: 'gemini', scope: USER, transport: 'stdio', account: 'gemini', bridge: BRIDGE, env });
    const v = json(join(h, '.gemini', 'settings.json'));
    assert.equal(v.mcpServers.m4a.trust, true);
    assert.equal(v.security, undefined, 'the auth choice stays the user’s');
  });

  it("names where Gemini's auth choice comes from, or that there is none", () => {
    const { home: h, env } = home();
    const bare = { HOME: h };
    assert.equal(geminiAuthSource(bare, null), null);
    assert.equal(geminiAuthSource({ ...bare, GEMINI_API_KEY: 'k' }, null), 'GEMINI_API_KEY in this environment');
    // With a base URL the key selects "gateway", which headless runs refuse (exit 41).
    assert.equal(geminiAuthSource({ ...bare, GEMINI_API_KEY: 'k', GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9' }, null), null);
    assert.equal(geminiAuthSource({ ...bare, GOOGLE_GENAI_USE_VERTEXAI: 'true' }, null), 'GOOGLE_GENAI_USE_VERTEXAI in this environment');
    const dir = temp('m4a-proj-gem-');
    put(join(dir, '.gemini', 'settings.json'), '{ // mine\n "security": { "auth": { "selectedType": "gemini-api-key" } } }\n');
    assert.match(geminiAuthSource(bare, dir) ?? '', /selectedType "gemini-api-key" in .*\.gemini\/settings\.json/);
    put(join(h, '.gemini', 'settings.json'), fixture('gemini-settings.json'));
    assert.match(geminiAuthSource(env, null) ?? '', /"oauth-personal"/);
  });
});
