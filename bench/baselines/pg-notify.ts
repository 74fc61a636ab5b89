// The floor of a cross-daemon wake on PostgreSQL: the raw LISTEN/NOTIFY round trip with postgres.js
// (the daemon's own client), two connections to the run's database, one notification at a time:
// from the NOTIFY's start (and from its answer) to the listener's callback.
import postgres from 'postgres';
import { finish, readSpec } from '../lib/spec.js';
import { nowNs, summarize } from '../lib/stats.js';
import { sleep } from '../lib/procs.js';
import { progressReporter } from '../loadgen/http.js';
import type { WakeResult } from '../loadgen/wake.js';

interface Spec {
  url: string;
  rounds: number;
  settleMs: number;
}

async function main(s: Spec): Promise<WakeResult> {
  const listener = postgres(s.url, { max: 1, onnotice: () => undefined });
  const notifier = postgres(s.url, { max: 1, onnotice: () => undefined });
  let got: ((payload: string, at: bigint) => void) | null = null;
  const channel = 'm4a_bench_wake';
  await listener.listen(channel, (payload) => got?.(payload, nowNs()));
  await notifier`SELECT 1`;
  const ackToWake: number[] = [];
  const sendToWake: number[] = [];
  const send: number[] = [];
  const warm = 20;
  const tick = progressReporter(s.rounds, 'rounds');
  try {
    for (let i = 0; i < warm + s.rounds; i++) {
      let tWake = 0n;
      const woken = new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('no notification within 10 s')), 10_000);
        got = (payload, at) => {
          if (payload !== String(i)) return;
          clearTimeout(t);
          tWake = at;
          resolve();
        };
      });
      await sleep(s.settleMs);
      const t0 = nowNs();
      await notifier`SELECT pg_notify(${channel}, ${String(i)})`;
      const tAck = nowNs();
      await woken;
      if (i < warm) continue;
      ackToWake.push(Number(tWake - tAck) / 1e6);
      sendToWake.push(Number(tWake - t0) / 1e6);
      send.push(Number(tAck - t0) / 1e6);
      tick(i + 1 - warm);
    }
  } finally {
    await listener.end({ timeout: 2 });
    await notifier.end({ timeout: 2 });
  }
  return { rounds: s.rounds, ackToWake: summarize(ackToWake), sendToWake: summarize(sendToWake), send: summarize(send), empty: 0 };
}

finish(main(readSpec<Spec>()));
