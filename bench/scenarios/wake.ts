// 3. Wake latency: from a send's acknowledgement to the answer of a reader parked in `inbox --wait`;
// the same send-and-wait loop on Redis Streams (XADD / XREAD BLOCK) and NATS JetStream (publish /
// a durable consumer).
import type { Ctx, ScenarioResult, Row, Target } from '../lib/context.js';
import type { WakeResult } from '../loadgen/wake.js';
import { ms, pct, ratio } from '../lib/format.js';

export async function wake(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const d = await ctx.daemon();
  const [reader, sender] = await ctx.accounts(['wake-r', 'wake-s']);
  const settleMs = 2;
  const systems: Record<string, WakeResult> = {};
  systems.m4a = await ctx.loadgen<WakeResult>({ mode: 'wake', port: d.port, reader, sender, to: 'wake-r', rounds: z.wakeRounds, settleMs }, '3 wake · m4a');
  for (const name of ['redis-aof-always', 'redis-default', 'nats-jetstream'] as const) {
    const srv = await ctx.server(name);
    systems[name] = await ctx.baseline<WakeResult>(
      name.startsWith('redis') ? 'redis-load.ts' : 'nats-load.ts',
      { mode: 'wake', port: srv.port, rounds: z.wakeRounds, settleMs },
      `3 wake · ${name}`,
    );
  }
  const rows: Row[] = [];
  for (const [sys, r] of Object.entries(systems)) {
    rows.push({ scenario: '3 wake (send-and-wait loop)', system: sys, metric: 'ack → reader answered', value: pct(r.ackToWake) });
    rows.push({ scenario: '3 wake (send-and-wait loop)', system: sys, metric: 'send → reader answered', value: pct(r.sendToWake) });
  }
  const m = systems.m4a;
  rows.push({
    scenario: '3 wake (send-and-wait loop)',
    system: 'ratios',
    metric: 'send → answered p50, other / m4a',
    value: ['redis-aof-always', 'redis-default', 'nats-jetstream'].map((n) => `${n} ${ratio(systems[n]!.sendToWake.p50, m.sendToWake.p50)}`).join(' · '),
  });
  const targets: Target[] = [
    { id: 'wake', text: 'wake p50 ≤ 1 ms, p99 ≤ 5 ms (send acknowledged → parked reader answered)', measured: pct(m.ackToWake), met: m.ackToWake.p50 <= 1 && m.ackToWake.p99 <= 5 },
    {
      id: 'vs-redis-nats-loop',
      text: 'ahead of Redis Streams (appendfsync always) and NATS JetStream on the send-and-wait loop (send → reader answered, p50)',
      measured: `m4a ${ms(m.sendToWake.p50)} · redis aof ${ms(systems['redis-aof-always']!.sendToWake.p50)} · nats ${ms(systems['nats-jetstream']!.sendToWake.p50)}`,
      met: m.sendToWake.p50 <= systems['redis-aof-always']!.sendToWake.p50 && m.sendToWake.p50 <= systems['nats-jetstream']!.sendToWake.p50,
    },
  ];
  return { name: 'wake', data: { settleMs, systems }, rows, targets };
}
