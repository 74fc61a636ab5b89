// The data directory: mode 0700 with every file in it 0600, a host id made once, a lock so one
// daemon owns it, the operator credential and daemon.json, which tells clients where the daemon listens.
import {
  chmodSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { DATA_FILES as FILES } from '../wire/locations.js';

export { FILES };

/** The data directory is unfit and the daemon cannot fix it (owned by another user, a file it
 *  cannot tighten): `m4a serve` refuses to start, naming the fix. */
export class DataDirUnsafe extends Error {}

/** What the start tightened: paths with their mode before. */
export type Tightened = { path: string; mode: string }[];

/** Makes the data directory 0700 and everything in it 0600 (directories 0700): a directory of this
 *  user that is too wide is tightened (the caller logs it); one of another user, or holding an entry
 *  of another user or a symlink, is refused. */
export function ensureDataDir(dir: string): Tightened {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const uid = process.getuid?.();
  const st = statSync(dir);
  if (!st.isDirectory()) throw new DataDirUnsafe(`the data directory ${dir} is not a directory`);
  if (uid !== undefined && st.uid !== uid)
    throw new DataDirUnsafe(
      `the data directory ${dir} belongs to uid ${st.uid}, not to this user (uid ${uid}): other users could read or replace the mail. ` +
        `Use a directory of your own (--data-dir or M4A_DATA_DIR), or give it to this user: chown -R ${uid} ${dir} && chmod 700 ${dir}`,
    );
  // Every entry is checked before anything is tightened, so a refused start changes nothing. While
  // the directory was open to others, another user could have planted a file of their own or a
  // link (mail.db -> their file): the daemon would read and write through it, so both are refused.
  const entries: { path: string; st: Stats }[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      let s: Stats;
      try {
        s = lstatSync(p); // a symlink is not followed
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // a racing start's temporary file
        throw e;
      }
      if (s.isSymbolicLink())
        throw new DataDirUnsafe(
          `${p} is a symbolic link (to ${linkTarget(p)}): the daemon keeps no links in its data directory, and one may have been planted by another user while the directory was open. ` +
            `Check it, then remove it (rm ${p}) or put the real file in its place; to keep the mailbox elsewhere, use --data-dir or --store sqlite:<path>`,
        );
      if (uid !== undefined && s.uid !== uid)
        throw new DataDirUnsafe(
          `${p} belongs to uid ${s.uid}, not to this user (uid ${uid}): another user may have planted it while the directory was open. ` +
            `Check it, then remove it (rm -r ${p}) or give it to this user: chown -R ${uid} ${p}`,
        );
      entries.push({ path: p, st: s });
      if (s.isDirectory()) walk(p);
    }
  };
  walk(dir);
  const out: Tightened = [];
  const tighten = (path: string, mode: number, want: number): void => {
    if ((mode & 0o077) === 0) return;
    try {
      chmodSync(path, want);
    } catch (e) {
      throw new DataDirUnsafe(
        `${path} is readable by other users (mode ${(mode & 0o777).toString(8)}) and cannot be tightened (${(e as NodeJS.ErrnoException).code}): chmod ${want.toString(8)} ${path} as its owner, or remove it`,
      );
    }
    out.push({ path, mode: (mode & 0o777).toString(8) });
  };
  tighten(dir, st.mode, 0o700);
  for (const { path, st: s } of entries) {
    if (s.isDirectory()) tighten(path, s.mode, 0o700);
    else if (s.isFile()) tighten(path, s.mode, 0o600);
  }
  return out;
}

function linkTarget(p: string): string {
  try {
    return readlinkSync(p);
  } catch {
    return '?';
  }
}

export function loadHostId(dir: string): string {
  const p = join(dir, FILES.hostId);
  if (existsSync(p)) return readFileSync(p, 'utf8').trim();
  const id = randomBytes(16).toString('hex');
  writeSecretFile(p, `${id}\n`);
  return id;
}

/** Written atomically with mode 0600 from the start (never world-readable for a moment). */
export function writeSecretFile(path: string, content: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  renameSync(tmp, path);
}

function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function holderAlive(pid: number, startTime: string | null): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return startTime === null || startTimeOf(pid) === null || startTimeOf(pid) === startTime;
}

export class DataDirLocked extends Error {}

/** Takes the directory's lock, or throws DataDirLocked naming the daemon that holds it. */
export function acquireLock(dir: string): () => void {
  const p = join(dir, FILES.lock);
  const mine = JSON.stringify({ pid: process.pid, start: startTimeOf(process.pid) });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(p, 'wx', 0o600);
      writeSync(fd, mine);
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(p, 'utf8') === mine) unlinkSync(p);
        } catch {
          /* already gone */
        }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      let holder: { pid?: number; start?: string | null } = {};
      try {
        holder = JSON.parse(readFileSync(p, 'utf8')) as typeof holder;
      } catch {
        /* torn or empty: treat as stale */
      }
      if (holder.pid && holder.pid !== process.pid && holderAlive(holder.pid, holder.start ?? null)) {
        throw new DataDirLocked(`another mail4agent daemon (pid ${holder.pid}) is already using ${dir}`);
      }
      try {
        unlinkSync(p);
      } catch {
        /* a racing daemon removed it first */
      }
    }
  }
  throw new DataDirLocked(`could not take the lock on ${dir}`);
}
