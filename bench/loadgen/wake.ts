// Wake latency: a reader parked in `inbox` with wait_secs (after its cursor), a sender sends one
// message to it; measured from the send's acknowledgement to the reader's answer (and from the
// send's start). Both run in this one process, so one clock serves both.
import { Poster, keepAlive, progressReporter } from './http.js';
import { nowNs, summarize, type Summary } from '../lib/stats.js';
import { sleep } from '../lib/procs.js';

export interface WakeSpec {
  mode: 'wake';
  port: number;
  /** The sender's daemon when it is another one (the cross-daemon wake); default `port`. */
  senderPort?: number;
  reader: string;
  sender: string;
  to: string;
  rounds: number;
  /** Time given to the reader's request to park before the send. */
  settleMs: number;
}

export interface WakeResult {
  rounds: number;
  /** Reader answered after the send's acknowledgement (ms; negative when it came first). */
  ackToWake: Summary;
  /** Send issued to reader answered: the whole send-and-wait loop. */
  sendToWake: Summary;
  send: Summary;
  empty: number;
}

interface Page {
  messages: { id: string }[];
  next_cursor: string | null;
}

export async function runWake(s: WakeSpec): Promise<WakeResult> {
  const reader = new Poster(keepAlive(1), s.port, s.reader);
  const sender = new Poster(keepAlive(1), s.senderPort ?? s.port, s.sender);
  const body = JSON.stringify({ to: s.to, subject: 'wake', body: 'x'.repeat(200) });
  // Warm both connections (attestation) and find the reader's cursor.
  let cursor = (await reader.json<Page>('/mail/inbox', { include_acked: true, limit: 256 })).next_cursor;
  for (let i = 0; i < 3; i++) await sender.json('/mail/send', { to: s.to, subject: 'warm', body: 'warm' });
  for (;;) {
    const p = await reader.json<Page>('/mail/inbox', cursor ? { after: cursor, include_acked: true, limit: 256 } : { include_acked: true, limit: 256 });
    cursor = p.next_cursor;
    if (p.messages.length === 0) break;
  }
  const ackToWake: number[] = [];
  const sendToWake: number[] = [];
  const sendLat: number[] = [];
  let empty = 0;
  const tick = progressReporter(s.rounds, 'rounds');
  for (let i = 0; i < s.rounds; i++) {
    let tWake = 0n;
    const waiting = reader.json<Page>('/mail/inbox', { after: cursor, wait_secs: 30, include_acked: true, limit: 16 }, 60_000).then((p) => {
      tWake = nowNs();
      return p;
    });
    await sleep(s.settleMs);
    const t0 = nowNs();
    const r = await sender.post('/mail/send', body);
    const tAck = nowNs();
    if (r.status !== 200) throw new Error(`send answered ${r.status}: ${r.text.slice(0, 300)}`);
    const page = await waiting;
    if (page.messages.length === 0) empty++;
    cursor = page.next_cursor;
    ackToWake.push(Number(tWake - tAck) / 1e6);
    sendToWake.push(Number(tWake - t0) / 1e6);
    sendLat.push(Number(tAck - t0) / 1e6);
    tick(i + 1);
  }
  reader.close();
  sender.close();
  return { rounds: s.rounds, ackToWake: summarize(ackToWake), sendToWake: summarize(sendToWake), send: summarize(sendLat), empty };
}
