// The checkpoint thread (checkpointer.ts starts it): its own connection copies the log into the
// database with PASSIVE checkpoints, which never wait for the writer and never make it wait, so
// the fsyncs of a checkpoint (the log before copying, the database after) happen here and not on
// the event loop. Every `intervalMs` it looks at the log's length in the wal-index (the -shm
// file, https://www.sqlite.org/walformat.html) and runs a pass once `passFrames` wait to be
// copied, as SQLite's own wal_autocheckpoint would, or once the log reached `restartFrames` (the
// report makes the writer hold its commits and ask for 'catch-up', which copies the rest, so the
// writer's next commit finds the log fully copied and starts it over).
import Database from 'better-sqlite3';
import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';

export interface CheckpointWorkerData {
  path: string;
  /** Int32Array over it: [0] commits so far (the writer counts). */
  commits: SharedArrayBuffer;
  intervalMs: number;
  passFrames: number;
  restartFrames: number;
}

export interface CheckpointReport {
  kind: 'pass' | 'caught-up';
  /** Frames in the log and frames copied into the database after this pass. */
  log: number;
  checkpointed: number;
  busy: boolean;
  /** The log header's checkpoint sequence number: it changes each time the log is started over. */
  generation: number;
}

const data = workerData as CheckpointWorkerData;
const db = new Database(data.path, { fileMustExist: true, timeout: 0 });
// A checkpoint syncs only if its connection's level asks for it: never less than NORMAL here.
db.pragma('synchronous = FULL');
const commits = new Int32Array(data.commits);
const buf = Buffer.alloc(100);
const le = endianness() === 'LE';

/** The first `n` bytes of a file, or null. */
function head(path: string, n: number): Buffer | null {
  try {
    const fd = openSync(path, 'r');
    try {
      return readSync(fd, buf, 0, n, 0) === n ? buf : null;
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
}

/** Log header bytes 12..15, big-endian: the checkpoint sequence number; -1 if unreadable. */
function generation(): number {
  return head(`${data.path}-wal`, 16)?.readUInt32BE(12) ?? -1;
}

/** From the wal-index (native byte order): mxFrame at 16, nBackfill at 96. Read without its
 *  locks, so only a hint of when to run a pass; null if unreadable (then a pass runs). */
function lengths(): { log: number; copied: number } | null {
  const b = head(`${data.path}-shm`, 100);
  if (!b) return null;
  return le ? { log: b.readUInt32LE(16), copied: b.readUInt32LE(96) } : { log: b.readUInt32BE(16), copied: b.readUInt32BE(96) };
}

function checkpoint(kind: CheckpointReport['kind']): void {
  const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
  const report: CheckpointReport = { kind, log: r?.log ?? 0, checkpointed: r?.checkpointed ?? 0, busy: (r?.busy ?? 1) !== 0, generation: generation() };
  parentPort?.postMessage(report);
}

let seen = -1; // the first look counts what was committed before this thread started
const timer = setInterval(() => {
  const now = Atomics.load(commits, 0);
  if (now === seen) return;
  const l = lengths();
  if (l && l.log - l.copied < data.passFrames && l.log < data.restartFrames) return;
  seen = now;
  checkpoint('pass');
}, data.intervalMs);

parentPort?.on('message', (m: unknown) => {
  if (m === 'catch-up') {
    checkpoint('caught-up');
    // The next pass waits for a commit after this: one running meanwhile would hold the read
    // locks the writer needs to start the log over.
    seen = Atomics.load(commits, 0);
  }
  if (m !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
