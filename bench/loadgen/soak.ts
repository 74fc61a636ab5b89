// Soak: mixed load for a fixed time. Paced senders to a set of reader accounts; each reader parked
// in `inbox --wait` and acknowledging what it gets; a pager reading history pages. Per window: send,
// ack and page latency, messages delivered, and the daemon's RSS and CPU.
import { readFileSync } from 'node:fs';
import { Poster, keepAlive, progressReporter } from './http.js';
import { msSince, nowNs, summarize, type Summary } from '../lib/stats.js';
import { sleep } from '../lib/procs.js';

export interface SoakSpec {
  mode: 'soak';
  port: number;
  daemonPid: number;
  durationMs: number;
  windowMs: number;
  sender: string;
  readers: { id: string; token: string }[];
  sendsPerSec: number;
  senders: number;
}

export interface SoakWindow {
  atS: number;
  sends: number;
  send: Summary;
  ack: Summary;
  page: Summary;
  delivered: number;
  rssMiB: number;
  cpuS: number;
}

const proc = (pid: number): { rss: number; cpu: number } => {
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
  const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
  return { rss: Math.round(rss * 10) / 10, cpu: (Number(f[11]) + Number(f[12])) / 100 };
};

interface Page {
  messages: { id: string }[];
}

export async function runSoak(s: SoakSpec): Promise<{ windows: SoakWindow[]; errors: number; firstError?: string }> {
  const stopAt = Date.now() + s.durationMs;
  let send: number[] = [];
  let ack: number[] = [];
  let page: number[] = [];
  let delivered = 0;
  let errors = 0;
  let firstError: string | undefined;
  const fail = (e: unknown): void => {
    errors++;
    firstError ??= String(e);
  };
  const senders = Array.from({ length: s.senders }, () => new Poster(keepAlive(1), s.port, s.sender));
  const interval = (1000 * s.senders) / s.sendsPerSec;
  const sendLoop = async (p: Poster, k: number): Promise<void> => {
    let i = k;
    let next = Date.now();
    while (Date.now() < stopAt) {
      const to = s.readers[i++ % s.readers.length]?.id as string;
      const t = nowNs();
      try {
        const r = await p.post('/mail/send', JSON.stringify({ to, subject: `soak ${i}`, body: 'y'.repeat(100 + (i % 400)) }));
        if (r.status === 200) send.push(msSince(t));
        else fail(`${r.status} ${r.text.slice(0, 200)}`);
      } catch (e) {
        fail(e);
      }
      next += interval;
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      else next = Date.now();
    }
  };
  const readLoop = async (token: string): Promise<void> => {
    const p = new Poster(keepAlive(1), s.port, token);
    while (Date.now() < stopAt) {
      try {
        const r = await p.json<Page>('/mail/inbox', { wait_secs: Math.max(1, Math.min(20, (stopAt - Date.now()) / 1000)), limit: 100, include_bodies: true }, 60_000);
        if (r.messages.length > 0) {
          delivered += r.messages.length;
          const t = nowNs();
          await p.json('/mail/ack', { message_ids: r.messages.map((m) => m.id) });
          ack.push(msSince(t));
        }
      } catch (e) {
        fail(e);
        await sleep(100);
      }
    }
    p.close();
  };
  const pageLoop = async (): Promise<void> => {
    const p = new Poster(keepAlive(1), s.port, s.readers[0]?.token);
    while (Date.now() < stopAt) {
      const t = nowNs();
      try {
        await p.json('/mail/inbox', { include_acked: true, limit: 50 });
        page.push(msSince(t));
      } catch (e) {
        fail(e);
      }
      await sleep(100);
    }
    p.close();
  };
  const windows: SoakWindow[] = [];
  const t0 = Date.now();
  const tick = progressReporter(Math.round(s.durationMs / 1000), 's');
  const windowLoop = async (): Promise<void> => {
    while (Date.now() < stopAt) {
      await sleep(Math.min(s.windowMs, Math.max(0, stopAt - Date.now())));
      const pr = proc(s.daemonPid);
      windows.push({
        atS: Math.round((Date.now() - t0) / 1000),
        sends: send.length,
        send: summarize(send),
        ack: summarize(ack),
        page: summarize(page),
        delivered,
        rssMiB: pr.rss,
        cpuS: pr.cpu,
      });
      send = [];
      ack = [];
      page = [];
      delivered = 0;
      tick(Math.round((Date.now() - t0) / 1000), true);
    }
  };
  await Promise.all([windowLoop(), pageLoop(), ...s.readers.map((r) => readLoop(r.token)), ...senders.map((p, k) => sendLoop(p, k))]);
  for (const p of senders) p.close();
  return { windows, errors, ...(firstError ? { firstError } : {}) };
}
