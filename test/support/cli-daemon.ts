// The m4a CLI run as a user runs it, against a real daemon found through its data directory: the
// setup the CLI and importer tests share. runCli spawns the built CLI (dist/, so `npm run build`
// first) or, with `source`, src/cli/main.ts through tsx; startCliDaemon adds a daemon and a home
// directory of its own (HOME and XDG_CONFIG_HOME there, M4A_DATA_DIR the daemon's).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DaemonOptions } from '../../src/daemon/daemon.js';
import { CLI } from './shell-agents.js';
import { startTestDaemon, type TestDaemon } from './test-daemon.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SOURCE_CLI = join(ROOT, 'src/cli/main.ts');

export interface CliRun {
  /** The exit code (1 when the process ended otherwise, by a signal or the timeout). */
  status: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** Added to this process's environment. */
  env?: Record<string, string>;
  cwd?: string;
  /** src/cli/main.ts through tsx instead of the built CLI (run from the repository's root). */
  source?: boolean;
  timeout?: number;
  maxBuffer?: number;
}

export function runCli(args: string[], o: CliOptions = {}): Promise<CliRun> {
  const argv = o.source ? ['--import', 'tsx', SOURCE_CLI, ...args] : [CLI, ...args];
  const cwd = o.cwd ?? (o.source ? ROOT : undefined);
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      argv,
      { ...(cwd ? { cwd } : {}), encoding: 'utf8', env: { ...process.env, ...o.env }, timeout: o.timeout ?? 60_000, maxBuffer: o.maxBuffer ?? 8 << 20 },
      (err, stdout, stderr) => resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    ),
  );
}

export interface CliDaemon {
  d: TestDaemon;
  /** A fresh directory: the CLI's HOME and XDG_CONFIG_HOME. */
  home: string;
  /** What runCli is given: HOME, XDG_CONFIG_HOME, M4A_DATA_DIR. */
  env: Record<string, string>;
  /** runCli with this env (and the options given here). */
  cli(args: string[], o?: Omit<CliOptions, 'env'>): Promise<CliRun>;
  /** Stops the daemon and removes the home directory. */
  stop(): Promise<void>;
}

export async function startCliDaemon(prefix: string, o: { daemon?: DaemonOptions; source?: boolean } = {}): Promise<CliDaemon> {
  const d = await startTestDaemon(o.daemon);
  const home = mkdtempSync(join(tmpdir(), prefix));
  const env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir };
  return {
    d,
    home,
    env,
    cli: (args, x = {}) => runCli(args, { ...(o.source ? { source: true } : {}), ...x, env }),
    async stop() {
      await d.stop();
      rmSync(home, { recursive: true, force: true });
    },
  };
}
