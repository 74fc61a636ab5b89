// Side by side, in one run: durable sends to real daemons that differ only in M4A_SQLITE_SYNC:
// 'full' (SQLite's own sync on the event loop, the old path), 'barrier' (the default: our fsync
// off the loop, checkpoints on a thread), 'barrier-inline' (our fsync, SQLite's checkpoints inside
// COMMIT). Rounds rotate the order so the machine's noise falls on all. Reports each round and,
// per concurrency, each mode's median and its ratio to the first mode's.
//   node --import tsx bench/probes/commit-sync-ab.ts [rounds=3] [seconds=2] [concurrencies=1,64] [modes=full,barrier]
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon, type Daemon } from '../lib/daemon.js';
import { cleanupAll, cpuSeconds, runJson, tempDir } from '../lib/procs.js';
import type { FixedResult } from '../loadgen/fixed.js';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function daemon(mode: string): Promise<Daemon> {
  const dir = tempDir(`sync-${mode}`);
  mkdirSync(join(dir, 'data'));
  // startDaemon passes this process's environment on to the daemon it spawns.
  const before = process.env.M4A_SQLITE_SYNC;
  process.env.M4A_SQLITE_SYNC = mode;
  try {
    return await startDaemon(join(dir, 'data'));
  } finally {
    if (before === undefined) delete process.env.M4A_SQLITE_SYNC;
    else process.env.M4A_SQLITE_SYNC = before;
  }
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 3);
  const seconds = Number(process.argv[3] ?? 2);
  const concurrencies = (process.argv[4] ?? '1,64').split(',').map(Number);
  const modes = (process.argv[5] ?? 'full,barrier').split(',');
  const ds = new Map<string, { d: Daemon; token: string }>();
  for (const m of modes) {
    const d = await daemon(m);
    const s = await d.accounts(['ab-s', ...Array.from({ length: 8 }, (_, i) => `ab-r${i}`)], 4);
    ds.set(m, { d, token: s.get('ab-s') as string });
  }
  const bodies = Array.from({ length: 8 }, (_, i) => JSON.stringify({ to: `ab-r${i}`, subject: `ab ${i}`, body: 'x'.repeat(200) }));
  for (const c of concurrencies) {
    const rps = new Map(modes.map((m) => [m, [] as number[]]));
    const p50 = new Map(modes.map((m) => [m, [] as number[]]));
    const cpu = new Map(modes.map((m) => [m, [] as number[]]));
    for (let r = 0; r < rounds; r++) {
      // Rotate which goes first, so a trend in the machine's load favours none.
      const order = modes.map((_, i) => modes[(i + r) % modes.length] as string);
      for (const m of order) {
        const { d, token } = ds.get(m)!;
        const cpu0 = cpuSeconds(d.pid);
        const res = await runJson<FixedResult>('loadgen.ts', { mode: 'fixed', port: d.port, path: '/mail/send', token, body: bodies, concurrency: c, durationMs: seconds * 1000 });
        // The daemon's CPU per send (all its threads): less at the mercy of the machine's load.
        const us = ((cpuSeconds(d.pid) - cpu0) * 1e6) / Math.max(1, res.count);
        cpu.get(m)!.push(us);
        rps.get(m)!.push(res.rps);
        p50.get(m)!.push(res.latency.p50);
        process.stdout.write(
          `${c} senders, round ${r + 1}, ${m.padEnd(14)}: ${Math.round(res.rps)}/s, p50 ${res.latency.p50} ms, p99 ${res.latency.p99} ms, ${Math.round(us)} µs CPU per send${res.errors ? `, ${res.errors} errors` : ''}\n`,
        );
      }
    }
    const base = median(rps.get(modes[0] as string)!);
    const parts = modes.map(
      (m) =>
        `${m} ${Math.round(median(rps.get(m)!))}/s (${(median(rps.get(m)!) / base).toFixed(2)}×, p50 ${median(p50.get(m)!)} ms, ${Math.round(median(cpu.get(m)!))} µs CPU/send)`,
    );
    process.stdout.write(`${c} senders, medians: ${parts.join(' · ')}\n`);
  }
  for (const { d } of ds.values()) await d.stop();
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void cleanupAll().then(() => process.exit()));
