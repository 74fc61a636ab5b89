// The only way the SQLite store writes. `tx` runs a function in one transaction and resolves only
// once the commit is durable; `group` builds a group commit whose callers resume the same way. So a
// write path cannot acknowledge before the disk has it, nor wake a reader (commit listeners run
// after the barrier too).
//
// Two modes. 'barrier' (the default): synchronous=NORMAL and our own fsync of the -wal on libuv's
// thread pool (durable-sync.ts), so the event loop parses and answers requests while a commit
// syncs. 'full': synchronous=FULL, SQLite syncs inside COMMIT on the event loop (the old path,
// kept to compare in the benchmark: M4A_SQLITE_SYNC=full).
//
// Reads use the same connection and so see a commit at once, before its fsync completes. For mail
// that is not enough: a seq shown to a reader (a page, a cursor, the head) that a power loss then
// took back would be handed out again, and a cursor past it would skip the new message. So mail
// reads are bounded by the durable head (readHead), the head the last completed fsync covered;
// other reads (sessions, tasks, records, counters, a message by id) see commits at once, a window
// of one fsync (Redis with appendfsync always has the same: a command's effect is visible to other
// clients before its fsync). Anything a caller does with such a read that writes is acknowledged
// only after a barrier that covers what it read. docs/benchmarks.md "Durability".
import type Database from 'better-sqlite3';
import { Checkpointer, CHECKPOINT_DEFAULTS, type CheckpointOptions, type CheckpointStats, type CommitGate } from './checkpointer.js';
import { DurableSync, type FsyncFn } from './durable-sync.js';
import { GroupCommit } from './group-commit.js';

export type SyncMode = 'barrier' | 'full';

/** No bound: every committed seq is readable. */
const NO_BOUND = Number.MAX_SAFE_INTEGER;

export class SqliteWriter implements CommitGate {
  /** Write transactions committed (a group's batch counts once). */
  commits = 0;
  private readonly sync: DurableSync | null;
  private readonly checkpoints: Checkpointer | null;
  private readonly inTx: (fn: () => unknown) => unknown;
  private readonly inTxImmediate: (fn: () => unknown) => unknown;
  private durableHead = NO_BOUND;
  /** Set while commits are held (checkpointer.ts); resolved on release. */
  private held: { promise: Promise<void>; release: () => void } | null = null;
  /** Every group commit made here: flushed at close. */
  private readonly groups: { flush(): void }[] = [];

  /**
   * @param path the database file (':memory:' has nothing to sync)
   * @param head the store's message head (sqlite_sequence), read outside transactions
   */
  constructor(
    db: Database.Database,
    path: string,
    readonly mode: SyncMode,
    private readonly head: () => number,
    fsync?: FsyncFn,
    checkpoint: CheckpointOptions = CHECKPOINT_DEFAULTS,
  ) {
    const transaction = db.transaction((fn: () => unknown) => fn());
    this.inTx = transaction;
    this.inTxImmediate = (fn) => transaction.immediate(fn);
    if (mode === 'barrier' && path !== ':memory:') {
      this.sync = new DurableSync(
        `${path}-wal`,
        path,
        fsync,
        () => this.head(),
        (mark) => (this.durableHead = Math.max(this.durableHead, mark)),
      );
      // What a previous process committed may still be only in the page cache: make it durable
      // before any of it is shown or acknowledged.
      this.sync.syncNowBlocking();
      this.durableHead = this.head();
      this.checkpoints = new Checkpointer(db, path, checkpoint, this);
    } else {
      this.sync = null;
      this.checkpoints = null;
    }
  }

  checkpointStats(): CheckpointStats {
    return this.checkpoints?.stats() ?? { checkpointer: 'inline', passes: 0, logFrames: 0, maxLogFrames: 0, catchUps: 0, heldMs: 0, maxHeldMs: 0, restarts: 0 };
  }

  /** Runs fn in a write transaction (IMMEDIATE: the write lock first, so its reads see what it
   *  writes on); resolves with its result once durable. A throw rolls back and rejects. */
  async tx<R>(fn: () => R, immediate = false): Promise<R> {
    while (this.held) await this.held.promise;
    const r = this.commitNow(fn, immediate);
    await this.durable();
    return r;
  }

  /** A group commit: each batch one transaction, its callers resumed (and `afterDurable` run)
   *  once durable. */
  group<In, Out>(runBatch: (inputs: In[]) => Out[], afterDurable: (outputs: Out[]) => void, immediate = false): GroupCommit<In, Out> {
    const g = new GroupCommit(
      (inputs: In[]) => this.commitNow(() => runBatch(inputs), immediate),
      () => this.durable(),
      afterDurable,
      () => this.held?.promise ?? null,
    );
    this.groups.push(g);
    return g;
  }

  hold(): void {
    if (this.held) return;
    let release = (): void => undefined;
    const promise = new Promise<void>((resolve) => (release = resolve));
    this.held = { promise, release };
  }

  release(): void {
    const h = this.held;
    this.held = null;
    h?.release();
  }

  /** The highest seq mail reads may show (see the top of this file). */
  readHead(): number {
    return this.sync ? this.durableHead : NO_BOUND;
  }

  /** Before the connection closes: the checkpoint thread ended (commits no longer held), queued
   *  group commits committed, and every commit so far durable. */
  async close(): Promise<void> {
    await this.checkpoints?.close();
    this.release();
    for (const g of this.groups) g.flush();
    if (!this.sync) return;
    await this.durable().catch(() => undefined);
    await this.sync.drain();
  }

  /** After the connection closed: no fsync is in flight, the descriptor goes. */
  async closeFiles(): Promise<void> {
    if (!this.sync) return;
    await this.sync.drain();
    this.sync.close();
  }

  private commitNow<R>(fn: () => R, immediate: boolean): R {
    // After a failed fsync nothing more is written: it could never be acknowledged.
    const failed = this.sync?.failure();
    if (failed) throw failed;
    const r = (immediate ? this.inTxImmediate(fn) : this.inTx(fn)) as R;
    this.commits++;
    this.sync?.noteCommit();
    this.checkpoints?.noteCommit();
    return r;
  }

  private durable(): Promise<void> {
    return this.sync ? this.sync.after() : Promise.resolve();
  }
}
