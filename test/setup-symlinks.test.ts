// A cloned repository can ship any file setup writes in a project (or a directory on the way) as a
// symlink to a file outside it (~/.bashrc, ~/.ssh/authorized_keys): setup and unsetup refuse with
// symlink_refused and write, delete or rewrite nothing, here or there. Real temp dirs, real links.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Bridge } from '../src/cli/setup/bridge-command.js';
import type { Program, Scope } from '../src/cli/setup/programs.js';
import { Refusal } from '../src/cli/setup/refusal.js';
import { setupFiles, unsetupFiles, type SetupOptions } from '../src/cli/setup/setup-files.js';
import { statePath } from '../src/cli/setup/state.js';

const BRIDGE: Bridge = { command: 'm4a', prefix: [], portable: true };
const temps: string[] = [];
after(() => temps.forEach((d) => rmSync(d, { recursive: true, force: true })));

function temp(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}

function put(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

/** Every entry under dir, links as links, with file contents. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const p = join(dir, name);
    const l = lstatSync(p);
    out[relative(dir, p)] = l.isSymbolicLink() ? '<link>' : l.isDirectory() ? '<dir>' : readFileSync(p, 'utf8');
  }
  return out;
}

interface World {
  home: string;
  env: NodeJS.ProcessEnv;
  proj: string;
  /** Outside both: what a hostile link points at. */
  victim: string;
}

function world(): World {
  const home = temp('m4a-home-');
  return { home, env: { HOME: home, PATH: '', M4A_PORT: '7341' }, proj: temp('m4a-proj-'), victim: temp('m4a-victim-') };
}

const run = (w: World, program: Program, scope: Scope, more: Partial<SetupOptions> = {}) =>
  setupFiles({ program, scope, transport: 'stdio', account: program, bridge: BRIDGE, env: w.env, ...more });

const symlinkRefusal = (file: string) => (e: unknown) => e instanceof Refusal && e.code === 'symlink_refused' && e.file === file && e.message.includes(file);

/** Runs `act`, which must refuse with symlink_refused for `file`, and checks nothing changed. */
function refusesUntouched(w: World, file: string, act: () => unknown): void {
  const before = [snapshot(w.proj), snapshot(w.victim), snapshot(w.home)];
  assert.throws(act, symlinkRefusal(file));
  assert.deepEqual([snapshot(w.proj), snapshot(w.victim), snapshot(w.home)], before, 'nothing written, deleted or rewritten anywhere');
}

describe('setup in a project refuses symlinks', () => {
  it('a target file linked outside (.mcp.json -> ~/.bashrc)', () => {
    const w = world();
    const bashrc = join(w.victim, '.bashrc');
    put(bashrc, 'export PATH=$HOME/bin:$PATH\n');
    symlinkSync(bashrc, join(w.proj, '.mcp.json'));
    refusesUntouched(w, join(w.proj, '.mcp.json'), () => run(w, 'claude', { kind: 'project', dir: w.proj }));
    assert.ok(!existsSync(statePath(w.env)), 'no state recorded');
  });

  it('a directory on the way linked outside (.opencode/plugin, .github)', () => {
    const w = world();
    mkdirSync(join(w.proj, '.opencode'));
    symlinkSync(w.victim, join(w.proj, '.opencode', 'plugin'));
    refusesUntouched(w, join(w.proj, '.opencode', 'plugin'), () => run(w, 'opencode', { kind: 'project', dir: w.proj }));
    const w2 = world();
    symlinkSync(w2.victim, join(w2.proj, '.github'));
    refusesUntouched(w2, join(w2.proj, '.github'), () => run(w2, 'copilot', { kind: 'project', dir: w2.proj }));
  });

  it('a link inside the project is refused too, and so is a planted backup link', () => {
    const w = world();
    put(join(w.proj, 'notes.json'), '{}\n');
    symlinkSync(join(w.proj, 'notes.json'), join(w.proj, '.mcp.json'));
    refusesUntouched(w, join(w.proj, '.mcp.json'), () => run(w, 'claude', { kind: 'project', dir: w.proj }));
    // A backup is copied from an existing file: a link there would receive that copy.
    const w2 = world();
    put(join(w2.proj, '.mcp.json'), '{ "mcpServers": {} }\n');
    const keys = join(w2.victim, 'authorized_keys');
    put(keys, 'ssh-ed25519 AAAA user@host\n');
    symlinkSync(keys, join(w2.proj, '.mcp.json.m4a-backup'));
    refusesUntouched(w2, join(w2.proj, '.mcp.json.m4a-backup'), () => run(w2, 'claude', { kind: 'project', dir: w2.proj }));
  });

  it('the project directory itself may be a link: the files land beneath its target', () => {
    const w = world();
    const link = join(w.victim, 'proj-link');
    symlinkSync(w.proj, link);
    const files = run(w, 'claude', { kind: 'project', dir: link });
    assert.ok(files.length > 0);
    assert.ok(statSync(join(w.proj, '.mcp.json')).isFile(), 'written beneath the real project directory');
    assert.ok(!lstatSync(link).isDirectory(), 'the link stays a link');
  });
});

