// Fan-out: N readers (one account each, all members of one room) parked in `inbox --wait`; one send
// to the room; how long until every reader has its answer.
import { Poster, keepAlive, progressReporter } from './http.js';
import { nowNs, summarize, type Summary } from '../lib/stats.js';
import { sleep, waitIdle } from '../lib/procs.js';

export interface FanoutSpec {
  mode: 'fanout';
  port: number;
  readers: string[];
  sender: string;
  to: string;
  rounds: number;
  settleMs: number;
  /** When set, each round waits until the daemon is idle (every reader parked) before sending. */
  daemonPid?: number;
}

export interface FanoutRound {
  send: number;
  /** Last reader answered, from the send's acknowledgement. */
  allFromAck: number;
  /** Last reader answered, from the send's start. */
  allFromSend: number;
  /** Median reader, from the acknowledgement. */
  medianFromAck: number;
  empty: number;
  /** The send's start, its ack, the first and the last answer: µs of the monotonic clock (the
   *  one --cpu-prof stamps samples with), so a probe can cut the daemon's profile to a round. */
  at: { startUs: number; ackUs: number; firstUs: number; lastUs: number };
}

export interface FanoutResult {
  readers: number;
  connectMs: number;
  rounds: FanoutRound[];
  allFromAck: Summary;
  allFromSend: Summary;
}

interface Page {
  messages: { id: string }[];
  next_cursor: string | null;
}

export async function runFanout(s: FanoutSpec): Promise<FanoutResult> {
  const sender = new Poster(keepAlive(1), s.port, s.sender);
  const readers = s.readers.map((t) => new Poster(keepAlive(1), s.port, t));
  const tc = nowNs();
  // Each reader's head cursor (opens and attests its connection).
  const cursors: (string | null)[] = new Array(readers.length).fill(null);
  const tick0 = progressReporter(readers.length, 'readers connected');
  let connected = 0;
  const wave = 200;
  for (let i = 0; i < readers.length; i += wave) {
    await Promise.all(
      readers.slice(i, i + wave).map(async (r, j) => {
        let c: string | null = null;
        for (;;) {
          const p: Page = await r.json<Page>(
            '/mail/inbox',
            c ? { after: c, include_acked: true, limit: 256, include_bodies: false } : { include_acked: true, limit: 256, include_bodies: false },
          );
          c = p.next_cursor;
          if (p.messages.length < 256) break;
        }
        cursors[i + j] = c;
        tick0(++connected);
      }),
    );
  }
  const connectMs = Number(nowNs() - tc) / 1e6;
  await sender.json('/mail/send', { to: 'fanout-probe-none', subject: 'x', body: 'x' }).catch(() => undefined); // attests the sender
  const body = JSON.stringify({ to: s.to, subject: 'fan-out', body: 'x'.repeat(200) });
  const rounds: FanoutRound[] = [];
  const tick = progressReporter(s.rounds, 'rounds');
  for (let k = 0; k < s.rounds; k++) {
    const answered: bigint[] = new Array(readers.length).fill(0n);
    let empty = 0;
    const all = Promise.all(
      readers.map((r, i) =>
        r.json<Page>('/mail/inbox', { after: cursors[i], wait_secs: 30, include_acked: true, limit: 16 }, 60_000).then((p) => {
          answered[i] = nowNs();
          if (p.messages.length === 0) empty++;
          cursors[i] = p.next_cursor;
        }),
      ),
    );
    await sleep(s.settleMs);
    if (s.daemonPid) await waitIdle(s.daemonPid, 30_000);
    const t0 = nowNs();
    const r = await sender.post('/mail/send', body);
    const tAck = nowNs();
    if (r.status !== 200) throw new Error(`send answered ${r.status}: ${r.text.slice(0, 300)}`);
    await all;
    const fromAck = answered.map((t) => Number(t - tAck) / 1e6).sort((a, b) => a - b);
    const last = answered.reduce((m, t) => (t > m ? t : m), 0n);
    const first = answered.reduce((m, t) => (t < m ? t : m), last);
    const us = (t: bigint): number => Number(t / 1000n);
    rounds.push({
      send: Number(tAck - t0) / 1e6,
      allFromAck: Number(last - tAck) / 1e6,
      allFromSend: Number(last - t0) / 1e6,
      medianFromAck: fromAck[Math.floor(fromAck.length / 2)] ?? NaN,
      empty,
      at: { startUs: us(t0), ackUs: us(tAck), firstUs: us(first), lastUs: us(last) },
    });
    tick(k + 1);
  }
  for (const r of readers) r.close();
  sender.close();
  return {
    readers: readers.length,
    connectMs: Math.round(connectMs),
    rounds,
    allFromAck: summarize(rounds.map((r) => r.allFromAck)),
    allFromSend: summarize(rounds.map((r) => r.allFromSend)),
  };
}
