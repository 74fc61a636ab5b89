// The command an agent runs for the stdio bridge: plain `m4a` when the `m4a` on PATH is this
// package, else absolute node + this package's dist/cli/main.js (works, but machine-specific).
import { accessSync, constants, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This package's built CLI; the same path from src/cli/setup (tsx) and dist/cli/setup. */
export const DIST_MAIN = fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url));

export interface Bridge {
  command: string;
  /** Arguments before `mcp --account NAME`. */
  prefix: string[];
  /** False when the command holds absolute paths of this machine. */
  portable: boolean;
}

const real = (p: string): string | null => {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
};

/** The first `m4a` the shell would find on PATH, if any. */
function onPath(env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, 'm4a');
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return null;
}

export function resolveBridge(env: NodeJS.ProcessEnv = process.env, main = DIST_MAIN, node = process.execPath): Bridge {
  const found = onPath(env);
  const mine = real(main) ?? main;
  if (found && real(found) === mine) return { command: 'm4a', prefix: [], portable: true };
  return { command: node, prefix: [main], portable: false };
}

export const bridgeArgs = (b: Bridge, account: string): string[] => [...b.prefix, 'mcp', '--account', account];
