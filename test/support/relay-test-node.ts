// A minimal node for the relay's tests: dials the relay over wss with the real headers and
// subprotocol, says hello, records every frame, and answers calls as the test tells it.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { WebSocket } from 'ws';
import { RELAY_NODE_HEADER, RELAY_NODE_PATH, RELAY_SUBPROTOCOL, RelayFrame, type RelayCallFrame } from '../../src/wire/relay-link.js';
import { until } from './until.js';

export interface DialOptions {
  node: string;
  token: string;
  caFile: string;
  /** false: the socket stops answering pings (a half-open connection, as the relay sees it). */
  autoPong?: boolean;
}

export interface Refusal {
  status: number;
  body: { error: Record<string, unknown> & { code: string } };
}

/** The upgrade's outcome: an open socket, or the relay's refusal (status and JSON body). */
export function dial(origin: string, o: DialOptions): Promise<WebSocket | Refusal> {
  const url = `${origin.replace(/^http/, 'ws')}${RELAY_NODE_PATH}`;
  const ws = new WebSocket(url, RELAY_SUBPROTOCOL, {
    headers: { authorization: `Bearer ${o.token}`, [RELAY_NODE_HEADER]: o.node },
    ca: readFileSync(o.caFile),
    autoPong: o.autoPong ?? true,
  });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Refusal['body'] }));
    });
    ws.once('error', reject);
  });
}

export class TestNode {
  readonly frames: RelayFrame[] = [];
  closed: number | null = null;
  /** Calls not answered yet. */
  readonly pending = new Map<string, RelayCallFrame>();
  /** Answers each call at once when set. */
  auto: ((c: RelayCallFrame) => { status: number; body: unknown } | null) | null = null;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const f = RelayFrame.parse(JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : ''));
      this.frames.push(f);
      if (f.t !== 'call') return;
      const a = this.auto?.(f);
      if (a) this.answer(f.id, a.status, a.body);
      else this.pending.set(f.id, f);
    });
    ws.on('close', (code) => (this.closed = code));
  }

  /** Dials and says hello; resolves once the welcome came. */
  static async connect(origin: string, o: DialOptions & { mailboxes: string[]; hello?: boolean }): Promise<TestNode> {
    const ws = await dial(origin, o);
    if (!(ws instanceof WebSocket)) throw new Error(`refused: ${ws.status} ${JSON.stringify(ws.body)}`);
    const n = new TestNode(ws);
    if (o.hello === false) return n;
    n.send({ t: 'hello', node: o.node, mailboxes: o.mailboxes, version: 'test' });
    await n.next('welcome');
    return n;
  }

  send(f: unknown): void {
    this.ws.send(JSON.stringify(f));
  }

  calls(): RelayCallFrame[] {
    return this.frames.filter((f): f is RelayCallFrame => f.t === 'call');
  }

  /** The first frame of this type (waits for it). */
  next<T extends RelayFrame['t']>(t: T, after = 0): Promise<Extract<RelayFrame, { t: T }>> {
    return until(`a ${t} frame`, () => this.frames.slice(after).find((f): f is Extract<RelayFrame, { t: T }> => f.t === t));
  }

  answer(id: string, status: number, body: unknown): void {
    this.pending.delete(id);
    this.send({ t: 'answer', id, status, body });
  }

  mail(mailbox: string, cursor: string): void {
    this.send({ t: 'mail', mailbox, cursor });
  }

  async close(): Promise<void> {
    if (this.closed !== null) return;
    this.ws.close();
    await until('the node socket closed', () => this.closed !== null);
  }
}

export interface BrowserAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown> & { error?: Record<string, unknown> & { code: string } };
}

/** A browser's API calls over node:https: its Origin, cookie and CSRF header, each overridable. */
export class TestBrowser {
  cookie: string | null = null;
  csrf: string | null = null;

  constructor(
    readonly origin: string,
    readonly caFile: string,
  ) {}

  post(name: string, body: unknown, o: { origin?: string | null; csrf?: string | null; cookie?: string | null; type?: string; signal?: AbortSignal } = {}): Promise<BrowserAnswer> {
    const text = JSON.stringify(body);
    const headers: Record<string, string> = { 'content-type': o.type ?? 'application/json', 'content-length': String(Buffer.byteLength(text)) };
    const origin = o.origin === undefined ? this.origin : o.origin;
    if (origin !== null) headers.origin = origin;
    const csrf = o.csrf === undefined ? this.csrf : o.csrf;
    if (csrf !== null) headers['x-m4a-csrf'] = csrf;
    const cookie = o.cookie === undefined ? this.cookie : o.cookie;
    if (cookie !== null) headers.cookie = cookie;
    return new Promise((resolve, reject) => {
      const req = https.request(
        `${this.origin}/web/api/${name}`,
        { method: 'POST', headers, ca: readFileSync(this.caFile), agent: false, ...(o.signal ? { signal: o.signal } : {}) },
        (res) => {
          let s = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (s += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: s ? (JSON.parse(s) as BrowserAnswer['body']) : {} }));
        },
      );
      req.on('error', reject);
      req.end(text);
    });
  }

  async login(user: string, password: string): Promise<BrowserAnswer> {
    const r = await this.post('login', { account: user, password }, { csrf: null, cookie: null });
    if (r.status === 200) {
      const set = ([] as string[]).concat(r.headers['set-cookie'] ?? []);
      this.cookie = set[0]!.split(';')[0]!;
      this.csrf = r.body.csrf as string;
    }
    return r;
  }
}
