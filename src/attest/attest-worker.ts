// The attestation worker thread: runs batches of /proc lookups off the daemon's event loop.
// Protocol: the parent posts { id, conns, peers }, the worker answers { id, results, stats } (the
// results of conns, then of peers).
import { parentPort, workerData } from 'node:worker_threads';
import { createBatchAttestor, type BatchOptions } from './batch.js';
import type { ConnectionTuple, PeerQuery } from './types.js';

const batch = createBatchAttestor(workerData as BatchOptions);
parentPort?.on('message', (m: { id: number; conns: ConnectionTuple[]; peers?: PeerQuery[] }) => {
  parentPort?.postMessage({ id: m.id, results: batch.run(m.conns, m.peers ?? []), stats: batch.stats() });
});
