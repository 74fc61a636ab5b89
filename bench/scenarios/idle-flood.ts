// 12. A hostile local process holds 3,000 idle connections (re-opening each one the daemon closes):
// /health on a fresh connection and a new agent process's first request (cold `m4a whoami`), each
// measured before and during the flood in one run, side by side.
import { spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { createInterface } from 'node:readline';
import type { Ctx, ScenarioResult, Row, Target } from '../lib/context.js';
import { CLI, ROOT, spawnTs, stopChild } from '../lib/procs.js';
import { msSince, nowNs, summarize, type Summary } from '../lib/stats.js';
import { ms, num, pct, ratio } from '../lib/format.js';

function health(port: number): Promise<number> {
  const t = nowNs();
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, path: '/health', agent: false, timeout: 60_000 }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(msSince(t)) : reject(new Error(`/health answered ${res.statusCode}`))));
    });
    r.on('error', reject);
    r.end();
  });
}

async function healthRuns(ctx: Ctx, port: number, n: number, label: string): Promise<Summary> {
  ctx.phase(label);
  const lat: number[] = [];
  for (let i = 0; i < n; i++) {
    lat.push(await health(port));
    ctx.tick(i + 1, n, 'requests');
  }
  return summarize(lat);
}

function whoamiRuns(ctx: Ctx, env: NodeJS.ProcessEnv, n: number, label: string): Summary {
  ctx.phase(label);
  const lat: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = nowNs();
    const r = spawnSync(process.execPath, [CLI, 'whoami'], { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    if (r.status !== 0) throw new Error(`m4a whoami exited ${r.status}: ${r.stderr.toString().slice(0, 300)}`);
    lat.push(msSince(t));
    ctx.tick(i + 1, n, 'runs');
  }
  return summarize(lat);
}

export async function idleFlood(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const d = await ctx.daemon();
  const token = await ctx.secret('flood-agent');
  const env: NodeJS.ProcessEnv = { ...process.env, M4A_TOKEN: token, M4A_DATA_DIR: d.dataDir };
  delete env.M4A_URL;
  const n = z.floodHealthRequests;
  const healthQuiet = await healthRuns(ctx, d.port, n, '12 idle flood · /health, quiet');
  const whoamiQuiet = whoamiRuns(ctx, env, z.coldRuns, '12 idle flood · cold whoami, quiet');

  ctx.phase(`12 idle flood · holding ${num(z.floodConnections)} idle connections`);
  const holder = spawnTs('probes/idle-holder.ts', [String(d.port), String(z.floodConnections), '1', '600']);
  const lines = createInterface({ input: holder.stdout! });
  const next = (prefix: string) => new Promise<string>((resolve) => lines.on('line', (l) => l.startsWith(prefix) && resolve(l)));
  await next('held');
  const healthFlood = await healthRuns(ctx, d.port, n, '12 idle flood · /health, during');
  const whoamiFlood = whoamiRuns(ctx, env, z.coldRuns, '12 idle flood · cold whoami, during');
  const statsLine = next('stats');
  holder.stdin?.write('stop\n');
  const held = JSON.parse((await statsLine).slice(6)) as { open: number; opened: number };
  await stopChild(holder, 2000);

  ctx.phase('12 idle flood · open-and-close loop');
  const churner = spawnTs('probes/idle-holder.ts', [String(d.port), '200', '0', '600', '1']);
  const churnLines = createInterface({ input: churner.stdout! });
  const churnNext = (prefix: string) => new Promise<string>((resolve) => churnLines.on('line', (l) => l.startsWith(prefix) && resolve(l)));
  await churnNext('held');
  const healthChurn = await healthRuns(ctx, d.port, n, '12 idle flood · /health, during an open-and-close loop');
  const churnStats = churnNext('stats');
  churner.stdin?.write('stop\n');
  const churned = JSON.parse((await churnStats).slice(6)) as { open: number; opened: number };
  await stopChild(churner, 2000);

  const scenario = `12 ${num(z.floodConnections)} idle connections held`;
  const rows: Row[] = [
    { scenario, system: 'm4a', metric: '/health, fresh connection: quiet → flood', value: `${pct(healthQuiet)} → ${pct(healthFlood)}` },
    {
      scenario,
      system: 'm4a',
      metric: 'cold `m4a whoami` (first request of a new process): quiet → flood',
      value: `${pct(whoamiQuiet)} → ${pct(whoamiFlood)} (${ratio(whoamiFlood.p50, whoamiQuiet.p50)})`,
    },
    { scenario, system: 'holder', metric: 'connections opened (re-opened after the daemon closed them)', value: `${num(held.opened)}; ${num(held.open)} open at the end` },
    {
      scenario: '12 open-and-close loop (200 at a time)',
      system: 'm4a',
      metric: '/health, fresh connection, during the loop',
      value: `${pct(healthChurn)} (${num(churned.opened)} connections opened and closed meanwhile)`,
    },
  ];
  const targets: Target[] = [
    {
      id: 'flood-health',
      text: `/health p99 ≤ 50 ms while another process holds ${num(z.floodConnections)} idle connections`,
      measured: pct(healthFlood),
      met: healthFlood.p99 <= 50,
    },
    { id: 'flood-first-request', text: 'a new agent process is answered within 1 s during the flood', measured: `whoami max ${ms(whoamiFlood.max)}`, met: whoamiFlood.max <= 1000 },
  ];
  return {
    name: 'idle-flood',
    data: { healthQuiet, healthFlood, whoamiQuiet, whoamiFlood, held, healthChurn, churned },
    rows,
    targets,
    commands: [
      `node --import tsx bench/probes/idle-holder.ts <port> ${z.floodConnections} 1 600`,
      'curl -s http://127.0.0.1:<port>/health',
      'M4A_TOKEN=… node dist/cli/main.js whoami',
    ],
  };
}
