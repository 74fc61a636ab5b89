// Fixed concurrency on the stream door: `connections` Unix-socket connections, each hello'd first
// (not timed), each keeping `inFlight` requests in flight (1: the HTTP senders' shape, the fair
// comparison; more: requests pipelined on one connection, labelled so), for a duration or a count.
import { StreamConn, openMany } from './stream-conn.js';
import { closedLoop } from './closed-loop.js';
import type { FixedResult } from './fixed.js';

export interface StreamFixedSpec {
  mode: 'stream-fixed';
  socket: string;
  token: string;
  op: string;
  /** One input for every request, or a list used round robin. */
  input?: unknown;
  inputs?: unknown[];
  connections: number;
  inFlight?: number;
  durationMs?: number;
  count?: number;
  warmupPerConnection?: number;
}

export async function runStreamFixed(s: StreamFixedSpec): Promise<FixedResult & { connections: number; inFlight: number }> {
  const inFlight = s.inFlight ?? 1;
  const conns = await openMany(s.socket, s.connections, () => s.token);
  const inputs = s.inputs ?? [s.input];
  let ii = 0;
  const nextInput = (): unknown => inputs[ii++ % inputs.length];
  // Warm up: every connection used (its session registered), JIT warm.
  const warm = s.warmupPerConnection ?? 3;
  for (let i = 0; i < warm; i++) await Promise.all(conns.map((c) => c.call(s.op, nextInput())));
  // Lane i keeps one request in flight on connection ⌊i / inFlight⌋. No per-request timer on the
  // hot path: the harness bounds the whole process in time.
  const r = await closedLoop(
    s,
    conns.length * inFlight,
    async (i) => {
      await (conns[Math.floor(i / inFlight)] as StreamConn).call(s.op, nextInput(), 0);
      return undefined;
    },
    (e) => /closed/.test(String(e)),
  );
  for (const c of conns) c.close();
  return { ...r, connections: s.connections, inFlight };
}
