// Which threads of the daemon sync, and how long its event loop spends in sync calls: a real
// daemon per M4A_SQLITE_SYNC mode under `strace -f -T` while `concurrency` keep-alive senders send
// for `seconds`. The main thread's id is the process id. strace slows every traced call, so the
// sends/s here are not throughput figures; the counts and the split between threads are the point.
//   node --import tsx bench/probes/sync-threads.ts [seconds=3] [concurrency=64] [modes=full,barrier,barrier-inline]
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../lib/daemon.js';
import { cleanupAll, runJson, sleep, stopChild, tempDir, track } from '../lib/procs.js';
import type { FixedResult } from '../loadgen/fixed.js';

async function measure(mode: string, seconds: number, concurrency: number): Promise<string> {
  const dir = tempDir(`sync-threads-${mode}`);
  mkdirSync(join(dir, 'data'));
  const before = process.env.M4A_SQLITE_SYNC;
  process.env.M4A_SQLITE_SYNC = mode; // startDaemon passes the environment on
  const d = await startDaemon(join(dir, 'data')).finally(() => {
    if (before === undefined) delete process.env.M4A_SQLITE_SYNC;
    else process.env.M4A_SQLITE_SYNC = before;
  });
  try {
    const secrets = await d.accounts(['st-s', ...Array.from({ length: 8 }, (_, i) => `st-r${i}`)], 4);
    const bodies = Array.from({ length: 8 }, (_, i) => JSON.stringify({ to: `st-r${i}`, subject: 'sync', body: 'x'.repeat(200) }));
    const out = join(dir, 'strace.txt');
    const st = track(spawn('strace', ['-f', '-T', '-e', 'trace=fsync,fdatasync', '-o', out, '-p', String(d.pid)], { stdio: 'ignore' }));
    await sleep(700);
    const r = await runJson<FixedResult>('loadgen.ts', {
      mode: 'fixed',
      port: d.port,
      path: '/mail/send',
      token: secrets.get('st-s'),
      body: bodies,
      concurrency,
      durationMs: seconds * 1000,
    });
    await sleep(300);
    await stopChild(st, 5000, 'SIGINT');
    const main = { n: 0, s: 0 };
    const others = { n: 0, s: 0, threads: new Set<string>() };
    for (const line of readFileSync(out, 'utf8').split('\n')) {
      const m = /^(\d+)\s+(?:fsync|fdatasync)\(.*= 0 <([\d.]+)>/.exec(line);
      if (!m) continue;
      const t = m[1] === String(d.pid) ? main : others;
      t.n++;
      t.s += Number(m[2]);
      if (t === others) others.threads.add(m[1] as string);
    }
    return (
      `${mode.padEnd(14)} ${r.count} sends: event loop ${main.n} syncs, ${Math.round(main.s * 1000)} ms in them (${((main.s / (seconds || 1)) * 100).toFixed(1)}% of the run); ` +
      `other threads (${others.threads.size}) ${others.n} syncs, ${Math.round(others.s * 1000)} ms; ${((main.n + others.n) / Math.max(1, r.count)).toFixed(2)} syncs per send`
    );
  } finally {
    await d.stop();
  }
}

async function main(): Promise<void> {
  if (spawnSync('strace', ['-V']).status !== 0) throw new Error('needs strace');
  const seconds = Number(process.argv[2] ?? 3);
  const concurrency = Number(process.argv[3] ?? 64);
  const modes = (process.argv[4] ?? 'full,barrier,barrier-inline').split(',');
  for (const m of modes) process.stdout.write(`${await measure(m, seconds, concurrency)}\n`);
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void cleanupAll().then(() => process.exit()));
