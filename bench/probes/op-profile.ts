// Where one operation's time goes: a fresh daemon under --cpu-prof, one load-generator process
// calling the operation at a fixed concurrency for some seconds, then the daemon's time charged to
// the nearest m4a frame on the stack. `inbox` reads the 50-message page of scenario 2 (the reader
// is given 200 messages first).
//   node --import tsx bench/probes/op-profile.ts send|inbox [seconds=10] [concurrency=1]
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../lib/daemon.js';
import { cleanupAll, runJson, tempDir } from '../lib/procs.js';
import { summarizeProfile } from '../lib/cpuprofile.js';
import type { FixedResult } from '../loadgen/fixed.js';

async function main(): Promise<void> {
  const op = process.argv[2] === 'inbox' ? 'inbox' : 'send';
  const seconds = Number(process.argv[3] ?? 10);
  const concurrency = Number(process.argv[4] ?? 1);
  const dir = tempDir('op-prof');
  mkdirSync(join(dir, 'data'));
  const d = await startDaemon(join(dir, 'data'), { nodeFlags: ['--cpu-prof', '--cpu-prof-dir', join(dir, 'prof')] });
  const secrets = await d.accounts(['op-s', 'op-r'], 2);
  const body = JSON.stringify({ to: 'op-r', subject: 'profiled', body: 'x'.repeat(200) });
  if (op === 'inbox')
    await runJson('loadgen.ts', { mode: 'fixed', port: d.port, path: '/mail/send', token: secrets.get('op-s'), body, concurrency: 8, count: 200, warmupPerConnection: 0 });
  const r = await runJson<FixedResult>(
    'loadgen.ts',
    op === 'send'
      ? { mode: 'fixed', port: d.port, path: '/mail/send', token: secrets.get('op-s'), body, concurrency, durationMs: seconds * 1000 }
      : { mode: 'fixed', port: d.port, path: '/mail/inbox', token: secrets.get('op-r'), body: '{}', concurrency, durationMs: seconds * 1000 },
  );
  await d.stop();
  process.stdout.write(`${op} at ${concurrency}: ${r.rps}/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms (under --cpu-prof)\n`);
  const file = readdirSync(join(dir, 'prof')).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no profile written');
  const s = summarizeProfile(join(dir, 'prof', file), 20);
  process.stdout.write(`\ndaemon time charged to the nearest m4a frame (${s.totalMs} ms profiled, idle ${s.idleShare}%):\n`);
  for (const e of s.byOwnCode) process.stdout.write(`  ${e.share.toFixed(1).padStart(5)}%  ${e.name}  ${e.where}\n`);
  process.stdout.write('\ntop self time:\n');
  for (const e of s.top.slice(0, 12)) process.stdout.write(`  ${e.share.toFixed(1).padStart(5)}%  ${e.name}  ${e.where}\n`);
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void cleanupAll().then(() => process.exit()));
