// Child processes and temp dirs of one bench run: every one is tracked and ended (by its own pid) and
// every temp dir removed when the run ends, also on Ctrl-C or an error.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, rmSync, createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { progress } from './progress.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BENCH = join(ROOT, 'bench');
export const CLI = join(ROOT, 'dist', 'cli', 'main.js');

const children = new Set<ChildProcess>();
const dirs = new Set<string>();
const cleanups: (() => Promise<void> | void)[] = [];

export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), `m4a-bench-${prefix}-`));
  dirs.add(d);
  return d;
}

export function removeDir(d: string): void {
  rmSync(d, { recursive: true, force: true });
  dirs.delete(d);
}

export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
}

export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Ends one child by its pid: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 5000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill(signal);
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(t);
}

let cleaned = false;
export async function cleanupAll(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  for (const fn of cleanups.reverse()) {
    try {
      await fn();
    } catch {
      /* best effort */
    }
  }
  await Promise.all([...children].map((c) => stopChild(c, 3000)));
  for (const d of [...dirs]) rmSync(d, { recursive: true, force: true });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** `node --import tsx bench/<script>` (the load generators and baselines run as their own processes). */
export function spawnTs(script: string, args: string[], opts: SpawnOptions & { nodeFlags?: string[] } = {}): ChildProcess {
  const { nodeFlags = [], ...rest } = opts;
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', join(BENCH, script), ...args], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'], ...rest });
  return track(child);
}

/**
 * Runs a bench script that prints its result as the last JSON line on stdout. Lines on stderr of the
 * form `@progress DONE TOTAL UNIT` drive the progress display; other stderr goes to `logFile`.
 */
export async function runJson<T>(
  script: string,
  spec: unknown,
  o: { label?: string; timeoutMs?: number; logFile?: string; nodeFlags?: string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<T> {
  if (o.label) progress.phase(o.label);
  let arg = JSON.stringify(spec);
  if (arg.length > 16_000) {
    const file = join(tempDir('spec'), 'spec.json');
    writeFileSync(file, arg);
    arg = `@${file}`;
  }
  const child = spawnTs(script, [arg], { nodeFlags: o.nodeFlags ?? [], env: o.env ?? process.env });
  const log = o.logFile ? createWriteStream(o.logFile, { flags: 'a' }) : null;
  let out = '';
  let errTail = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  let buf = '';
  child.stderr?.on('data', (c: Buffer) => {
    buf += c.toString('utf8');
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.startsWith('@progress ')) {
        const [, done, total, ...unit] = line.split(' ');
        progress.update(Number(done), total && total !== '0' ? Number(total) : undefined, unit.join(' '));
      } else {
        log?.write(`${line}\n`);
        errTail = (errTail + line + '\n').slice(-4000);
      }
    }
  });
  const timeout = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 10 * 60_000);
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  clearTimeout(timeout);
  log?.end();
  const last = out.trim().split('\n').pop() ?? '';
  if (code !== 0) throw new Error(`${script} exited with ${code}: ${errTail.trim().split('\n').slice(-8).join('\n')}`);
  try {
    return JSON.parse(last) as T;
  } catch {
    throw new Error(`${script} printed no JSON result: ${last.slice(0, 300)}`);
  }
}

/** Resident set size of a process in MiB (VmRSS from /proc/PID/status). */
export function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : NaN;
}

/** User+system CPU seconds of a process (from /proc/PID/stat). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until a process is idle: its main thread asleep ('S' in /proc/PID/stat) and no CPU used,
 *  on three consecutive polls 20 ms apart (a runnable process waiting for a core shows 'R', so a
 *  busy machine does not pass for an idle daemon). E.g. the daemon has read, attested and parked
 *  everything sent to it. False on timeout. */
export async function waitIdle(pid: number, timeoutMs: number): Promise<boolean> {
  const read = (): { state: string; ticks: number } => {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return { state: f[0] ?? '?', ticks: Number(f[11]) + Number(f[12]) };
  };
  const deadline = Date.now() + timeoutMs;
  let last = read().ticks;
  let quiet = 0;
  while (quiet < 3) {
    if (Date.now() > deadline) return false;
    await sleep(20);
    const now = read();
    quiet = now.ticks === last && now.state === 'S' ? quiet + 1 : 0;
    last = now.ticks;
  }
  return true;
}
