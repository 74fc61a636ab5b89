// The checkpoint thread (checkpointer.ts starts it): its own connection copies the log into the
// database with PASSIVE checkpoints, which never wait for the writer and never make it wait, so
// the fsyncs of a checkpoint (the log before copying, the database after) happen here and not on
// the event loop. A pass runs every `intervalMs` when the writer committed since the last one;
// 'catch-up' (sent while the writer holds its commits) copies the rest, so the writer's next
// commit finds the log fully copied and starts it over.
import Database from 'better-sqlite3';
import { closeSync, openSync, readSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

export interface CheckpointWorkerData {
  path: string;
  /** Int32Array over it: [0] commits so far (the writer counts). */
  commits: SharedArrayBuffer;
  intervalMs: number;
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
const header = Buffer.alloc(16);

/** Bytes 12..15 of the log header, big-endian (SQLite's WAL format); -1 if unreadable. */
function generation(): number {
  try {
    const fd = openSync(`${data.path}-wal`, 'r');
    try {
      return readSync(fd, header, 0, 16, 0) === 16 ? header.readUInt32BE(12) : -1;
    } finally {
      closeSync(fd);
    }
  } catch {
    return -1;
  }
}
let seen = -1; // the first pass copies what was committed before this thread started

function checkpoint(kind: CheckpointReport['kind']): CheckpointReport {
  const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
  const report: CheckpointReport = { kind, log: r?.log ?? 0, checkpointed: r?.checkpointed ?? 0, busy: (r?.busy ?? 1) !== 0, generation: generation() };
  parentPort?.postMessage(report);
  return report;
}

const timer = setInterval(() => {
  const now = Atomics.load(commits, 0);
  if (now === seen) return;
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
