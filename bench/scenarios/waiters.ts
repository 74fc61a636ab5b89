// 5. Many parked waiters (10,000 at full size: 1,250 accounts × 8 connections, since one process is
// one session per account and a session parks at most 8): the daemon's memory, the time to open,
// attest and park each 1,000 (it must not grow: attestation is batched, not per connection against
// a growing fd table), and send latency to another account with and without them.
import type { Ctx, ScenarioResult, Row, Target } from '../lib/context.js';
import type { WaitersResult } from '../loadgen/waiters.js';
import { flat, ms, num, pct } from '../lib/format.js';
import { waiterIds } from './fanout.js';

export async function waiters(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const d = await ctx.daemon();
  const ids = waiterIds(z.waiterAccounts);
  ctx.phase('5 waiters · accounts');
  const tokens = await ctx.accounts(ids, (n) => ctx.tick(n, ids.length, 'accounts'));
  const [probe, sender] = await ctx.accounts(['probe', 'waiters-s', 'waiters-r']);
  const total = ids.length * z.waitersPerAccount;
  const r = await ctx.loadgen<WaitersResult>(
    {
      mode: 'waiters',
      port: d.port,
      daemonPid: d.pid,
      accounts: tokens,
      perAccount: z.waitersPerAccount,
      wave: Math.min(500, Math.ceil((ids.length * z.waitersPerAccount) / 4)),
      probe,
      sender,
      sendTo: 'waiters-r',
      sendCount: z.waiterSends,
      maxParkMs: z.waiterParkCapMs,
    },
    `5 waiters · ${num(total)} parked`,
    10 * 60_000,
  );
  const rows: Row[] = [
    {
      scenario: `5 ${num(r.waiters)} parked waiters`,
      system: 'm4a',
      metric: 'daemon RSS before → parked',
      value: `${r.rssBeforeMiB} → ${r.rssParkedMiB} MiB (+${r.rssDeltaMiB} MiB, ${((r.rssDeltaMiB * 1024) / r.waiters).toFixed(1)} KiB per waiter)`,
    },
    {
      scenario: `5 ${num(r.waiters)} parked waiters`,
      system: 'm4a',
      metric: `open + attest + park, per wave of ${r.wave}`,
      value: `${r.perWaveMs.map((x) => num(x)).join(', ')} ms (total ${num(r.parkedMs)} ms)`,
    },
    { scenario: `5 ${num(r.waiters)} parked waiters`, system: 'm4a', metric: 'send latency without → with waiters', value: `${pct(r.sendBefore)} → ${pct(r.sendParked)}` },
  ];
  const blocks = r.perWaveMs;
  const firstBlock = blocks[0] ?? NaN;
  const lastBlock = blocks[blocks.length - 1] ?? NaN;
  const targets: Target[] = [
    {
      id: 'waiters-memory',
      text: `${num(r.waiters)} parked waiters within 100 MB of daemon memory`,
      measured: `+${r.rssDeltaMiB} MiB RSS (${r.rssParkedMiB} MiB total)`,
      met: r.rssDeltaMiB <= 100,
    },
    {
      id: 'waiters-send',
      text: `${num(r.waiters)} parked waiters do not move send latency`,
      measured: `${pct(r.sendBefore)} without; ${pct(r.sendParked)} with`,
      met: flat(r.sendBefore.p50, r.sendParked.p50) && r.sendParked.p99 <= 5,
    },
    {
      id: 'waiters-attest-linear',
      text: `attestation of many connections from one process is not quadratic (time per wave of ${r.wave} connections does not grow)`,
      measured: `first wave: ${ms(firstBlock)}, last wave (${num(r.waiters - r.wave)} already open): ${ms(lastBlock)}`,
      met: blocks.length < 2 ? null : lastBlock <= firstBlock * 2 + 50,
    },
  ];
  if (r.capped)
    rows.push({
      scenario: `5 ${num(r.waiters)} parked waiters`,
      system: 'm4a',
      metric: 'capped',
      value: `only ${num(r.waiters)} of ${num(r.wanted)} parked within ${ms(z.waiterParkCapMs)}`,
    });
  if (r.busyWaves > 0) rows.push({ scenario: `5 ${num(r.waiters)} parked waiters`, system: 'm4a', metric: 'waves still busy after 60 s', value: String(r.busyWaves) });
  if (r.answeredEarly > 0)
    rows.push({
      scenario: `5 ${num(r.waiters)} parked waiters`,
      system: 'm4a',
      metric: 'waits that expired (60 s) and parked again',
      value: `${num(r.answeredEarly)} (parking took longer than wait_secs)`,
    });
  return { name: 'waiters', data: r, rows, targets };
}
