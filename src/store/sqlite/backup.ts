// `m4a backup` and `m4a restore` for a SQLite mailbox. The backup reads the live file through its
// own connection with SQLite's online backup API, all pages in one step: that step holds one read
// snapshot, so it sees a committed prefix of the mail and never half a commit, while the daemon
// keeps writing to the log (WAL readers do not block writers; the daemon's PASSIVE checkpoints stop
// short of what the snapshot reads, and the log is reset only after it ends). A copy made in
// several steps would restart whenever the daemon commits.
import Database from 'better-sqlite3';
import { chmodSync, closeSync, copyFileSync, existsSync, fsyncSync, openSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { MailError } from '../../wire/errors.js';
import { inspectDbFile } from './file-check.js';
import { MIGRATIONS } from './migrations.js';

export interface BackupReport {
  path: string;
  bytes: number;
  headSeq: number;
  messages: number;
  migration: number;
}

function fsyncPath(p: string): void {
  try {
    const fd = openSync(p, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    /* a directory that cannot be opened for fsync (not on Linux) */
  }
}

/** What a mailbox file holds, or the reason it is not one this build can use. */
export function describeMailbox(path: string): { migration: number; headSeq: number; messages: number } {
  const problem = inspectDbFile(path);
  if (problem) throw new MailError('store_corrupt', `${path} ${problem}`, { path, reason: problem });
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    const migration = db.pragma('user_version', { simple: true }) as number;
    const hasMessages = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'messages'").get() !== undefined;
    if (migration === 0 || !hasMessages) throw new MailError('store_corrupt', `${path} is not a mailbox (no mailbox schema)`, { path, reason: 'not a mailbox' });
    if (migration > MIGRATIONS.length)
      throw new MailError('store_corrupt', `${path} has schema version ${migration}, newer than this build's ${MIGRATIONS.length}: use a newer m4a`, {
        path,
        reason: 'newer schema',
      });
    const check = db.pragma('integrity_check', { simple: true }) as string;
    if (check !== 'ok') throw new MailError('store_corrupt', `${path} is damaged (integrity_check: ${check})`, { path, reason: 'damaged' });
    const headSeq = (db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").get() as { seq: number } | undefined)?.seq ?? 0;
    const messages = (db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n;
    return { migration, headSeq, messages };
  } catch (err) {
    if (err instanceof MailError) throw err;
    throw new MailError('store_corrupt', `${path} is not a usable SQLite database (${(err as Error).message})`, { path, reason: 'not a database' });
  } finally {
    db?.close();
  }
}

/** Copies the live mailbox at `source` to `out` (mode 0600; built beside it, checked, then renamed
 *  into place, so `out` is never a half-written copy). */
export async function backupSqlite(source: string, out: string): Promise<BackupReport> {
  if (!existsSync(source)) throw new MailError('store_corrupt', `no mailbox at ${source}`, { path: source, reason: 'missing' });
  const tmp = join(dirname(out), `.${basename(out)}.partial-${process.pid}`);
  const db = new Database(source, { readonly: true, fileMustExist: true, timeout: 5000 });
  try {
    const fd = openSync(tmp, 'wx', 0o600); // SQLite writes into it with the mode it has
    closeSync(fd);
    // One step for every page: one read snapshot (see the top of the file).
    await db.backup(tmp, { progress: () => 1 << 30 });
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      /* not made */
    }
    throw err;
  } finally {
    db.close();
  }
  try {
    // A self-contained file: no -wal beside it to lose when it is copied elsewhere.
    const b = new Database(tmp);
    try {
      b.pragma('journal_mode = DELETE');
    } finally {
      b.close();
    }
    chmodSync(tmp, 0o600);
    const d = describeMailbox(tmp);
    fsyncPath(tmp);
    renameSync(tmp, out);
    fsyncPath(dirname(out));
    const { size } = statSync(out);
    return { path: out, bytes: size, ...d };
  } catch (err) {
    for (const p of [tmp, `${tmp}-journal`, `${tmp}-wal`, `${tmp}-shm`]) {
      try {
        unlinkSync(p);
      } catch {
        /* absent */
      }
    }
    throw err;
  }
}

export interface RestoreReport {
  path: string;
  /** Where the replaced database went (null: there was none). */
  keptAs: string | null;
  migration: number;
  headSeq: number;
  messages: number;
}

/** Puts the backup `file` in place of the mailbox at `target`. The caller holds the data
 *  directory's lock (no daemon runs on it). The replaced database and its log are moved aside, not
 *  deleted. */
export function restoreSqlite(file: string, target: string, now = new Date()): RestoreReport {
  const d = describeMailbox(file);
  const dir = dirname(target);
  const tmp = join(dir, `.${basename(target)}.restoring-${process.pid}`);
  copyFileSync(file, tmp);
  chmodSync(tmp, 0o600);
  fsyncPath(tmp);
  let keptAs: string | null = null;
  if (['', '-wal', '-shm'].some((s) => existsSync(target + s))) {
    keptAs = `${target}.before-restore-${now.toISOString().replace(/[:.]/g, '-')}`;
    // The log moves with its database: together they are the mailbox as it was.
    for (const s of ['', '-wal', '-shm']) if (existsSync(target + s)) renameSync(target + s, keptAs + s);
  }
  renameSync(tmp, target);
  fsyncPath(dir);
  return { path: target, keptAs, ...d };
}
