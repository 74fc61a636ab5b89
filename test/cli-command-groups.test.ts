// The CLI loads only the command group a command line names (src/cli/command-groups.ts): each group
// must register exactly the top-level names the table gives it, or `m4a <name>` would not find its
// command. And the built CLI (one bundled file) must list every command in its help and run a
// group's command, with the daemon's code left out of the bundle.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { COMMAND_GROUPS, groupsFor } from '../src/cli/command-groups.js';

const ROOT = join(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const OWN = ['serve', 'mcp', 'doctor', 'capabilities', 'migrate-store'];

describe('CLI command groups', () => {
  it('each group registers exactly the top-level commands the table names', async () => {
    for (const g of COMMAND_GROUPS) {
      const program = new Command();
      (await g.load())(program);
      assert.deepEqual(
        program.commands.map((c) => c.name()),
        [...g.names],
        `group ${g.names[0]}`,
      );
    }
  });

  it('no name is in two groups or shadows one of main.ts own commands', () => {
    const all = [...OWN, ...COMMAND_GROUPS.flatMap((g) => g.names)];
    assert.equal(new Set(all).size, all.length);
  });

  it('a command line loads its group only; own commands none; help or an unknown word all', () => {
    assert.deepEqual(
      groupsFor(['send', 'bob', 's', 'b'], OWN).map((g) => g.names[0]),
      ['send'],
    );
    assert.deepEqual(
      groupsFor(['lease', 'list'], OWN).map((g) => g.names[0]),
      ['reserve'],
    );
    assert.equal(groupsFor(['serve', '--port', '0'], OWN).length, 0);
    for (const argv of [[], ['--help'], ['help', 'send'], ['sned']]) assert.equal(groupsFor(argv, OWN).length, COMMAND_GROUPS.length, argv.join(' '));
  });

  it('the built CLI lists every command in its help and leaves the daemon out of its bundle', () => {
    const r = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    for (const name of [...OWN, ...COMMAND_GROUPS.flatMap((g) => g.names)]) assert.match(r.stdout, new RegExp(`^  ${name}\\b`, 'm'), name);
    const bundle = readFileSync(CLI, 'utf8');
    assert.match(bundle, /import\("\.\.\/daemon\/serve\.js"\)/, 'serve imports the daemon from dist/daemon');
    assert.doesNotMatch(bundle, /from "better-sqlite3"|require\("better-sqlite3"\)|from "pino"/, 'no store or logger in the CLI bundle');
    // `m4a import agent-mail DB` reads that tool's SQLite file itself: better-sqlite3 stays outside
    // the bundle and is loaded by that command alone, never at start.
    const lazy = bundle.match(/better-sqlite3/g) ?? [];
    assert.equal(lazy.length, (bundle.match(/await import\("better-sqlite3"\)/g) ?? []).length, 'better-sqlite3 only as a lazy import');
  });

  it('the built CLI runs a command of a group and refuses an unknown one with a suggestion', () => {
    const r = spawnSync(process.execPath, [CLI, 'send', '--help'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /--idempotency-key/);
    const bad = spawnSync(process.execPath, [CLI, 'sned'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /Did you mean send\?/);
  });
});
