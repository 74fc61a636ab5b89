// `m4a setup opencode` adds one entry to package-lock.json beside the plugin (`"@opencode-ai/plugin":
// "*"` under packages[""].dependencies) so opencode does not install that package at every start.
// The entry names a real package: once npm or opencode installs it, the lock's value is theirs, and
// `m4a unsetup opencode` must leave it (and the lock) as they wrote it, not remove a dependency
// the lock's own node_modules entries still describe.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bridge } from '../src/cli/setup/bridge-command.js';
import { setupFiles, unsetupFiles } from '../src/cli/setup/setup-files.js';
import type { Scope } from '../src/cli/setup/programs.js';

const BRIDGE: Bridge = { command: 'm4a', prefix: [], portable: true };
const USER: Scope = { kind: 'user' };
const temps: string[] = [];
after(() => temps.forEach((d) => rmSync(d, { recursive: true, force: true })));

function world(): { dir: string; env: NodeJS.ProcessEnv } {
  const h = mkdtempSync(join(tmpdir(), 'm4a-opencode-lock-'));
  temps.push(h);
  const xdg = join(h, 'xdg');
  mkdirSync(join(xdg, 'mail4agent'), { recursive: true });
  writeFileSync(join(xdg, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { opencode: { secret: 'm4a_' + 'x'.repeat(40), provider: 'opencode' } } }), {
    mode: 0o600,
  });
  return { dir: join(xdg, 'opencode'), env: { HOME: h, XDG_CONFIG_HOME: xdg, PATH: '', M4A_PORT: '7341' } };
}

type Lock = { name?: string; lockfileVersion?: number; packages: Record<string, { dependencies?: Record<string, string>; version?: string }> };

describe('opencode setup: the lock entry once the package is installed', () => {
  for (const existed of [false, true]) {
    it(`${existed ? 'a lock of the user' : 'a lock setup created'}: npm installs @opencode-ai/plugin, unsetup leaves the lock as npm wrote it`, () => {
      const { dir, env } = world();
      const lockPath = join(dir, 'package-lock.json');
      if (existed) {
        mkdirSync(dir, { recursive: true });
        writeFileSync(lockPath, JSON.stringify({ name: 'opencode', lockfileVersion: 3, packages: { '': { dependencies: { 'left-pad': '^1.3.0' } } } }, null, 2) + '\n');
      }
      setupFiles({ program: 'opencode', scope: USER, transport: 'stdio', account: 'opencode', bridge: BRIDGE, env });
      const lock = JSON.parse(readFileSync(lockPath, 'utf8')) as Lock;
      assert.equal(lock.packages['']!.dependencies!['@opencode-ai/plugin'], '*');
      // What `npm install @opencode-ai/plugin` (opencode's own install) writes there.
      lock.packages['']!.dependencies!['@opencode-ai/plugin'] = '^1.18.33';
      lock.packages['node_modules/@opencode-ai/plugin'] = { version: '1.18.33' };
      const installed = JSON.stringify(lock, null, 2) + '\n';
      writeFileSync(lockPath, installed);
      unsetupFiles({ program: 'opencode', scope: USER, env });
      assert.ok(existsSync(lockPath), 'the lock npm now keeps is still there');
      assert.equal(readFileSync(lockPath, 'utf8'), installed, "npm's dependency is not removed from its lock");
    });
  }
});

describe('setup: a container of the wrong type on the way to an entry', () => {
  const cases: [string, string, string][] = [
    ['opencode', 'opencode.json', '{"mcp": "x"}'],
    ['opencode', 'package-lock.json', '{"packages": {"": "s"}}'],
  ];
  for (const [program, file, text] of cases) {
    it(`${file} ${text}: refused by name, the file unchanged`, () => {
      const { dir, env } = world();
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, file), text);
      assert.throws(
        () => setupFiles({ program: program as 'opencode', scope: USER, transport: 'stdio', account: 'opencode', bridge: BRIDGE, env }),
        (err: Error) => err.name === 'Refusal' && /is a string, not an object/.test(err.message),
      );
      assert.equal(readFileSync(join(dir, file), 'utf8'), text);
    });
  }
});
