// The fixture the `m4a setup` tests share: the bridge command written into agent configs, the user
// scope, and temporary directories removed once the test file's tests are done.
import { after } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bridge } from '../../src/cli/setup/bridge-command.js';
import type { Scope } from '../../src/cli/setup/programs.js';

export const BRIDGE: Bridge = { command: 'm4a', prefix: [], portable: true };
export const USER: Scope = { kind: 'user' };

/** A maker of temporary directories (named by prefix), all removed after the calling file's tests. */
export function tempDirs(): (prefix: string) => string {
  const temps: string[] = [];
  after(() => temps.forEach((d) => rmSync(d, { recursive: true, force: true })));
  return (prefix) => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    temps.push(d);
    return d;
  };
}
