// 1. Send throughput (acknowledged, durable) with 1, 8 and 64 concurrent keep-alive senders, side by
// side with the node:http echo (the door alone), raw better-sqlite3 (the store alone), Redis Streams
// XADD (appendfsync always, and at defaults) and NATS JetStream publish.
import { join } from 'node:path';
import type { Ctx, ScenarioResult, Row, Target } from '../lib/context.js';
import type { FixedResult } from '../loadgen/fixed.js';
import { num, pct, ratio } from '../lib/format.js';

interface SqliteRaw {
  results: { rowsPerTx: number; rows: number; rowsPerSec: number; commit: FixedResult['latency'] }[];
}

const bodies = (n: number): string[] => Array.from({ length: n }, (_, i) => JSON.stringify({ to: `bench-r${i}`, subject: `throughput ${i}`, body: 'x'.repeat(200) }));

export async function throughput(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const d = await ctx.daemon();
  const [sender] = await ctx.accounts(['bench-s', ...Array.from({ length: 8 }, (_, i) => `bench-r${i}`)]);
  const echoPort = await ctx.echo();
  const systems: Record<string, Record<string, FixedResult>> = { m4a: {}, echo: {}, 'redis-aof-always': {}, 'redis-default': {}, 'nats-jetstream': {} };
  for (const c of z.concurrencies) {
    systems.m4a![c] = await ctx.loadgen<FixedResult>(
      { mode: 'fixed', port: d.port, path: '/mail/send', token: sender, body: bodies(8), concurrency: c, durationMs: z.throughputMs },
      `1 throughput · m4a send · ${c} senders`,
    );
    systems.echo![c] = await ctx.loadgen<FixedResult>(
      { mode: 'fixed', port: echoPort, path: '/mail/send', body: bodies(8), concurrency: c, durationMs: z.throughputMs },
      `1 throughput · node:http echo · ${c} senders`,
    );
  }
  for (const name of ['redis-aof-always', 'redis-default', 'nats-jetstream'] as const) {
    const srv = await ctx.server(name);
    const script = name.startsWith('redis') ? 'redis-load.ts' : 'nats-load.ts';
    for (const c of z.concurrencies) {
      systems[name]![c] = await ctx.baseline<FixedResult>(
        script,
        { mode: 'throughput', port: srv.port, concurrency: c, durationMs: z.throughputMs },
        `1 throughput · ${name} · ${c} writers`,
      );
    }
  }
  const sqlite = await ctx.baseline<SqliteRaw>(
    'sqlite-raw.ts',
    { path: join(ctx.work, 'raw.db'), durationMs: z.throughputMs, groups: [1, 64] },
    '1 throughput · raw better-sqlite3',
  );

  const rows: Row[] = [];
  for (const [sys, byC] of Object.entries(systems)) {
    for (const [c, r] of Object.entries(byC)) {
      rows.push({ scenario: '1 send throughput', system: sys, metric: `${c} senders`, value: `${num(r.rps)}/s · ${pct(r.latency)}${r.errors ? ` · ${r.errors} errors` : ''}` });
    }
  }
  for (const r of sqlite.results)
    rows.push({ scenario: '1 send throughput', system: 'raw better-sqlite3', metric: `${r.rowsPerTx} row(s)/tx`, value: `${num(r.rowsPerSec)} rows/s · commit ${pct(r.commit)}` });
  const top = Math.max(...z.concurrencies);
  const m = systems.m4a![top]!.rps;
  const ratios = {
    vsEcho: systems.echo![top]!.rps ? m / systems.echo![top]!.rps : NaN,
    vsSqliteGrouped: m / (sqlite.results.find((r) => r.rowsPerTx === 64)?.rowsPerSec ?? NaN),
    vsSqliteSingle: m / (sqlite.results.find((r) => r.rowsPerTx === 1)?.rowsPerSec ?? NaN),
    vsRedisAof: m / systems['redis-aof-always']![top]!.rps,
    vsRedisDefault: m / systems['redis-default']![top]!.rps,
    vsNats: m / systems['nats-jetstream']![top]!.rps,
  };
  rows.push({
    scenario: '1 send throughput',
    system: 'ratios',
    metric: `m4a at ${top} senders vs`,
    value: `echo ${ratio(m, systems.echo![top]!.rps)} · sqlite 64/tx ${ratio(m, m / ratios.vsSqliteGrouped)} · redis aof ${ratio(m, systems['redis-aof-always']![top]!.rps)} · redis default ${ratio(m, systems['redis-default']![top]!.rps)} · nats ${ratio(m, systems['nats-jetstream']![top]!.rps)}`,
  });
  const targets: Target[] = [
    {
      id: 'throughput-vs-echo',
      text: `durable attested sends with ${top} keep-alive senders ≥ half the node:http echo's requests/s`,
      measured: `${num(m)}/s vs echo ${num(systems.echo![top]!.rps)}/s (${ratio(m, systems.echo![top]!.rps)})`,
      met: ratios.vsEcho >= 0.5,
    },
  ];
  return { name: 'throughput', data: { systems, sqlite, ratios }, rows, targets };
}
