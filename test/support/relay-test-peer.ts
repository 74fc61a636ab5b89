// A minimal relay for the connector's tests: TLS on 127.0.0.1 with the test CA's certificate, the
// node path and subprotocol of wire/relay-link.ts, the bearer and node header checked, every frame
// parsed with the protocol's own schemas and recorded. Tests steer it: refuse upgrades with a
// status, stop answering pings (a half-open link), be killed and come back on the same port.
import { createServer, type Server } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { NodeFrame, RELAY_LIMITS, RELAY_NODE_HEADER, RELAY_NODE_PATH, RELAY_SUBPROTOCOL, type RelayFrame } from '../../src/wire/relay-link.js';
import type { TestTls } from './test-tls.js';
import { until } from './until.js';

export interface PeerConn {
  ws: WebSocket;
  headers: IncomingMessage['headers'];
  protocol: string;
  /** Every node frame, parsed; frames the protocol does not name land in `invalid`. */
  frames: NodeFrame[];
  invalid: unknown[];
  pings: number;
  closed: boolean;
  send(f: RelayFrame): void;
}

export interface PeerOptions {
  token: string;
  nodeId: string;
  /** Sent on each hello (null: no welcome, the node waits). */
  welcome?: Record<string, string> | null;
}

export class RelayTestPeer {
  readonly conns: PeerConn[] = [];
  /** Upgrades answered with this status instead (401, 409 …). */
  refuse: number | null = null;
  /** Pings unanswered from now on (the node must find the link half-open). */
  silent = false;
  welcome: Record<string, string> | null;
  /** Upgrade attempts, refused ones included. */
  attempts = 0;
  private server: Server;
  private readonly wss = new WebSocketServer({
    noServer: true,
    autoPong: false,
    maxPayload: RELAY_LIMITS.frameBytes,
    handleProtocols: (p) => (p.has(RELAY_SUBPROTOCOL) ? RELAY_SUBPROTOCOL : false),
  });
  private sockets = new Set<Socket>();
  port = 0;

  private constructor(
    private readonly tls: TestTls,
    private readonly o: PeerOptions,
  ) {
    this.welcome = o.welcome === undefined ? {} : o.welcome;
    this.server = this.makeServer();
  }

  static async start(tls: TestTls, o: PeerOptions): Promise<RelayTestPeer> {
    const p = new RelayTestPeer(tls, o);
    await p.listen(0);
    return p;
  }

  get url(): string {
    return `wss://127.0.0.1:${this.port}`;
  }

  get last(): PeerConn | undefined {
    return this.conns.at(-1);
  }

  /** The open connection, once there is one that said hello. */
  live(): Promise<PeerConn> {
    return until('a node connection with hello', () => {
      const c = this.last;
      return c && !c.closed && c.frames.some((f) => f.t === 'hello') ? c : null;
    });
  }

  /** Sends a call and waits for its answer. */
  async call(c: PeerConn, f: Omit<Extract<RelayFrame, { t: 'call' }>, 't'>): Promise<Extract<NodeFrame, { t: 'answer' }>> {
    c.send({ t: 'call', ...f });
    return until(`the answer to ${f.id}`, () => c.frames.find((x): x is Extract<NodeFrame, { t: 'answer' }> => x.t === 'answer' && x.id === f.id));
  }

  /** The relay dies: every connection cut without a close frame, the port closed. */
  async kill(): Promise<void> {
    for (const c of this.conns) c.ws.terminate();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** Back on the same port. */
  async restart(): Promise<void> {
    this.server = this.makeServer();
    await this.listen(this.port);
  }

  async close(): Promise<void> {
    await this.kill().catch(() => undefined);
    this.wss.close();
  }

  private listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private makeServer(): Server {
    const server = createServer({ cert: readFileSync(this.tls.certFile), key: readFileSync(this.tls.keyFile) }, (_req, res) => {
      res.writeHead(404).end();
    });
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    server.on('tlsClientError', () => undefined);
    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      this.attempts++;
      const refuse = (status: number, code: string): void => {
        const body = JSON.stringify({ error: { code, message: code } });
        socket.end(`HTTP/1.1 ${status} Refused\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      };
      if (new URL(req.url ?? '/', 'https://x').pathname !== RELAY_NODE_PATH) return refuse(404, 'unknown_route');
      if (this.refuse !== null) return refuse(this.refuse, this.refuse === 409 ? 'node_in_use' : 'unauthenticated');
      if (req.headers.authorization !== `Bearer ${this.o.token}` || req.headers[RELAY_NODE_HEADER] !== this.o.nodeId) return refuse(401, 'unauthenticated');
      this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, req));
    });
    return server;
  }

  private accept(ws: WebSocket, req: IncomingMessage): void {
    const c: PeerConn = {
      ws,
      headers: req.headers,
      protocol: ws.protocol,
      frames: [],
      invalid: [],
      pings: 0,
      closed: false,
      send: (f) => ws.send(JSON.stringify(f)),
    };
    this.conns.push(c);
    ws.on('ping', (data) => {
      c.pings++;
      if (!this.silent) ws.pong(data);
    });
    ws.on('message', (data) => {
      const text = Buffer.isBuffer(data) ? data.toString('utf8') : '';
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
      const f = NodeFrame.safeParse(parsed);
      if (!f.success) return void c.invalid.push(parsed);
      c.frames.push(f.data);
      if (f.data.t === 'hello' && this.welcome) c.send({ t: 'welcome', cursors: this.welcome });
    });
    ws.on('close', () => (c.closed = true));
    ws.on('error', () => undefined);
  }
}
