// Fan-out on the stream door: N readers (one account each, all members of one room), one Unix-socket
// connection each, all from this one process. First parked: every round all N park in `inbox
// {after, wait_secs}`, the daemon goes idle, one send to the room; then pushed, on the same
// connections: every reader subscribes once and each round's send is answered by N `mail` events.
import { StreamConn, openMany } from './stream-conn.js';
import { progressReporter } from './http.js';
import { nowNs, summarize } from '../lib/stats.js';
import type { FanoutResult, FanoutRound } from './fanout.js';
import { sleep, waitIdle } from '../lib/procs.js';

export interface StreamFanoutSpec {
  mode: 'stream-fanout';
  socket: string;
  readers: string[];
  sender: string;
  to: string;
  rounds: number;
  settleMs: number;
  daemonPid?: number;
  how: ('parked' | 'pushed')[];
}

interface Page {
  messages: { message_id: string }[];
  next_cursor: string | null;
}

export type StreamFanoutResult = Partial<Record<'parked' | 'pushed', FanoutResult>> & { readers: number; connectMs: number };

export async function runStreamFanout(s: StreamFanoutSpec): Promise<StreamFanoutResult> {
  const tc = nowNs();
  const tick0 = progressReporter(s.readers.length, 'readers connected');
  const readers = await openMany(
    s.socket,
    s.readers.length,
    (i) => s.readers[i] as string,
    200,
    (n) => tick0(n, true),
  );
  // Each reader's head cursor.
  const cursors: (string | null)[] = new Array(readers.length).fill(null);
  const wave = 200;
  for (let i = 0; i < readers.length; i += wave) {
    await Promise.all(
      readers.slice(i, i + wave).map(async (r, j) => {
        let c: string | null = null;
        for (;;) {
          const p: Page = await r.call<Page>('inbox', { include_acked: true, limit: 256, include_bodies: false, ...(c ? { after: c } : {}) });
          c = p.next_cursor ?? c;
          if (p.messages.length < 256) break;
        }
        cursors[i + j] = c;
      }),
    );
  }
  const connectMs = Math.round(Number(nowNs() - tc) / 1e6);
  const sender = await StreamConn.open(s.socket, s.sender);
  const input = { to: s.to, subject: 'fan-out', body: 'x'.repeat(200) };
  const out: StreamFanoutResult = { readers: readers.length, connectMs };

  const runRounds = async (label: 'parked' | 'pushed', arm: (answered: bigint[], counts: { empty: number }) => Promise<unknown>): Promise<FanoutResult> => {
    const rounds: FanoutRound[] = [];
    const tick = progressReporter(s.rounds, `rounds (${label})`);
    for (let k = 0; k < s.rounds; k++) {
      const answered: bigint[] = new Array(readers.length).fill(0n);
      const counts = { empty: 0 };
      const all = arm(answered, counts);
      await sleep(s.settleMs);
      if (s.daemonPid) await waitIdle(s.daemonPid, 30_000);
      const t0 = nowNs();
      await sender.call('send', input);
      const tAck = nowNs();
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
        empty: counts.empty,
        at: { startUs: us(t0), ackUs: us(tAck), firstUs: us(first), lastUs: us(last) },
      });
      tick(k + 1);
    }
    return { readers: readers.length, connectMs, rounds, allFromAck: summarize(rounds.map((r) => r.allFromAck)), allFromSend: summarize(rounds.map((r) => r.allFromSend)) };
  };

  if (s.how.includes('parked')) {
    out.parked = await runRounds('parked', (answered, counts) =>
      Promise.all(
        readers.map((r, i) =>
          r.call<Page>('inbox', { after: cursors[i], wait_secs: 30, include_acked: true, limit: 16 }, 60_000).then((p) => {
            answered[i] = nowNs();
            if (p.messages.length === 0) counts.empty++;
            cursors[i] = p.next_cursor ?? cursors[i] ?? null;
          }),
        ),
      ),
    );
  }
  if (s.how.includes('pushed')) {
    // One subscription per reader, after its cursor; each round waits for one event on each.
    let waiting: ((i: number, at: bigint, n: number) => void) | null = null;
    readers.forEach((r, i) => {
      r.onMail = (e, at) => waiting?.(i, at, e.messages.length);
    });
    await Promise.all(readers.map((r, i) => r.call('subscribe', cursors[i] ? { after: cursors[i] } : {})));
    out.pushed = await runRounds(
      'pushed',
      (answered, counts) =>
        new Promise<void>((resolve, reject) => {
          let left = readers.length;
          const t = setTimeout(() => reject(new Error(`${left} readers got no mail event within 30 s`)), 30_000);
          waiting = (i, at, n) => {
            if (answered[i] !== 0n) return;
            answered[i] = at;
            if (n === 0) counts.empty++;
            if (--left === 0) {
              clearTimeout(t);
              waiting = null;
              resolve();
            }
          };
        }),
    );
  }
  for (const r of readers) r.close();
  sender.close();
  return out;
}
