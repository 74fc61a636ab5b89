// Where a cross-daemon wake on PostgreSQL spends its time: two daemons on one fresh schema, a reader
// parked on B, a sender on A; per round: send start -> ack on A, ack -> answer on B, and the same
// loop with the reader on A. Usage: node --import tsx bench/probes/pg-wake-split.ts [rounds] [pg-url]
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { MailClient } from '../../src/client/http-client.js';
import { CLI, freePort, sleep, stopChild, track } from '../lib/procs.js';
import { percentile } from '../lib/stats.js';

const rounds = Number(process.argv[2] ?? 300);
const pgUrl = process.argv[3] ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `m4a_probe_${process.pid}`;
const root = mkdtempSync(join(tmpdir(), 'm4a-pgwake-'));

async function serve(dir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = track(
    spawn(process.execPath, [CLI, 'serve', '--data-dir', dir, '--port', String(port), '--store', `${pgUrl}?schema=${schema}`], {
      stdio: 'ignore',
      env: { ...process.env, M4A_LOG_LEVEL: 'warn' },
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(`${url}/health`)).ok) return { url, stop: () => stopChild(child, 10_000) };
    } catch {
      /* not yet */
    }
    await sleep(50);
  }
  throw new Error('daemon did not start');
}

const sql = postgres(pgUrl, { max: 2, onnotice: () => undefined });
const dA = join(root, 'a');
const dB = join(root, 'b');
const a = await serve(dA);
mkdirSync(dB, { recursive: true, mode: 0o700 });
copyFileSync(join(dA, 'operator.token'), join(dB, 'operator.token'));
const b = await serve(dB);
const op = new MailClient({ url: a.url, token: readFileSync(join(dA, 'operator.token'), 'utf8').trim() });
const secret = async (id: string) => (await op.admin.accountAdd({ id })).secret;
const sender = new MailClient({ url: a.url, token: await secret('s') });
const rtok = await secret('r');
const readers = { cross: new MailClient({ url: b.url, token: rtok }), local: new MailClient({ url: a.url, token: rtok }) };

for (const [name, reader] of Object.entries(readers)) {
  let cursor: string | undefined;
  for (;;) {
    const page = await reader.inbox({ include_acked: true, limit: 200, ...(cursor ? { after: cursor } : {}) });
    cursor = page.next_cursor ?? cursor;
    if (page.messages.length < 200) break;
  }
  const total: number[] = [];
  const toAck: number[] = [];
  const afterAck: number[] = [];
  for (let i = 0; i < rounds + 10; i++) {
    let answered = 0;
    const parked = reader.inbox({ wait_secs: 20, include_acked: true, ...(cursor ? { after: cursor } : {}) }).then((r) => ((answered = performance.now()), r));
    await sleep(5);
    const t0 = performance.now();
    await sender.send({ to: 'r', subject: `p${i}`, body: 'x' });
    const tAck = performance.now();
    const r = await parked;
    cursor = r.next_cursor ?? cursor;
    if (i < 10) continue;
    total.push(answered - t0);
    toAck.push(tAck - t0);
    afterAck.push(answered - tAck);
  }
  const f = (xs: number[]) => ((xs = [...xs].sort((p, q) => p - q)), `p50 ${percentile(xs, 50).toFixed(2)} p99 ${percentile(xs, 99).toFixed(2)}`);
  console.log(`${name}: send start->answer ${f(total)} | send start->ack ${f(toAck)} | ack->answer ${f(afterAck)}`);
}
// The floor: LISTEN/NOTIFY round trip on loopback.
const rtt: number[] = [];
let resolveN: (() => void) | null = null;
const meta = await sql.listen(`probe_${process.pid}`, () => resolveN?.());
for (let i = 0; i < rounds; i++) {
  const t0 = performance.now();
  await new Promise<void>((r) => {
    resolveN = r;
    void sql.notify(`probe_${process.pid}`, 'x');
  });
  rtt.push(performance.now() - t0);
}
rtt.sort((p, q) => p - q);
console.log(`LISTEN/NOTIFY round trip p50 ${percentile(rtt, 50).toFixed(2)} p99 ${percentile(rtt, 99).toFixed(2)}`);
await meta.unlisten();
for (const c of [op, sender, ...Object.values(readers)]) c.close();
await b.stop();
await a.stop();
await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
await sql.end();
rmSync(root, { recursive: true, force: true });
