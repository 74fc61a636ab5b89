// The nodes' sockets: a daemon dials RELAY_NODE_PATH with its node id and token, says hello (its
// mailboxes), and then answers the calls the relay forwards and reports new mail, which the relay
// acknowledges at once and uses to wake the browsers' parked live reads (relay-web.ts). In memory
// per node: one live socket, ≤ RELAY_LIMITS.callsInFlight calls, the last acknowledged cursor per
// mailbox (gone after a restart, so a node catches up from its own cursors).
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { MailError } from '../wire/errors.js';
import { NodeFrame, RELAY_LIMITS, RELAY_NODE_HEADER, RELAY_NODE_PATH, RELAY_SUBPROTOCOL, RelayNodeId, type RelayFrame } from '../wire/relay-link.js';
import type { Logger } from '../engine/log.js';
import type { RelayState } from './relay-store.js';
import { AddressThrottle, RELAY_GUARD, type RelayGuardLimits } from './relay-guard.js';

export interface NodeHubOptions {
  state: RelayState;
  log: Logger;
  /** How long a live socket has to answer a ping before a newcomer for its node replaces it. */
  takeoverPingMs?: number;
  helloMs?: number;
  heartbeatMs?: number;
  /** A call unanswered this long fails (RELAY_LIMITS.callTimeoutMs; shorter in tests). */
  callTimeoutMs?: number;
  limits?: RelayGuardLimits;
}

export interface CallAnswer {
  status: number;
  body: unknown;
}

interface Pending {
  resolve(a: CallAnswer): void;
  reject(e: MailError): void;
  timer: NodeJS.Timeout;
}

/** One node's live, greeted connection. */
export class NodeLink {
  readonly calls = new Map<string, Pending>();
  mailboxes: readonly string[] = [];
  greeted = false;
  missed = 0;
  /** Frames received in the current second (RELAY_GUARD.nodeFramesPerSecond). */
  frames = 0;
  framesSince = 0;

  constructor(
    readonly node: string,
    readonly ws: WebSocket,
    readonly tokenDigest: string,
    private readonly callTimeoutMs: number = RELAY_LIMITS.callTimeoutMs,
  ) {}

  send(f: RelayFrame): void {
    this.ws.send(JSON.stringify(f));
  }

  /** Forwards a call; the answer, or relay_unavailable when the node is gone or silent too long. */
  call(frame: { mailbox: string; name: string; body: unknown; delegate?: string }, signal: AbortSignal): Promise<CallAnswer> {
    if (this.calls.size >= RELAY_LIMITS.callsInFlight)
      return Promise.reject(new MailError('rate_limited', `the node has ${RELAY_LIMITS.callsInFlight} calls in flight`, { retry_after: 1, limit: RELAY_LIMITS.callsInFlight }));
    const id = randomBytes(12).toString('base64url');
    return new Promise<CallAnswer>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(this.calls.get(id)?.timer);
        this.calls.delete(id);
        signal.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        done();
        if (this.ws.readyState === this.ws.OPEN) this.send({ t: 'cancel', id });
        reject(new MailError('relay_unavailable', 'the browser went away', { node: this.node }));
      };
      const timer = setTimeout(() => {
        done();
        if (this.ws.readyState === this.ws.OPEN) this.send({ t: 'cancel', id });
        reject(new MailError('relay_unavailable', `the node did not answer in ${this.callTimeoutMs / 1000} s`, { node: this.node }));
      }, this.callTimeoutMs);
      this.calls.set(id, {
        resolve: (a) => (done(), resolve(a)),
        reject: (e) => (done(), reject(e)),
        timer,
      });
      signal.addEventListener('abort', onAbort, { once: true });
      this.send({ t: 'call', id, mailbox: frame.mailbox, name: frame.name, body: frame.body, ...(frame.delegate !== undefined ? { delegate: frame.delegate } : {}) });
    });
  }

  failAll(): void {
    for (const p of [...this.calls.values()]) p.reject(new MailError('relay_unavailable', 'the node disconnected', { node: this.node }));
  }
}

