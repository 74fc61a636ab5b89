// The singleton daemon: any command that finds none starts one, detached, and waits until it
// answers. Two commands racing start exactly one (the data directory's lock decides; the loser
// exits and both clients find the winner).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MailClient, DaemonUnreachable } from '../client/http-client.js';
import { daemonEnv } from '../wire/inherited-env.js';
import { DATA_FILES } from '../wire/locations.js';
import { daemonUrl } from './daemon-target.js';

export const CLI_MAIN = fileURLToPath(new URL('./main.js', import.meta.url)).replace(/\.js$/, import.meta.url.endsWith('.ts') ? '.ts' : '.js');

export interface DaemonInfo {
  pid: number;
  url: string;
  version: string;
  auto?: boolean;
  started_at?: string;
}

export function readDaemonInfo(dataDir: string): DaemonInfo | null {
  try {
    return JSON.parse(readFileSync(join(dataDir, DATA_FILES.daemonInfo), 'utf8')) as DaemonInfo;
  } catch {
    return null;
  }
}

export async function probe(url: string, timeoutMs = 1000): Promise<{ version: string; pid: number } | null> {
  const c = new MailClient({ url, token: '', checkPortOwner: false });
  try {
    return await c.health(timeoutMs);
  } catch {
    return null;
  } finally {
    c.close();
  }
}

/** Node's own flags for the child, with `--import <package>` made absolute: the daemon runs from
 *  the data directory, where a bare package name (tsx, in development) would not resolve. */
function portableExecArgv(): string[] {
  const out: string[] = [];
  const args = process.execArgv;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    const v = args[i + 1];
    if ((a === '--import' || a === '--loader') && v !== undefined && !/^[./]|^file:/.test(v)) {
      out.push(a, import.meta.resolve(v));
      i++;
    } else out.push(a);
  }
  return out;
}

/** `m4a serve`'s exit code when another daemon holds the lock (SERVE_EXIT.locked; the CLI does not
 *  import the daemon): a lost start race, so the winner is awaited. */
const EXIT_LOCKED = 4;

/** Starts `m4a serve --auto` detached from this process (it outlives the agent that started it).
 *  The daemon gets an allow-listed environment (daemonEnv), never this command's M4A_TOKEN,
 *  M4A_ACCOUNT or API keys: it serves every account, and its wakes run programs for them. */
export function spawnDaemon(dataDir: string, env: NodeJS.ProcessEnv = process.env): ChildProcess {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const log = openSync(join(dataDir, 'daemon.log'), 'a', 0o600);
  const port = env.M4A_PORT;
  const child = spawn(process.execPath, [...portableExecArgv(), CLI_MAIN, 'serve', '--auto', '--data-dir', dataDir, ...(port ? ['--port', port] : [])], {
    detached: true,
    stdio: ['ignore', log, log],
    env: daemonEnv(env),
    cwd: dataDir,
  });
  child.unref();
  closeSync(log);
  return child;
}

/** The daemon this command started exited before it answered (a damaged store, an unsafe data
 *  directory): its exit code and the reason it wrote last, at once instead of after the timeout. */
export class DaemonExited extends Error {}

/** The last line `m4a serve` wrote about itself (`m4a: …`), else the last line of daemon.log. */
function lastLogLine(path: string): string | null {
  try {
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      const buf = Buffer.alloc(Math.min(size, 64 * 1024));
      readSync(fd, buf, 0, buf.length, size - buf.length);
      const lines = buf
        .toString('utf8')
        .split('\n')
        .map((l) => l.trimEnd())
        .filter((l) => l !== '');
      return [...lines].reverse().find((l) => l.startsWith('m4a: ')) ?? lines.at(-1) ?? null;
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
}

/** The URL of a running daemon, starting one when none answers. `unref`: the polling never keeps
 *  the process alive (the pi/omp extension's background loop must not hold a finished agent). */
export async function ensureDaemon(dataDir: string, env: NodeJS.ProcessEnv = process.env, timeoutMs = 15_000, o: { unref?: boolean } = {}): Promise<string> {
  const url = daemonUrl(dataDir, env);
  if (await probe(url, 1000)) return url;
  if (env.M4A_URL) throw new DaemonUnreachable(url, new Error('M4A_URL is set, so no daemon is started'));
  const child = spawnDaemon(dataDir, env);
  let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  child.once('exit', (code, signal) => (exit = { code, signal })); // listening keeps it unref'd
  const logPath = join(dataDir, 'daemon.log');
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await new Promise((r) => {
      const t = setTimeout(r, 30);
      if (o.unref) t.unref();
    });
    const now = daemonUrl(dataDir, env);
    if (await probe(now, 500)) return now;
    const ended = exit as { code: number | null; signal: NodeJS.Signals | null } | null;
    if (ended && ended.code !== EXIT_LOCKED) {
      const last = lastLogLine(logPath);
      const how = ended.code !== null ? `with code ${ended.code}` : `on ${ended.signal}`;
      throw new DaemonExited(`the daemon started for ${dataDir} exited ${how} before answering (see ${logPath})${last ? `; its last line:\n${last}` : ''}`);
    }
  }
  throw new DaemonUnreachable(url, new Error(`started a daemon but it did not answer within ${timeoutMs} ms (see ${logPath})`));
}
