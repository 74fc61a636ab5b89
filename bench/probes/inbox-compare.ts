// The inbox page (50 with bodies, `POST /mail/inbox {}`, one request at a time), side by side: this
// build and another (`--against DIR`, a checkout with its own dist/), each a daemon whose reader
// holds `stored` messages; runs alternate between them so both see the same machine. `--prof` runs
// this build's daemon under --cpu-prof and prints where its time went. `--send` times the send
// (the 200-byte one that fills the mailbox, one at a time) instead of the page. `--against-serve=ARGS`
// gives the other daemon more `serve` flags (`--against . --against-serve=--no-metrics`: one build,
// a part switched off).
//   node --import tsx bench/probes/inbox-compare.ts [stored=200] [requests=3000] [passes=4] [--against DIR] [--against-serve=ARGS] [--prof] [--send]
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon, type Daemon } from '../lib/daemon.js';
import { cleanupAll, cpuSeconds, runJson, tempDir } from '../lib/procs.js';
import { summarizeProfile } from '../lib/cpuprofile.js';
import { summarize } from '../lib/stats.js';
import type { FixedResult } from '../loadgen/fixed.js';

interface Build {
  name: string;
  cli?: string;
  d?: Daemon;
  reader?: string;
  prof: string;
  p50: number[];
  p99: number[];
  /** The daemon's CPU time per request (less moved by other load on the machine than latency). */
  cpuUs: number[];
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const i = args.indexOf('--against');
  const against = i >= 0 ? args.splice(i, 2)[1] : undefined;
  const serveArg = args.find((a) => a.startsWith('--against-serve='));
  const otherServe = serveArg ? serveArg.slice('--against-serve='.length).split(' ').filter(Boolean) : [];
  const prof = args.includes('--prof');
  const sends = args.includes('--send');
  const [stored = 200, requests = 3000, passes = 4] = args.filter((a) => !a.startsWith('--')).map(Number);
  const dir = tempDir('inbox-cmp');
  const builds: Build[] = [{ name: 'this build', prof: join(dir, 'prof-this'), p50: [], p99: [], cpuUs: [] }];
  if (against)
    builds.push({
      name: `against ${against}${otherServe.length ? ` ${otherServe.join(' ')}` : ''}`,
      cli: join(against, 'dist', 'cli', 'main.js'),
      prof: join(dir, 'prof-other'),
      p50: [],
      p99: [],
      cpuUs: [],
    });
  const what = sends ? 'send' : 'inbox page';
  const senders = new Map<Build, string>();
  const body = JSON.stringify({ to: 'in-r', subject: 'profiled', body: 'x'.repeat(200) });
  for (const [k, b] of builds.entries()) {
    const data = join(dir, `data-${k}`);
    mkdirSync(data);
    b.d = await startDaemon(data, { ...(b.cli ? { cli: b.cli, args: otherServe } : {}), ...(prof && k === 0 ? { nodeFlags: ['--cpu-prof', '--cpu-prof-dir', b.prof] } : {}) });
    const secrets = await b.d.accounts(['in-s', 'in-r'], 2);
    b.reader = secrets.get('in-r');
    senders.set(b, secrets.get('in-s')!);
    await runJson('loadgen.ts', { mode: 'fixed', port: b.d.port, path: '/mail/send', token: secrets.get('in-s'), body, concurrency: 8, count: stored, warmupPerConnection: 0 });
  }
  for (let p = 0; p < passes; p++) {
    for (const b of p % 2 === 0 ? builds : [...builds].reverse()) {
      const d = b.d as Daemon;
      const cpu0 = cpuSeconds(d.pid);
      const r = await runJson<FixedResult>('loadgen.ts', {
        mode: 'fixed',
        port: d.port,
        path: sends ? '/mail/send' : '/mail/inbox',
        token: sends ? senders.get(b) : b.reader,
        body: sends ? body : '{}',
        concurrency: 1,
        count: requests,
        warmupPerConnection: 200,
      });
      if (r.errors > 0) throw new Error(`${b.name}: ${r.errors} errors (${r.firstError ?? ''})`);
      b.cpuUs.push(((cpuSeconds(d.pid) - cpu0) / (requests + 200)) * 1e6);
      b.p50.push(r.latency.p50);
      b.p99.push(r.latency.p99);
    }
  }
  for (const b of builds) await b.d?.stop();
  const med = (xs: number[]): number => summarize(xs).p50;
  for (const b of builds) {
    process.stdout.write(`${b.name}: ${what} p50 ${med(b.p50).toFixed(3)} ms (passes: ${b.p50.map((x) => x.toFixed(3)).join(' ')}), p99 ${med(b.p99).toFixed(3)} ms\n`);
    process.stdout.write(`  daemon CPU per request ${med(b.cpuUs).toFixed(0)} µs (passes: ${b.cpuUs.map((x) => x.toFixed(0)).join(' ')})\n`);
  }
  const [a, o] = builds;
  if (a && o) process.stdout.write(`this build / against: p50 ${(med(a.p50) / med(o.p50)).toFixed(3)}, daemon CPU per request ${(med(a.cpuUs) / med(o.cpuUs)).toFixed(3)}\n`);
  if (!prof) return;
  const file = readdirSync(builds[0]!.prof).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no profile written');
  const s = summarizeProfile(join(builds[0]!.prof, file), 25);
  process.stdout.write(`\nthis build's daemon (${s.totalMs} ms profiled, idle ${s.idleShare}%), charged to the nearest m4a frame:\n`);
  for (const e of s.byOwnCode) process.stdout.write(`  ${e.share.toFixed(1).padStart(5)}%  ${e.name}  ${e.where}\n`);
  process.stdout.write('top self time:\n');
  for (const e of s.top) process.stdout.write(`  ${e.share.toFixed(1).padStart(5)}%  ${e.name}  ${e.where}\n`);
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void cleanupAll().then(() => process.exit()));