/** Answers an upgrade request that is refused, with a JSON error body, and closes it. */
function refuse(socket: Duplex, status: number, e: MailError, extra = ''): void {
  const body = JSON.stringify(e.toBody());
  const reason = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 429: 'Too Many Requests' }[status] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncache-control: no-store\r\nconnection: close\r\n${extra}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

type Waker = () => void;

export class NodeHub {
  private links = new Map<string, NodeLink>();
  /** Node ids whose takeover check runs: a third dialer meanwhile is refused. */
  private checking = new Set<string>();
  /** Per node, the cursor last acknowledged per mailbox (in memory only). */
  private acked = new Map<string, Map<string, string>>();
  /** Parked live reads: per node, per mailbox ('' = any: a reconnect wakes them all). */
  private parked = new Map<string, Set<{ mailbox: string; wake: Waker }>>();
  /** Bumped on each mail frame per node+mailbox, so a read that raced a mail frame re-asks. */
  private generations = new Map<string, number>();
  private wss: WebSocketServer;
  private timer: NodeJS.Timeout;
  private readonly o: Required<NodeHubOptions>;
  /** Upgrade attempts not accepted, per address: past the bound refused 429 before any store
   *  lookup or log line. */
  private readonly failures: AddressThrottle;

  constructor(o: NodeHubOptions) {
    this.o = { takeoverPingMs: 5000, helloMs: 10_000, heartbeatMs: RELAY_LIMITS.heartbeatMs, callTimeoutMs: RELAY_LIMITS.callTimeoutMs, limits: RELAY_GUARD, ...o };
    this.failures = new AddressThrottle(this.o.limits.nodeFailures, this.o.limits.nodeFailureWindowMs);
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: RELAY_LIMITS.frameBytes,
      handleProtocols: (protocols) => (protocols.has(RELAY_SUBPROTOCOL) ? RELAY_SUBPROTOCOL : false),
    });
    this.timer = setInterval(() => void this.heartbeat(), this.o.heartbeatMs);
    this.timer.unref();
  }

  /** The greeted connection of a node, if any. */
  link(node: string): NodeLink | undefined {
    const l = this.links.get(node);
    return l?.greeted ? l : undefined;
  }

  generation(node: string, mailbox: string): number {
    return this.generations.get(`${node}\n${mailbox}`) ?? 0;
  }

  parkedCount(node: string): number {
    return this.parked.get(node)?.size ?? 0;
  }

  /** Parks until a mail frame for node+mailbox or the node's reconnect; returns the unpark. */
  park(node: string, mailbox: string, wake: Waker): () => void {
    let set = this.parked.get(node);
    if (!set) this.parked.set(node, (set = new Set()));
    const entry = { mailbox, wake };
    set.add(entry);
    return () => {
      set.delete(entry);
      if (set.size === 0 && this.parked.get(node) === set) this.parked.delete(node);
    };
  }

  private wake(node: string, mailbox: string | null): void {
    for (const p of [...(this.parked.get(node) ?? [])]) if (mailbox === null || p.mailbox === mailbox) p.wake();
  }

  /** `accepted` runs once the token verified and the socket became the node's. */
  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, accepted: () => void = () => undefined): Promise<void> {
    const log = this.o.log;
    const peer = req.socket.remoteAddress;
    const address = peer ?? '?';
    const wait = this.failures.retryAfter(address);
    if (wait > 0) {
      const e = new MailError('rate_limited', `too many failed node connections from this address: retry in ${wait} s`, { retry_after: wait, limit: this.o.limits.nodeFailures });
      return refuse(socket, 429, e, `retry-after: ${wait}\r\n`);
    }
    // Counted before the store lookup, so attempts racing in parallel are bounded too; a node
    // that gets in is forgiven its attempt.
    this.failures.count(address);
    const refused = (status: number, e: MailError): void => refuse(socket, status, e);
    if (new URL(req.url ?? '/', 'http://x').pathname !== RELAY_NODE_PATH) return refused(404, new MailError('unknown_route', 'no WebSocket here'));
    // A browser always sends Origin on a WebSocket; a node never does.
    if (req.headers.origin !== undefined) return refused(403, new MailError('forbidden_origin', 'browsers do not dial the node socket', { field: 'origin' }));
    const protocols = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((s) => s.trim());
    if (!protocols.includes(RELAY_SUBPROTOCOL))
      return refused(400, new MailError('malformed', `the subprotocol must be ${RELAY_SUBPROTOCOL}`, { field: 'sec-websocket-protocol' }));
    const header = req.headers[RELAY_NODE_HEADER];
    const auth = /^Bearer ([A-Za-z0-9_-]{1,128})$/.exec(req.headers.authorization ?? '')?.[1];
    const parsed = RelayNodeId.safeParse(header);
    const rec = parsed.success && auth ? await this.o.state.verifyNode(parsed.data, auth).catch(() => null) : null;
    if (!parsed.success || !rec) {
      log.warn({ code: 'relay_node_refused', node: typeof header === 'string' ? header.slice(0, 64) : null, peer }, 'node refused: unknown node or wrong token');
      return refused(401, new MailError('unauthenticated', 'unknown node or wrong token'));
    }
    const node = parsed.data;
    // One dialer per node at a time, from here until its socket is accepted (handleUpgrade calls
    // back synchronously): two racing dialers cannot both become the node's link.
    if (this.checking.has(node)) return this.inUse(socket, node, peer);
    this.checking.add(node);
    try {
      const old = this.links.get(node);
      if (old) {
        const alive = await this.answersPing(old.ws);
        if (alive && this.links.get(node) === old) return this.inUse(socket, node, peer);
        log.warn({ code: 'relay_node_replaced', node, peer }, 'the old connection did not answer a ping: replaced');
        old.ws.terminate();
        this.drop(old);
      }
      if (socket.destroyed) return;
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        this.failures.forgive(address);
        accepted();
        this.accept(node, ws, rec.token_digest, peer);
      });
    } finally {
      this.checking.delete(node);
    }
  }

  private inUse(socket: Duplex, node: string, peer: string | undefined): void {
    this.o.log.warn({ code: 'node_in_use', node, peer }, 'a second connection for a node whose connection is live: refused');
    refuse(socket, 409, new MailError('node_in_use', `node ${node} is connected`, { node }));
  }

  private answersPing(ws: WebSocket): Promise<boolean> {
    if (ws.readyState !== ws.OPEN) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onPong = (): void => finish(true);
      const finish = (v: boolean): void => {
        clearTimeout(t);
        ws.off('pong', onPong);
        ws.off('close', onClose);
        resolve(v);
      };
      const onClose = (): void => finish(false);
      const t = setTimeout(() => finish(false), this.o.takeoverPingMs);
      ws.on('pong', onPong);
      ws.on('close', onClose);
      ws.ping();
    });
  }

  private accept(node: string, ws: WebSocket, tokenDigest: string, peer: string | undefined): void {
    const log = this.o.log;
    const link = new NodeLink(node, ws, tokenDigest, this.o.callTimeoutMs);
    this.links.set(node, link);
    log.info({ code: 'relay_node_connected', node, peer }, 'node connected');
    const hello = setTimeout(() => {
      log.warn({ code: 'relay_no_hello', node }, `no hello within ${this.o.helloMs / 1000} s`);
      ws.close(1008, 'no hello');
    }, this.o.helloMs);
    // A node closed for what it sent: the close frame, then the socket itself a second later, so
    // a peer that never answers the close cannot hold it (ws waits 30 s) sending on meanwhile.
    const closeHard = (reason: string): void => {
      ws.close(1008, reason);
      setTimeout(() => ws.terminate(), 1_000).unref();
    };
    // Every frame counts, pings and pongs too (each ping costs a pong back).
    const flooded = (): boolean => {
      const now = Date.now();
      if (now - link.framesSince >= 1000) [link.frames, link.framesSince] = [0, now];
      if (++link.frames <= this.o.limits.nodeFramesPerSecond) return false;
      if (link.frames === this.o.limits.nodeFramesPerSecond + 1) {
        log.warn({ code: 'relay_node_flood', node, limit: this.o.limits.nodeFramesPerSecond }, 'the node sent frames too fast: closed');
        closeHard('too many frames');
      }
      return true;
    };
    ws.on('ping', flooded);
    ws.on('pong', () => void (flooded() || (link.missed = 0)));
    ws.on('message', (data: RawData, binary: boolean) => {
      const invalid = (reason: string): void => {
        log.warn({ code: 'relay_frame_invalid', node, reason }, 'invalid frame from node: closed');
        closeHard('invalid frame');
      };
      // Frames after our close are not acted on (no answer, no mail, no cursor moved).
      if (ws.readyState !== ws.OPEN) return;
      if (flooded()) return;
      let f: NodeFrame;
      try {
        if (binary) return invalid('binary frame');
        const r = NodeFrame.safeParse(
          JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data instanceof ArrayBuffer ? [Buffer.from(data)] : data).toString('utf8')),
        );
        if (!r.success) return invalid(r.error.issues[0]?.message ?? 'schema');
        f = r.data;
      } catch {
        return invalid('not JSON');
      }
      if (f.t === 'hello') {
        if (link.greeted) return invalid('second hello');
        if (f.node !== node) return invalid('hello names another node');
        clearTimeout(hello);
        link.mailboxes = f.mailboxes;
        link.greeted = true;
        const cursors: Record<string, string> = Object.fromEntries(this.acked.get(node) ?? new Map<string, string>());
        link.send({ t: 'welcome', cursors });
        log.info({ code: 'relay_node_hello', node, mailboxes: f.mailboxes.length, version: f.version }, 'node greeted');
        this.wake(node, null);
        return;
      }
      if (!link.greeted) return invalid(`${f.t} before hello`);
      if (f.t === 'answer') return void link.calls.get(f.id)?.resolve({ status: f.status, body: f.body });
      // mail: acknowledge at once (the node sends the next only then), remember, wake the readers.
      if (!link.mailboxes.includes(f.mailbox)) return invalid('mail for a mailbox the node did not offer');
      link.send({ t: 'ack', mailbox: f.mailbox, cursor: f.cursor });
      let m = this.acked.get(node);
      if (!m) this.acked.set(node, (m = new Map<string, string>()));
      m.set(f.mailbox, f.cursor);
      const key = `${node}\n${f.mailbox}`;
      this.generations.set(key, (this.generations.get(key) ?? 0) + 1);
      this.wake(node, f.mailbox);
    });
    ws.on('close', (code) => {
      clearTimeout(hello);
      this.drop(link);
      log.info({ code: 'relay_node_disconnected', node, ws_code: code }, 'node disconnected');
    });
    ws.on('error', (err) => log.warn({ code: 'relay_node_socket_error', node, err: err.message }, 'node socket error'));
  }

  private drop(link: NodeLink): void {
    if (this.links.get(link.node) === link) this.links.delete(link.node);
    link.failAll();
  }

  /** Pings every node, drops one that missed two, and one whose record went (or got a new token). */
  private async heartbeat(): Promise<void> {
    for (const link of [...this.links.values()]) {
      if (link.missed >= 2) {
        this.o.log.warn({ code: 'relay_node_silent', node: link.node }, 'two pings unanswered: dropped');
        link.ws.terminate();
        this.drop(link);
        continue;
      }
      link.missed++;
      if (link.ws.readyState === link.ws.OPEN) link.ws.ping();
      const rec = await this.o.state.node(link.node).catch(() => undefined);
      if (rec === null || (rec && rec.token_digest !== link.tokenDigest)) {
        this.o.log.warn({ code: 'relay_node_removed', node: link.node }, 'the node was removed: dropped');
        link.ws.close(1008, 'node removed');
        link.ws.terminate();
        this.drop(link);
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    for (const link of [...this.links.values()]) {
      link.ws.terminate();
      this.drop(link);
    }
    for (const set of this.parked.values()) for (const p of [...set]) p.wake();
    await new Promise<void>((r) => this.wss.close(() => r()));
  }
}
