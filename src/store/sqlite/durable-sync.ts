// The durability barrier of the SQLite store. With WAL and synchronous=NORMAL SQLite writes a
// commit's frames into the -wal file but does not sync them (the database stays consistent; only
// durability moves). This barrier syncs that file with fs.fsync on libuv's thread pool, off the
// event loop, and resolves a waiter once an fsync that started after the waiter's commit has
// completed. One fsync is in flight at a time; commits that arrive meanwhile share the next one.
//
// The file: fsync flushes the inode, whichever descriptor wrote it, so our own descriptor on the
// -wal covers SQLite's writes. After a checkpoint SQLite rewrites the same file from its start
// (same inode), which the next fsync covers; frames overwritten that way were copied into the
// database and synced by the checkpoint first. SQLite deletes the -wal only when the last
// connection closes, never while the store's connection is open; still, before every fsync the
// path's inode is compared with the descriptor's, and a changed or missing file is opened again.
import { closeSync, fstatSync, fsync, fsyncSync, openSync, statSync } from 'node:fs';

export type FsyncFn = (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void;

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class DurableSync {
  private fd: number | null = null;
  private ino = -1;
  private dev = -1;
  /** Commits noted so far, and how many of them the last completed fsync covers. */
  private committed = 0;
  private durable = 0;
  /** The commit count when the fsync in flight started (-1: none in flight). */
  private flying = -1;
  private current: Waiter[] = [];
  private next: Waiter[] = [];
  private failed: Error | null = null;
  private idle: (() => void)[] = [];

  /**
   * @param walPath the -wal file (synced), with `dbPath` the fallback when it is absent
   * @param sync the fsync (injected by tests to observe it)
   * @param onStart called as an fsync starts: what it will make durable (the store's head)
   * @param onDurable called with that value once the fsync completed, before any waiter resumes
   */
  constructor(
    private readonly walPath: string,
    private readonly dbPath: string,
    private readonly sync: FsyncFn = fsync,
    private readonly onStart: () => number = () => 0,
    private readonly onDurable: (mark: number) => void = () => undefined,
  ) {}

  /** The error of a failed fsync: from then on nothing may be committed or acknowledged. */
  failure(): Error | null {
    return this.failed;
  }

  /** A write transaction committed (call right after its COMMIT, before awaiting `after`). */
  noteCommit(): void {
    this.committed++;
  }

  /** Resolves once everything committed before this call is on disk; rejects if an fsync failed. */
  after(): Promise<void> {
    if (this.failed !== null) return Promise.reject(this.failed);
    if (this.durable === this.committed) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      // The fsync in flight covers this caller if nothing committed since it started.
      if (this.flying === this.committed) this.current.push({ resolve, reject });
      else {
        this.next.push({ resolve, reject });
        if (this.flying < 0) this.start();
      }
    });
  }

  /** Syncs the file now, on the calling thread (at open: what a previous process left in the page
   *  cache becomes durable before anyone reads it). */
  syncNowBlocking(): void {
    fsyncSync(this.descriptor().fd);
  }

  /** Resolves when no fsync is in flight (close: the descriptor may go). */
  drain(): Promise<void> {
    if (this.flying < 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Closes the descriptor; call after drain(). */
  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private start(): void {
    const waiters = this.next;
    this.next = [];
    this.current = waiters;
    const upTo = this.committed;
    let fd: number;
    let mark: number;
    try {
      fd = this.descriptor().fd;
      mark = this.onStart();
    } catch (err) {
      this.fail(err, waiters);
      return;
    }
    this.flying = upTo;
    this.sync(fd, (err) => {
      const done = this.current;
      this.current = [];
      this.flying = -1;
      if (err) {
        this.fail(err, done);
      } else {
        this.durable = upTo;
        this.onDurable(mark);
        for (const w of done) w.resolve();
      }
      if (this.next.length > 0 && this.failed === null) this.start();
      else for (const f of this.idle.splice(0)) f();
    });
  }

  /** After a failed fsync the kernel may have dropped the dirty pages and a later fsync could
   *  report success for data that is gone: every later barrier fails too (restart to recover). */
  private fail(err: unknown, waiters: Waiter[]): void {
    this.failed ??= err instanceof Error ? err : new Error(String(err));
    for (const w of [...waiters, ...this.next.splice(0)]) w.reject(this.failed);
    for (const f of this.idle.splice(0)) f();
  }

  /** The descriptor of the file SQLite writes now: reopened if the path names another inode. */
  private descriptor(): { fd: number } {
    let st: { ino: number; dev: number };
    let path = this.walPath;
    try {
      st = statSync(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      // No log at all: everything is in the database file (checkpointed and synced by SQLite).
      path = this.dbPath;
      st = statSync(path);
    }
    if (this.fd !== null && st.ino === this.ino && st.dev === this.dev) return { fd: this.fd };
    this.close();
    const fd = openSync(path, 'r');
    const own = fstatSync(fd);
    this.fd = fd;
    this.ino = own.ino;
    this.dev = own.dev;
    return { fd };
  }
}
