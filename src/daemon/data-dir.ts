// The data directory: mode 0700, a host id made once, a lock so one daemon owns it, the operator
// credential (0600) and daemon.json, which tells clients where the daemon listens.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

import { DATA_FILES as FILES } from '../wire/locations.js';

export { FILES };

export function ensureDataDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
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
