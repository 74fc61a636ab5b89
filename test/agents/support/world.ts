// One isolated world per test for the real agent programs: a temporary HOME (with XDG_CONFIG_HOME
// and CODEX_HOME inside it), the daemon's data directory and a free port (so the first m4a command
// auto-starts a daemon there), and a bin directory first on PATH whose `m4a` is a symlink to this
// package's dist/cli/main.js. Programs run with a bounded time, in their own process group, while
// their process tree is sampled (so a test can tell which process a session card names).
import { spawn, type SpawnOptions } from 'node:child_process';
import { accessSync, chmodSync, constants, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../../', import.meta.url));
export const DIST_MAIN = join(REPO, 'dist', 'cli', 'main.js');
/** The agent programs' own package (test/agents/package.json), installed by `npm run test:agents`. */
export const AGENT_MODULES = join(REPO, 'test', 'agents', 'node_modules');
export const NODE_BIN = join(AGENT_MODULES, '.bin');

/** Variables of an agent session or of mail4agent that must not leak from whoever runs the tests
 *  (pi and omp read PI_CODING_AGENT_DIR, PI_CONFIG_DIR and the like). */
const FOREIGN = /^(CLAUDE|CLAUDECODE|ANTHROPIC|CODEX|OPENAI|GEMINI|GOOGLE|CURSOR|PI|OMP|QWEN|OPENCODE|COPILOT|GH|GITHUB|M4A|MCP|XDG)(_|$)/;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** `tsc` writes dist/cli/main.js without the execute bit, which npm's bin linking would add: a
 *  symlink to it on PATH is only runnable (and only recognised by `m4a setup`) once it has it. */
export function ensureExecutableMain(): void {
  try {
    accessSync(DIST_MAIN, constants.X_OK);
  } catch {
    chmodSync(DIST_MAIN, statSync(DIST_MAIN).mode | 0o111);
  }
}

export interface ProcInfo {
  pid: number;
  ppid: number;
  startTime: number;
  exe: string;
}

export function readProc(pid: number): ProcInfo | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    let exe = '';
    try {
      exe = readlinkSync(`/proc/${pid}/exe`);
    } catch {
      /* a zombie or a process of another user */
    }
    return { pid, ppid: Number(rest[1]), startTime: Number(rest[19]), exe };
  } catch {
    return null;
  }
}

/** Every live process in the tree under `root` (root included). */
export function processTree(root: number): ProcInfo[] {
  const all = new Map<number, ProcInfo>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = readProc(Number(name));
    if (p) all.set(p.pid, p);
  }
  const out: ProcInfo[] = [];
  const want = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of all.values()) {
      if (!want.has(p.pid) && want.has(p.ppid)) {
        want.add(p.pid);
        grew = true;
      }
    }
  }
  for (const pid of want) {
    const p = all.get(pid);
    if (p) out.push(p);
  }
  return out;
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** Processes whose command line names `dir` (or a path under it). */
function processesMentioning(dir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    if (cmdline(Number(name)).includes(dir)) out.push(Number(name));
  }
  return out;
}

export interface RunResult {
  command: string;
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  ms: number;
  /** Every process seen under the spawned one while it ran (pid + start time identify one). */
  seen: ProcInfo[];
}

export const describeRun = (r: RunResult): string =>
  `${r.command}\n  exit ${r.code ?? r.signal}${r.timedOut ? ' (TIMED OUT, killed)' : ''} after ${r.ms} ms\n  --- stdout ---\n${r.stdout}\n  --- stderr ---\n${r.stderr}`;

export interface World {
  root: string;
  home: string;
  bin: string;
  /** A project directory (not the home directory). */
  project: string;
  dataDir: string;
  port: number;
  /** http://127.0.0.1:PORT, where the daemon auto-starts. */
  url: string;
  env: NodeJS.ProcessEnv;
  /** Runs a program (found on the world's PATH) with the world's environment plus `extra`. */
  run(cmd: string, args: string[], opts?: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string }): Promise<RunResult>;
  /** Runs `m4a …` (node dist/cli/main.js) and fails with its output unless it exits 0. */
  m4a(args: string[], opts?: { cwd?: string; env?: NodeJS.ProcessEnv }): Promise<string>;
  /** Stops the daemon, kills what the world's programs left running, removes the directory. */
  close(): Promise<void>;
}

