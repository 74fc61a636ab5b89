// Where the time goes in a fan-out on the stream door: the daemon under --cpu-prof while N readers
// (one account each, one Unix-socket connection each) are answered parked and then by pushed mail
// events; each mode's profile is cut to its rounds (send start → last answer).
//   node --import tsx bench/probes/stream-fanout-profile.ts [readers=1000] [rounds=5]
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../lib/daemon.js';
import { cleanupAll, runJson, tempDir } from '../lib/procs.js';
import { summarizeProfile } from '../lib/cpuprofile.js';
import { streamSocket } from '../lib/stream-door.js';
import type { StreamFanoutResult } from '../loadgen/stream-fanout.js';

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1000);
  const rounds = Number(process.argv[3] ?? 5);
  const dir = tempDir('sfan-prof');
  mkdirSync(join(dir, 'data'));
  const d = await startDaemon(join(dir, 'data'), { nodeFlags: ['--cpu-prof', '--cpu-prof-dir', join(dir, 'prof')] });
  const socket = streamSocket(d.dataDir);
  if (!socket) throw new Error('the daemon has no stream door');
  const ids = Array.from({ length: n }, (_, i) => `f${i}`);
  const secrets = await d.accounts([...ids, 'fan-s'], 8);
  await d.operator.admin.roomAdd('fan');
  for (const id of ['fan-s', ...ids]) await d.operator.admin.memberAdd('fan', id);
  const r = await runJson<StreamFanoutResult>(
    'loadgen.ts',
    {
      mode: 'stream-fanout',
      socket,
      readers: ids.map((id) => secrets.get(id)),
      sender: secrets.get('fan-s'),
      to: '#fan',
      rounds,
      settleMs: 50,
      daemonPid: d.pid,
      how: ['parked', 'pushed'],
    },
    { timeoutMs: 15 * 60_000 },
  );
  await d.stop();
  const file = readdirSync(join(dir, 'prof')).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no profile written');
  for (const how of ['parked', 'pushed'] as const) {
    const res = r[how];
    if (!res) continue;
    process.stdout.write(`\n${how}: last answer after the ack, every round (ms): ${res.rounds.map((x) => x.allFromAck.toFixed(0)).join(' ')}\n`);
    const s = summarizeProfile(
      join(dir, 'prof', file),
      16,
      res.rounds.map((x) => [x.at.startUs, x.at.lastUs]),
    );
    process.stdout.write(`daemon time within the rounds (${s.totalMs} ms, idle ${s.idleShare}%), charged to the nearest m4a frame:\n`);
    for (const e of s.byOwnCode) process.stdout.write(`  ${e.share.toFixed(1).padStart(5)}%  ${e.ms.toFixed(1).padStart(7)} ms  ${e.name}  ${e.where}\n`);
    process.stdout.write('top self time:\n');
    for (const e of s.top.slice(0, 12)) process.stdout.write(`  ${e.share.toFixed(1).padStart(5)}%  ${e.ms.toFixed(1).padStart(7)} ms  ${e.name}  ${e.where}\n`);
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void cleanupAll().then(() => process.exit()));
