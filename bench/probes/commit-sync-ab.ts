// Side by side, in one run: durable sends to two real daemons, one with SQLite's own sync on the
// event loop (M4A_SQLITE_SYNC=full, the old path) and one with the durability barrier (the
// default), rounds alternating so the machine's noise falls on both. Reports each round and the
// ratio of the medians (barrier / full) per concurrency.
//   node --import tsx bench/probes/commit-sync-ab.ts [rounds=3] [seconds=2] [concurrencies=1,64]
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon, type Daemon } from '../lib/daemon.js';
import { cleanupAll, runJson, tempDir } from '../lib/procs.js';
import type { FixedResult } from '../loadgen/fixed.js';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function daemon(mode: 'full' | 'barrier'): Promise<Daemon> {
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
  const ds = { full: await daemon('full'), barrier: await daemon('barrier') };
  const tokens = { full: '', barrier: '' };
  for (const m of ['full', 'barrier'] as const) {
    const s = await ds[m].accounts(['ab-s', ...Array.from({ length: 8 }, (_, i) => `ab-r${i}`)], 4);
    tokens[m] = s.get('ab-s') as string;
  }
  const bodies = Array.from({ length: 8 }, (_, i) => JSON.stringify({ to: `ab-r${i}`, subject: `ab ${i}`, body: 'x'.repeat(200) }));
  for (const c of concurrencies) {
    const rps = { full: [] as number[], barrier: [] as number[] };
    const p50 = { full: [] as number[], barrier: [] as number[] };
    for (let r = 0; r < rounds; r++) {
      // Alternate which goes first, so a trend in the machine's load favours neither.
      const order = r % 2 === 0 ? (['full', 'barrier'] as const) : (['barrier', 'full'] as const);
      for (const m of order) {
        const res = await runJson<FixedResult>('loadgen.ts', {
          mode: 'fixed',
          port: ds[m].port,
          path: '/mail/send',
          token: tokens[m],
          body: bodies,
          concurrency: c,
          durationMs: seconds * 1000,
        });
        rps[m].push(res.rps);
        p50[m].push(res.latency.p50);
        process.stdout.write(
          `${c} senders, round ${r + 1}, ${m.padEnd(7)}: ${Math.round(res.rps)}/s, p50 ${res.latency.p50} ms, p99 ${res.latency.p99} ms${res.errors ? `, ${res.errors} errors` : ''}\n`,
        );
      }
    }
    const ratio = median(rps.barrier) / median(rps.full);
    process.stdout.write(
      `${c} senders: median ${Math.round(median(rps.full))}/s full, ${Math.round(median(rps.barrier))}/s barrier: ratio ${ratio.toFixed(2)}; p50 ${median(p50.full)} vs ${median(p50.barrier)} ms\n`,
    );
  }
  await ds.full.stop();
  await ds.barrier.stop();
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void cleanupAll().then(() => process.exit()));
