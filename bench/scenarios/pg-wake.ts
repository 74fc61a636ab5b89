// 14. Cross-daemon wake on PostgreSQL: two daemons (A and B, each its own process, data dir and
// port) on one fresh database of the PostgreSQL server (created for the run and dropped after it;
// M4A_BENCH_PG_URL names the server, default the test one at 127.0.0.1:5432). A reader parked on
// B, a sender on A, one message per round, measured from the send's start: over HTTP, and on the
// stream doors (parked in `inbox`, and pushed). Beside it the same loop with reader and sender on
// A (one daemon on the same store) and the raw LISTEN/NOTIFY round trip with postgres.js: the floor.
import { randomBytes } from 'node:crypto';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import type { Ctx, ScenarioResult, Row } from '../lib/context.js';
import { startDaemon, type Daemon } from '../lib/daemon.js';
import { onCleanup } from '../lib/procs.js';
import type { WakeResult } from '../loadgen/wake.js';
import { pct, ratio } from '../lib/format.js';
import { NO_STREAM, streamSocket } from '../lib/stream-door.js';

export const PG_URL = process.env.M4A_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const redact = (u: string): string => u.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@');

export const PG_VARIANTS = {
  'cross-http': 'B parked (HTTP), A sends (HTTP)',
  'cross-stream-parked': 'B parked (stream), A sends (stream)',
  'cross-stream-pushed': 'B subscribed (stream, pushed), A sends (stream)',
  'same-http': 'A parked (HTTP), A sends (HTTP): one daemon, same store',
  'listen-notify': 'raw LISTEN/NOTIFY (postgres.js)',
} as const;

export async function pgWake(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const scenario = '14 cross-daemon wake on PostgreSQL';
  const adminSql = postgres(PG_URL, { max: 1, connect_timeout: 5, onnotice: () => undefined });
  try {
    await adminSql`SELECT 1`;
  } catch (e) {
    await adminSql.end({ timeout: 1 });
    const why = `not run: PostgreSQL at ${redact(PG_URL)} unreachable (${(e as Error).message}); set M4A_BENCH_PG_URL`;
    return { name: 'pgwake', data: { skipped: why }, rows: [{ scenario, system: 'm4a', metric: 'all', value: why }], targets: [] };
  }
  const db = `m4a_bench_${randomBytes(4).toString('hex')}`;
  let dropped = false;
  const drop = async (): Promise<void> => {
    if (dropped) return;
    dropped = true;
    await adminSql.unsafe(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
    await adminSql.end({ timeout: 2 });
  };
  ctx.phase(`14 pg wake · CREATE DATABASE ${db}`);
  await adminSql.unsafe(`CREATE DATABASE "${db}"`);
  onCleanup(drop);
  const u = new URL(PG_URL);
  u.pathname = `/${db}`;
  const spec = u.toString();
  const daemons: Daemon[] = [];
  try {
    ctx.phase('14 pg wake · two daemons on one database');
    const dirA = ctx.dataDir('pg-a');
    const dirB = ctx.dataDir('pg-b');
    const a = await startDaemon(dirA, { args: ['--store', spec] });
    daemons.push(a);
    // The operator account lives in the shared database: B gets A's credential (else it rotates it).
    copyFileSync(join(dirA, 'operator.token'), join(dirB, 'operator.token'));
    const b = await startDaemon(dirB, { args: ['--store', spec] });
    daemons.push(b);
    const readers = Object.keys(PG_VARIANTS).filter((k) => k !== 'listen-notify');
    const secrets = await a.accounts(['pgw-s', ...readers.map((k) => `pgw-${k}`)], 4);
    const sender = secrets.get('pgw-s') as string;
    const secretOf = (k: string): string => secrets.get(`pgw-${k}`) as string;
    const sockA = streamSocket(dirA);
    const sockB = streamSocket(dirB);
    const rounds = z.pgWakeRounds;
    const settleMs = 2;
    const systems: Partial<Record<keyof typeof PG_VARIANTS, WakeResult>> = {};
    const label = (k: keyof typeof PG_VARIANTS): string => `14 pg wake · ${PG_VARIANTS[k]}`;
    systems['cross-http'] = await ctx.loadgen<WakeResult>(
      { mode: 'wake', port: b.port, senderPort: a.port, reader: secretOf('cross-http'), sender, to: 'pgw-cross-http', rounds, settleMs },
      label('cross-http'),
    );
    if (sockA && sockB) {
      for (const how of ['parked', 'pushed'] as const) {
        const k = `cross-stream-${how}` as const;
        systems[k] = await ctx.loadgen<WakeResult>(
          { mode: 'stream-wake', readerSocket: sockB, senderSocket: sockA, reader: secretOf(k), sender, to: `pgw-${k}`, rounds, settleMs, how },
          label(k),
        );
      }
    }
    systems['same-http'] = await ctx.loadgen<WakeResult>(
      { mode: 'wake', port: a.port, reader: secretOf('same-http'), sender, to: 'pgw-same-http', rounds, settleMs },
      label('same-http'),
    );
    systems['listen-notify'] = await ctx.baseline<WakeResult>('pg-notify.ts', { url: spec, rounds, settleMs }, label('listen-notify'));

    const rows: Row[] = [];
    for (const [k, r] of Object.entries(systems)) {
      const empty = r.empty ? ` · ${r.empty} empty answers` : '';
      rows.push({ scenario, system: PG_VARIANTS[k as keyof typeof PG_VARIANTS], metric: 'send → reader answered', value: `${pct(r.sendToWake)}${empty}` });
      rows.push({ scenario, system: PG_VARIANTS[k as keyof typeof PG_VARIANTS], metric: 'ack → reader answered', value: pct(r.ackToWake) });
    }
    if (!sockA || !sockB) rows.push({ scenario, system: 'm4a stream', metric: 'all', value: NO_STREAM });
    const floor = systems['listen-notify'].sendToWake.p50;
    rows.push({
      scenario,
      system: 'ratios',
      metric: 'send → answered p50 / LISTEN/NOTIFY',
      value: Object.entries(systems)
        .filter(([k]) => k !== 'listen-notify')
        .map(([k, r]) => `${k} ${ratio(r.sendToWake.p50, floor)}`)
        .join(' · '),
    });
    return {
      name: 'pgwake',
      data: { database: 'fresh per run, dropped after', server: redact(PG_URL), rounds, settleMs, stream: sockA !== null && sockB !== null, systems },
      rows,
      targets: [],
      commands: ['node --import tsx bench/run.ts --only pgwake   # M4A_BENCH_PG_URL=postgres://user@host:5432/db to name another server'],
    };
  } finally {
    for (const d of daemons.reverse()) await d.stop();
    await drop();
  }
}
