// The relay's bounds against hostile clients on its one public listener (docs/relay.md, "Limits
// against hostile clients"). The daemon's own parts do the counting: ConnectionBudget caps the
// sockets held, ConnectionGate caps the idle ones per address and in total (the oldest idle one is
// closed, never one whose request is answered, so a flood only pushes out its own sockets), and
// node's servers bound the TLS handshake, the headers, the request and the keep-alive idle time.
// A node's socket leaves the gate once its token verified.
import type { Server } from 'node:http';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import type { Socket } from 'node:net';
import { ConnectionBudget, descriptorBudget } from '../doors/connection-budget.js';
import { ConnectionGate } from '../doors/http/connection-gate.js';

export const RELAY_GUARD = {
  /** Sockets the relay holds at once (its open-file limit less room for the store and logs, as the
   *  daemon's, and at most 16,384: a raised limit of a million would let memory run out first);
   *  the next is closed on accept. */
  connections: Math.min(descriptorBudget(), 16_384),
  /** Sockets of one address not yet a node's: past this the address's oldest idle one is closed. */
  perAddress: 256,
  /** The same bound over every address. */
  idleTotal: 2048,
  /** A TLS handshake not done in this long closes the socket. */
  tlsHandshakeMs: 10_000,
  /** The request's headers must arrive within this (408), its body within requestMs. */
  headersMs: 10_000,
  requestMs: 30_000,
  /** A kept-alive connection with no request for this long is closed. */
  keepAliveMs: 5_000,
  /** A connection answered with an error (408, 431, 400) and not closed by its peer by then is. */
  errorLingerMs: 1_000,
  /** Node upgrades not accepted (wrong token, unknown node, bad headers, still being checked) per
   *  address in a window; past it the address is answered 429 with Retry-After, no store lookup. */
  nodeFailures: 10,
  nodeFailureWindowMs: 60_000,
  /** Frames a node may send in one second (answers, mail, pings, pongs); past it the socket is
   *  closed 1008. A node's answers follow the ≤ 64 calls in flight and its mail one frame a mailbox. */
  nodeFramesPerSecond: 500,
  /** Live reads parked at the relay at once per node, and per relay user (each tab holds one). */
  parkedPerNode: 256,
  parkedPerUser: 16,
};
export type RelayGuardLimits = typeof RELAY_GUARD;

/** Bounds `server`'s connections; `socketOf` maps a request's or upgrade's socket to the counted one. */
export function guardServer(
  server: Server | (Server & TlsServer),
  limits: RelayGuardLimits,
  tls: boolean,
): { budget: ConnectionBudget; gate: ConnectionGate; socketOf: (s: Socket) => Socket } {
  const budget = new ConnectionBudget(limits.connections);
  budget.attach(server);
  const gate = new ConnectionGate({ perPeer: limits.perAddress, total: limits.idleTotal });
  // A TLS socket wraps the accepted TCP socket: found again by its remote address and port,
  // which no other open socket shares.
  const accepted = new Map<string, Socket>();
  const tlsOf = new WeakMap<Socket, Socket>();
  const key = (s: Socket): string => `${s.remoteAddress ?? '?'}:${s.remotePort ?? 0}`;
  if (tls) {
    server.on('connection', (s: Socket) => {
      const k = key(s);
      accepted.set(k, s);
      s.once('close', () => accepted.get(k) === s && accepted.delete(k));
    });
    server.on('secureConnection', (t: TLSSocket) => {
      const raw = accepted.get(key(t));
      if (raw) tlsOf.set(t, raw);
    });
  }
  const socketOf = (s: Socket): Socket => tlsOf.get(s) ?? s;
  // A TLS failure (a handshake not done in time, not TLS at all) reaches 'clientError' too: no
  // HTTP answer can be written on it, and the gate's would wait in the socket forever. After any
  // other the gate writes the error and half-closes; a peer that never reads its end keeps the
  // socket open unless it is destroyed a little later.
  server.prependListener('clientError', (err: NodeJS.ErrnoException, s: Socket) => {
    if (/^ERR_(TLS|SSL)_/.test(err.code ?? '')) return void s.destroy();
    const t = setTimeout(() => s.destroy(), limits.errorLingerMs);
    t.unref();
    s.once('close', () => clearTimeout(t));
  });
  gate.attach(server, socketOf);
  server.headersTimeout = limits.headersMs;
  server.requestTimeout = limits.requestMs;
  server.keepAliveTimeout = limits.keepAliveMs;
  return { budget, gate, socketOf };
}

/** Attempts per address in fixed windows, for the node socket's upgrade. Bounded in size: an
 *  address list past `maxAddresses` drops its expired windows, and if none expired, the oldest. */
export class AddressThrottle {
  private readonly seen = new Map<string, { count: number; until: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly maxAddresses = 65_536,
  ) {}

  /** Seconds until the address may try again, or 0 when it may now. */
  retryAfter(address: string, now = Date.now()): number {
    const w = this.seen.get(address);
    if (!w || w.until <= now) return 0;
    return w.count >= this.limit ? Math.ceil((w.until - now) / 1000) : 0;
  }

  count(address: string, now = Date.now()): void {
    let w = this.seen.get(address);
    if (!w || w.until <= now) {
      this.seen.delete(address);
      if (this.seen.size >= this.maxAddresses) this.prune(now);
      this.seen.set(address, (w = { count: 0, until: now + this.windowMs }));
    }
    w.count++;
  }

  /** The attempt succeeded: it does not count against its address. */
  forgive(address: string): void {
    const w = this.seen.get(address);
    if (w && w.count > 0) w.count--;
  }

  private prune(now: number): void {
    // Windows enter in the order they end (a new one is deleted, then set), so the expired ones are
    // at the front: stop at the first live one, or a full map of live windows costs a whole scan
    // for every new address.
    for (const [a, w] of this.seen) {
      if (w.until > now) break;
      this.seen.delete(a);
    }
    if (this.seen.size >= this.maxAddresses) this.seen.delete(this.seen.keys().next().value as string);
  }
}
