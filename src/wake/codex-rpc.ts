// A small JSON-RPC client for `codex app-server`: JSON lines over a spawned process's stdio
// (listen=spawn), or one text frame per message over WebSocket (ws://127.0.0.1:PORT, or
// unix://PATH as ws+unix). Requests time out; -32001 "overloaded" is retried with a short backoff;
// server-initiated requests go to one handler, which always answers (a result or an error).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';
import { wakeProgramEnv } from '../wire/inherited-env.js';
import { RPC, isRecord, type RequestId, type RpcErrorBody, type RpcMessage } from './codex-protocol.js';
import type { ListenerOwner } from './types.js';

/** A failure answered by the server (a JSON-RPC error object). */
export class RpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    readonly serverMessage: string,
    readonly data?: unknown,
  ) {
    super(`${method}: ${serverMessage} (${code})`);
    this.name = 'RpcError';
  }
}

/** A failure of ours or of the connection: timeout, abort, closed. */
export class RpcTransportError extends Error {
  constructor(
    readonly reason: 'timeout' | 'aborted' | 'closed' | 'connect',
    message: string,
  ) {
    super(message);
    this.name = 'RpcTransportError';
  }
}

export interface Transport {
  /** Where it goes, for details and logs (no secrets). */
  readonly label: string;
  send(text: string): void;
  close(): void;
  onMessage(cb: (text: string) => void): void;
  /** Called once, when the transport is gone (closed by either side or failed). */
  onClose(cb: (why: string) => void): void;
}

export interface ConnectOptions {
  /** for listen=spawn: the command (default ["codex","app-server"]) */
  argv?: string[];
  /** for ws://: a file whose trimmed content is sent as `Authorization: Bearer …` */
  tokenFile?: string;
  /** for spawn (the allow-list picks from it), and to find the default unix socket ($CODEX_HOME) */
  env?: NodeJS.ProcessEnv;
  /** for spawn: names of further variables of `env` the app-server gets (the step's `env`) */
  envNames?: readonly string[];
  cwd?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** for ws://: who listens on the port (another user's listener gets no handshake) */
  listenerOwner?: ListenerOwner;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '[::1]', 'localhost']);

/** Opens the transport a `listen` value names. Rejects with RpcTransportError('connect'). */
export async function openTransport(listen: string, opts: ConnectOptions): Promise<Transport> {
  if (listen === 'spawn') return spawnTransport(opts);
  if (listen.startsWith('ws://')) {
    let url: URL;
    try {
      url = new URL(listen);
    } catch {
      throw new RpcTransportError('connect', `not a URL: ${listen}`);
    }
    if (!LOOPBACK.has(url.hostname)) throw new RpcTransportError('connect', `ws:// listeners must be on loopback, not ${url.hostname}`);
    const owner = opts.listenerOwner?.(url.hostname === 'localhost' ? '127.0.0.1' : url.hostname.replace(/^\[|\]$/g, ''), Number(url.port || 80));
    if (owner?.kind === 'other') throw new RpcTransportError('connect', `port ${url.port || 80} is held by uid ${owner.uid}, another user: nothing was sent`);
    const headers: Record<string, string> = {};
    if (opts.tokenFile !== undefined) {
      let token: string;
      try {
        token = readFileSync(opts.tokenFile, 'utf8').trim();
      } catch (err) {
        throw new RpcTransportError('connect', `cannot read token_file: ${(err as Error).message}`);
      }
      headers.authorization = `Bearer ${token}`;
    }
    return wsTransport(listen, url.toString(), headers, opts);
  }
  if (listen.startsWith('unix://')) {
    const env = opts.env ?? process.env;
    const path = listen.slice('unix://'.length) || join(env.CODEX_HOME || join(homedir(), '.codex'), 'app-server-control', 'app-server-control.sock');
    return wsTransport(listen, `ws+unix://${path}:/`, {}, opts);
  }
  throw new RpcTransportError('connect', `unsupported listen value ${JSON.stringify(listen)}: use spawn, ws://127.0.0.1:PORT or unix://PATH`);
}

