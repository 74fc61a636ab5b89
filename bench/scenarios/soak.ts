// Soak (only with --soak MINUTES): mixed load on the shared daemon; per window the daemon's RSS and
// the send / ack / page latency, to show that memory and latency stay flat.
import type { Ctx, ScenarioResult, Row, Target } from '../lib/context.js';
import type { SoakWindow } from '../loadgen/soak.js';
import { ms, num, pct } from '../lib/format.js';

export async function soak(ctx: Ctx, minutes: number): Promise<ScenarioResult> {
  const d = await ctx.daemon();
  const ids = Array.from({ length: 16 }, (_, i) => `soak-r${i}`);
  const tokens = await ctx.accounts(ids);
  const [sender] = await ctx.accounts(['soak-s']);
  const durationMs = Math.round(minutes * 60_000);
  const windowMs = Math.max(5000, Math.min(30_000, Math.round(durationMs / 20)));
  const sendsPerSec = ctx.quick ? 50 : 100;
  const r = await ctx.loadgen<{ windows: SoakWindow[]; errors: number; firstError?: string }>(
    { mode: 'soak', port: d.port, daemonPid: d.pid, durationMs, windowMs, sender, readers: ids.map((id, i) => ({ id, token: tokens[i] })), sendsPerSec, senders: 8 },
    `soak · ${minutes} min mixed load`,
    durationMs + 5 * 60_000,
  );
  const w = r.windows;
  const second = w[1] ?? w[0];
  const last = w[w.length - 1];
  const rows: Row[] = w.map((x) => ({
    scenario: `soak ${minutes} min (${sendsPerSec} sends/s, 16 waiting readers acking, 1 pager)`,
    system: 'm4a',
    metric: `window to ${x.atS} s`,
    value: `RSS ${x.rssMiB} MiB · send ${pct(x.send)} · ack ${pct(x.ack)} · page ${pct(x.page)} · ${num(x.sends)} sent, ${num(x.delivered)} delivered`,
  }));
  const targets: Target[] =
    second && last
      ? [
          {
            id: 'soak',
            text: `soak ${minutes} min: memory and latency stay flat (second window vs last)`,
            measured: `RSS ${second.rssMiB} → ${last.rssMiB} MiB; send p99 ${ms(second.send.p99)} → ${ms(last.send.p99)}; ${r.errors} errors`,
            met: last.rssMiB <= second.rssMiB * 1.2 + 10 && last.send.p99 <= Math.max(second.send.p99 * 1.5, 5) && r.errors === 0,
          },
        ]
      : [];
  return { name: 'soak', data: { minutes, windowMs, sendsPerSec, ...r }, rows, targets };
}
