// What a user would build instead, part 1: Redis Streams. Writers XADD (acknowledged once Redis
// replies: with appendfsync always, after the fsync); readers wait in XREAD BLOCK. One connection
// per writer or reader, the same shape as the daemon's keep-alive senders and parked readers.
import { Redis } from 'ioredis';
import { finish, readSpec } from '../lib/spec.js';
import { msSince, nowNs, summarize } from '../lib/stats.js';
import { sleep } from '../lib/procs.js';
import { progressReporter } from '../loadgen/http.js';

type Spec =
  | { mode: 'throughput'; port: number; concurrency: number; durationMs: number }
  | { mode: 'wake'; port: number; rounds: number; settleMs: number }
  | { mode: 'fanout'; port: number; readers: number; rounds: number; settleMs: number };

const body = 'x'.repeat(200);
const conn = (port: number): Redis => new Redis({ port, host: '127.0.0.1', lazyConnect: false, enableAutoPipelining: false, maxRetriesPerRequest: 1 });

type XReadReply = [string, [string, string[]][]][] | null;

async function throughput(s: Extract<Spec, { mode: 'throughput' }>) {
  const conns = Array.from({ length: s.concurrency }, () => conn(s.port));
  await Promise.all(conns.map((c) => c.xadd('bench:t', '*', 'to', 'r0', 'subject', 's', 'body', body)));
  const lat: number[] = [];
  const t0 = nowNs();
  const stopAt = Date.now() + s.durationMs;
  const tick = progressReporter(Math.round(s.durationMs / 100), 'ds');
  await Promise.all(
    conns.map(async (c) => {
      while (Date.now() < stopAt) {
        const t = nowNs();
        await c.xadd('bench:t', '*', 'to', 'r0', 'subject', 's', 'body', body);
        lat.push(msSince(t));
        tick(Math.round(msSince(t0) / 100));
      }
    }),
  );
  const el = msSince(t0);
  for (const c of conns) c.disconnect();
  return { count: lat.length, errors: 0, elapsedMs: Math.round(el), rps: Math.round((lat.length / el) * 1000), latency: summarize(lat) };
}

async function wake(s: Extract<Spec, { mode: 'wake' }>) {
  const reader = conn(s.port);
  const writer = conn(s.port);
  let last = (await writer.xadd('bench:w', '*', 'warm', '1')) as string;
  const ackToWake: number[] = [];
  const sendToWake: number[] = [];
  const send: number[] = [];
  const tick = progressReporter(s.rounds, 'rounds');
  for (let i = 0; i < s.rounds; i++) {
    let tWake = 0n;
    const waiting = (reader.xread('BLOCK', 30_000, 'STREAMS', 'bench:w', last) as Promise<XReadReply>).then((r) => {
      tWake = nowNs();
      return r;
    });
    await sleep(s.settleMs);
    const t0 = nowNs();
    await writer.xadd('bench:w', '*', 'to', 'r', 'subject', 'wake', 'body', body);
    const tAck = nowNs();
    const r = await waiting;
    last = r?.[0]?.[1]?.at(-1)?.[0] ?? last;
    ackToWake.push(Number(tWake - tAck) / 1e6);
    sendToWake.push(Number(tWake - t0) / 1e6);
    send.push(Number(tAck - t0) / 1e6);
    tick(i + 1);
  }
  reader.disconnect();
  writer.disconnect();
  return { rounds: s.rounds, ackToWake: summarize(ackToWake), sendToWake: summarize(sendToWake), send: summarize(send), empty: 0 };
}

async function fanout(s: Extract<Spec, { mode: 'fanout' }>) {
  const writer = conn(s.port);
  const readers = Array.from({ length: s.readers }, () => conn(s.port));
  const tc = nowNs();
  await Promise.all(readers.map((r) => r.ping()));
  const connectMs = msSince(tc);
  let last = (await writer.xadd('bench:f', '*', 'warm', '1')) as string;
  const rounds = [];
  const tick = progressReporter(s.rounds, 'rounds');
  for (let k = 0; k < s.rounds; k++) {
    const answered: bigint[] = new Array(readers.length).fill(0n);
    const all = Promise.all(readers.map((r, i) => (r.xread('BLOCK', 30_000, 'STREAMS', 'bench:f', last) as Promise<XReadReply>).then(() => void (answered[i] = nowNs()))));
    await sleep(s.settleMs);
    const t0 = nowNs();
    last = (await writer.xadd('bench:f', '*', 'to', '#room', 'subject', 'fan-out', 'body', body)) as string;
    const tAck = nowNs();
    await all;
    const fromAck = answered.map((t) => Number(t - tAck) / 1e6).sort((a, b) => a - b);
    const lastT = answered.reduce((m, t) => (t > m ? t : m), 0n);
    rounds.push({
      send: Number(tAck - t0) / 1e6,
      allFromAck: Number(lastT - tAck) / 1e6,
      allFromSend: Number(lastT - t0) / 1e6,
      medianFromAck: fromAck[Math.floor(fromAck.length / 2)] ?? NaN,
      empty: 0,
    });
    tick(k + 1);
  }
  for (const r of readers) r.disconnect();
  writer.disconnect();
  return {
    readers: readers.length,
    connectMs: Math.round(connectMs),
    rounds,
    allFromAck: summarize(rounds.map((r) => r.allFromAck)),
    allFromSend: summarize(rounds.map((r) => r.allFromSend)),
  };
}

function run(s: Spec): Promise<unknown> {
  if (s.mode === 'throughput') return throughput(s);
  if (s.mode === 'wake') return wake(s);
  return fanout(s);
}

finish(run(readSpec<Spec>()));
