// 4. Fan-out: one send to a room of N member accounts, each with a reader parked in `inbox --wait`;
// how long until all N have their answer. Redis: N connections in XREAD BLOCK on one stream; NATS:
// N durable consumers on one subject.
import type { Ctx, ScenarioResult, Row, Target } from '../lib/context.js';
import type { FanoutResult } from '../loadgen/fanout.js';
import { ms, num } from '../lib/format.js';

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
  const systems: Record<string, FanoutResult> = {};
  systems.m4a = await ctx.loadgen<FanoutResult>(
    { mode: 'fanout', port: d.port, readers, sender, to: '#fan', rounds: z.fanoutRounds, settleMs: z.fanoutSettleMs, daemonPid: d.pid },
    `4 fan-out · m4a · ${num(ids.length)} readers`,
  );
  for (const name of ['redis-aof-always', 'nats-jetstream'] as const) {
    const srv = await ctx.server(name);
    systems[name] = await ctx.baseline<FanoutResult>(
      name.startsWith('redis') ? 'redis-load.ts' : 'nats-load.ts',
      { mode: 'fanout', port: srv.port, readers: ids.length, rounds: z.fanoutRounds, settleMs: z.fanoutSettleMs },
      `4 fan-out · ${name} · ${num(ids.length)} readers`,
    );
  }
  const rows: Row[] = [];
  for (const [sys, r] of Object.entries(systems)) {
    rows.push({
      scenario: `4 fan-out to ${num(ids.length)} parked readers`,
      system: sys,
      metric: 'all answered, from send ack',
      value: `median ${ms(r.allFromAck.p50)} · worst ${ms(r.allFromAck.max)} (${r.rounds.length} rounds)`,
    });
    rows.push({
      scenario: `4 fan-out to ${num(ids.length)} parked readers`,
      system: sys,
      metric: 'all answered, from send start',
      value: `median ${ms(r.allFromSend.p50)} · worst ${ms(r.allFromSend.max)}`,
    });
  }
  const m = systems.m4a;
  const empties = m.rounds.reduce((s, r) => s + r.empty, 0);
  const targets: Target[] = [
    {
      id: 'fanout',
      text: `a room of ${num(ids.length)} parked readers all answered within 100 ms`,
      measured: `median ${ms(m.allFromAck.p50)}, worst ${ms(m.allFromAck.max)} after the ack (${ms(m.allFromSend.max)} worst from the send's start)${empties ? `; ${empties} empty answers` : ''}`,
      met: m.allFromSend.max <= 100 && empties === 0,
    },
  ];
  return { name: 'fanout', data: { systems }, rows, targets };
}
