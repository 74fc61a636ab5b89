// The send-and-wait loop on the stream door: a reader on its own connection either parked in
// `inbox {after, wait_secs}` (parked) or subscribed once and answered by a pushed `mail` event
// (pushed); a sender on another connection sends one message to it per round. Measured from the
// send's start and from its acknowledgement to the reader's answer, in this one process (one clock).
// The reader and the sender may be on different daemons' sockets (the cross-daemon wake).
import { StreamConn, type MailEvent } from './stream-conn.js';
import { progressReporter } from './http.js';
import { nowNs, summarize } from '../lib/stats.js';
import { sleep } from '../lib/procs.js';
import type { WakeResult } from './wake.js';

export interface StreamWakeSpec {
  mode: 'stream-wake';
  readerSocket: string;
  senderSocket: string;
  reader: string;
  sender: string;
  to: string;
  rounds: number;
  settleMs: number;
  how: 'parked' | 'pushed';
}

interface Page {
  messages: { message_id: string }[];
  next_cursor: string | null;
}

const WAIT = { wait_secs: 30, include_acked: true, limit: 16 };

/** The reader's head: its cursor after every message it holds. */
async function headCursor(reader: StreamConn): Promise<string | null> {
  let cursor: string | null = null;
  for (;;) {
    const p: Page = await reader.call<Page>('inbox', { include_acked: true, limit: 256, include_bodies: false, ...(cursor ? { after: cursor } : {}) });
    cursor = p.next_cursor ?? cursor;
    if (p.messages.length < 256) return cursor;
  }
}

export async function runStreamWake(s: StreamWakeSpec): Promise<WakeResult> {
  const reader = await StreamConn.open(s.readerSocket, s.reader);
  const sender = await StreamConn.open(s.senderSocket, s.sender);
  const input = { to: s.to, subject: 'wake', body: 'x'.repeat(200) };
  for (let i = 0; i < 3; i++) await sender.call('send', { to: s.to, subject: 'warm', body: 'warm' });
  await sleep(50);
  let cursor = await headCursor(reader);
  // Pushed: one subscription after the head; each round waits for the next event.
  let nextEvent: ((e: MailEvent, at: bigint) => void) | null = null;
  if (s.how === 'pushed') {
    reader.onMail = (e, at) => {
      const f = nextEvent;
      nextEvent = null;
      f?.(e, at);
    };
    await reader.call('subscribe', cursor ? { after: cursor } : {});
  }
  const ackToWake: number[] = [];
  const sendToWake: number[] = [];
  const sendLat: number[] = [];
  let empty = 0;
  const tick = progressReporter(s.rounds, 'rounds');
  for (let i = 0; i < s.rounds; i++) {
    let tWake = 0n;
    const answered: Promise<number> =
      s.how === 'parked'
        ? reader.call<Page>('inbox', { ...WAIT, ...(cursor ? { after: cursor } : {}) }, 60_000).then((p) => {
            tWake = nowNs();
            cursor = p.next_cursor ?? cursor;
            return p.messages.length;
          })
        : new Promise<number>((resolve, reject) => {
            const t = setTimeout(() => reject(new Error('no mail event within 30 s')), 30_000);
            nextEvent = (e, at) => {
              clearTimeout(t);
              tWake = at;
              cursor = e.cursor;
              resolve(e.messages.length);
            };
          });
    await sleep(s.settleMs);
    const t0 = nowNs();
    await sender.call('send', input);
    const tAck = nowNs();
    if ((await answered) === 0) empty++;
    ackToWake.push(Number(tWake - tAck) / 1e6);
    sendToWake.push(Number(tWake - t0) / 1e6);
    sendLat.push(Number(tAck - t0) / 1e6);
    tick(i + 1);
  }
  reader.close();
  sender.close();
  return { rounds: s.rounds, ackToWake: summarize(ackToWake), sendToWake: summarize(sendToWake), send: summarize(sendLat), empty };
}
