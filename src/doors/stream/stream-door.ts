// The stream door: JSON lines over the data directory's Unix socket (docs/protocol.md, "The stream
// door"), for programs that stay connected. The kernel names each peer (SO_PEERCRED, read at accept
// through the addon the daemon loaded); hello presents the credential, and the peer's session is
// attested once, from that pid, for the connection's life. Connections that have not said hello are
// bounded (the oldest is closed past the cap) and closed 5 s after connect.
import type { ConnectionBudget } from '../connection-budget.js';
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { STREAM_LIMITS } from '../../wire/stream.js';
import type { PeerCredentials } from '../../attest/types.js';
import { StreamConnection, type ConnectionHost, type StreamLimits } from './stream-connection.js';
import { StreamOps, type StreamOpsOptions } from './stream-ops.js';
import { clearStaleSocket } from './socket-file.js';

export interface StreamDoorOptions extends StreamOpsOptions {
  /** SO_PEERCRED of a connected socket's fd (the addon). */
  peercred: (fd: number) => PeerCredentials;
  /** The daemon's connection budget, shared with its other listeners. */
  budget?: ConnectionBudget;
  /** Tests lower the hello deadline and the unauthenticated cap. */
  limits?: Partial<StreamLimits & { maxUnauthenticated: number }>;
}

export interface StreamStats {
  connections: number;
  unauthenticated: number;
  /** Unauthenticated connections closed to make room for newer ones. */
  evicted: number;
  /** Requests started since the door opened. */
  requests: number;
  /** Output written and not yet taken by the kernel, over every connection. */
  unsentBytes: number;
}

const hrMs = (): number => Number(process.hrtime.bigint() / 1000n) / 1000;

export class StreamDoor {
  readonly server: Server;
  private readonly ops: StreamOps;
  private readonly host: ConnectionHost;
  private readonly conns = new Set<StreamConnection>();
  /** Insertion order is age order: the first is the oldest. */
  private readonly unauth = new Set<StreamConnection>();
  private readonly maxUnauthenticated: number;
  private evicted = 0;
  private requests = 0;
  private path: string | null = null;
  private ino = 0;

  constructor(private readonly o: StreamDoorOptions) {
    this.ops = new StreamOps(o);
    const limits: StreamLimits = { ...STREAM_LIMITS, ...o.limits };
    this.maxUnauthenticated = o.limits?.maxUnauthenticated ?? STREAM_LIMITS.maxUnauthenticated;
    this.host = {
      limits,
      log: o.log,
      dispatch: (conn, req, signal, after) => {
        this.requests++;
        return this.ops.dispatch(conn, req, signal, after);
      },
      authenticated: (conn) => this.unauth.delete(conn),
      closed: (conn) => {
        this.conns.delete(conn);
        this.unauth.delete(conn);
      },
    };
    // Half-open: a client that ends its side after its last request still gets its answers.
    this.server = createServer({ allowHalfOpen: true }, (s) => this.accept(s));
    o.budget?.attach(this.server);
  }

  /** Requests in flight on every connection. */
  get busy(): number {
    let n = 0;
    for (const c of this.conns) n += c.busy;
    return n;
  }

  stats(): StreamStats {
    let unsentBytes = 0;
    for (const c of this.conns) unsentBytes += c.socket.writableLength;
    return { connections: this.conns.size, unauthenticated: this.unauth.size, evicted: this.evicted, requests: this.requests, unsentBytes };
  }

  private accept(socket: Socket): void {
    const at = hrMs();
    let peer: PeerCredentials;
    try {
      const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
      if (fd === undefined || fd < 0) throw new Error('no fd');
      peer = this.o.peercred(fd);
    } catch (err) {
      this.o.log.warn({ err: String(err) }, 'stream connection without peer credentials: closed');
      socket.destroy();
      return;
    }
    const conn = new StreamConnection(socket, peer, at, this.host);
    if (conn.closed) return;
    this.conns.add(conn);
    this.unauth.add(conn);
    while (this.unauth.size > this.maxUnauthenticated) {
      const oldest = [...this.unauth].find((c) => !c.helloBusy);
      if (!oldest) break;
      this.unauth.delete(oldest);
      this.evicted++;
      oldest.destroy();
    }
  }

  /** Listens at `path` (mode 0600), replacing a socket file a dead daemon left. */
  async listen(path: string): Promise<void> {
    await clearStaleSocket(path);
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ path, backlog: 4096 }, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    chmodSync(path, 0o600);
    this.path = path;
    this.ino = lstatSync(path).ino;
    this.server.on('error', (err) => this.o.log.warn({ err: String(err) }, 'stream door error'));
  }

  /** Stops accepting, lets requests in flight finish (the engine answered parked waits before), then
   *  closes every connection and removes the socket file. */
  async close(): Promise<void> {
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    this.removeFile();
    for (const c of this.conns) c.subscription?.end();
    const deadline = Date.now() + 10_000;
    while (this.busy > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    // Ended after what was written; a client that does not close its side in time is cut off.
    const all = [...this.conns];
    for (const c of all) c.finish();
    await Promise.race([closed, new Promise((r) => setTimeout(r, 500))]);
    for (const c of all) c.socket.destroy();
    await closed;
  }

  /** Only our own file: never one another daemon put there since. */
  private removeFile(): void {
    if (this.path === null) return;
    try {
      if (lstatSync(this.path).ino === this.ino) unlinkSync(this.path);
    } catch {
      /* gone already */
    }
    this.path = null;
  }
}
