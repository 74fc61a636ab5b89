// The HTTP door: a thin Request → engine → Response layer. Routes come from the operation table.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { MailError } from '../../wire/errors.js';
import type { MailEngine } from '../../engine/mail-engine.js';
import type { AdminOps } from '../../engine/admin-ops.js';
import type { Attestor } from '../../attest/types.js';
import type { Logger } from '../../engine/log.js';
import type { WakeChains } from '../../engine/wake-chains.js';
import { OPERATIONS, type OperationSpec } from '../../wire/operations.js';
import { OPERATION_BY_PATH, callOperation, errorCode, type Door, type OpContext } from '../handlers.js';
import { McpHandler } from '../mcp/mcp-handler.js';
import { readJsonBody } from './body.js';
import { CallerResolver } from './caller-resolver.js';
import { ConnectionGate, DEFAULT_GATE, type GateOptions } from './connection-gate.js';
import { listenOn } from './listen.js';
import type { ConnectionBudget } from '../connection-budget.js';
import { OriginGuard } from './origin-guard.js';
import { clientGoneSignal, isClientGone, sendError, sendJson } from './respond.js';
import { WebDoor } from '../web/web-door.js';
import { A2aDoor } from '../a2a/a2a-door.js';
import type { PushConfigs } from '../a2a/a2a-push.js';
import type { Observer } from '../../engine/observer.js';
import { requestIdOf, withRequestId } from '../../engine/request-id.js';
import type { RelayLink } from '../relay-link/relay-link.js';

export interface HttpDoorOptions {
  engine: MailEngine;
  admin: AdminOps;
  /** Delivery chains (`m4a wake …`): served to peers on this machine only. */
  wake?: WakeChains;
  attestor: Attestor;
  log: Logger;
  version: string;
  /** The browser mailbox at / and /web/* (absent: those paths are unknown routes). */
  web?: WebDoor;
  /** A2A push-notification configs (absent: the A2A door sends none). */
  a2aPush?: PushConfigs;
  /** Asked to stop by the operator: at once, or once no request is in flight and no wait is parked. */
  onStopRequest?: (when: 'now' | 'idle') => void;
  /** Bounds on connections whose credential has not verified yet (connection-gate.ts). */
  gate?: GateOptions;
  /** How long a connection may take to send a request's headers (default 5 s). */
  headersTimeoutMs?: number;
  /** Connections beyond the daemon's budget, shared with its other listeners, are closed at once
   *  (below the process's open-file limit, so the store still gets descriptors). */
  budget?: ConnectionBudget;
  /** Told of every operation's outcome, refusals before the operation ran included. */
  observer?: Observer;
  /** `GET /metrics` (loopback, operator credential): the exposition text. Absent: no such route. */
  metrics?: () => Promise<{ contentType: string; body: string }>;
  /** The relay link's settings (`/admin/connect/*`, this machine only). */
  relayLink?: RelayLink;
}

export class HttpDoor {
  readonly server: Server;
  readonly guard = new OriginGuard();
  readonly gate: ConnectionGate;
  private callers: CallerResolver;
  private mcp: McpHandler;
  private a2a: A2aDoor;
  private inFlight = 0;

  constructor(private o: HttpDoorOptions) {
    this.gate = new ConnectionGate(o.gate ?? DEFAULT_GATE);
    this.callers = new CallerResolver(o.engine, o.attestor, (s) => this.gate.prove(s));
    this.mcp = new McpHandler((signal) => this.context(signal, [], 'mcp'), o.version, o.log);
    this.a2a = new A2aDoor({ engine: o.engine, log: o.log, version: o.version, caller: (req) => this.callers.mail(req), ...(o.a2aPush ? { push: o.a2aPush } : {}) });
    // Waits last up to 60 s; requests must be allowed to outlive them. Headers must come quickly
    // (node checks the deadlines every connectionsCheckingInterval, so that is short too).
    const headersTimeout = o.headersTimeoutMs ?? 5_000;
    this.server = createServer({ requestTimeout: 120_000, headersTimeout, keepAliveTimeout: 65_000, connectionsCheckingInterval: Math.min(1_000, headersTimeout) }, (req, res) =>
      this.handle(req, res),
    );
    this.gate.attach(this.server);
    o.budget?.attach(this.server);
  }

  get busy(): number {
    return this.inFlight;
  }

  /** Not an async function, and route() returns its operation's promise: a request parked for a
   *  minute then holds no suspended frame of the door's, only the operation's own. */
  private handle(req: IncomingMessage, res: ServerResponse): void {
    this.inFlight++;
    // Every line logged while this request is served carries its id (request-id.ts); so does the answer.
    const id = requestIdOf(req.headers['x-request-id']);
    res.setHeader('x-request-id', id);
    withRequestId(id, () => this.served(req, res));
  }

