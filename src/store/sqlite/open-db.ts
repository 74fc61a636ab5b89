// Opening the SQLite file safely. Only a missing file makes a new mailbox, and it appears complete
// (built beside it, then linked into place), so a file that exists without a schema is damage and
// is refused, never re-created. A damaged file is refused as `store_corrupt` and left as it was.
// Every file is created 0600: the umask is tightened while SQLite creates them, and SQLite gives
// the -wal and -shm it creates later the mode of the database file.
import Database from 'better-sqlite3';
import { closeSync, existsSync, fsyncSync, linkSync, lstatSync, openSync, readdirSync, readlinkSync, renameSync, statSync, unlinkSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { MailError } from '../../wire/errors.js';
import { inspectDbFile } from './file-check.js';
import { migrate } from './migrations.js';

const SIBLINGS = ['-wal', '-shm'] as const;

/** The refusal for a damaged file: what is wrong, where, and the way back. */
export function storeCorrupt(path: string, reason: string): MailError {
  return new MailError(
    'store_corrupt',
    `the mailbox database ${path} ${reason}. It was not changed. ` +
      `Restore it from a copy made by m4a backup: stop the daemon, then m4a restore COPY (it keeps this file aside); ` +
      `m4a doctor --check-store tells more. To start an empty mailbox instead (every account and message is lost), move the file aside.`,
    { path, reason },
  );
}

/** SQLite's own verdicts on a file that is not a usable database. */
export function isCorruptionError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB');
}

function withPrivateUmask<R>(fn: () => R): R {
  // process.umask cannot be set in a worker; files made there keep the process's umask.
  const old = isMainThread ? process.umask(0o077) : null;
  try {
    return fn();
  } finally {
    if (old !== null) process.umask(old);
  }
}

/** FULL: SQLite syncs the log at every commit. NORMAL: only at checkpoints (still consistent after a
 *  power loss); the store then syncs the log itself before acknowledging (writer.ts). */
export type Synchronous = 'FULL' | 'NORMAL';

function configure(db: Database.Database, synchronous: Synchronous = 'FULL'): void {
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('foreign_keys = OFF');
  // The indexes of a large mailbox store (random idempotency keys, many to_keys) outgrow the
  // 2 MiB default cache; keeping their inner pages cached keeps a send's cost flat as it grows.
  db.pragma('cache_size = -65536');
}

function removeFile(p: string): void {
  try {
    unlinkSync(p);
  } catch {
    /* absent */
  }
}

function removeDb(path: string): void {
  for (const p of [path, ...SIBLINGS.map((s) => path + s)]) removeFile(p);
}

/** The file at `path` (through a symlink), or null when nothing is there at all: only that makes
 *  a new mailbox. A link to a missing target (a volume not mounted yet) or a path that cannot be
 *  examined is refused: a new mailbox there would silently hide the real one. */
function examine(path: string): Stats | null {
  let link: Stats;
  try {
    link = lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e; // EACCES, ENOTDIR, ELOOP: named as they are (`cannot start: …`), nothing made
  }
  let st = link;
  if (link.isSymbolicLink()) {
    try {
      st = statSync(path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      let target = '?';
      try {
        target = readlinkSync(path);
      } catch {
        /* replaced meanwhile */
      }
      const reason = `is a symbolic link to ${target}, which does not exist (a file system not mounted yet?)`;
      throw new MailError(
        'store_corrupt',
        `the mailbox database ${path} ${reason}. It was not changed and no new mailbox was made in its place. ` +
          `Mount or restore ${target} and start again, or point --store at the real file; to start an empty mailbox instead (every account and message is lost), remove the link.`,
        { path, reason },
      );
    }
  }
  if (!st.isFile()) throw storeCorrupt(path, `is not a regular file (${st.isDirectory() ? 'a directory' : 'a device, socket or pipe'})`);
  return st;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Builds a new mailbox at `<path>.new-<pid>` and links it into place: `path` is either absent or
 *  a complete mailbox, even after a crash. Leftovers of crashed builds by dead processes go. */
function createMailbox(path: string, timeout: number): void {
  const dir = dirname(path);
  const prefix = `${basename(path)}.new-`;
  for (const name of readdirSync(dir)) {
    const pid = Number(name.slice(prefix.length).split('-')[0]);
    if (name.startsWith(prefix) && Number.isInteger(pid) && pid !== process.pid && !alive(pid)) removeDb(join(dir, name.slice(0, prefix.length) + String(pid)));
  }
  const tmp = `${path}.new-${process.pid}`;
  removeDb(tmp);
  const db = new Database(tmp, { timeout });
  try {
    configure(db);
    migrate(db);
  } finally {
    db.close(); // the last connection checkpoints and deletes the -wal: one complete file remains
  }
  try {
    linkSync(tmp, path); // never replaces: a mailbox another process made first wins
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') {
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw e;
      renameSync(tmp, path); // a file system without hard links
    }
  }
  removeDb(tmp);
  try {
    const fd = openSync(dir, 'r');
    fsyncSync(fd); // the new name is durable before anything is written to it
    closeSync(fd);
  } catch {
    /* a directory that cannot be opened for fsync (not on Linux) */
  }
}

/** Opens the mailbox at `path` (or ':memory:'), migrated and configured, or throws store_corrupt. */
export function openDatabase(path: string, timeout: number, synchronous: Synchronous = 'FULL'): Database.Database {
  return withPrivateUmask(() => {
    if (path === ':memory:') {
      const db = new Database(path, { timeout });
      configure(db, synchronous);
      migrate(db);
      return db;
    }
    if (!examine(path)) {
      // A log without its database holds committed mail: replaying it onto a new file would mix them.
      if (existsSync(`${path}-wal`) && statSync(`${path}-wal`).size > 0) throw storeCorrupt(path, `is missing while its write-ahead log ${path}-wal is present`);
      for (const s of SIBLINGS) removeFile(path + s); // never `path`: it is absent
      createMailbox(path, timeout);
    }
    const problem = inspectDbFile(path);
    if (problem) throw storeCorrupt(path, problem);
    const hadSibling = SIBLINGS.map((s) => existsSync(path + s));
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { timeout, fileMustExist: true });
      // Read before anything writes (journal_mode would rewrite the header of a non-WAL file).
      if ((db.pragma('user_version', { simple: true }) as number) === 0) {
        const objects = (db.prepare('SELECT count(*) AS n FROM sqlite_master').get() as { n: number }).n;
        throw storeCorrupt(path, objects === 0 ? 'exists but holds no mailbox schema (emptied, or never a mailbox)' : 'is an SQLite database of something else, not a mailbox');
      }
      configure(db, synchronous);
      migrate(db);
      return db;
    } catch (err) {
      db?.close();
      if (!(err instanceof MailError) && !isCorruptionError(err)) throw err;
      // The -wal/-shm this refused open created hold nothing: leave the directory as it was.
      SIBLINGS.forEach((s, i) => {
        try {
          if (!hadSibling[i] && (s === '-shm' || statSync(path + s).size === 0)) unlinkSync(path + s);
        } catch {
          /* absent */
        }
      });
      throw err instanceof MailError ? err : storeCorrupt(path, `is damaged (SQLite: ${(err as Error).message})`);
    }
  });
}