describe('the CLI names the refusal', () => {
  it('m4a setup --json exits 1 with error.code symlink_refused and the file', () => {
    const w = world();
    const bashrc = join(w.victim, '.bashrc');
    put(bashrc, 'alias ll="ls -l"\n');
    symlinkSync(bashrc, join(w.proj, '.mcp.json'));
    const root = fileURLToPath(new URL('../', import.meta.url));
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/cli/main.ts'), 'setup', 'claude', '--project', w.proj, '--json'], {
      cwd: root,
      env: { ...w.env, PATH: process.env.PATH },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 1, r.stderr);
    const err = (JSON.parse(r.stderr.trim()) as { error: { code: string; file: string } }).error;
    assert.deepEqual([err.code, err.file], ['symlink_refused', join(w.proj, '.mcp.json')]);
    assert.equal(readFileSync(bashrc, 'utf8'), 'alias ll="ls -l"\n');
    assert.deepEqual(readdirSync(w.proj), ['.mcp.json'], 'nothing else written in the project');
  });
});

describe('unsetup in a project refuses symlinks planted after setup', () => {
  it('a file of ours replaced by a link outside is neither rewritten nor deleted there', () => {
    const w = world();
    const scope: Scope = { kind: 'project', dir: w.proj };
    put(join(w.proj, '.mcp.json'), '{ "mcpServers": { "other": { "command": "x" } } }\n');
    run(w, 'claude', scope);
    // The repository (a pull) moves our file outside and links it back.
    const outside = join(w.victim, 'settings.json');
    renameSync(join(w.proj, '.mcp.json'), outside);
    symlinkSync(outside, join(w.proj, '.mcp.json'));
    refusesUntouched(w, join(w.proj, '.mcp.json'), () => unsetupFiles({ program: 'claude', scope, env: w.env }));
  });

  it('a directory of ours replaced by a link outside', () => {
    const w = world();
    const scope: Scope = { kind: 'project', dir: w.proj };
    run(w, 'claude', scope);
    const outside = join(w.victim, 'claude-dir');
    renameSync(join(w.proj, '.claude'), outside);
    symlinkSync(outside, join(w.proj, '.claude'));
    refusesUntouched(w, join(w.proj, '.claude'), () => unsetupFiles({ program: 'claude', scope, env: w.env }));
    assert.ok(existsSync(statePath(w.env)), 'the record is kept, to undo once the link is gone');
  });
});

describe('user scope: linked config directories are followed, whole files of ours never through a link', () => {
  it('a symlinked ~/.claude directory (dotfiles) is written through as before', () => {
    const w = world();
    const dot = join(w.victim, 'dotfiles-claude');
    mkdirSync(dot);
    symlinkSync(dot, join(w.home, '.claude'));
    run(w, 'claude', { kind: 'user' });
    assert.ok(existsSync(join(dot, 'skills', 'mail4agent', 'SKILL.md')), 'the skill lands in the linked directory');
    unsetupFiles({ program: 'claude', scope: { kind: 'user' }, env: w.env });
    assert.ok(!existsSync(join(dot, 'skills', 'mail4agent', 'SKILL.md')), 'and is removed from it');
    assert.ok(lstatSync(join(w.home, '.claude')).isSymbolicLink(), 'the link stays');
  });

  it('a whole file of ours that is a link is refused, even with --force', () => {
    const w = world();
    const skill = join(w.home, '.claude', 'skills', 'mail4agent', 'SKILL.md');
    const dot = join(w.victim, 'my-skill.md');
    put(dot, '# my own notes\n');
    mkdirSync(dirname(skill), { recursive: true });
    symlinkSync(dot, skill);
    refusesUntouched(w, skill, () => run(w, 'claude', { kind: 'user' }, { force: true }));
    assert.equal(readFileSync(dot, 'utf8'), '# my own notes\n');
  });
});
