// A stand-in for `codex app-server` (0.171.0) for fast tests of the wake adapter: the same JSON-RPC
// methods, shapes, error texts and thread states as the real one showed on loopback, with no model.
//   - every request before `initialize` gets -32600 "Not initialized"; a second initialize
//     "Already initialized"; an unknown method "Invalid request: unknown variant `…`"
//   - thread/read does not subscribe; thread/resume does (and loads a thread from its "rollout");
//     a thread that never ran a turn has no rollout; one held by another process has an active writer
//   - thread/status/changed goes to every initialized connection; turn/* notifications and
//     server-initiated requests only to the thread's subscribers
//   - turn/start makes a turn inProgress (it stays active until `completeTurn`, unless
//     `autoCompleteMs`); turn/steer needs the running turn's id as expectedTurnId
// In process it listens on WebSocket (loopback TCP or a unix socket); run as a program
// (`node --import tsx fake-codex-app-server.ts`) it speaks JSON lines on stdio, takes its scenario
// from FAKE_CODEX_SCENARIO (JSON: {threads, autoCompleteMs, approvalOnTurn}) and appends what it
// received and answered to FAKE_CODEX_LOG.
import { appendFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { WebSocketServer } from 'ws';

export type FakeThreadState = 'idle' | 'active' | 'notLoaded' | 'noRollout' | 'heldElsewhere' | 'systemError' | 'weird';

export interface FakeThreadSpec {
  id?: string;
  cwd: string;
  state: FakeThreadState;
  /** Seconds; the default orders threads by creation. */
  updatedAt?: number;
  source?: string;
}

interface FakeTurn {
  id: string;
  status: 'inProgress' | 'completed' | 'interrupted' | 'failed';
  inputs: string[];
}

interface FakeThread {
  id: string;
  cwd: string;
  createdAt: number;
  updatedAt: number;
  source: string;
  /** Loaded in this app-server. */
  loaded: boolean;
  rollout: boolean;
  heldElsewhere: boolean;
  status: Record<string, unknown>;
  turns: FakeTurn[];
  subscribers: Set<number>;
}

export interface FakeLogEntry {
  conn: number;
  dir: 'in' | 'out';
  msg: any;
  at: number;
}

export interface FakeOptions {
  /** A started turn completes by itself after this long (default: only by completeTurn). */
  autoCompleteMs?: number;
  /** On each turn/start, send this server request to the thread's subscribers. */
  approvalOnTurn?: string;
}

type Send = (msg: unknown) => void;

let clock = 1_800_000_000;

export class FakeCodexAppServer {
  readonly log: FakeLogEntry[] = [];
  readonly threads = new Map<string, FakeThread>();
  private readonly conns = new Map<number, { send: Send; initialized: boolean; close: () => void }>();
  private nextConn = 1;
  private nextServerRequest = 0;
  private readonly serverRequests = new Map<string, (reply: any) => void>();
  private readonly overloads = new Map<string, number>();
  private readonly stalls = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private http: Server | null = null;
  private wss: WebSocketServer | null = null;

  constructor(readonly opts: FakeOptions = {}) {}

  addThread(spec: FakeThreadSpec): string {
    const id = spec.id ?? randomUUID();
    const t = clock++;
    const loaded = spec.state === 'idle' || spec.state === 'active' || spec.state === 'systemError' || spec.state === 'weird';
    const thread: FakeThread = {
      id,
      cwd: spec.cwd,
      createdAt: t,
      updatedAt: spec.updatedAt ?? t,
      source: spec.source ?? 'vscode',
      loaded,
      rollout: spec.state !== 'noRollout',
      heldElsewhere: spec.state === 'heldElsewhere',
      status: loaded ? { type: 'idle' } : { type: 'notLoaded' },
      turns: [],
      subscribers: new Set(),
    };
    if (spec.state === 'systemError') thread.status = { type: 'systemError' };
    if (spec.state === 'weird') thread.status = { type: 'terminal', reason: 'from a future build' };
    this.threads.set(id, thread);
    if (spec.state === 'active') {
      thread.turns.push({ id: randomUUID(), status: 'inProgress', inputs: ['an earlier prompt'] });
      thread.status = { type: 'active', activeFlags: [] };
    }
    return id;
  }

  activeTurn(threadId: string): string | null {
    const t = this.threads.get(threadId)?.turns.at(-1);
    return t && t.status === 'inProgress' ? t.id : null;
  }

  /** Ends the running turn: status idle (to everyone), turn/completed (to subscribers). */
  completeTurn(threadId: string): void {
    const th = this.threads.get(threadId);
    const turn = th?.turns.at(-1);
    if (!th || !turn || turn.status !== 'inProgress') throw new Error(`no running turn on ${threadId}`);
    turn.status = 'completed';
    th.updatedAt = clock++;
    this.setStatus(th, { type: 'idle' });
    this.toSubscribers(th, { method: 'turn/completed', params: { threadId: th.id, turn: this.turnShape(turn) } });
  }

  /** Sends a server-initiated request to the thread's subscribers; resolves with the first reply. */
  serverRequest(threadId: string, method: string, params: Record<string, unknown>): Promise<any> {
    const th = this.threads.get(threadId)!;
    const id = this.nextServerRequest++;
    return new Promise((resolve) => {
      this.serverRequests.set(String(id), resolve);
      this.toSubscribers(th, { method, id, params: { threadId, ...params } });
    });
  }

  /** The next `times` requests of `method` get -32001 overloaded. */
  overload(method: string, times: number): void {
    this.overloads.set(method, times);
  }
  /** Requests of `method` are never answered. */
  stall(method: string): void {
    this.stalls.add(method);
  }

  /** Requests received (after initialize), as {method, params}, optionally of one method. */
  requests(method?: string): { conn: number; method: string; params: any }[] {
    return this.log
      .filter((e) => e.dir === 'in' && typeof e.msg?.method === 'string' && e.msg.id !== undefined && (method === undefined || e.msg.method === method))
      .map((e) => ({ conn: e.conn, method: e.msg.method, params: e.msg.params }));
  }
  /** Replies the client sent to server-initiated requests. */
  replies(): any[] {
    return this.log.filter((e) => e.dir === 'in' && e.msg?.method === undefined && e.msg?.id !== undefined).map((e) => e.msg);
  }
  connections(): number {
    return this.conns.size;
  }

  /** A new connection; returns the function that takes each message it receives. */
  connect(send: Send, close: () => void = () => {}): { receive: (msg: any) => void; closed: () => void } {
    const conn = this.nextConn++;
    const state = { send: (m: unknown) => (this.record(conn, 'out', m), send(m)), initialized: false, close };
    this.conns.set(conn, state);
    return {
      receive: (msg) => this.receive(conn, msg),
      closed: () => {
        this.conns.delete(conn);
        for (const th of this.threads.values()) th.subscribers.delete(conn);
      },
    };
  }

  /** Listens for WebSocket clients on loopback TCP (port 0) or on a unix socket path. */
  async listen(where: { unix?: string } = {}): Promise<string> {
    this.http = createServer((_req, res) => res.writeHead(404).end());
    this.wss = new WebSocketServer({ server: this.http });
    this.wss.on('connection', (ws, req) => {
      if (req.headers.origin !== undefined) return ws.close(1008, 'origin');
      const c = this.connect(
        (m) => ws.send(JSON.stringify(m)),
        () => ws.terminate(),
      );
      ws.on('message', (data) => {
        try {
          c.receive(JSON.parse((data as Buffer).toString('utf8'))); // ws's default binaryType: one Buffer
        } catch {
          /* not JSON */
        }
      });
      ws.on('close', () => c.closed());
    });
    if (where.unix !== undefined) {
      await new Promise<void>((r) => this.http!.listen(where.unix, r));
      return `unix://${where.unix}`;
    }
    await new Promise<void>((r) => this.http!.listen(0, '127.0.0.1', r));
    return `ws://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
  }

  /** Drops every connection (as a crashed app-server would). */
  dropConnections(): void {
    for (const c of this.conns.values()) c.close();
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.dropConnections();
    this.wss?.close();
    if (this.http) {
      this.http.closeAllConnections();
      await new Promise<void>((r) => this.http!.close(() => r()));
    }
  }

  private record(conn: number, dir: 'in' | 'out', msg: unknown): void {
    this.log.push({ conn, dir, msg, at: Date.now() });
  }

  private setStatus(th: FakeThread, status: Record<string, unknown>): void {
    th.status = status;
    for (const c of this.conns.values()) if (c.initialized) c.send({ method: 'thread/status/changed', params: { threadId: th.id, status } });
  }

  private toSubscribers(th: FakeThread, msg: unknown): void {
    for (const id of th.subscribers) this.conns.get(id)?.send(msg);
  }

  private turnShape(t: FakeTurn): Record<string, unknown> {
    return { id: t.id, rootTurnId: t.id, items: [], itemsView: 'notLoaded', status: t.status, error: null, startedAt: null, completedAt: null, durationMs: null };
  }

  private threadShape(th: FakeThread, status = th.status): Record<string, unknown> {
    return {
      id: th.id,
      sessionId: th.id,
      forkedFromId: null,
      parentThreadId: null,
      preview: th.turns[0]?.inputs[0] ?? '',
      ephemeral: false,
      section: null,
      sectionEnteredAt: null,
      projectId: null,
      historyMode: 'paginated',
      modelProvider: 'fake',
      model: 'gpt-5',
      reasoningEffort: null,
      createdAt: th.createdAt,
      updatedAt: th.updatedAt,
      recencyAt: th.updatedAt,
      status,
      path: th.rollout ? `/fake/sessions/rollout-${th.id}.jsonl` : null,
      cwd: th.cwd,
      cliVersion: '0.171.0',
      originator: 'm4a',
      source: th.source,
      threadSource: null,
      agentNickname: null,
      agentRole: null,
      gitInfo: null,
      name: null,
      turns: [],
    };
  }

  private receive(conn: number, msg: any): void {
    this.record(conn, 'in', msg);
    const c = this.conns.get(conn);
    if (!c || msg === null || typeof msg !== 'object') return;
    if (msg.method === undefined && msg.id !== undefined) {
      const resolve = this.serverRequests.get(String(msg.id));
      this.serverRequests.delete(String(msg.id));
      resolve?.(msg);
      return;
    }
    if (typeof msg.method !== 'string') return;
    if (msg.id === undefined) {
      // Notifications from the client: `initialized` is the only one.
      return;
    }
    const reply = (body: { result: unknown } | { error: { code: number; message: string } }): void => c.send({ id: msg.id, ...body });
    const err = (message: string, code = -32600): void => reply({ error: { code, message } });
    if (this.stalls.has(msg.method)) return;
    const left = this.overloads.get(msg.method) ?? 0;
    if (left > 0) {
      this.overloads.set(msg.method, left - 1);
      return err('Server overloaded; retry later.', -32001);
    }
    if (msg.method === 'initialize') {
      if (c.initialized) return err('Already initialized');
      if (typeof msg.params?.clientInfo?.name !== 'string') return err('Invalid request: missing field `clientInfo`');
      c.initialized = true;
      return reply({ result: { userAgent: `${msg.params.clientInfo.name}/0.171.0 (fake)`, codexHome: '/fake/codex-home', platformFamily: 'unix', platformOs: 'linux' } });
    }
    if (!c.initialized) return err('Not initialized');
    const p = msg.params ?? {};
    const need = (field: string): boolean => {
      if (p[field] !== undefined) return true;
      err(`Invalid request: missing field \`${field}\``);
      return false;
    };
    const validInput = (): boolean => {
      const ok = Array.isArray(p.input) && p.input.every((i: any) => i?.type === 'text' && typeof i.text === 'string' && Array.isArray(i.text_elements));
      if (!ok) err('Invalid request: input must be UserInput[]');
      return ok;
    };
    const th: FakeThread | undefined = typeof p.threadId === 'string' ? this.threads.get(p.threadId) : undefined;
    switch (msg.method) {
      case 'thread/read': {
        if (!need('threadId')) return;
        if (!th || (!th.loaded && !th.rollout)) return err(`thread not loaded: ${p.threadId}`);
        return reply({ result: { thread: this.threadShape(th) } });
      }
      case 'thread/resume': {
        if (!need('threadId')) return;
        if (!th || !th.rollout) return err(`no rollout found for thread id ${p.threadId}`);
        if (th.heldElsewhere) return err(`thread ${th.id} already has an active writer`);
        th.subscribers.add(conn);
        if (!th.loaded) {
          th.loaded = true;
          this.setStatus(th, { type: 'idle' });
        }
        return reply({ result: { thread: this.threadShape(th), model: 'gpt-5', modelProvider: 'fake', cwd: th.cwd, approvalPolicy: 'on-request' } });
      }
      case 'thread/unsubscribe': {
        if (!need('threadId')) return;
        const was = th?.subscribers.delete(conn) ?? false;
        return reply({ result: { status: !th?.loaded ? 'notLoaded' : was ? 'unsubscribed' : 'notSubscribed' } });
      }
      case 'thread/list': {
        const kinds: string[] = Array.isArray(p.sourceKinds) && p.sourceKinds.length > 0 ? p.sourceKinds : ['cli', 'vscode'];
        const cwds: string[] | null = p.cwd === undefined || p.cwd === null ? null : Array.isArray(p.cwd) ? p.cwd : [p.cwd];
        const key = p.sortKey === 'updated_at' ? 'updatedAt' : 'createdAt';
        const dir = p.sortDirection === 'asc' ? 1 : -1;
        const data = [...this.threads.values()]
          .filter((t) => t.rollout && kinds.includes(t.source) && (cwds === null || cwds.includes(t.cwd)))
          .sort((a, b) => dir * (a[key] - b[key]))
          .slice(0, typeof p.limit === 'number' ? p.limit : 25)
          .map((t) => this.threadShape(t, t.loaded ? t.status : { type: 'notLoaded' }));
        return reply({ result: { data, nextCursor: null, backwardsCursor: null } });
      }
      case 'thread/loaded/list':
        return reply({ result: { data: [...this.threads.values()].filter((t) => t.loaded).map((t) => t.id), nextCursor: null } });
      case 'thread/turns/list': {
        if (!need('threadId')) return;
        if (!th || !th.rollout) return err(`thread not loaded: ${p.threadId}`);
        const turns = p.sortDirection === 'asc' ? [...th.turns] : [...th.turns].reverse();
        return reply({ result: { data: turns.slice(0, p.limit ?? 25).map((t) => this.turnShape(t)), nextCursor: null, backwardsCursor: null } });
      }
      case 'turn/start': {
        if (!need('threadId') || !need('input') || !validInput()) return;
        if (!th || !th.loaded) return err(`thread not found: ${p.threadId}`);
        const running = th.turns.at(-1);
        if (running?.status === 'inProgress') {
          // As in 0.171.0: input to a thread with a running turn joins that turn.
          running.inputs.push(...p.input.map((i: any) => i.text));
          return reply({ result: { turn: this.turnShape(running) } });
        }
        const turn: FakeTurn = { id: randomUUID(), status: 'inProgress', inputs: p.input.map((i: any) => i.text) };
        th.turns.push(turn);
        th.rollout = true;
        reply({ result: { turn: this.turnShape(turn) } });
        this.setStatus(th, { type: 'active', activeFlags: [] });
        this.toSubscribers(th, { method: 'turn/started', params: { threadId: th.id, turn: this.turnShape(turn) } });
        if (this.opts.approvalOnTurn !== undefined) {
          void this.serverRequest(th.id, this.opts.approvalOnTurn, { turnId: turn.id, itemId: `call_${turn.id}`, command: 'touch x', cwd: th.cwd, environmentId: 'local' });
        }
        if (this.opts.autoCompleteMs !== undefined) {
          const t = setTimeout(() => {
            this.timers.delete(t);
            if (turn.status === 'inProgress') this.completeTurn(th.id);
          }, this.opts.autoCompleteMs);
          this.timers.add(t);
        }
        return;
      }
      case 'turn/steer': {
        if (!need('threadId') || !need('input') || !need('expectedTurnId') || !validInput()) return;
        const running = th?.turns.at(-1);
        if (!th || !running || running.status !== 'inProgress') return err('no active turn to steer');
        if (running.id !== p.expectedTurnId) return err(`expected active turn id \`${p.expectedTurnId}\` but found \`${running.id}\``);
        running.inputs.push(...p.input.map((i: any) => i.text));
        return reply({ result: { turnId: running.id } });
      }
      default:
        return err(`Invalid request: unknown variant \`${msg.method}\``);
    }
  }
}

/** As a program: JSON lines on stdio, the scenario from FAKE_CODEX_SCENARIO, a log to FAKE_CODEX_LOG. */
async function main(): Promise<void> {
  const scenario = JSON.parse(process.env.FAKE_CODEX_SCENARIO ?? '{}') as { threads?: FakeThreadSpec[] } & FakeOptions;
  const fake = new FakeCodexAppServer(scenario);
  for (const t of scenario.threads ?? []) fake.addThread(t);
  const logFile = process.env.FAKE_CODEX_LOG;
  const write = (dir: string, msg: unknown): void => {
    if (logFile) appendFileSync(logFile, `${JSON.stringify({ dir, msg, pid: process.pid })}\n`);
  };
  const c = fake.connect((m) => {
    write('out', m);
    process.stdout.write(`${JSON.stringify(m)}\n`);
  });
  createInterface({ input: process.stdin }).on('line', (line) => {
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    write('in', msg);
    c.receive(msg);
  });
  process.stdin.on('end', () => process.exit(0));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) void main();
