// `npm run bench`: starts a real daemon (its own process, fresh data dir), the baselines and the
// comparison servers, runs the scenarios with the load generator as a separate process, prints a
// table and writes JSON (and, for full-size runs, docs/bench-latency.svg). Never part of `npm test`.
//
//   --quick                 scaled-down sizes: the whole run in about a minute
//   --only a,b              scenarios: throughput, latency, wake, fanout, waiters, cold, mcp, profile, durability, wakechain, flood, leases, pgwake, teams, soak
//   --soak MINUTES          also run the soak (mixed load; memory and latency per window)
//   --out FILE              JSON output (default bench-results/<timestamp>.json)
//   --svg FILE              chart output (default docs/bench-latency.svg on full runs, beside the JSON on --quick)
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, totalmem, release } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Ctx, type ScenarioResult } from './lib/context.js';
import { CLI, ROOT, cleanupAll } from './lib/procs.js';
import { progress } from './lib/progress.js';
import { FULL, QUICK } from './lib/sizes.js';
import { versionOf } from './baselines/servers.js';
import { latencySvg, printTable, writeJson } from './report.js';
import { throughput } from './scenarios/throughput.js';
import { latency, type SizePoint } from './scenarios/latency.js';
import { wake } from './scenarios/wake.js';
import { fanout } from './scenarios/fanout.js';
import { waiters } from './scenarios/waiters.js';
import { coldCli } from './scenarios/cold-cli.js';
import { mcp } from './scenarios/mcp.js';
import { profile } from './scenarios/profile.js';
import { durability } from './scenarios/durability.js';
import { soak } from './scenarios/soak.js';
import { wakeChain } from './scenarios/wake-chain.js';
import { idleFlood } from './scenarios/idle-flood.js';
import { leases } from './scenarios/leases.js';
import { pgWake } from './scenarios/pg-wake.js';
import { teams } from './scenarios/teams.js';
import { targetTable } from './lib/targets.js';

const SCENARIOS: Record<string, (ctx: Ctx, o: { soakMinutes: number }) => Promise<ScenarioResult>> = {
  throughput,
  latency,
  wake,
  fanout,
  waiters,
  cold: coldCli,
  mcp,
  profile,
  durability,
  soak: (ctx, o) => soak(ctx, o.soakMinutes),
  wakechain: wakeChain,
  flood: idleFlood,
  leases,
  pgwake: pgWake,
  teams,
};
const DEFAULT = ['throughput', 'latency', 'wake', 'fanout', 'waiters', 'cold', 'mcp', 'profile', 'durability', 'wakechain', 'flood', 'leases', 'pgwake', 'teams'];

function machine() {
  const cpu = cpus();
  const meminfo = readFileSync('/proc/meminfo', 'utf8');
  return {
    cores: cpu.length,
    cpuModel: cpu[0]?.model ?? 'unknown',
    memGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    freeGiB: Math.round((freemem() / 2 ** 30) * 10) / 10,
    swap: /SwapTotal:\s+(\d+)/.exec(meminfo)?.[1] === '0' ? 'none' : 'yes',
    node: process.version,
    kernel: release(),
    loadavgAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
    redis: versionOf('redis-server'),
    nats: versionOf('nats-server'),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      soak: { type: 'string' },
      out: { type: 'string' },
      svg: { type: 'string' },
    },
  });
  if (!existsSync(CLI)) throw new Error('dist/cli/main.js is missing: run `npm run build` first (npm run bench does)');
  const soakMinutes = values.soak ? Number(values.soak) : 0;
  const names = values.only ? values.only.split(',').map((s) => s.trim()) : [...DEFAULT, ...(soakMinutes > 0 ? ['soak'] : [])];
  for (const n of names) if (!SCENARIOS[n]) throw new Error(`unknown scenario ${n} (known: ${Object.keys(SCENARIOS).join(', ')})`);
  if (names.includes('soak') && soakMinutes <= 0) throw new Error('the soak needs --soak MINUTES');
  const quick = values.quick ?? false;
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const out = values.out ?? join(ROOT, 'bench-results', `${stamp}${quick ? '-quick' : ''}.json`);
  const sizes = quick ? QUICK : FULL;
  const ctx = new Ctx(sizes, quick);
  const started = Date.now();
  const meta = {
    started: new Date().toISOString(),
    quick,
    scenarios: names,
    sizes,
    machine: machine(),
    command: `node --import tsx bench/run.ts ${process.argv.slice(2).join(' ')}`.trim(),
  };
  const results: ScenarioResult[] = [];
  const failures: { scenario: string; error: string }[] = [];
  for (const n of names) {
    try {
      results.push(await (SCENARIOS[n] as (typeof SCENARIOS)[string])(ctx, { soakMinutes }));
    } catch (err) {
      failures.push({ scenario: n, error: err instanceof Error ? err.message : String(err) });
      progress.note(`scenario ${n} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  progress.done();
  const loadEnd = loadavg().map((x) => Math.round(x * 100) / 100);
  const doc = {
    meta: { ...meta, finished: new Date().toISOString(), elapsedS: Math.round((Date.now() - started) / 1000), loadavgAtEnd: loadEnd },
    results,
    failures,
    /** Issue #16's target lines, each measured, as a ratio, met, missed or not run. */
    targets: targetTable(results, { quick, failures }),
    /** The scenarios' own checks (earlier targets). */
    checks: results.flatMap((r) => r.targets),
  };
  writeJson(out, doc);
  const lat = results.find((r) => r.name === 'latency');
  if (lat) {
    const svgPath = values.svg ?? (quick ? out.replace(/\.json$/, '-latency.svg') : join(ROOT, 'docs', 'bench-latency.svg'));
    const points = (lat.data as { points: SizePoint[] }).points;
    writeFileSync(
      svgPath,
      latencySvg(points, `Send and inbox latency against mailbox size, HTTP and stream door (${quick ? 'quick run' : 'full run'}, ${meta.started.slice(0, 10)})`),
    );
    process.stdout.write(`chart: ${svgPath}\n`);
  }
  process.stdout.write(`${printTable(results, doc.targets)}\n\n`);
  for (const f of failures) process.stdout.write(`FAILED ${f.scenario}: ${f.error}\n`);
  process.stdout.write(
    `machine: ${meta.machine.cores} cores ${meta.machine.cpuModel}, ${meta.machine.memGiB} GiB, node ${meta.machine.node}, kernel ${meta.machine.kernel}; load average ${meta.machine.loadavgAtStart.join(' ')} at start, ${loadEnd.join(' ')} at end\n`,
  );
  process.stdout.write(`results: ${out} (${doc.meta.elapsedS} s)\n`);
  if (failures.length) process.exitCode = 1;
}

let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (interrupted) return;
    interrupted = true;
    progress.done();
    process.stderr.write(`\n${sig}: stopping every child process and removing temp dirs…\n`);
    void cleanupAll().finally(() => process.exit(130));
  });
}

main()
  .catch((err: unknown) => {
    progress.done();
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => {
    if (!interrupted) void cleanupAll().then(() => process.exit());
  });
