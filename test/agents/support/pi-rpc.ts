// A long-running pi in RPC mode (`pi --mode rpc`), as an editor or a front end drives it: commands
// as JSON lines on stdin ({"type":"prompt","message":…}, get_state), its events as JSON lines on
// stdout, every one recorded with its arrival time. The process runs in its own process group,
// killed when the test ends if it has not exited by then. Lines are split on "\n" only (pi's RPC
// framing: U+2028 inside a JSON string is not a line break, so no readline).
import { spawn } from 'node:child_process';
import { command, programEnv, SCRIPTED_MODEL } from './pi-omp.js';
import type { World } from './world.js';

export interface PiEvent {
  at: number;
  ev: any;
}

export interface PiRpc {
  pid: number;
  events: PiEvent[];
  stderr(): string;
  /** Settles when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends a command and resolves with its response (fails on success: false). */
  request(cmd: Record<string, unknown>, ms?: number): Promise<any>;
  /** A user prompt, as typed; resolves once pi accepted it (the turn runs on). */
  prompt(message: string): Promise<void>;
  /** The data of get_state (sessionId, sessionFile, isStreaming, pendingMessageCount…). */
  state(): Promise<any>;
  /** The first event from index `from` on that matches, waiting up to `ms`. */
  waitFor(what: string, match: (ev: any) => boolean, ms?: number, from?: number): Promise<PiEvent>;
  /** Closes stdin (pi then exits) and waits for the exit; kills the group if it does not. */
  stop(ms?: number): Promise<void>;
  kill(): void;
}

const DEFAULT_MS = 30_000;

export function startPiRpc(w: World, opts: { cwd: string; args?: string[]; env?: NodeJS.ProcessEnv }): PiRpc {
  const { cmd, args } = command('pi');
  const child = spawn(cmd, [...args, '--model', SCRIPTED_MODEL, '--mode', 'rpc', ...(opts.args ?? [])], {
    cwd: opts.cwd,
    env: { ...w.env, ...programEnv('pi'), ...opts.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  if (child.pid === undefined) throw new Error('pi did not start');
  const pid = child.pid;
  const events: PiEvent[] = [];
  const waiters = new Set<() => void>();
  let err = '';
  let partial = '';
  let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
  child.stdout.on('data', (d: Buffer) => {
    const lines = (partial + d.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const raw of lines) {
      const line = raw.replace(/\r$/, '');
      if (!line) continue;
      let ev: unknown;
      try {
        ev = JSON.parse(line);
      } catch {
        ev = { type: 'unparsed', line };
      }
      events.push({ at: Date.now(), ev });
    }
    for (const wake of waiters) wake();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      for (const wake of waiters) wake();
      resolve(exit);
    }),
  );
  child.stdin.on('error', () => {}); // pi gone: the waits below report it
  const kill = (): void => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* the group is gone */
    }
  };
  const tail = (): string =>
    `pi ${pid}${exit ? ` exited ${exit.code ?? exit.signal}` : ''}; last events:\n  ${events
      .slice(-8)
      .map((e) => JSON.stringify(e.ev).slice(0, 300))
      .join('\n  ')}\n  stderr: ${err.slice(-1500)}`;

  const waitFor: PiRpc['waitFor'] = (what, match, ms = DEFAULT_MS, from = 0) =>
    new Promise((resolve, reject) => {
      let i = from;
      const check = (): void => {
        for (; i < events.length; i++) {
          if (match(events[i]!.ev)) return done(null, events[i]);
        }
        if (exit) done(new Error(`pi exited while waiting for ${what}: ${tail()}`));
      };
      const timer = setTimeout(() => done(new Error(`timed out after ${ms} ms waiting for ${what}: ${tail()}`)), ms);
      const done = (e: Error | null, v?: PiEvent): void => {
        clearTimeout(timer);
        waiters.delete(check);
        if (e) reject(e);
        else resolve(v!);
      };
      waiters.add(check);
      check();
    });

  let seq = 0;
  const request: PiRpc['request'] = async (c, ms = DEFAULT_MS) => {
    const id = `t${++seq}`;
    const from = events.length;
    child.stdin.write(`${JSON.stringify({ ...c, id })}\n`);
    const { ev } = await waitFor(`the response to ${String(c.type)}`, (e) => e?.type === 'response' && e.id === id, ms, from);
    if (ev.success !== true) throw new Error(`pi refused ${JSON.stringify(c)}: ${JSON.stringify(ev)}`);
    return ev;
  };

  return {
    pid,
    events,
    stderr: () => err,
    exited,
    request,
    async prompt(message) {
      await request({ type: 'prompt', message });
    },
    async state() {
      return (await request({ type: 'get_state' })).data;
    },
    waitFor,
    async stop(ms = 10_000) {
      child.stdin.end();
      const t = setTimeout(kill, ms);
      await exited;
      clearTimeout(t);
    },
    kill,
  };
}
