// A real `codex app-server` listening on a unix socket, and a raw JSON-RPC client of it that plays
// the agent's own front end (the TUI's part): it starts threads and turns and records every
// notification with the time it arrived. It answers no server requests (approvals stay pending).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import WebSocket from 'ws';

/** Whatever a step does, it ends within this (a stuck codex fails the test, it does not hang it). */
export const bounded = <T>(what: string, p: Promise<T>, ms = 20_000): Promise<T> =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms).unref())]);

export interface Seen {
  method: string;
  params: any;
  at: number;
}

export interface OwnerClient {
  request(method: string, params: unknown): Promise<any>;
  /** Notifications seen, with the time each arrived. */
  seen: Seen[];
  /** The first notification seen so far, or to come, that matches (within `ms`, default 20 s). */
  waitFor(what: string, pred: (n: Seen) => boolean, ms?: number): Promise<Seen>;
  close(): void;
}

export interface AppServer {
  child: ChildProcess;
  pid: number;
  sock: string;
  /** The last 8 KiB of its stderr. */
  stderr(): string;
  /** SIGKILL to its process group (it runs as a group leader, so its MCP servers are included). */
  kill(): void;
}

/** `codex app-server --listen unix://<sock>` in its own process group; resolves once the socket exists. */
export async function startAppServer(codex: string, sock: string, o: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<AppServer> {
  const child = spawn(codex, ['app-server', '--listen', `unix://${sock}`], { cwd: o.cwd, env: o.env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString('utf8')).slice(-8192)));
  const pid = child.pid!;
  const server: AppServer = {
    child,
    pid,
    sock,
    stderr: () => err,
    kill() {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    },
  };
  try {
    await bounded(
      'the app-server socket',
      (async () => {
        while (!existsSync(sock)) {
          if (child.exitCode !== null) throw new Error(`codex app-server exited ${child.exitCode}: ${err}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      })(),
      o.timeoutMs ?? 20_000,
    );
  } catch (e) {
    server.kill();
    throw e;
  }
  return server;
}

export async function ownerClient(sock: string, name = 'm4a-test-owner'): Promise<OwnerClient> {
  const ws = new WebSocket(`ws+unix://${sock}:/`);
  await bounded('owner connect', new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject))));
  let id = 0;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  const seen: Seen[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (data) => {
    const m = JSON.parse((data as Buffer).toString('utf8')); // ws's default binaryType: one Buffer
    if (m.method !== undefined && m.id === undefined) {
      seen.push({ method: m.method, params: m.params, at: Date.now() });
      for (const w of waiters.splice(0)) w();
    } else if (m.method === undefined && m.id !== undefined) {
      const p = pending.get(m.id);
      pending.delete(m.id);
      if (m.error) p?.reject(new Error(`${m.error.message} (${m.error.code})`));
      else p?.resolve(m.result);
    }
  });
  const request = (method: string, params: unknown): Promise<any> =>
    bounded(
      method,
      new Promise((resolve, reject) => {
        const i = ++id;
        pending.set(i, { resolve, reject });
        ws.send(JSON.stringify({ method, id: i, params }));
      }),
    );
  await request('initialize', { clientInfo: { name, title: null, version: '0' }, capabilities: { experimentalApi: false, requestAttestation: false } });
  ws.send(JSON.stringify({ method: 'initialized' }));
  const waitFor: OwnerClient['waitFor'] = (what, pred, ms) =>
    bounded(
      what,
      new Promise((resolve) => {
        let from = 0;
        const check = (): void => {
          const hit = seen.slice(from).find(pred);
          from = seen.length;
          if (hit) resolve(hit);
          else waiters.push(check);
        };
        check();
      }),
      ms,
    );
  return { request, seen, waitFor, close: () => ws.close() };
}
