// Connections not yet past authentication are bounded. A connection is "unproven" from accept until
// one of its requests presents a credential that verifies; until then it costs the daemon nothing
// but a socket (attestation waits for a credential, see caller-resolver.ts), and there may be at most
// `perPeer` of them per peer address and `total` overall. Over a cap the OLDEST unproven connection
// is closed, not the new one: a flood of idle sockets then only ever pushes out its own sockets,
// while a newcomer that sends its request at once always gets in. The peer's uid is not known
// without a /proc lookup, which is exactly what an unproven connection must not cost, so the key is
// the peer address (loopback peers may spread over 127/8, hence the total cap too). A connection
// whose request is being answered is never closed here.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { clientErrorBytes } from './respond.js';

export interface GateOptions {
  perPeer: number;
  total: number;
}

export const DEFAULT_GATE: GateOptions = { perPeer: 4096, total: 8192 };

export interface GateStats {
  unproven: number;
  /** Unproven connections with a request being answered. */
  busy: number;
  /** Unproven connections closed to make room for newer ones. */
  evicted: number;
}

export class ConnectionGate {
  /** Each unproven socket and its peer; insertion order is age order (the first is the oldest). */
  private readonly all = new Map<Socket, string>();
  private readonly byPeer = new Map<string, Set<Socket>>();
  /** Unproven connections with a request in flight (headers read, answer not yet sent). */
  private readonly busy = new Set<Socket>();
  private evicted = 0;

  constructor(private readonly o: GateOptions = DEFAULT_GATE) {}

  /** A new connection: counted as unproven until `prove`; may close older unproven ones. */
  accept(socket: Socket): void {
    const peer = socket.remoteAddress ?? '?';
    let mine = this.byPeer.get(peer);
    if (mine === undefined) this.byPeer.set(peer, (mine = new Set()));
    mine.add(socket);
    this.all.set(socket, peer);
    socket.once('close', () => this.forget(socket));
    while (mine.size > this.o.perPeer && this.evict(this.oldestIdle(mine)));
    while (this.all.size > this.o.total && this.evict(this.oldestIdle(this.all.keys())));
  }

  /** Serves `server`'s connections through this gate: counted on accept, never closed while a
   *  request of theirs is answered, and a request the parser refuses gets the error envelope.
   *  `socketOf` maps a request's socket to the accepted one (a TLS server's requests arrive on the
   *  TLS socket wrapping the accepted TCP socket). */
  attach(server: Server, socketOf: (s: Socket) => Socket = (s) => s): void {
    server.on('connection', (s: Socket) => this.accept(s));
    server.on('request', (req: { socket: Socket }, res: { once(e: 'close', f: () => void): void }) => {
      const s = socketOf(req.socket);
      if (!this.all.has(s)) return;
      this.busy.add(s);
      res.once('close', () => this.busy.delete(s));
    });
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      const answer = clientErrorBytes(err);
      if (answer !== null && socket.writable) socket.end(answer);
      else socket.destroy();
    });
  }

  /** The connection presented a valid credential: no longer bounded here. */
  prove(socket: Socket): void {
    this.forget(socket);
  }

  stats(): GateStats {
    return { unproven: this.all.size, busy: this.busy.size, evicted: this.evicted };
  }

  private oldestIdle(sockets: Iterable<Socket>): Socket | undefined {
    for (const s of sockets) if (!this.busy.has(s)) return s;
    return undefined;
  }

  /** False when every candidate is busy: then the bound is exceeded until one finishes. */
  private evict(socket: Socket | undefined): boolean {
    if (socket === undefined) return false;
    this.forget(socket);
    this.evicted++;
    socket.destroy();
    return true;
  }

  private forget(socket: Socket): void {
    const peer = this.all.get(socket);
    if (peer === undefined) return;
    this.all.delete(socket);
    this.busy.delete(socket);
    const mine = this.byPeer.get(peer);
    if (mine === undefined) return;
    mine.delete(socket);
    if (mine.size === 0) this.byPeer.delete(peer);
  }
}
