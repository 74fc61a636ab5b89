// Side by side, in one run: one connection doing N sequential durable sends (each waits for its
// answer) over the stream door and over HTTP keep-alive, to the same real daemon (its own process,
// SQLite), rounds alternating so the machine's noise falls on both. Reports each round and the
// ratio of the medians (stream / HTTP) of sends per second, and the p50 of one send.
//   npm run build && node --import tsx bench/probes/stream-vs-http.ts [sends=2000] [rounds=3]
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon } from '../lib/daemon.js';
import { cleanupAll, tempDir } from '../lib/procs.js';
import { keepAlive, Poster } from '../loadgen/http.js';
import { StreamConn } from '../loadgen/stream-conn.js';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;

interface Round {
  rps: number;
  p50: number;
  p99: number;
}

async function timed(n: number, one: (i: number) => Promise<void>): Promise<Round> {
  const lat: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    await one(i);
    lat.push(performance.now() - s);
  }
  const ms = performance.now() - t0;
  return { rps: (n * 1000) / ms, p50: pct(lat, 0.5), p99: pct(lat, 0.99) };
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 2000);
  const rounds = Number(process.argv[3] ?? 3);
  const dir = tempDir('stream-vs-http');
  mkdirSync(join(dir, 'data'));
  const d = await startDaemon(join(dir, 'data'));
  const socket = (JSON.parse(readFileSync(join(d.dataDir, 'daemon.json'), 'utf8')) as { socket?: string }).socket;
  if (!socket) throw new Error('the daemon has no stream door (daemon.json names no socket): is the addon built? npm run build:native');
  const secrets = await d.accounts(['sv-s', ...Array.from({ length: 8 }, (_, i) => `sv-r${i}`)], 4);
  const token = secrets.get('sv-s') as string;
  const inputs = Array.from({ length: 8 }, (_, i) => ({ to: `sv-r${i}`, subject: `probe ${i}`, body: 'x'.repeat(200) }));
  const bodies = inputs.map((x) => JSON.stringify(x));
  const stream = await StreamConn.open(socket, token, 'stream-vs-http');
  const http = new Poster(keepAlive(1), d.port, token);
  const run = {
    stream: (i: number) => stream.call('send', inputs[i % 8]).then(() => undefined),
    http: async (i: number) => {
      const r = await http.post('/mail/send', bodies[i % 8] as string);
      if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.text.slice(0, 200)}`);
    },
  };
  // Warm-up: attestation, session registration, JIT, SQLite caches; not counted.
  await timed(200, run.stream);
  await timed(200, run.http);
  const got = { stream: [] as Round[], http: [] as Round[] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? (['stream', 'http'] as const) : (['http', 'stream'] as const);
    for (const door of order) {
      const res = await timed(n, run[door]);
      got[door].push(res);
      process.stdout.write(
        `round ${r + 1}, ${door.padEnd(6)}: ${n} sends in ${((n / res.rps) * 1000).toFixed(0)} ms, ${Math.round(res.rps)}/s, p50 ${res.p50.toFixed(3)} ms, p99 ${res.p99.toFixed(3)} ms\n`,
      );
    }
  }
  const m = (door: 'stream' | 'http', k: keyof Round) => median(got[door].map((x) => x[k]));
  process.stdout.write(
    `median: stream ${Math.round(m('stream', 'rps'))}/s (p50 ${m('stream', 'p50').toFixed(3)} ms), HTTP keep-alive ${Math.round(m('http', 'rps'))}/s (p50 ${m('http', 'p50').toFixed(3)} ms): ` +
      `ratio stream/HTTP ${(m('stream', 'rps') / m('http', 'rps')).toFixed(2)}x; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`,
  );
  stream.close();
  http.agent.destroy();
  await d.stop();
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void cleanupAll().then(() => process.exit()));
