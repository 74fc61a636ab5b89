// 4. Fan-out: one send to a room of N member accounts, each with a reader parked in `inbox --wait`;
// how long until all N have their answer. On HTTP (one keep-alive connection per reader) and on the
// stream door (one Unix-socket connection per reader: parked in `inbox`, then subscribed and
// answered by pushed `mail` events). Redis: N connections in XREAD BLOCK on one stream; NATS: N
// durable consumers on one subject.
import type { Ctx, ScenarioResult, Row } from '../lib/context.js';
import type { FanoutResult } from '../loadgen/fanout.js';
import type { StreamFanoutResult } from '../loadgen/stream-fanout.js';
import { ms, num } from '../lib/format.js';
import { NO_STREAM, streamSocket } from '../lib/stream-door.js';

export const waiterIds = (n: number): string[] => Array.from({ length: n }, (_, i) => `w${String(i).padStart(5, '0')}`);

export async function fanout(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const d = await ctx.daemon();
  const ids = waiterIds(z.fanoutReaders);
  ctx.phase('4 fan-out · accounts');
  const readers = await ctx.accounts(ids, (n) => ctx.tick(n, ids.length, 'accounts'));
  const [sender] = await ctx.accounts(['fan-s']);
  const rooms = await d.operator.admin.roomList();
  if (!rooms.rooms.some((r) => r.name === 'fan')) {
    await d.operator.admin.roomAdd('fan');
    let next = 0;
    ctx.phase('4 fan-out · room members');
    const all = ['fan-s', ...ids];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < all.length) {
          const id = all[next++] as string;
          await d.operator.admin.memberAdd('fan', id);
          ctx.tick(next, all.length, 'members');
        }
      }),
    );
  }
  const systems: Record<string, Pick<FanoutResult, 'rounds' | 'allFromAck' | 'allFromSend'>> = {};
  systems.m4a = await ctx.loadgen<FanoutResult>(
    { mode: 'fanout', port: d.port, readers, sender, to: '#fan', rounds: z.fanoutRounds, settleMs: z.fanoutSettleMs, daemonPid: d.pid },
    `4 fan-out · m4a HTTP · ${num(ids.length)} readers`,
  );
  const socket = streamSocket(d.dataDir);
  if (socket) {
    const st = await ctx.loadgen<StreamFanoutResult>(
      { mode: 'stream-fanout', socket, readers, sender, to: '#fan', rounds: z.fanoutRounds, settleMs: z.fanoutSettleMs, daemonPid: d.pid, how: ['parked', 'pushed'] },
      `4 fan-out · m4a stream · ${num(ids.length)} readers`,
    );
    if (st.parked) systems['m4a-stream-parked'] = st.parked;
    if (st.pushed) systems['m4a-stream-pushed'] = st.pushed;
  }
  for (const name of ['redis-aof-always', 'nats-jetstream'] as const) {
    const srv = await ctx.server(name);
    systems[name] = await ctx.baseline<FanoutResult>(
      name.startsWith('redis') ? 'redis-load.ts' : 'nats-load.ts',
      { mode: 'fanout', port: srv.port, readers: ids.length, rounds: z.fanoutRounds, settleMs: z.fanoutSettleMs },
      `4 fan-out · ${name} · ${num(ids.length)} readers`,
    );
  }
  const rows: Row[] = [];
  const labels: Record<string, string> = { m4a: 'm4a HTTP, parked inbox', 'm4a-stream-parked': 'm4a stream, parked inbox', 'm4a-stream-pushed': 'm4a stream, pushed mail event' };
  for (const [sys, r] of Object.entries(systems)) {
    const empties = r.rounds.reduce((n, x) => n + x.empty, 0);
    rows.push({
      scenario: `4 fan-out to ${num(ids.length)} parked readers`,
      system: labels[sys] ?? sys,
      metric: 'all answered, from send ack',
      value: `median ${ms(r.allFromAck.p50)} · worst ${ms(r.allFromAck.max)} (${r.rounds.length} rounds)${empties ? ` · ${empties} empty answers` : ''}`,
    });
    rows.push({
      scenario: `4 fan-out to ${num(ids.length)} parked readers`,
      system: labels[sys] ?? sys,
      metric: 'all answered, from send start',
      value: `median ${ms(r.allFromSend.p50)} · worst ${ms(r.allFromSend.max)}`,
    });
  }
  if (!socket) rows.push({ scenario: `4 fan-out to ${num(ids.length)} parked readers`, system: 'm4a stream', metric: 'all', value: NO_STREAM });
  return { name: 'fanout', data: { readers: ids.length, stream: socket !== null, systems }, rows, targets: [] };
}
