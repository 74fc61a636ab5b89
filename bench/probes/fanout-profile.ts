// Where the time goes in a fan-out: the daemon under --cpu-prof while N readers (one account each,
// all in one room, one connection each from one load-generator process) connect and park, then
// `rounds` sends to the room wake them all. Prints the round times and the daemon's time charged
// to the nearest m4a function on the stack (attestation, wake handling, …).
//   node --import tsx bench/probes/fanout-profile.ts [readers=1000] [rounds=5]
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../lib/daemon.js';
import { cleanupAll, runJson, tempDir } from '../lib/procs.js';
import { summarizeProfile } from '../lib/cpuprofile.js';
import type { FanoutResult } from '../loadgen/fanout.js';

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1000);
  const rounds = Number(process.argv[3] ?? 5);
  const dir = tempDir('fanout-prof');
  mkdirSync(join(dir, 'data'));
  const d = await startDaemon(join(dir, 'data'), { nodeFlags: ['--cpu-prof', '--cpu-prof-dir', join(dir, 'prof')] });
  const ids = Array.from({ length: n }, (_, i) => `f${i}`);
  const secrets = await d.accounts([...ids, 'fan-s'], 8);
  await d.operator.admin.roomAdd('fan');
  for (const id of ['fan-s', ...ids]) await d.operator.admin.memberAdd('fan', id);
  const r = await runJson<FanoutResult>(
    'loadgen.ts',
    { mode: 'fanout', port: d.port, readers: ids.map((id) => secrets.get(id)), sender: secrets.get('fan-s'), to: '#fan', rounds, settleMs: 50, daemonPid: d.pid },
    { timeoutMs: 15 * 60_000 },
  );
  await d.stop();
  process.stdout.write(`connect + attest ${n} readers: ${r.connectMs} ms\n`);
  for (const x of r.rounds) process.stdout.write(`round: all ${n} answered ${x.allFromAck.toFixed(1)} ms after the ack (median reader ${x.medianFromAck.toFixed(1)} ms)\n`);
  const file = readdirSync(join(dir, 'prof')).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no profile written');
  const s = summarizeProfile(join(dir, 'prof', file), 20);
  process.stdout.write(`\ndaemon time charged to the nearest m4a frame (${s.totalMs} ms profiled):\n`);
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
