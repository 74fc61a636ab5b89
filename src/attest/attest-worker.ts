// The attestation worker thread: runs batches of /proc lookups off the daemon's event loop.
// Protocol: the parent posts { id, conns }, the worker answers { id, results, stats }.
import { parentPort, workerData } from 'node:worker_threads';
import { createBatchAttestor, type BatchOptions } from './batch.js';
import type { ConnectionTuple } from './types.js';

const batch = createBatchAttestor(workerData as BatchOptions);
parentPort?.on('message', (m: { id: number; conns: ConnectionTuple[] }) => {
  parentPort?.postMessage({ id: m.id, results: batch.run(m.conns), stats: batch.stats() });
});
