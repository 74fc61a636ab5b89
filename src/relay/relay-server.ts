// The relay process: one HTTPS server (or plain HTTP on loopback behind a TLS-terminating proxy)
// for the browser pages and API (relay-web.ts) and the nodes' WebSocket (relay-nodes.ts).
// Host and Origin must name the public URL (DNS rebinding, cross-site requests), as the daemon's
// origin guard does for its loopback origin.
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { MailError } from '../wire/errors.js';
import type { Logger } from '../engine/log.js';
import { sendJson, toMailError } from '../doors/http/respond.js';
import { SECURITY_HEADERS } from '../doors/web/web-door.js';
import { NodeHub, type NodeHubOptions } from './relay-nodes.js';
import { RelayWeb } from './relay-web.js';
import { RELAY_GUARD, guardServer, type RelayGuardLimits } from './relay-guard.js';
import type { RelayState } from './relay-store.js';

export interface RelayServerOptions {
  state: RelayState;
  log: Logger;
  host: string;
  port: number;
  tls?: { cert: string; key: string } | undefined;
  /** The origin browsers use; default https://HOST:PORT (http:// without TLS). */
  publicUrl?: string | undefined;
  /** Shorter waits for tests (takeover ping, hello). */
  hub?: Partial<Pick<NodeHubOptions, 'takeoverPingMs' | 'helloMs' | 'heartbeatMs' | 'callTimeoutMs'>>;
  /** Tighter bounds for tests (relay-guard.ts); the defaults are RELAY_GUARD. */
  guard?: Partial<RelayGuardLimits>;
}

export interface RunningRelay {
  port: number;
  /** The origin browsers must use (Host and Origin are checked against it). */
  origin: string;
  hub: NodeHub;
  /** Sockets held, and those not a node's yet (relay-guard.ts). */
  connections(): { open: number; unproven: number; busy: number; evicted: number };
  close(): Promise<void>;
}

export const isLoopback = (host: string): boolean => host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);

/** `HOST:PORT`, `[V6]:PORT`. */
export function parseListen(s: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(s);
  const port = Number(m?.[3]);
  if (!m || port > 65535) throw new MailError('malformed', `--listen takes HOST:PORT, not ${s}`, { field: 'listen', reason: 'HOST:PORT' });
  return { host: (m[1] ?? m[2])!, port };
}

function originOf(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new MailError('malformed', `--public-url is not a URL: ${url}`, { field: 'public-url', reason: 'URL' });
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || u.pathname !== '/' || u.search || u.hash || u.username)
    throw new MailError('malformed', '--public-url is an origin: https://HOST[:PORT]', { field: 'public-url', reason: 'origin' });
  return u;
}

export async function startRelay(o: RelayServerOptions): Promise<RunningRelay> {
  const limits: RelayGuardLimits = { ...RELAY_GUARD, ...o.guard };
  const hub = new NodeHub({ state: o.state, log: o.log, limits, ...o.hub });
  const given = o.publicUrl !== undefined ? originOf(o.publicUrl) : null;
  let pub = given;
  const web = new RelayWeb({
    state: o.state,
    hub,
    log: o.log,
    secure: o.tls !== undefined || given?.protocol === 'https:',
    parked: { perNode: limits.parkedPerNode, perUser: limits.parkedPerUser },
  });
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    try {
      if (!pub || (req.headers.host ?? '').toLowerCase() !== pub.host) throw new MailError('forbidden_origin', 'the Host header does not name this relay', { field: 'host' });
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== pub.origin) throw new MailError('forbidden_origin', "the Origin is not this relay's own origin", { field: 'origin' });
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (!RelayWeb.owns(path)) throw new MailError('unknown_route', `no route ${path}`);
      void web.handle(req, res, path);
    } catch (err) {
      const e = toMailError(err, o.log);
      sendJson(res, e.httpStatus, e.toBody(), { ...SECURITY_HEADERS });
    }
  };
  // Header and request deadlines are checked this often (node's default, 30 s, would let a slow
  // sender keep its socket three times the bound).
  const checking = { connectionsCheckingInterval: Math.min(1_000, limits.headersMs) };
  const server: Server = o.tls
    ? createHttpsServer({ cert: readFileSync(o.tls.cert), key: readFileSync(o.tls.key), handshakeTimeout: limits.tlsHandshakeMs, ...checking }, onRequest)
    : createHttpServer(checking, onRequest);
  const { budget, gate, socketOf } = guardServer(server, limits, o.tls !== undefined);
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
    socket.on('error', () => undefined);
    hub
      .upgrade(req, socket, head, () => gate.prove(socketOf(req.socket)))
      .catch((err: unknown) => {
        o.log.error({ code: 'relay_upgrade_failed', err: err instanceof Error ? err.message : String(err) }, 'node upgrade failed');
        socket.destroy();
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const h = o.host.includes(':') ? `[${o.host}]` : o.host;
  pub ??= new URL(`${o.tls ? 'https' : 'http'}://${h}:${port}`);
  o.log.info({ code: 'relay_listening', host: o.host, port, origin: pub.origin, tls: o.tls !== undefined }, 'relay listening');
  return {
    port,
    origin: pub.origin,
    hub,
    connections: () => ({ open: budget.size, ...gate.stats() }),
    async close() {
      await hub.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
