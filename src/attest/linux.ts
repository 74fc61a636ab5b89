// Linux attestor: schedules batches of /proc lookups (batch.ts) on a worker thread.
//
// Why a worker and not a native addon: the lookups are plain /proc reads whose cost grows with the
// host's sockets (the kernel walks its hash table to print /proc/net/tcp: about 20 ms at 3,000 rows)
// and fds. On the event loop that stalled every caller; on a worker the loop only posts tuples and
// takes answers. One batch runs at a time and takes every attestation that arrived while the
// previous one ran, so a burst of N connections costs a few /proc reads, not N: per connection the
// cost falls as the load rises instead of growing with the open connections. A sock_diag or
// SO_PEERCRED addon would make a lookup O(1), but needs a compiler or a prebuilt binary per
// platform; the worker needs neither. A worker that dies or hangs is replaced; only where worker
// threads cannot start at all do batches run inline. The stream door's peers come with the kernel's
// pid (SO_PEERCRED, a small addon the door loads): their walk runs in the same batches (a few small
// /proc reads per peer, each of which can block like the others), just without /proc/net or fds.
import { Worker } from 'node:worker_threads';
import { createBatchAttestor, type BatchAttestor, type BatchOptions, type BatchStats } from './batch.js';
import { readStartTime } from './proc-facts.js';
import { isLoopback } from './proc-net.js';
import type { AttestResult, Attestor, ConnectionTuple, PeerQuery } from './types.js';

export interface LinuxAttestorOptions extends BatchOptions {
  /** Run the lookups on the calling thread (tests of the lookup itself); default: a worker thread. */
  inline?: boolean;
  /** A batch the worker has not answered by then is refused (`attestor_unavailable`) and the worker
   *  replaced (default 10 s). */
  batchTimeoutMs?: number;
}

export interface AttestorStats extends BatchStats {
  /** Batches run (each one read of each /proc/net file at most, and one fd scan). */
  batches: number;
  /** The most connections one batch attested. */
  largestBatch: number;
  /** Worker threads started (a dead or stuck one is replaced, at most once a second). */
  workersStarted: number;
  /** Where the lookups run. */
  mode: 'worker' | 'inline';
}

export interface LinuxAttestor extends Attestor {
  stats(): AttestorStats;
}

type Pending = ({ conn: ConnectionTuple; peer?: undefined } | { peer: PeerQuery; conn?: undefined }) & { resolve: (r: AttestResult) => void };

interface Reply {
  id: number;
  results: AttestResult[];
  stats: BatchStats;
}

/** A batch allocates little that outlives it (the table is read into one reused buffer), so a small
 *  young generation does: V8's default lets it grow to tens of MB of the daemon's RSS. The old
 *  generation's cap only bounds a runaway; past it the worker dies and is replaced. */
const WORKER_HEAP = { maxYoungGenerationSizeMb: 6, maxOldGenerationSizeMb: 256 };

/** The worker's module; from TypeScript sources (tests, under tsx) the worker registers tsx first,
 *  since a worker thread does not inherit the parent's module hooks. */
function spawnWorker(workerData: BatchOptions): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./attest-worker.js', import.meta.url), { workerData, resourceLimits: WORKER_HEAP });
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./attest-worker.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { eval: true, workerData, resourceLimits: WORKER_HEAP });
}

/** Batches on a worker thread; referenced only while a batch is in flight, so it never keeps a
 *  process alive by itself. */
class WorkerRunner {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, (r: Reply | null) => void>();
  private nextId = 1;
  dead = false;
  last: BatchStats = { netScans: 0, fdScans: 0 };

  constructor(opts: BatchOptions) {
    this.worker = spawnWorker({ hostId: opts.hostId, packageRoot: opts.packageRoot, allowedUids: opts.allowedUids ?? [] });
    this.worker.on('message', (m: Reply) => {
      this.last = m.stats;
      this.waiting.get(m.id)?.(m);
      this.waiting.delete(m.id);
      if (this.waiting.size === 0) this.worker.unref();
    });
    const fail = () => {
      this.dead = true;
      for (const done of this.waiting.values()) done(null);
      this.waiting.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', fail);
    this.worker.unref(); // after the listeners: adding a 'message' listener refs the port again
  }

  /** The batch's results, or null when the worker died or did not answer within `timeoutMs` (a
   *  /proc read can block, e.g. on a process stuck in its own memory lock): then it is ended. */
  run(conns: ConnectionTuple[], peers: PeerQuery[], timeoutMs: number): Promise<Reply | null> {
    if (this.dead) return Promise.resolve(null);
    const id = this.nextId++;
    this.worker.ref();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        void this.close();
        resolve(null);
      }, timeoutMs);
      this.waiting.set(id, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
      this.worker.postMessage({ id, conns, peers });
    });
  }

  close(): Promise<void> {
    this.dead = true;
    return this.worker.terminate().then(() => undefined);
  }
}

