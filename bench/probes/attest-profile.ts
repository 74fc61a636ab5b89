// Where the time goes when one process opens many connections: the daemon under --cpu-prof while
// N connections (N/8 accounts × 8, as in scenario 5) arrive and park; prints the daemon's CPU per
// second while they are attested and the top self-time entries.
//   node --import tsx bench/probes/attest-profile.ts [connections=1000] [seconds=40]
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../lib/daemon.js';
import { cleanupAll, cpuSeconds, tempDir, waitIdle } from '../lib/procs.js';
import { summarizeProfile } from '../lib/cpuprofile.js';
import { Poster, keepAlive } from '../loadgen/http.js';

async function main(): Promise<void> {
  const total = Number(process.argv[2] ?? 1000);
  const seconds = Number(process.argv[3] ?? 40);
  const dir = tempDir('attest-prof');
  mkdirSync(join(dir, 'data'));
  const d = await startDaemon(join(dir, 'data'), { nodeFlags: ['--cpu-prof', '--cpu-prof-dir', join(dir, 'prof')] });
  const ids = Array.from({ length: Math.ceil(total / 8) }, (_, i) => `w${i}`);
  const secrets = await d.accounts([...ids, 'probe'], 8);
  const probe = new Poster(keepAlive(1), d.port, secrets.get('probe'));
  const head = (await probe.json<{ next_cursor: string }>('/mail/inbox', {})).next_cursor;
  const posters: Poster[] = [];
  for (const id of ids) for (let i = 0; i < 8 && posters.length < total; i++) posters.push(new Poster(keepAlive(1), d.port, secrets.get(id)));
  const body = JSON.stringify({ after: head, wait_secs: 60, include_acked: true, limit: 1 });
  const cpu0 = cpuSeconds(d.pid);
  const t0 = Date.now();
  for (const p of posters) void p.post('/mail/inbox', body, 120_000).catch(() => undefined);
  let idle = false;
  for (let s = 1; s <= seconds && !idle; s++) {
    idle = await waitIdle(d.pid, 1000);
    process.stdout.write(`${((Date.now() - t0) / 1000).toFixed(1)} s: daemon CPU ${(cpuSeconds(d.pid) - cpu0).toFixed(2)} s${idle ? ' (idle: all parked)' : ''}\n`);
  }
  for (const p of posters) p.close();
  probe.close();
  await d.stop();
  const file = readdirSync(join(dir, 'prof')).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no profile written');
  const sum = summarizeProfile(join(dir, 'prof', file), 15);
  process.stdout.write(`\nself time by place (whole daemon run, ${sum.totalMs} ms):\n`);
  for (const e of sum.byPlace.slice(0, 8)) process.stdout.write(`  ${e.share.toFixed(1).padStart(5)}%  ${e.name}\n`);
  process.stdout.write('\ndaemon time charged to the nearest m4a frame:\n');
  for (const e of sum.byOwnCode) process.stdout.write(`  ${e.share.toFixed(1).padStart(5)}%  ${e.name}  ${e.where}\n`);
  process.stdout.write('\ntop self time:\n');
  for (const e of sum.top) process.stdout.write(`  ${e.share.toFixed(1).padStart(5)}%  ${e.name}  ${e.where}\n`);
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void cleanupAll().then(() => process.exit()));
