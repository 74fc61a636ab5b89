// Connections not yet past authentication are bounded. A connection is "unproven" from accept until
// one of its requests presents a credential that verifies; until then it costs the daemon nothing
// but a socket (attestation waits for a credential, see caller-resolver.ts), and there may be at most
// `perPeer` of them per peer address and `total` overall. Over a cap the OLDEST unproven connection
// is closed, not the new one: a flood of idle sockets then only ever pushes out its own sockets,
// while a newcomer that sends its request at once always gets in. The peer's uid is not known
// without a /proc lookup, which is exactly what an unproven connection must not cost, so the key is
// the peer address (loopback peers may spread over 127/8, hence the total cap too).
import type { Socket } from 'node:net';

export interface GateOptions {
  perPeer: number;
  total: number;
}

export const DEFAULT_GATE: GateOptions = { perPeer: 4096, total: 8192 };

export interface GateStats {
  unproven: number;
  /** Unproven connections closed to make room for newer ones. */
  evicted: number;
}

export class ConnectionGate {
  /** Each unproven socket and its peer; insertion order is age order (the first is the oldest). */
  private readonly all = new Map<Socket, string>();
  private readonly byPeer = new Map<string, Set<Socket>>();
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
    while (mine.size > this.o.perPeer) this.evict(first(mine));
    while (this.all.size > this.o.total) this.evict(first(this.all.keys()));
  }

  /** The connection presented a valid credential: no longer bounded here. */
  prove(socket: Socket): void {
    this.forget(socket);
  }

  stats(): GateStats {
    return { unproven: this.all.size, evicted: this.evicted };
  }

  private evict(socket: Socket | undefined): void {
    if (socket === undefined) return;
    this.forget(socket);
    this.evicted++;
    socket.destroy();
  }

  private forget(socket: Socket): void {
    const peer = this.all.get(socket);
    if (peer === undefined) return;
    this.all.delete(socket);
    const mine = this.byPeer.get(peer);
    if (mine === undefined) return;
    mine.delete(socket);
    if (mine.size === 0) this.byPeer.delete(peer);
  }
}

function first<T>(items: Iterable<T>): T | undefined {
  for (const x of items) return x;
  return undefined;
}