export async function makeWorld(prefix = 'm4a-agents-'): Promise<World> {
  ensureExecutableMain();
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const home = join(root, 'home');
  const bin = join(root, 'bin');
  const project = join(root, 'project');
  const dataDir = join(root, 'data');
  for (const d of [home, bin, project]) mkdirSync(d, { recursive: true });
  symlinkSync(DIST_MAIN, join(bin, 'm4a'));
  const port = await freePort();
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!FOREIGN.test(k) && v !== undefined) base[k] = v;
  const env: NodeJS.ProcessEnv = {
    ...base,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    CODEX_HOME: join(home, '.codex'),
    M4A_DATA_DIR: dataDir,
    M4A_PORT: String(port),
    PATH: [bin, NODE_BIN, process.env.PATH ?? '/usr/bin:/bin'].join(delimiter),
    NO_COLOR: '1',
    LANG: process.env.LANG ?? 'C.UTF-8',
  };
  const groups: number[] = [];

  const run: World['run'] = (cmd, args, opts = {}) =>
    new Promise((resolve, reject) => {
      const started = Date.now();
      const spawnOpts: SpawnOptions = { cwd: opts.cwd ?? project, env: { ...env, ...opts.env }, stdio: ['pipe', 'pipe', 'pipe'], detached: true };
      const child = spawn(cmd, args, spawnOpts);
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
      child.stdin!.end(opts.input ?? '');
      child.once('error', reject);
      if (child.pid === undefined) return;
      const pid = child.pid;
      groups.push(pid);
      const seen = new Map<string, ProcInfo>();
      const sample = (): void => {
        // The same process seen again: keep its latest executable (it changes at exec; it reads
        // as '' in the instant between, or once the process is a zombie).
        for (const p of processTree(pid)) {
          const key = `${p.pid}:${p.startTime}`;
          if (p.exe !== '' || !seen.has(key)) seen.set(key, p);
        }
      };
      sample();
      const sampler = setInterval(sample, 20);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }, opts.timeoutMs ?? 120_000);
      let ended = false;
      const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (ended) return;
        ended = true;
        clearInterval(sampler);
        clearTimeout(timer);
        resolve({ command: [cmd, ...args].join(' '), pid, code, signal, timedOut, stdout, stderr, ms: Date.now() - started, seen: [...seen.values()] });
      };
      child.once('close', finish);
      // A process it left behind may hold the output pipes open: do not wait for them long.
      child.once('exit', (code, signal) => void setTimeout(() => finish(code, signal), 2_000).unref());
    });

  const m4a: World['m4a'] = async (args, opts = {}) => {
    const r = await run(process.execPath, [DIST_MAIN, ...args], { ...opts, timeoutMs: 60_000 });
    if (r.code !== 0) throw new Error(`m4a ${args.join(' ')} failed:\n${describeRun(r)}`);
    return r.stdout;
  };

  return {
    root,
    home,
    bin,
    project,
    dataDir,
    port,
    url: `http://127.0.0.1:${port}`,
    env,
    run,
    m4a,
    async close() {
      const stop = await run(process.execPath, [DIST_MAIN, 'daemon', 'stop'], { timeoutMs: 30_000 }).catch(() => null);
      for (const g of groups) {
        try {
          process.kill(-g, 'SIGKILL');
        } catch {
          /* the group is gone: nothing left running */
        }
      }
      if (stop && stop.code !== 0 && !/not running/.test(stop.stdout + stop.stderr)) process.stderr.write(`daemon stop: ${describeRun(stop)}\n`);
      // Anything still running from this world (a daemon auto-started again by a late bridge, a
      // process that left its group): found by the world's directory in its command line. `daemon
      // stop` returns once the port is closed, so give a stopping daemon a moment to exit.
      for (let i = 0; i < 50 && processesMentioning(root).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
      for (const pid of processesMentioning(root)) {
        process.stderr.write(`world ${root}: killing leftover process ${pid}: ${cmdline(pid)}\n`);
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone meanwhile */
        }
      }
      if (!process.env.M4A_KEEP_AGENT_TMP) rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Lines of a program's output, without ANSI colour codes. */
export const plain = (s: string): string => s.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
