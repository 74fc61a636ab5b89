// 3. Wake latency, the send-and-wait loop: a reader parked in `inbox {after, wait_secs}` and a
// sender sending one message to it per round; measured from the send's start and from its
// acknowledgement to the reader's answer. On HTTP and on the stream door (parked in `inbox` on its
// connection, and pushed: subscribed once, answered by a `mail` event), each with an empty mailbox
// and with 4,000 messages stored in the reader's mailbox (the live-delivery line of the targets);
// the same loop on Redis Streams (XADD / XREAD BLOCK) and NATS JetStream (publish / durable consumer).
import type { Ctx, ScenarioResult, Row } from '../lib/context.js';
import type { WakeResult } from '../loadgen/wake.js';
import type { FixedResult } from '../loadgen/fixed.js';
import { num, pct, ratio } from '../lib/format.js';
import { NO_STREAM, streamSocket } from '../lib/stream-door.js';

/** Messages in the reader's mailbox for the second point (the mailbox size omp-mail was measured at). */
export const WAKE_STORED = 4000;

const VARIANTS = [
  { key: 'm4a', label: 'm4a HTTP, parked inbox', stream: false as const },
  { key: 'm4a-stream-parked', label: 'm4a stream, parked inbox', stream: 'parked' as const },
  { key: 'm4a-stream-pushed', label: 'm4a stream, pushed mail event', stream: 'pushed' as const },
];

export const wakeKey = (variant: string, stored: number): string => (stored === 0 ? variant : `${variant}@${stored}`);

export async function wake(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const d = await ctx.daemon();
  const socket = streamSocket(d.dataDir);
  const settleMs = 2;
  const readerId = (v: string, stored: number): string => `wake-${v.replace(/^m4a-?/, '') || 'http'}-${stored}`;
  const ids = VARIANTS.flatMap((v) => [0, WAKE_STORED].map((n) => readerId(v.key, n)));
  const [sender] = await ctx.accounts(['wake-s', ...ids]);
  const secret = async (id: string): Promise<string> => ctx.secret(id);
  const systems: Record<string, WakeResult> = {};
  const run = async (v: (typeof VARIANTS)[number], stored: number): Promise<void> => {
    const to = readerId(v.key, stored);
    const reader = await secret(to);
    const label = `3 wake · ${v.label} · ${num(stored)} stored`;
    if (v.stream === false) {
      systems[wakeKey(v.key, stored)] = await ctx.loadgen<WakeResult>({ mode: 'wake', port: d.port, reader, sender, to, rounds: z.wakeRounds, settleMs }, label);
    } else if (socket) {
      systems[wakeKey(v.key, stored)] = await ctx.loadgen<WakeResult>(
        { mode: 'stream-wake', readerSocket: socket, senderSocket: socket, reader, sender, to, rounds: z.wakeRounds, settleMs, how: v.stream },
        label,
      );
    }
  };
  for (const v of VARIANTS) await run(v, 0);
  // The stored mail: WAKE_STORED messages to each reader of the second point, unread, before its cursor.
  const full = VARIANTS.filter((v) => v.stream === false || socket).map((v) => readerId(v.key, WAKE_STORED));
  const fillBodies = full.map((to) => ({ to, subject: 'stored', body: 'x'.repeat(200) }));
  const fill = socket
    ? await ctx.loadgen<FixedResult>(
        { mode: 'stream-fixed', socket, token: sender, op: 'send', inputs: fillBodies, connections: 8, inFlight: 8, count: WAKE_STORED * full.length, warmupPerConnection: 0 },
        `3 wake · ${num(WAKE_STORED)} messages stored to each of ${full.length} readers`,
      )
    : await ctx.loadgen<FixedResult>(
        {
          mode: 'fixed',
          port: d.port,
          path: '/mail/send',
          token: sender,
          body: fillBodies.map((b) => JSON.stringify(b)),
          concurrency: 16,
          count: WAKE_STORED * full.length,
          warmupPerConnection: 0,
        },
        `3 wake · ${num(WAKE_STORED)} messages stored to each of ${full.length} readers`,
      );
  if (fill.errors) throw new Error(`storing the wake readers' mail: ${fill.errors} errors (${fill.firstError})`);
  for (const v of VARIANTS) await run(v, WAKE_STORED);
  for (const name of ['redis-aof-always', 'redis-default', 'nats-jetstream'] as const) {
    const srv = await ctx.server(name);
    systems[name] = await ctx.baseline<WakeResult>(
      name.startsWith('redis') ? 'redis-load.ts' : 'nats-load.ts',
      { mode: 'wake', port: srv.port, rounds: z.wakeRounds, settleMs },
      `3 wake · ${name}`,
    );
  }
  const rows: Row[] = [];
  const scenario = '3 wake (send-and-wait loop)';
  const labels: Record<string, string> = Object.fromEntries(
    VARIANTS.flatMap((v) => [
      [wakeKey(v.key, 0), `${v.label}, empty mailbox`],
      [wakeKey(v.key, WAKE_STORED), `${v.label}, ${num(WAKE_STORED)} stored`],
    ]),
  );
  for (const [sys, r] of Object.entries(systems)) {
    const empty = r.empty ? ` · ${r.empty} empty answers` : '';
    rows.push({ scenario, system: labels[sys] ?? sys, metric: 'ack → reader answered', value: pct(r.ackToWake) });
    rows.push({ scenario, system: labels[sys] ?? sys, metric: 'send → reader answered', value: `${pct(r.sendToWake)}${empty}` });
  }
  if (!socket) rows.push({ scenario, system: 'm4a stream', metric: 'all', value: NO_STREAM });
  const redis = systems['redis-aof-always']!.sendToWake.p50;
  rows.push({
    scenario,
    system: 'ratios',
    metric: 'send → answered p50, m4a / redis aof',
    value: Object.entries(systems)
      .filter(([k]) => k.startsWith('m4a'))
      .map(([k, r]) => `${labels[k] ?? k} ${ratio(r.sendToWake.p50, redis)}`)
      .join(' · '),
  });
  return { name: 'wake', data: { settleMs, stored: WAKE_STORED, stream: socket !== null, systems }, rows, targets: [] };
}
