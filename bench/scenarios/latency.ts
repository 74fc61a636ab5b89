// 2. Send and inbox latency (p50, p99) with 0, 100,000 and 1,000,000 messages already stored. Its own
// daemon and data dir: accounts are made, the daemon is stopped, the store is prefilled through
// its own append path (bench/prefill.ts), and the daemon is started again on it. The send and the
// inbox page on HTTP and on the stream door (one Unix-socket connection, one request at a time).
import type { Ctx, ScenarioResult, Row, Target } from '../lib/context.js';
import { startDaemon, type Daemon } from '../lib/daemon.js';
import { runJson } from '../lib/procs.js';
import type { FixedResult } from '../loadgen/fixed.js';
import { flat, num, pct } from '../lib/format.js';
import { statSync } from 'node:fs';
import { streamSocket } from '../lib/stream-door.js';

export interface SizePoint {
  stored: number;
  readerMailbox: number;
  dbMiB: number;
  send: FixedResult;
  inbox: FixedResult;
  inboxTail: FixedResult | null;
  /** The same on the stream door; null when the daemon has none. */
  streamSend?: FixedResult | null;
  streamInbox?: FixedResult | null;
}

const RECIPIENTS = Array.from({ length: 100 }, (_, i) => `lat-r${String(i).padStart(2, '0')}`);
const READER_SHARE = 0.1;

export async function latency(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const dataDir = ctx.dataDir('latency');
  let d: Daemon = await startDaemon(dataDir);
  const secrets = await d.accounts(['lat-s', 'lat-reader', ...RECIPIENTS], 8);
  const sender = secrets.get('lat-s') as string;
  const reader = secrets.get('lat-reader') as string;
  await d.stop();

  const points: SizePoint[] = [];
  let stored = 0;
  let readerMailbox = 0;
  const prefill = async (count: number, share: number, label: string): Promise<void> => {
    if (count <= 0) return;
    await runJson(
      'prefill.ts',
      { dbPath: d.dbPath, count, recipients: RECIPIENTS, reader: 'lat-reader', readerShare: share, from: 'lat-s', batch: 5000 },
      { label, logFile: ctx.logFile, timeoutMs: 20 * 60_000 },
    );
    readerMailbox += Math.ceil(count * share);
  };
  // The reader holds a page's worth of mail even at "0", so every size reads a full page.
  await prefill(100, 1, '2 latency · reader mailbox seeded with 100');
  const sendBodies = RECIPIENTS.slice(0, 8).map((to) => JSON.stringify({ to, subject: 'latency', body: 'x'.repeat(200) }));
  for (const size of z.mailboxSizes) {
    await prefill(size - stored, READER_SHARE, `2 latency · prefill to ${num(size)} messages`);
    stored = Math.max(stored, size);
    d = await startDaemon(dataDir);
    const tail = (await d.operator.call<{ next_cursor: string }>('/mail/inbox', {})).next_cursor;
    const send = await ctx.loadgen<FixedResult>(
      { mode: 'fixed', port: d.port, path: '/mail/send', token: sender, body: sendBodies, concurrency: 1, count: z.latencyCount, warmupPerConnection: 20 },
      `2 latency · ${num(size)} stored · send`,
    );
    const inbox = await ctx.loadgen<FixedResult>(
      { mode: 'fixed', port: d.port, path: '/mail/inbox', token: reader, body: '{}', concurrency: 1, count: z.latencyCount, warmupPerConnection: 20 },
      `2 latency · ${num(size)} stored · inbox page (50 oldest unread)`,
    );
    // The empty page after the newest cursor (full-size runs only: a quick run keeps to the two figures).
    const inboxTail = ctx.quick
      ? null
      : await ctx.loadgen<FixedResult>(
          {
            mode: 'fixed',
            port: d.port,
            path: '/mail/inbox',
            token: reader,
            body: JSON.stringify({ after: tail }),
            concurrency: 1,
            count: z.latencyCount,
            warmupPerConnection: 20,
          },
          `2 latency · ${num(size)} stored · inbox after the newest cursor`,
        );
    const socket = streamSocket(d.dataDir);
    const onStream = (token: string, op: string, inputs: unknown[], what: string): Promise<FixedResult> | null =>
      socket
        ? ctx.loadgen<FixedResult>(
            { mode: 'stream-fixed', socket, token, op, inputs, connections: 1, count: z.latencyCount, warmupPerConnection: 20 },
            `2 latency · ${num(size)} stored · stream ${what}`,
          )
        : null;
    const streamSend = await onStream(
      sender,
      'send',
      sendBodies.map((b) => JSON.parse(b) as unknown),
      'send',
    );
    const streamInbox = await onStream(reader, 'inbox', [{}], 'inbox page (50 oldest unread)');
    points.push({ stored: size, readerMailbox, dbMiB: Math.round(statSync(d.dbPath).size / 1048576), send, inbox, inboxTail, streamSend, streamInbox });
    await d.stop();
  }

  const rows: Row[] = [];
  for (const p of points) {
    const label = `${num(p.stored)} stored (reader holds ${num(p.readerMailbox)})`;
    rows.push({ scenario: '2 latency vs mailbox size', system: 'm4a send', metric: label, value: pct(p.send.latency) });
    rows.push({ scenario: '2 latency vs mailbox size', system: 'm4a inbox page', metric: label, value: pct(p.inbox.latency) });
    if (p.inboxTail) rows.push({ scenario: '2 latency vs mailbox size', system: 'm4a inbox (empty, after newest)', metric: label, value: pct(p.inboxTail.latency) });
    if (p.streamSend) rows.push({ scenario: '2 latency vs mailbox size', system: 'm4a stream send', metric: label, value: pct(p.streamSend.latency) });
    if (p.streamInbox) rows.push({ scenario: '2 latency vs mailbox size', system: 'm4a stream inbox page', metric: label, value: pct(p.streamInbox.latency) });
  }
  const first = points[0] as SizePoint;
  const last = points[points.length - 1] as SizePoint;
  const within = (p: SizePoint, k: 'send' | 'inbox'): boolean => p[k].latency.p50 <= 1 && p[k].latency.p99 <= 5;
  const targets: Target[] = (['send', 'inbox'] as const).map((k) => ({
    id: `${k}-latency`,
    text: `${k === 'send' ? 'send' : 'inbox page'} p50 ≤ 1 ms and p99 ≤ 5 ms, the same with ${num(last.stored)} stored as with none`,
    measured: points.map((p) => `${num(p.stored)}: ${pct(p[k].latency)}`).join('; '),
    met: points.every((p) => within(p, k)) && flat(first[k].latency.p50, last[k].latency.p50),
  }));
  return {
    name: 'latency',
    data: {
      points,
      readerShare: READER_SHARE,
      recipients: RECIPIENTS.length,
      prefill: "bench/prefill.ts: openSqliteStore on the stopped daemon's mail.db, appendMessage in batches of 5,000 (one transaction each)",
    },
    rows,
    targets,
  };
}
