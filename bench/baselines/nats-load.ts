// What a user would build instead, part 2: NATS JetStream. Writers publish to a file-backed stream
// and wait for the PubAck; each reader is a durable pull consumer (explicit ack) consuming as
// messages arrive. One connection per writer or reader.
import { AckPolicy, DeliverPolicy, StorageType, connect, type NatsConnection } from 'nats';
import { finish, readSpec } from '../lib/spec.js';
import { msSince, nowNs, summarize } from '../lib/stats.js';
import { sleep } from '../lib/procs.js';
import { progressReporter } from '../loadgen/http.js';

type Spec =
  | { mode: 'throughput'; port: number; concurrency: number; durationMs: number }
  | { mode: 'wake'; port: number; rounds: number; settleMs: number }
  | { mode: 'fanout'; port: number; readers: number; rounds: number; settleMs: number };

const payload = new TextEncoder().encode(JSON.stringify({ to: 'r0', subject: 's', body: 'x'.repeat(200) }));
const conn = (port: number): Promise<NatsConnection> => connect({ servers: `127.0.0.1:${port}`, maxReconnectAttempts: 0 });

async function ensureStream(nc: NatsConnection): Promise<void> {
  const jsm = await nc.jetstreamManager();
  try {
    await jsm.streams.info('BENCH');
  } catch {
    await jsm.streams.add({ name: 'BENCH', subjects: ['bench.>'], storage: StorageType.File });
  }
}

async function throughput(s: Extract<Spec, { mode: 'throughput' }>) {
  const conns = await Promise.all(Array.from({ length: s.concurrency }, () => conn(s.port)));
  await ensureStream(conns[0] as NatsConnection);
  const jss = conns.map((c) => c.jetstream());
  await Promise.all(jss.map((js) => js.publish('bench.t', payload)));
  const lat: number[] = [];
  const t0 = nowNs();
  const stopAt = Date.now() + s.durationMs;
  const tick = progressReporter(Math.round(s.durationMs / 100), 'ds');
  await Promise.all(
    jss.map(async (js) => {
      while (Date.now() < stopAt) {
        const t = nowNs();
        await js.publish('bench.t', payload);
        lat.push(msSince(t));
        tick(Math.round(msSince(t0) / 100));
      }
    }),
  );
  const el = msSince(t0);
  await Promise.all(conns.map((c) => c.close()));
  return { count: lat.length, errors: 0, elapsedMs: Math.round(el), rps: Math.round((lat.length / el) * 1000), latency: summarize(lat) };
}

/** A durable pull consumer on `subject`, consuming continuously; `onMsg` is called per message. */
async function reader(nc: NatsConnection, durable: string, subject: string, onMsg: () => void): Promise<void> {
  const jsm = await nc.jetstreamManager();
  await jsm.consumers.add('BENCH', { durable_name: durable, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.New, filter_subject: subject });
  const c = await nc.jetstream().consumers.get('BENCH', durable);
  const msgs = await c.consume({ max_messages: 16 });
  void (async () => {
    for await (const m of msgs) {
      onMsg();
      m.ack();
    }
  })();
}

async function wake(s: Extract<Spec, { mode: 'wake' }>) {
  const rc = await conn(s.port);
  const wc = await conn(s.port);
  await ensureStream(wc);
  let resolveNext: (() => void) | null = null;
  let tWake = 0n;
  await reader(rc, 'wake', 'bench.w', () => {
    tWake = nowNs();
    resolveNext?.();
  });
  const js = wc.jetstream();
  const ackToWake: number[] = [];
  const sendToWake: number[] = [];
  const send: number[] = [];
  const tick = progressReporter(s.rounds, 'rounds');
  for (let i = -3; i < s.rounds; i++) {
    const next = new Promise<void>((r) => (resolveNext = r));
    await sleep(s.settleMs);
    const t0 = nowNs();
    await js.publish('bench.w', payload);
    const tAck = nowNs();
    await next;
    if (i < 0) continue; // warm-up rounds
    ackToWake.push(Number(tWake - tAck) / 1e6);
    sendToWake.push(Number(tWake - t0) / 1e6);
    send.push(Number(tAck - t0) / 1e6);
    tick(i + 1);
  }
  await rc.close();
  await wc.close();
  return { rounds: s.rounds, ackToWake: summarize(ackToWake), sendToWake: summarize(sendToWake), send: summarize(send), empty: 0 };
}

async function fanout(s: Extract<Spec, { mode: 'fanout' }>) {
  const wc = await conn(s.port);
  await ensureStream(wc);
  const js = wc.jetstream();
  const tc = nowNs();
  const answered: bigint[] = new Array(s.readers).fill(0n);
  let pending = 0;
  let allDone: (() => void) | null = null;
  const conns: NatsConnection[] = [];
  const tick0 = progressReporter(s.readers, 'consumers created');
  for (let i = 0; i < s.readers; i++) {
    const nc = await conn(s.port);
    conns.push(nc);
    await reader(nc, `fan${i}`, 'bench.f', () => {
      answered[i] = nowNs();
      if (--pending === 0) allDone?.();
    });
    tick0(i + 1);
  }
  const connectMs = msSince(tc);
  const rounds = [];
  const tick = progressReporter(s.rounds, 'rounds');
  for (let k = -1; k < s.rounds; k++) {
    pending = s.readers;
    const all = new Promise<void>((r) => (allDone = r));
    await sleep(s.settleMs);
    const t0 = nowNs();
    await js.publish('bench.f', payload);
    const tAck = nowNs();
    await all;
    if (k < 0) continue; // warm-up round
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
  await Promise.all(conns.map((c) => c.close()));
  await wc.close();
  return {
    readers: s.readers,
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