function wsTransport(label: string, url: string, headers: Record<string, string>, opts: ConnectOptions): Promise<Transport> {
  return new Promise((resolve, reject) => {
    // No Origin header: the app-server answers 403 to any request that carries one.
    const ws = new WebSocket(url, { headers, handshakeTimeout: opts.timeoutMs, maxPayload: 64 * 1024 * 1024 });
    const onAbort = (): void => {
      ws.terminate();
      reject(new RpcTransportError('aborted', 'aborted while connecting'));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const messageCbs: ((t: string) => void)[] = [];
    const closeCbs: ((why: string) => void)[] = [];
    let closed = false;
    const fireClose = (why: string): void => {
      if (closed) return;
      closed = true;
      for (const cb of closeCbs) cb(why);
    };
    let opened = false;
    ws.on('error', (err) => {
      // Before open: the connection failed. After: 'close' follows and reports it.
      if (opened) return;
      opts.signal?.removeEventListener('abort', onAbort);
      reject(new RpcTransportError('connect', `cannot connect to ${label}: ${err.message}`));
      fireClose(err.message);
    });
    ws.once('unexpected-response', (_req, res) => {
      opts.signal?.removeEventListener('abort', onAbort);
      reject(new RpcTransportError('connect', `cannot connect to ${label}: HTTP ${res.statusCode ?? '?'}`));
      ws.terminate();
    });
    ws.once('open', () => {
      opened = true;
      opts.signal?.removeEventListener('abort', onAbort);
      resolve({
        label,
        send: (text) => ws.send(text),
        close: () => ws.close(),
        onMessage: (cb) => void messageCbs.push(cb),
        onClose: (cb) => void (closed ? cb('closed') : closeCbs.push(cb)),
      });
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8');
      for (const cb of messageCbs) cb(text);
    });
    ws.once('close', (code, reason) => fireClose(`websocket closed (${code}${reason.length ? ` ${reason.toString()}` : ''})`));
  });
}

function spawnTransport(opts: ConnectOptions): Promise<Transport> {
  const argv = opts.argv && opts.argv.length > 0 ? opts.argv : ['codex', 'app-server'];
  const label = `spawn ${argv.join(' ')}`;
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      // One app-server serves every account of the chain: it gets the allow-listed base only, never
      // the credentials of whoever started the daemon.
      const env = wakeProgramEnv(opts.env ?? process.env, opts.envNames);
      child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env, cwd: opts.cwd, detached: false });
    } catch (err) {
      return reject(new RpcTransportError('connect', `cannot start ${argv[0]}: ${(err as Error).message}`));
    }
    const messageCbs: ((t: string) => void)[] = [];
    const closeCbs: ((why: string) => void)[] = [];
    let closed = false;
    let stderrTail = '';
    const fireClose = (why: string): void => {
      if (closed) return;
      closed = true;
      for (const cb of closeCbs) cb(why);
    };
    child.stderr!.on('data', (d: Buffer) => {
      stderrTail = (stderrTail + d.toString('utf8')).slice(-8000);
    });
    child.stdin!.on('error', () => {
      /* the process went away: reported by 'exit' */
    });
    child.once('error', (err) => {
      reject(new RpcTransportError('connect', `cannot start ${argv[0]}: ${err.message}`));
      fireClose(err.message);
    });
    child.once('exit', (code, signal) => {
      // The reason, not the backtrace that follows it.
      const lines = stderrTail.trim().split('\n');
      const last = lines.find((l) => /^error\b/i.test(l.trim())) ?? lines.filter((l) => !/^\s*(\d+:|at )/.test(l)).pop() ?? '';
      fireClose(`app-server exited (${code ?? signal})${last ? `: ${last.slice(0, 300)}` : ''}`);
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.trim() === '') return;
      for (const cb of messageCbs) cb(line);
    });
    child.once('spawn', () =>
      resolve({
        label,
        send: (text) => void child.stdin!.write(`${text}\n`),
        close: () => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.stdin!.end();
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), 2_000);
          t.unref();
          child.once('exit', () => clearTimeout(t));
        },
        onMessage: (cb) => void messageCbs.push(cb),
        onClose: (cb) => void (closed ? cb('closed') : closeCbs.push(cb)),
      }),
    );
  });
}

export type ServerRequestHandler = (method: string, params: unknown, id: RequestId) => { result: unknown } | { error: RpcErrorBody };

export interface RequestOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Retries of -32001 overloaded (default 4: 100, 200, 400, 800 ms). */
  retries?: number;
}

interface Pending {
  method: string;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  cleanup: () => void;
}

export class RpcConnection {
  private nextId = 1;
  private readonly pending = new Map<RequestId, Pending>();
  private readonly notificationCbs: ((method: string, params: unknown) => void)[] = [];
  private readonly closeCbs: ((why: string) => void)[] = [];
  private serverRequestHandler: ServerRequestHandler = (method) => ({ error: { code: RPC.methodNotFound, message: `unsupported server request ${method}` } });
  closedWhy: string | null = null;

