// Equal durability, checked rather than assumed: strace counts fsync/fdatasync calls of each
// server while one writer writes, so the doc can state how many syncs stand behind each
// acknowledged write. Needs strace; skipped without it. (strace slows the traced process: these
// runs count syscalls, they are not timed figures.)
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Ctx, ScenarioResult, Row } from '../lib/context.js';
import type { FixedResult } from '../loadgen/fixed.js';
import { sleep, tempDir, track, stopChild } from '../lib/procs.js';

interface Count {
  system: string;
  writes: number;
  syncs: Record<string, number>;
  perWrite: number;
}

async function traced(pid: number, work: () => Promise<number>): Promise<{ writes: number; syncs: Record<string, number> }> {
  const out = join(tempDir('strace'), 'strace.txt');
  const st = track(spawn('strace', ['-f', '-c', '-e', 'trace=fsync,fdatasync,sync_file_range,msync,syncfs', '-o', out, '-p', String(pid)], { stdio: 'ignore' }));
  await sleep(700);
  const writes = await work();
  await sleep(300);
  await stopChild(st, 5000, 'SIGINT');
  const syncs: Record<string, number> = {};
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    const name = f[f.length - 1];
    if (f.length >= 5 && name && /^(fsync|fdatasync|sync_file_range|msync|syncfs)$/.test(name)) syncs[name] = Number(f[3]);
  }
  return { writes, syncs };
}

export async function durability(ctx: Ctx): Promise<ScenarioResult> {
  if (spawnSync('strace', ['-V']).status !== 0) return { name: 'durability', data: { skipped: 'no strace' }, rows: [], targets: [] };
  const z = ctx.sizes;
  const d = await ctx.daemon();
  const [sender] = await ctx.accounts(['bench-s', 'bench-r0']);
  const counts: Count[] = [];
  const add = (system: string, r: { writes: number; syncs: Record<string, number> }): void => {
    const total = Object.values(r.syncs).reduce((a, b) => a + b, 0);
    counts.push({ system, ...r, perWrite: r.writes ? Math.round((total / r.writes) * 100) / 100 : NaN });
  };
  const body = JSON.stringify({ to: 'bench-r0', subject: 'durability', body: 'x'.repeat(200) });
  add(
    // M4A_SQLITE_SYNC=full runs the daemon on the old path (SQLite's sync inside COMMIT).
    process.env.M4A_SQLITE_SYNC === 'full' ? 'm4a (SQLite WAL, synchronous=FULL)' : 'm4a (SQLite WAL, synchronous=NORMAL + fsync of the log before each acknowledgement)',
    await traced(
      d.pid,
      async () =>
        (
          await ctx.loadgen<FixedResult>(
            { mode: 'fixed', port: d.port, path: '/mail/send', token: sender, body, concurrency: 1, durationMs: z.durabilityMs },
            'durability · m4a under strace',
          )
        ).count,
    ),
  );
  for (const name of ['redis-aof-always', 'redis-default', 'nats-jetstream'] as const) {
    const srv = await ctx.server(name);
    const script = name.startsWith('redis') ? 'redis-load.ts' : 'nats-load.ts';
    add(
      name,
      await traced(
        srv.pid,
        async () =>
          (await ctx.baseline<FixedResult>(script, { mode: 'throughput', port: srv.port, concurrency: 1, durationMs: z.durabilityMs }, `durability · ${name} under strace`)).count,
      ),
    );
  }
  const rows: Row[] = counts.map((c) => ({
    scenario: 'durability check (strace, 1 writer)',
    system: c.system,
    metric: 'syncs per acknowledged write',
    value: `${c.perWrite} (${
      Object.entries(c.syncs)
        .map(([k, v]) => `${v} ${k}`)
        .join(', ') || 'no sync calls'
    } for ${c.writes} writes)`,
  }));
  return { name: 'durability', data: { counts }, rows, targets: [] };
}