  private served(req: IncomingMessage, res: ServerResponse): void {
    this.route(req, res).then(
      () => this.inFlight--,
      (err: unknown) => {
        this.inFlight--;
        // A client that went away mid-body is not a failure of ours: a debug line, no stack.
        if (isClientGone(err, req)) this.o.log.debug({ path: req.url, code: (err as NodeJS.ErrnoException).code ?? 'aborted' }, 'client closed the connection mid-request');
        else sendError(res, err, this.o.log);
      },
    );
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.guard.check(req.headers.host, req.headers.origin);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (this.o.web && WebDoor.owns(path)) return this.o.web.handle(req, res, path);
    if (A2aDoor.owns(path)) return this.a2a.handle(req, res, path);
    if (path === '/health') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return sendJson(res, 405, new MailError('method_not_allowed', 'use GET /health').toBody(), { allow: 'GET, HEAD' });
      return sendJson(res, 200, {
        ok: true,
        name: 'mail4agent',
        version: this.o.version,
        attestation: this.o.attestor.supported,
        store: this.o.engine.store.kind,
        pid: process.pid,
      });
    }
    if (path === '/metrics' && this.o.metrics) return this.metrics(req, res);
    if (path === '/mcp') {
      if (req.method !== 'POST') return sendJson(res, 405, new MailError('method_not_allowed', 'POST JSON-RPC to /mcp; this server offers no stream').toBody(), { allow: 'POST' });
      const caller = await this.callers.mail(req);
      const ans = await this.mcp.handle(caller, await readJsonBody(req), clientGoneSignal(res));
      if (ans.status === 202) {
        res.writeHead(202, { 'content-length': '0' });
        res.end();
        return;
      }
      return sendJson(res, ans.status, ans.body);
    }
    const name = OPERATION_BY_PATH.get(path);
    const spec: OperationSpec | undefined = name ? OPERATIONS[name] : undefined;
    // A daemon without delivery chains has no wake routes at all.
    if (!name || !spec || (name.startsWith('wake.') && !this.o.wake)) throw new MailError('unknown_route', `no route ${path}`);
    if (req.method !== 'POST') return sendJson(res, 405, new MailError('method_not_allowed', `use POST ${path}`).toBody(), { allow: 'POST' });
    if (spec.callers.includes('local') && !isLoopbackPeer(req.socket.remoteAddress)) {
      const why = name.startsWith('wake.') ? 'wake chains run programs: they are set from this machine only' : `${path} is served to this machine only`;
      throw new MailError('permission_denied', why, { need: 'local' });
    }
    const caller = await (spec.callers.includes('agent') ? this.callers.mail(req) : this.callers.admin(req)).catch((err: unknown) => this.refusedBefore(name, err));
    const after: (() => void)[] = [];
    return callOperation(name, this.context(clientGoneSignal(res), after), caller, await readJsonBody(req)).then((out) => {
      sendJson(res, 200, out);
      for (const fn of after) fn();
    });
  }

  /** The context operations run in over HTTP (and MCP, with door 'mcp'). */
  private context(signal: AbortSignal, after: (() => void)[] = [], door: Door = 'http'): OpContext {
    const o = this.o;
    return {
      engine: o.engine,
      admin: o.admin,
      wake: o.wake,
      door,
      signal,
      afterAnswer: (fn) => after.push(fn),
      onStopRequest: o.onStopRequest,
      observer: o.observer,
      relayLink: o.relayLink,
    };
  }

  /** A caller refused before its operation ran (no credential, a foreign process) counts too. */
  private refusedBefore(name: string, err: unknown): never {
    this.o.observer?.operation('http', name, errorCode(err));
    throw err;
  }

  /** Prometheus text: this machine and the operator only (never the browser's LAN listener, which
   *  serves the web door alone). */
  private async metrics(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET') return sendJson(res, 405, new MailError('method_not_allowed', 'use GET /metrics').toBody(), { allow: 'GET' });
    if (!isLoopbackPeer(req.socket.remoteAddress)) throw new MailError('permission_denied', '/metrics is served to this machine only', { need: 'local' });
    const caller = await this.callers.admin(req);
    if (!caller.account.permissions.operator) throw new MailError('permission_denied', '/metrics needs the operator credential', { need: 'operator' });
    const m = await this.o.metrics!();
    res.writeHead(200, { 'content-type': m.contentType, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'content-length': String(Buffer.byteLength(m.body)) });
    res.end(m.body);
  }

  async listen(host: string, port: number): Promise<number> {
    const bound = await listenOn(this.server, host, port, { backlog: 4096 });
    this.guard.configure(host, bound);
    return bound;
  }

  /** Stop accepting, let in-flight requests finish (parked waits are answered by the engine). */
  async close(): Promise<void> {
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    this.server.closeIdleConnections();
    const deadline = Date.now() + 10_000;
    while (this.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    this.server.closeAllConnections();
    await closed;
  }
}

/** The peer is this machine (IPv4 loopback, IPv6 loopback, or IPv4 loopback mapped into IPv6). */
export function isLoopbackPeer(addr: string | undefined): boolean {
  if (!addr) return false;
  const a = addr.startsWith('::ffff:') ? addr.slice(7) : addr;
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}
