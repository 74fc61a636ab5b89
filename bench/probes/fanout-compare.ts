// Fan-out, side by side: this build and another (`--against DIR`, a checkout with its own dist/)
// each run a daemon with N readers of one room parked; passes alternate between them so both see
// the same machine. With `--prof`, each daemon runs under --cpu-prof and its profile is cut to the
// rounds (send start → last answer), so the figures are the wake's own work, not the setup's;
// `--prof-client` profiles the load generator the same way (it parses every answer on the same cores).
//   node --import tsx bench/probes/fanout-compare.ts [readers=1000] [rounds=5] [passes=2] [--against DIR] [--prof] [--prof-client]
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon, type Daemon } from '../lib/daemon.js';
import { cleanupAll, runJson, tempDir } from '../lib/procs.js';
import { summarizeProfile } from '../lib/cpuprofile.js';
import { summarize } from '../lib/stats.js';
import type { FanoutResult, FanoutRound } from '../loadgen/fanout.js';

interface Build {
  name: string;
  cli?: string;
  d?: Daemon;
  secrets?: Map<string, string>;
  prof: string;
  rounds: FanoutRound[];
  clientProf: string[];
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const flag = (f: string): string | undefined => {
    const i = args.indexOf(f);
    return i >= 0 ? args.splice(i, 2)[1] : undefined;
  };
  const against = flag('--against');
  const prof = args.includes('--prof');
  const profClient = args.includes('--prof-client');
  const nums = args.filter((a) => !a.startsWith('--')).map(Number);
  const [n = 1000, rounds = 5, passes = 2] = nums;
  const dir = tempDir('fanout-cmp');
  const builds: Build[] = [{ name: 'this build', prof: join(dir, 'prof-this'), rounds: [], clientProf: [] }];
  if (against) builds.push({ name: `against ${against}`, cli: join(against, 'dist', 'cli', 'main.js'), prof: join(dir, 'prof-other'), rounds: [], clientProf: [] });
  const ids = Array.from({ length: n }, (_, i) => `f${i}`);
  for (const [i, b] of builds.entries()) {
    const data = join(dir, `data-${i}`);
    mkdirSync(data);
    b.d = await startDaemon(data, { ...(b.cli ? { cli: b.cli } : {}), ...(prof ? { nodeFlags: ['--cpu-prof', '--cpu-prof-dir', b.prof] } : {}) });
    b.secrets = await b.d.accounts([...ids, 'fan-s'], 8);
    await b.d.operator.admin.roomAdd('fan');
    for (const id of ['fan-s', ...ids]) await b.d.operator.admin.memberAdd('fan', id);
  }
  for (let p = 0; p < passes; p++) {
    for (const b of p % 2 === 0 ? builds : [...builds].reverse()) {
      const d = b.d as Daemon;
      const s = b.secrets as Map<string, string>;
      const cdir = join(dir, `client-${b.clientProf.length}-${b.prof.slice(-5)}`);
      const r = await runJson<FanoutResult>(
        'loadgen.ts',
        { mode: 'fanout', port: d.port, readers: ids.map((id) => s.get(id)), sender: s.get('fan-s'), to: '#fan', rounds, settleMs: 50, daemonPid: d.pid },
        { timeoutMs: 15 * 60_000, ...(profClient ? { nodeFlags: ['--cpu-prof', '--cpu-prof-dir', cdir] } : {}) },
      );
      b.rounds.push(...r.rounds);
      if (profClient) b.clientProf.push(cdir);
    }
  }
  for (const b of builds) await b.d?.stop();
  for (const b of builds) {
    const all = summarize(b.rounds.map((r) => r.allFromAck));
    const med = summarize(b.rounds.map((r) => r.medianFromAck));
    const first = summarize(b.rounds.map((r) => (r.at.firstUs - r.at.ackUs) / 1000));
    process.stdout.write(
      `${b.name}: ${n} readers, ${b.rounds.length} rounds; last answer after the ack: median ${all.p50.toFixed(1)} ms, worst ${all.max.toFixed(1)} ms; ` +
        `median reader ${med.p50.toFixed(1)} ms; first reader ${first.p50.toFixed(1)} ms; send ${summarize(b.rounds.map((r) => r.send)).p50.toFixed(2)} ms\n`,
    );
    process.stdout.write(`  every round, last answer after the ack (ms, in run order): ${b.rounds.map((r) => r.allFromAck.toFixed(0)).join(' ')}\n`);
    if (b.rounds.some((r) => r.empty > 0)) process.stdout.write(`  ${b.rounds.reduce((s, r) => s + r.empty, 0)} empty answers\n`);
  }
  const show = (title: string, file: string, rs: FanoutRound[]): void => {
    const s = summarizeProfile(
      file,
      20,
      rs.map((r) => [r.at.startUs, r.at.lastUs]),
    );
    process.stdout.write(`\n${title} within the rounds (${s.totalMs} ms, idle ${s.idleShare}%), charged to the nearest m4a frame:\n`);
    for (const e of s.byOwnCode) process.stdout.write(`  ${e.share.toFixed(1).padStart(5)}%  ${e.ms.toFixed(1).padStart(7)} ms  ${e.name}  ${e.where}\n`);
    process.stdout.write('top self time:\n');
    for (const e of s.top.slice(0, 15)) process.stdout.write(`  ${e.share.toFixed(1).padStart(5)}%  ${e.ms.toFixed(1).padStart(7)} ms  ${e.name}  ${e.where}\n`);
  };
  const profileIn = (d: string): string => {
    const file = readdirSync(d).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no profile written in ${d}`);
    return join(d, file);
  };
  for (const b of builds) {
    if (prof) show(`${b.name}: daemon time`, profileIn(b.prof), b.rounds);
    // Each pass's load generator profiles its own rounds.
    const per = b.clientProf.length > 0 ? b.rounds.length / b.clientProf.length : 0;
    b.clientProf.forEach((d, i) => show(`${b.name}: load generator, pass ${i + 1}`, profileIn(d), b.rounds.slice(i * per, (i + 1) * per)));
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void cleanupAll().then(() => process.exit()));