const RESTART_GAP_MS = 1_000;

/** Connections of one process in one batch share one result (a worker's reply keeps that sharing),
 *  which each socket keeps for its life: frozen, so no caller can change what another was told. */
function frozen<T>(v: T): T {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return v;
  for (const x of Object.values(v)) frozen(x);
  return Object.freeze(v);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createLinuxAttestor(opts: LinuxAttestorOptions): LinuxAttestor {
  let inline: BatchAttestor | null = null;
  const local = (): BatchAttestor => (inline ??= createBatchAttestor(opts));
  const timeoutMs = opts.batchTimeoutMs ?? 10_000;
  let runner: WorkerRunner | null = null;
  let workersUnsupported = !!opts.inline;
  let workersStarted = 0;
  let lastStart = 0;
  let closed = false;
  const retired: BatchStats = { netScans: 0, fdScans: 0 };
  let batches = 0;
  let largestBatch = 0;
  let queue: Pending[] = [];
  let running = false;

  /** The live worker, a new one after a death (at most one start a second), or null: inline. */
  async function liveRunner(): Promise<WorkerRunner | null> {
    if (workersUnsupported || closed) return null;
    if (runner && !runner.dead) return runner;
    if (runner) {
      retired.netScans += runner.last.netScans;
      retired.fdScans += runner.last.fdScans;
      runner = null;
    }
    const wait = lastStart + RESTART_GAP_MS - Date.now();
    if (workersStarted > 0 && wait > 0) await sleep(wait);
    try {
      lastStart = Date.now();
      runner = new WorkerRunner(opts);
      workersStarted++;
    } catch {
      workersUnsupported = true; // no worker threads here: inline it is
    }
    return runner;
  }

  /** Results for conns, then for peers. */
  async function runBatch(conns: ConnectionTuple[], peers: PeerQuery[]): Promise<AttestResult[]> {
    const w = await liveRunner();
    if (w === null) return local().run(conns, peers);
    const reply = await w.run(conns, peers, timeoutMs);
    return reply?.results ?? [...conns, ...peers].map(() => ({ ok: false, reason: 'attestor_unavailable' }));
  }

  function schedule(): void {
    if (running || queue.length === 0) return;
    running = true;
    // One turn of the loop first, so the connections of one burst share the first batch.
    setImmediate(() => void runNext());
  }

  async function runNext(): Promise<void> {
    const batch = queue;
    queue = [];
    batches++;
    largestBatch = Math.max(largestBatch, batch.length);
    const tcp = batch.filter((p) => p.conn !== undefined);
    const byPid = batch.filter((p) => p.peer !== undefined);
    let results: AttestResult[] = [];
    try {
      results = await runBatch(
        tcp.map((p) => p.conn),
        byPid.map((p) => p.peer),
      );
    } catch {
      /* answered below: never a guess */
    } finally {
      [...tcp, ...byPid].forEach((p, i) => p.resolve(frozen(results[i] ?? { ok: false, reason: p.peer ? 'process_gone' : 'socket_not_found' })));
      running = false;
      schedule();
    }
  }

  if (!workersUnsupported) void liveRunner(); // start the worker now, not on the first request

  return {
    supported: true,
    attest(conn: ConnectionTuple): Promise<AttestResult> {
      if (!isLoopback(conn.remoteAddress)) return Promise.resolve({ ok: false, reason: 'not_loopback' });
      return new Promise((resolve) => {
        queue.push({ conn, resolve });
        schedule();
      });
    },
    attestPeer(peer: PeerQuery): Promise<AttestResult> {
      return new Promise((resolve) => {
        queue.push({ peer, resolve });
        schedule();
      });
    },
    isAlive(pid: number, startTime: number): boolean {
      return readStartTime(pid) === startTime;
    },
    stats: () => {
      const w = runner?.last ?? { netScans: 0, fdScans: 0 };
      const i = inline?.stats() ?? { netScans: 0, fdScans: 0 };
      return {
        netScans: retired.netScans + w.netScans + i.netScans,
        fdScans: retired.fdScans + w.fdScans + i.fdScans,
        batches,
        largestBatch,
        workersStarted,
        mode: workersUnsupported ? 'inline' : 'worker',
      };
    },
    close: () => {
      closed = true;
      return runner?.close() ?? Promise.resolve();
    },
  };
}
