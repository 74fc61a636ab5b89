// 1. Send throughput (acknowledged, durable) with 1, 8 and 64 concurrent senders: HTTP keep-alive
// and the stream door (one Unix-socket connection per sender, one request in flight each; and one
// row with 8 in flight per connection, labelled), side by side with the node:http echo (the door
// alone), raw better-sqlite3 (the store alone), Redis Streams XADD (appendfsync always, and at
// defaults) and NATS JetStream publish. The issue's target lines are judged in lib/targets.ts.
import { join } from 'node:path';
import type { Ctx, ScenarioResult, Row } from '../lib/context.js';
import type { FixedResult } from '../loadgen/fixed.js';
import { num, pct, ratio } from '../lib/format.js';
import { NO_STREAM, streamSocket } from '../lib/stream-door.js';

/** Requests in flight per connection in the pipelined stream row. */
export const PIPELINE = 8;

interface SqliteRaw {
  results: { rowsPerTx: number; rows: number; rowsPerSec: number; commit: FixedResult['latency'] }[];
}

const bodies = (n: number): string[] => Array.from({ length: n }, (_, i) => JSON.stringify({ to: `bench-r${i}`, subject: `throughput ${i}`, body: 'x'.repeat(200) }));

export async function throughput(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const d = await ctx.daemon();
  const [sender] = await ctx.accounts(['bench-s', ...Array.from({ length: 8 }, (_, i) => `bench-r${i}`)]);
  const echoPort = await ctx.echo();
  const socket = streamSocket(d.dataDir);
  const inputs = bodies(8).map((b) => JSON.parse(b) as unknown);
  const top = Math.max(...z.concurrencies);
  const systems: Record<string, Record<string, FixedResult>> = {
    m4a: {},
    'm4a-stream': {},
    [`m4a-stream-x${PIPELINE}`]: {},
    echo: {},
    'redis-aof-always': {},
    'redis-default': {},
    'nats-jetstream': {},
  };
  const stream = (c: number, inFlight: number): Promise<FixedResult> =>
    ctx.loadgen<FixedResult>(
      { mode: 'stream-fixed', socket, token: sender, op: 'send', inputs, connections: c, inFlight, durationMs: z.throughputMs },
      `1 throughput · m4a stream send · ${c} connections × ${inFlight} in flight`,
    );
  for (const c of z.concurrencies) {
    systems.m4a![c] = await ctx.loadgen<FixedResult>(
      { mode: 'fixed', port: d.port, path: '/mail/send', token: sender, body: bodies(8), concurrency: c, durationMs: z.throughputMs },
      `1 throughput · m4a send · ${c} senders`,
    );
    if (socket) systems['m4a-stream']![c] = await stream(c, 1);
    // The same requests in flight as `top` senders, on an eighth of the connections.
    if (socket && c === top && top >= PIPELINE) systems[`m4a-stream-x${PIPELINE}`]![c] = await stream(top / PIPELINE, PIPELINE);
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
  const label: Record<string, string> = { m4a: 'm4a HTTP', 'm4a-stream': 'm4a stream', [`m4a-stream-x${PIPELINE}`]: `m4a stream, ${PIPELINE} in flight per connection` };
  for (const [sys, byC] of Object.entries(systems)) {
    for (const [c, r] of Object.entries(byC)) {
      const what = sys === `m4a-stream-x${PIPELINE}` ? `${c} in flight (${Number(c) / PIPELINE} connections)` : `${c} senders`;
      rows.push({ scenario: '1 send throughput', system: label[sys] ?? sys, metric: what, value: `${num(r.rps)}/s · ${pct(r.latency)}${r.errors ? ` · ${r.errors} errors` : ''}` });
    }
  }
  if (!socket) rows.push({ scenario: '1 send throughput', system: 'm4a stream', metric: 'all', value: NO_STREAM });
  for (const r of sqlite.results)
    rows.push({ scenario: '1 send throughput', system: 'raw better-sqlite3', metric: `${r.rowsPerTx} row(s)/tx`, value: `${num(r.rowsPerSec)} rows/s · commit ${pct(r.commit)}` });
  const m = systems.m4a![top]!.rps;
  const ms = systems['m4a-stream']![top]?.rps ?? NaN;
  const ratios = {
    vsEcho: systems.echo![top]!.rps ? m / systems.echo![top]!.rps : NaN,
    vsSqliteGrouped: m / (sqlite.results.find((r) => r.rowsPerTx === 64)?.rowsPerSec ?? NaN),
    vsSqliteSingle: m / (sqlite.results.find((r) => r.rowsPerTx === 1)?.rowsPerSec ?? NaN),
    vsRedisAof: m / systems['redis-aof-always']![top]!.rps,
    vsRedisDefault: m / systems['redis-default']![top]!.rps,
    vsNats: m / systems['nats-jetstream']![top]!.rps,
    streamVsRedisAof: ms / systems['redis-aof-always']![top]!.rps,
    streamVsHttp: ms / m,
  };
  rows.push({
    scenario: '1 send throughput',
    system: 'ratios',
    metric: `m4a HTTP at ${top} senders vs`,
    value: `echo ${ratio(m, systems.echo![top]!.rps)} · sqlite 64/tx ${ratio(m, m / ratios.vsSqliteGrouped)} · redis aof ${ratio(m, systems['redis-aof-always']![top]!.rps)} · redis default ${ratio(m, systems['redis-default']![top]!.rps)} · nats ${ratio(m, systems['nats-jetstream']![top]!.rps)}`,
  });
  if (socket)
    rows.push({
      scenario: '1 send throughput',
      system: 'ratios',
      metric: `m4a stream at ${top} senders vs`,
      value: `m4a HTTP ${ratio(ms, m)} · echo ${ratio(ms, systems.echo![top]!.rps)} · redis aof ${ratio(ms, systems['redis-aof-always']![top]!.rps)} · nats ${ratio(ms, systems['nats-jetstream']![top]!.rps)}`,
    });
  return { name: 'throughput', data: { systems, sqlite, ratios, stream: socket !== null, pipeline: PIPELINE }, rows, targets: [] };
}
