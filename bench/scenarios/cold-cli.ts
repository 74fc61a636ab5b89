// 6. Cold `m4a send` from a new process, end to end (spawn → exit), side by side with the floor of
// starting Node here (`node -e ""`) and `m4a --help` (loading every command without the network);
// the three take turns, run by run, so a change of the machine's load falls on all of them alike.
// One run under --cpu-prof says where the time goes.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Ctx, ScenarioResult, Row, Target } from '../lib/context.js';
import { CLI, ROOT, tempDir } from '../lib/procs.js';
import { progress } from '../lib/progress.js';
import { summarize, type Summary } from '../lib/stats.js';
import { pct, ratio, ms } from '../lib/format.js';
import { summarizeProfile, type ProfileSummary } from '../lib/cpuprofile.js';

/** Wall times of each command line, run in turns (a, b, c, a, b, c …). */
function timeRuns(commands: string[][], env: NodeJS.ProcessEnv, n: number, label: string): Summary[] {
  progress.phase(label);
  const lat: number[][] = commands.map(() => []);
  for (let i = 0; i < n + 2; i++) {
    for (const [k, args] of commands.entries()) {
      const t = process.hrtime.bigint();
      const r = spawnSync(process.execPath, args, { env, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      const el = Number(process.hrtime.bigint() - t) / 1e6;
      if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr.toString().slice(0, 300)}`);
      if (i >= 2) lat[k]!.push(el); // the first two warm the page cache
    }
    progress.update(i + 1, n + 2, 'rounds');
  }
  return lat.map((l) => summarize(l));
}

export async function coldCli(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const d = await ctx.daemon();
  const [token] = await ctx.accounts(['cli-s', 'cli-r']);
  const env: NodeJS.ProcessEnv = { ...process.env, M4A_TOKEN: token, M4A_DATA_DIR: d.dataDir };
  delete env.M4A_URL;
  const [nodeFloor, version, send] = timeRuns(
    [
      ['-e', ''],
      [CLI, '--help'],
      [CLI, 'send', 'cli-r', 'cold send', 'hello from a new process'],
    ],
    env,
    z.coldRuns,
    '6 cold · node -e "", m4a --help, m4a send in turns',
  ) as [Summary, Summary, Summary];
  const profDir = tempDir('cold-prof');
  progress.phase('6 cold · m4a send under --cpu-prof');
  spawnSync(process.execPath, ['--cpu-prof', '--cpu-prof-dir', profDir, CLI, 'send', 'cli-r', 'cold send', 'profiled'], { env, cwd: ROOT, stdio: 'ignore' });
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  const profile: ProfileSummary | null = file ? summarizeProfile(join(profDir, file), 15) : null;
  const rows: Row[] = [
    { scenario: '6 cold CLI (spawn → exit)', system: 'node -e ""', metric: 'wall time', value: pct(nodeFloor) },
    { scenario: '6 cold CLI (spawn → exit)', system: 'm4a --help', metric: 'wall time', value: pct(version) },
    { scenario: '6 cold CLI (spawn → exit)', system: 'm4a send', metric: 'wall time', value: `${pct(send)} (${ratio(send.p50, nodeFloor.p50)} the bare node start)` },
  ];
  const targets: Target[] = [
    {
      id: 'cold-send',
      text: 'cold `m4a send` ≤ 150 ms',
      measured: `p50 ${ms(send.p50)} (bare node start ${ms(nodeFloor.p50)}, m4a --help ${ms(version.p50)})`,
      met: send.p50 <= 150,
    },
  ];
  return {
    name: 'cold-cli',
    data: { nodeFloor, version, send, profile },
    rows,
    targets,
    commands: [
      `M4A_TOKEN=… M4A_DATA_DIR=<data dir> node dist/cli/main.js send cli-r "cold send" "hello from a new process"`,
      `node --cpu-prof --cpu-prof-dir <dir> dist/cli/main.js send …`,
    ],
  };
}
