// Where a send's time goes: the daemon under --cpu-prof while 64 keep-alive senders send, then the
// top self-time entries and the split by place (our code, each dependency, Node, GC, idle).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Ctx, ScenarioResult, Row } from '../lib/context.js';
import { startDaemon } from '../lib/daemon.js';
import { tempDir } from '../lib/procs.js';
import { summarizeProfile } from '../lib/cpuprofile.js';
import type { FixedResult } from '../loadgen/fixed.js';
import { num, pct } from '../lib/format.js';

export async function profile(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const profDir = tempDir('daemon-prof');
  const d = await startDaemon(ctx.dataDir('profile'), { nodeFlags: ['--cpu-prof', '--cpu-prof-dir', profDir] });
  const secrets = await d.accounts(['prof-s', 'prof-r'], 2);
  const top = Math.max(...ctx.sizes.concurrencies);
  const body = JSON.stringify({ to: 'prof-r', subject: 'profiled', body: 'x'.repeat(200) });
  const run = await ctx.loadgen<FixedResult>(
    { mode: 'fixed', port: d.port, path: '/mail/send', token: secrets.get('prof-s'), body, concurrency: top, durationMs: z.profileMs },
    `profile · daemon under --cpu-prof · ${top} senders`,
  );
  await d.stop();
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('the daemon wrote no .cpuprofile');
  const s = summarizeProfile(join(profDir, file), 25);
  const rows: Row[] = [
    { scenario: 'profile: daemon during sends', system: 'm4a (--cpu-prof)', metric: `${top} senders`, value: `${num(run.rps)}/s · ${pct(run.latency)} (profiling slows it)` },
    ...s.byPlace.slice(0, 8).map((e) => ({ scenario: 'profile: daemon during sends', system: 'self time by place', metric: e.name, value: `${e.share}% (${num(e.ms)} ms)` })),
  ];
  return { name: 'profile', data: { run, profile: s }, rows, targets: [] };
}
