// Many parked waiters: `perAccount` connections for each of the accounts, each parked in
// `inbox --wait` after the head cursor; the daemon's memory before and after, how the time to
// open and park grows with the count (attestation must stay linear), and send latency to an
// unrelated account with and without the waiters.
import { readFileSync } from 'node:fs';
import { Poster, keepAlive, progressReporter } from './http.js';
import { msSince, nowNs, summarize, type Summary } from '../lib/stats.js';
import { sleep, waitIdle } from '../lib/procs.js';

export interface WaitersSpec {
  mode: 'waiters';
  port: number;
  daemonPid: number;
  accounts: string[];
  perAccount: number;
  wave: number;
  /** An account with an empty mailbox: its inbox answers the head cursor. */
  probe: string;
  sender: string;
  sendTo: string;
  sendCount: number;
  /** Stop opening more waves once parking has taken this long (attestation may not scale). */
  maxParkMs: number;
}

export interface WaitersResult {
  /** Waiters asked for, and parked before the time cap. */
  wanted: number;
  waiters: number;
  capped: boolean;
  /** Waves whose requests were still being worked on when the idle wait gave up. */
  busyWaves: number;
  parkedMs: number;
  wave: number;
  /** Time to open, attest and park each successive wave of `wave` waiters (ms). */
  perWaveMs: number[];
  rssBeforeMiB: number;
  rssParkedMiB: number;
  rssDeltaMiB: number;
  sendBefore: Summary;
  sendParked: Summary;
  /** Waits that expired (60 s) before the end and parked again on their connection. */
  answeredEarly: number;
}

const rss = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

async function sendLatency(sender: Poster, to: string, n: number): Promise<Summary> {
  const body = JSON.stringify({ to, subject: 'latency', body: 'x'.repeat(200) });
  const lat: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = nowNs();
    const r = await sender.post('/mail/send', body);
    if (r.status !== 200) throw new Error(`send answered ${r.status}: ${r.text.slice(0, 300)}`);
    lat.push(msSince(t));
  }
  return summarize(lat);
}

export async function runWaiters(s: WaitersSpec): Promise<WaitersResult> {
  const sender = new Poster(keepAlive(1), s.port, s.sender);
  const probe = new Poster(keepAlive(1), s.port, s.probe);
  const head = (await probe.json<{ next_cursor: string }>('/mail/inbox', {})).next_cursor;
  await sendLatency(sender, s.sendTo, 50); // warm
  const sendBefore = await sendLatency(sender, s.sendTo, s.sendCount);
  await sleep(500);
  const rssBefore = rss(s.daemonPid);

  // Account-major order: wave k holds whole accounts, so a capped run parks 8 per account.
  const posters: Poster[] = [];
  for (const t of s.accounts) for (let i = 0; i < s.perAccount; i++) posters.push(new Poster(keepAlive(1), s.port, t));
  const total = posters.length;
  const body = JSON.stringify({ after: head, wait_secs: 60, include_acked: true, limit: 1 });
  // A wait answered before the end (it expired after wait_secs while later waves were still being
  // attested) parks again on the same connection, so every waiter stays parked until the end.
  let early = 0;
  let stopping = false;
  const keepParked = async (p: Poster): Promise<void> => {
    while (!stopping) {
      try {
        await p.post('/mail/inbox', body, 180_000);
        if (!stopping) early++;
      } catch {
        return;
      }
    }
  };
  const answers: Promise<void>[] = [];
  const perWave: number[] = [];
  const tick = progressReporter(total, 'waiters parked');
  const t0 = nowNs();
  let parked = 0;
  let busyWaves = 0;
  let capped = false;
  for (let i = 0; i < total; i += s.wave) {
    if (msSince(t0) > s.maxParkMs) {
      capped = true;
      break;
    }
    // A wave: its requests are sent at once; the next wave starts once they are parked.
    const wave = posters.slice(i, i + s.wave);
    const waveStart = nowNs();
    for (const p of wave) answers.push(keepParked(p));
    // Parked = the daemon has read, attested and parked them: it goes idle.
    if (!(await waitIdle(s.daemonPid, 60_000))) busyWaves++;
    const done = i + wave.length;
    parked = done;
    perWave.push(Math.round(msSince(waveStart)));
    tick(done);
  }
  tick(parked, true);
  const parkedMs = msSince(t0);
  await waitIdle(s.daemonPid, 120_000);
  await sleep(1000);
  const rssParked = rss(s.daemonPid);
  const sendParked = await sendLatency(sender, s.sendTo, s.sendCount);
  const answeredEarly = early;
  stopping = true;
  for (const p of posters) p.close();
  await Promise.allSettled(answers);
  sender.close();
  probe.close();
  return {
    wanted: total,
    waiters: parked,
    capped,
    busyWaves,
    parkedMs: Math.round(parkedMs),
    wave: s.wave,
    perWaveMs: perWave,
    rssBeforeMiB: Math.round(rssBefore * 10) / 10,
    rssParkedMiB: Math.round(rssParked * 10) / 10,
    rssDeltaMiB: Math.round((rssParked - rssBefore) * 10) / 10,
    sendBefore,
    sendParked,
    answeredEarly,
  };
}
