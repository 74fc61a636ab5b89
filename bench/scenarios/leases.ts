// 13. Leases, on their own daemon (SQLite, the default store; the bench has no PostgreSQL mode).
// First one client's claim/release round trip, a new glob each time, interleaved with the send (as
// in scenario 2) and its recipient's ack, so the ratio is measured under the same noise. Then bursts:
// N claimants (one account and one attested connection each) write their claim at once, on one
// exclusive path glob, on one pooled task by id, and on a pool of tasks. The outcome is asserted
// here, not in a test: exactly one winner (the pool: one per task), every other answer the
// expected refusal, no error of another kind, and the daemon's leases read back agree.
import { readFileSync } from 'node:fs';
import type { Ctx, ScenarioResult, Row, Target } from '../lib/context.js';
import { startDaemon } from '../lib/daemon.js';
import type { BurstKind, BurstRound, LeaseBurstResult, LeaseRttResult } from '../loadgen/leases.js';
import { ms, num, pct, ratio } from '../lib/format.js';

const ROOT = '/bench/repo';
const ROOM = 'ls-pool';

/** The daemon's connection budget as it computes it: its open-file limit less 512 (src/daemon). */
function budgetOf(pid: number): { openFiles: number; budget: number } {
  const m = /^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
  const openFiles = m?.[1] ? Number(m[1]) : 4096;
  return { openFiles, budget: Math.max(256, openFiles - 512) };
}