  constructor(
    private readonly transport: Transport,
    private readonly defaultTimeoutMs = 10_000,
  ) {
    transport.onMessage((text) => this.receive(text));
    transport.onClose((why) => this.closed(why));
  }

  get label(): string {
    return this.transport.label;
  }

  onNotification(cb: (method: string, params: unknown) => void): void {
    this.notificationCbs.push(cb);
  }
  onClose(cb: (why: string) => void): void {
    if (this.closedWhy !== null) cb(this.closedWhy);
    else this.closeCbs.push(cb);
  }
  onServerRequest(handler: ServerRequestHandler): void {
    this.serverRequestHandler = handler;
  }

  notify(method: string, params?: unknown): void {
    if (this.closedWhy !== null) return;
    this.transport.send(JSON.stringify(params === undefined ? { method } : { method, params }));
  }

  /** One request, with retries of -32001. Rejects with RpcError or RpcTransportError. */
  async request<T>(method: string, params: unknown, opts: RequestOptions = {}): Promise<T> {
    const retries = opts.retries ?? 4;
    for (let attempt = 0; ; attempt++) {
      try {
        return (await this.once(method, params, opts)) as T;
      } catch (err) {
        if (!(err instanceof RpcError) || err.code !== RPC.overloaded || attempt >= retries) throw err;
        await delay(100 * 2 ** attempt, opts.signal);
      }
    }
  }

  close(): void {
    this.transport.close();
    this.closed('closed by client');
  }

  private once(method: string, params: unknown, opts: RequestOptions): Promise<unknown> {
    if (this.closedWhy !== null) return Promise.reject(new RpcTransportError('closed', `${method}: connection closed (${this.closedWhy})`));
    if (opts.signal?.aborted) return Promise.reject(new RpcTransportError('aborted', `${method}: aborted`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timeoutMs = opts.timeoutMs ?? this.defaultTimeoutMs;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        cleanup();
        reject(new RpcTransportError('timeout', `${method}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      const onAbort = (): void => {
        this.pending.delete(id);
        cleanup();
        reject(new RpcTransportError('aborted', `${method}: aborted`));
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, { method, resolve, reject, cleanup });
      this.transport.send(JSON.stringify(params === undefined ? { method, id } : { method, id, params }));
    });
  }

  private receive(text: string): void {
    let msg: RpcMessage;
    try {
      const parsed: unknown = JSON.parse(text);
      if (!isRecord(parsed)) return;
      msg = parsed as unknown as RpcMessage;
    } catch {
      return; // not JSON (a stray log line): ignore
    }
    const hasId = 'id' in msg && (typeof msg.id === 'string' || typeof msg.id === 'number');
    const method = 'method' in msg && typeof msg.method === 'string' ? msg.method : undefined;
    if (method !== undefined && hasId) {
      const id = (msg as { id: RequestId }).id;
      let reply: { result: unknown } | { error: RpcErrorBody };
      try {
        reply = this.serverRequestHandler(method, (msg as { params?: unknown }).params, id);
      } catch (err) {
        reply = { error: { code: RPC.internal, message: (err as Error).message } };
      }
      if (this.closedWhy === null) this.transport.send(JSON.stringify({ id, ...reply }));
      return;
    }
    if (method !== undefined) {
      for (const cb of this.notificationCbs) cb(method, (msg as { params?: unknown }).params);
      return;
    }
    if (!hasId) return;
    const p = this.pending.get((msg as { id: RequestId }).id);
    if (!p) return;
    this.pending.delete((msg as { id: RequestId }).id);
    p.cleanup();
    if ('error' in msg && isRecord(msg.error)) {
      const e = msg.error;
      p.reject(new RpcError(p.method, typeof e.code === 'number' ? e.code : RPC.internal, typeof e.message === 'string' ? e.message : 'error', e.data));
    } else p.resolve('result' in msg ? msg.result : undefined);
  }

  private closed(why: string): void {
    if (this.closedWhy !== null) return;
    this.closedWhy = why;
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      p.cleanup();
      p.reject(new RpcTransportError('closed', `${p.method}: connection closed (${why})`));
    }
    for (const cb of this.closeCbs.splice(0)) cb(why);
  }
}

export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new RpcTransportError('aborted', 'aborted'));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(new RpcTransportError('aborted', 'aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
