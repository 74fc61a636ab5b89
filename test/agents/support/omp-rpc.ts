// A real omp (oh-my-pi) session kept running in `--mode rpc`: commands go in as JSON lines on its
// stdin ({"type": "prompt", "message": …}, {"type": "get_state"}), and every event it prints on
// stdout is recorded with the time it arrived. It runs in its own process group, bounded in time;
// ending its stdin ends it cleanly (exit 0), as a user closing it would. Several sessions share one
// HOME (one extension, one credentials file): `modelsFor` writes one scripted provider per session
// into ~/.omp/agent/models.yml, so each process talks to a model server of its own.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { command, programEnv, providerConfig } from './pi-omp.js';
import type { World } from './world.js';

export interface OmpEvent {
  type: string;
  at: number;
  [k: string]: any;
}

/** What `get_state` answers (the fields the tests read). */
export interface OmpState {
  sessionId: string;
  sessionFile?: string;
  isStreaming: boolean;
  queuedMessageCount: number;
  messageCount: number;
}

export interface OmpRpc {
  pid: number;
  child: ChildProcess;
  events: OmpEvent[];
  /** The last 16 KiB of its stderr. */
  stderr(): string;
  /** Sends one command and resolves with its response (matched by id); fails on an error response. */
  request(cmd: Record<string, unknown>, ms?: number): Promise<any>;
  prompt(message: string): Promise<void>;
  state(): Promise<OmpState>;
  /** The first event from index `from` on (already seen or to come) that matches, within `ms`. */
  waitFor(what: string, pred: (e: OmpEvent) => boolean, ms?: number, from?: number): Promise<OmpEvent>;
  /** Ends its stdin and waits for it to exit; kills its group if it does not within `ms`. */
  stop(ms?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL to its process group (safe to call twice). */
  kill(): void;
}

/** ~/.omp/agent/models.yml with one provider per name (`<name>/scripted`), each its own server. */
export function writeModels(home: string, servers: Record<string, string>): void {
  const providers: Record<string, unknown> = {};
  for (const [name, url] of Object.entries(servers)) providers[name] = (providerConfig(url).providers as Record<string, unknown>).fake;
  const dir = join(home, '.omp', 'agent');
  mkdirSync(dir, { recursive: true });
  // JSON is YAML too.
  writeFileSync(join(dir, 'models.yml'), `${JSON.stringify({ providers }, null, 2)}\n`);
}

let ids = 0;

/** Starts `omp --mode rpc --model <model> --no-title …` in `cwd` and resolves once it answers
 *  get_state (its extensions are loaded and its session is open by then). */
export async function startOmpRpc(w: World, o: { cwd: string; model: string; args?: string[]; lifetimeMs?: number }): Promise<OmpRpc> {
  const { cmd, args } = command('omp');
  // --no-title: no extra title request to the model (it would carry the first user text).
  const child = spawn(cmd, [...args, '--mode', 'rpc', '--model', o.model, '--no-title', ...(o.args ?? [])], {
    cwd: o.cwd,
    env: { ...w.env, ...programEnv('omp') },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  if (child.pid === undefined) throw new Error('omp did not start');
  const pid = child.pid;
  const events: OmpEvent[] = [];
  const waiters = new Set<() => void>();
  let err = '';
  let buf = '';
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString('utf8');
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (!line.startsWith('{')) continue;
      try {
        events.push({ ...JSON.parse(line), at: Date.now() });
      } catch {
        continue;
      }
      for (const f of waiters) f();
    }
  });
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString('utf8')).slice(-16_384)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  void exited.then(() => {
    for (const f of waiters) f();
  });
  const kill = (): void => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* the group is gone */
    }
  };
  // Whatever happens to the test, this process does not outlive it.
  const lifetime = setTimeout(kill, o.lifetimeMs ?? 240_000);
  lifetime.unref();
  void exited.then(() => clearTimeout(lifetime));

  const waitFor: OmpRpc['waitFor'] = (what, pred, ms = 30_000, from = 0) =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const e = events.slice(from).find(pred);
        if (e) {
          done();
          resolve(e);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          done();
          reject(new Error(`omp (pid ${pid}) exited (${child.exitCode ?? child.signalCode}) while waiting for ${what}; stderr:\n${err}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new Error(
            `omp (pid ${pid}): no ${what} within ${ms} ms; last events: ${events
              .slice(-5)
              .map((e) => e.type)
              .join(', ')}; stderr:\n${err}`,
          ),
        );
      }, ms);
      const done = (): void => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });

  const request: OmpRpc['request'] = async (c, ms = 30_000) => {
    const id = `t${++ids}`;
    const from = events.length;
    child.stdin.write(`${JSON.stringify({ ...c, id })}\n`);
    const r = await waitFor(`the response to ${String(c.type)}`, (e) => e.type === 'response' && e.id === id, ms, from);
    if (r.success !== true) throw new Error(`omp refused ${JSON.stringify(c)}: ${JSON.stringify(r)}`);
    return r.data;
  };

  const rpc: OmpRpc = {
    pid,
    child,
    events,
    stderr: () => err,
    request,
    prompt: async (message) => void (await request({ type: 'prompt', message })),
    state: () => request({ type: 'get_state' }) as Promise<OmpState>,
    waitFor,
    async stop(ms = 20_000) {
      child.stdin.end();
      const timer = setTimeout(kill, ms);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
    kill,
  };
  try {
    // Cold starts take up to ~8 s (the first run on a machine compiles and caches).
    await rpc.request({ type: 'get_state' }, 60_000);
  } catch (e) {
    kill();
    throw e;
  }
  return rpc;
}
