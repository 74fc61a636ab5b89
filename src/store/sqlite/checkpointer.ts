// Who checkpoints the log. SQLite's default (wal_autocheckpoint = 1000 pages) runs the checkpoint
// inside the COMMIT that crossed the threshold, on the event loop: the copy and two fsyncs (the
// log, then the database), then a third when the next commit starts the log over. Once a store has
// committed `afterCommits` times (small stores and most tests never do), a worker thread with its
// own connection takes over (checkpoint-worker.ts) and the writer's connection stops checkpointing.
//
// The log is started over only by a commit that finds it fully copied. Under steady load a
// commit always lands while a pass copies, so the log would grow without end (measured: 311 MiB
// in 4 s). So once it holds `restartFrames`, the writer holds its commits (requests are still read
// and answered meanwhile; the held commits join one batch), the thread copies the rest, and the
// next commit starts the log over. What stays on the event loop is that commit's sync of the new
// log header, once per `restartFrames`. A thread that fails hands checkpoints back to SQLite.
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { CheckpointReport, CheckpointWorkerData } from './checkpoint-worker.js';

export interface CheckpointOptions {
  /** Commits after which the worker starts (0: at the first commit). */
  afterCommits: number;
  /** How often the worker looks at the log's length. */
  intervalMs: number;
  /** Frames (pages) not yet copied that make a pass (SQLite's wal_autocheckpoint is 1000). */
  passFrames: number;
  /** A log this long is copied to its end and started over. */
  restartFrames: number;
}

export const CHECKPOINT_DEFAULTS: CheckpointOptions = { afterCommits: 200, intervalMs: 50, passFrames: 1000, restartFrames: 4096 };

/** Commits are held at most this long for a catch-up the thread does not answer. */
const CATCH_UP_TIMEOUT_MS = 1000;

/** What the checkpointer needs of the writer: hold commits while the thread catches up. */
export interface CommitGate {
  hold(): void;
  release(): void;
}

export interface CheckpointStats {
  checkpointer: 'inline' | 'worker' | 'failed';
  /** Passes the worker ran, and the log's length in frames after the last one and at most. */
  passes: number;
  logFrames: number;
  maxLogFrames: number;
  /** Times commits were held for a catch-up, for how long in all and at most, and times the log
   *  was seen started over. */
  catchUps: number;
  heldMs: number;
  maxHeldMs: number;
  restarts: number;
}

function spawnWorker(workerData: CheckpointWorkerData): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./checkpoint-worker.js', import.meta.url), { workerData });
  // From TypeScript sources (tests, under tsx): a worker does not inherit the module hooks.
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./checkpoint-worker.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { eval: true, workerData });
}

export class Checkpointer {
  private readonly shared = new SharedArrayBuffer(4);
  private readonly commits = new Int32Array(this.shared);
  private count = 0;
  private worker: Worker | null = null;
  private state: CheckpointStats['checkpointer'] = 'inline';
  private closing = false;
  private passes = 0;
  private logFrames = 0;
  private maxLogFrames = 0;
  private catchUps = 0;
  private restarts = 0;
  private generation = -1;
  private holding: NodeJS.Timeout | null = null;
  private heldSince = 0;
  private heldMs = 0;
  private maxHeldMs = 0;

  constructor(
    private readonly db: Database.Database,
    private readonly path: string,
    private readonly opts: CheckpointOptions,
    private readonly gate: CommitGate,
  ) {}

  /** After every commit of the writer. */
  noteCommit(): void {
    this.count = (this.count + 1) | 0;
    Atomics.store(this.commits, 0, this.count);
    if (this.state === 'inline' && !this.closing && this.count >= this.opts.afterCommits) this.start();
  }

  stats(): CheckpointStats {
    return {
      checkpointer: this.state,
      passes: this.passes,
      logFrames: this.logFrames,
      maxLogFrames: this.maxLogFrames,
      catchUps: this.catchUps,
      heldMs: Math.round(this.heldMs),
      maxHeldMs: Math.round(this.maxHeldMs),
      restarts: this.restarts,
    };
  }

  /** Ends the worker (its connection closes first, so the writer's is the last one). */
  async close(): Promise<void> {
    this.closing = true;
    this.release();
    const w = this.worker;
    if (!w) return;
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    w.ref(); // the wait for its exit keeps the process up
    w.postMessage('close');
    await exited;
    this.worker = null;
  }

  private start(): void {
    let w: Worker;
    try {
      w = spawnWorker({ path: this.path, commits: this.shared, intervalMs: this.opts.intervalMs, passFrames: this.opts.passFrames, restartFrames: this.opts.restartFrames });
    } catch {
      this.state = 'failed';
      return;
    }
    this.worker = w;
    this.state = 'worker';
    this.db.pragma('wal_autocheckpoint = 0');
    w.on('message', (r: CheckpointReport) => {
      this.passes++;
      if (this.generation >= 0 && r.generation !== this.generation) this.restarts++;
      this.generation = r.generation;
      this.logFrames = r.log;
      this.maxLogFrames = Math.max(this.maxLogFrames, r.log);
      if (r.kind === 'caught-up') this.release();
      else if (r.log >= this.opts.restartFrames && !r.busy && this.holding === null && !this.closing) {
        this.catchUps++;
        this.gate.hold();
        this.heldSince = performance.now();
        this.holding = setTimeout(() => this.release(), CATCH_UP_TIMEOUT_MS);
        w.postMessage('catch-up');
      }
    });
    const fail = (): void => {
      this.release();
      if (this.closing || this.state !== 'worker') return;
      this.state = 'failed';
      this.worker = null;
      if (this.db.open) this.db.pragma('wal_autocheckpoint = 1000');
    };
    w.on('error', fail);
    w.on('exit', fail);
    w.unref(); // after the listeners: adding a 'message' listener refs the port again
  }

  private release(): void {
    if (this.holding === null) return;
    clearTimeout(this.holding);
    this.holding = null;
    const held = performance.now() - this.heldSince;
    this.heldMs += held;
    this.maxHeldMs = Math.max(this.maxHeldMs, held);
    this.gate.release();
  }
}
