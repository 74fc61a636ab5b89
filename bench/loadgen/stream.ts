// Fixed concurrency on the stream door: `connections` Unix-socket connections, each hello'd first
// (not timed), each keeping `inFlight` requests in flight (1: the HTTP senders' shape, the fair
// comparison; more: requests pipelined on one connection, labelled so), for a duration or a count.
import { StreamConn, openMany } from './stream-conn.js';
import { progressReporter } from './http.js';
import { msSince, nowNs, summarize } from '../lib/stats.js';
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
  const cap = s.count ?? Infinity;
  const lat: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let started = 0;
  const total = s.count ?? Math.round((s.durationMs ?? 0) / 100);
  const tick = progressReporter(total, s.count ? 'requests' : 'ds');
  const t0 = nowNs();
  const stopAt = s.durationMs !== undefined ? Date.now() + s.durationMs : Infinity;
  const lane = async (c: StreamConn): Promise<void> => {
    while (started < cap && Date.now() < stopAt) {
      started++;
      const t = nowNs();
      try {
        // No per-request timer on the hot path: the harness bounds the whole process in time.
        await c.call(s.op, nextInput(), 0);
        lat.push(msSince(t));
      } catch (e) {
        errors++;
        firstError ??= String(e);
        if (/closed/.test(String(e))) return;
      }
      tick(s.count ? lat.length : Math.round(msSince(t0) / 100));
    }
  };
  await Promise.all(conns.flatMap((c) => Array.from({ length: inFlight }, () => lane(c))));
  const elapsedMs = msSince(t0);
  for (const c of conns) c.close();
  return {
    count: lat.length,
    errors,
    ...(firstError ? { firstError } : {}),
    elapsedMs: Math.round(elapsedMs),
    rps: Math.round((lat.length / elapsedMs) * 1000),
    latency: summarize(lat),
    connections: s.connections,
    inFlight,
  };
}