/** What a burst must come to; the problems, if any. */
export function judge(r: BurstRound, n: number, poolTasks: number): string[] {
  const bad: string[] = [];
  const want = r.kind === 'pool' ? poolTasks : 1;
  if (r.requests !== n) bad.push(`${r.requests} answers for ${n} requests`);
  if (r.winners !== want) bad.push(`${r.winners} winners, expected ${want}`);
  if (r.kind === 'pool') {
    if (r.distinctWon !== poolTasks) bad.push(`${r.distinctWon} distinct tasks won of ${poolTasks}`);
    if (r.empty !== n - poolTasks) bad.push(`${r.empty} "nothing on offer", expected ${n - poolTasks}`);
  } else if (r.conflicts !== n - 1) bad.push(`${r.conflicts} lease_conflict, expected ${n - 1}`);
  if (r.other > 0) bad.push(`${r.other} other answers: ${r.otherSamples.join(' | ')}`);
  if (r.liveAfter !== want) bad.push(`${r.liveAfter} live leases read back, expected ${want}`);
  return bad.map((b) => `${r.kind} burst ${r.round + 1}: ${b}`);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

export async function leases(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const d = await startDaemon(ctx.dataDir('leases'));
  try {
    const claimantIds = Array.from({ length: z.leaseClaimants }, (_, i) => `lc${String(i).padStart(5, '0')}`);
    const readerIds = Array.from({ length: 8 }, (_, i) => `ls-r${i}`);
    ctx.phase('13 leases · accounts');
    const secrets = await d.accounts(['ls-holder', 'ls-s', 'ls-req', ...readerIds, ...claimantIds], 8, (n) => ctx.tick(n, claimantIds.length + 11, 'accounts'));
    const secret = (id: string): string => secrets.get(id) as string;
    await d.operator.admin.roomAdd(ROOM);
    ctx.phase('13 leases · room members');
    const members = ['ls-req', ...claimantIds];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < members.length) {
          await d.operator.admin.memberAdd(ROOM, members[next++] as string);
          ctx.tick(next, members.length, 'members');
        }
      }),
    );

    const rtt = await ctx.loadgen<LeaseRttResult>(
      {
        mode: 'lease-rtt',
        port: d.port,
        holder: secret('ls-holder'),
        sender: secret('ls-s'),
        readers: readerIds.map((id) => ({ id, token: secret(id) })),
        root: ROOT,
        count: z.leaseRoundTrips,
        warmup: 20,
      },
      '13 leases · claim/release beside send and ack, one client',
    );
    const burst = await ctx.loadgen<LeaseBurstResult>(
      {
        mode: 'lease-burst',
        port: d.port,
        claimants: claimantIds.map(secret),
        requester: secret('ls-req'),
        room: ROOM,
        root: ROOT,
        rounds: z.leaseBursts,
        poolTasks: z.leasePoolTasks,
        daemonPid: d.pid,
      },
      `13 leases · ${num(claimantIds.length)} concurrent claimants`,
      20 * 60_000,
    );
    const { openFiles, budget } = budgetOf(d.pid);

    // The assertion of the burst: a violation fails the scenario (and `npm run bench`) with the counts.
    const problems = burst.rounds.flatMap((r) => judge(r, claimantIds.length, z.leasePoolTasks));
    if (problems.length) throw new Error(`leases: ${problems.join('; ')}`);

    const S = '13 leases';
    const rows: Row[] = [
      {
        scenario: S,
        system: 'm4a claim + release (new glob each)',
        metric: 'one client, sequential',
        value: `${pct(rtt.claimRelease)} · ${ratio(rtt.claimRelease.p50, rtt.send.p50)} send p50`,
      },
      { scenario: S, system: 'm4a claim', metric: 'one client, sequential', value: `${pct(rtt.claim)} · ${ratio(rtt.claim.p50, rtt.send.p50)} send p50` },
      { scenario: S, system: 'm4a release', metric: 'one client, sequential', value: `${pct(rtt.release)} · ${ratio(rtt.release.p50, rtt.send.p50)} send p50` },
      { scenario: S, system: 'm4a send (as scenario 2)', metric: 'interleaved, same daemon', value: pct(rtt.send) },
      {
        scenario: S,
        system: 'm4a send + ack',
        metric: 'interleaved, same daemon',
        value: `${pct(rtt.sendAck)} · claim + release ${ratio(rtt.claimRelease.p50, rtt.sendAck.p50)} of it (p50)`,
      },
    ];
    const what: Record<BurstKind, string> = { path: 'one path glob, exclusive', task: 'one pooled task by id', pool: `pool of ${z.leasePoolTasks} tasks` };
    for (const kind of ['path', 'task', 'pool'] as const) {
      const rs = burst.rounds.filter((r) => r.kind === kind);
      const walls = rs.map((r) => r.wallMs);
      const last = rs[rs.length - 1]!;
      rows.push({
        scenario: S,
        system: `${num(claimantIds.length)} claimants · ${what[kind]}`,
        metric: `${rs.length} bursts`,
        value:
          `wall median ${ms(median(walls))} · worst ${ms(Math.max(...walls))} · ${last.winners} won, ` +
          `${kind === 'pool' ? `${last.empty} nothing on offer` : `${last.conflicts} lease_conflict`}, 0 other · daemon CPU ${ms(median(rs.map((r) => r.daemonCpuMs)))}` +
          (rs.some((r) => r.newConnections > 0) ? ` · ${rs.reduce((n, r) => n + r.newConnections, 0)} connections reopened` : ''),
      });
    }
    const rounds = (kind: BurstKind): number => burst.rounds.filter((r) => r.kind === kind).length;
    const targets: Target[] = [
      {
        id: 'lease-burst',
        text: `${num(claimantIds.length)} concurrent claims of one exclusive resource: exactly one wins, the others lease_conflict, no other error`,
        measured: `path glob ${rounds('path')}/${rounds('path')} bursts, one pooled task by id ${rounds('task')}/${rounds('task')}; pool of ${z.leasePoolTasks}: exactly ${z.leasePoolTasks} winners, ${num(claimantIds.length - z.leasePoolTasks)} nothing on offer, ${rounds('pool')}/${rounds('pool')}`,
        met: true,
      },
    ];
    return {
      name: 'leases',
      data: {
        store: 'sqlite',
        root: ROOT,
        rtt,
        burst,
        connections: `${num(claimantIds.length)} connections, one per claimant, opened and attested before the bursts; the daemon's budget ${num(budget)} (open-file limit ${num(openFiles)} - 512)`,
      },
      rows,
      targets,
    };
  } finally {
    await d.stop();
  }
}
