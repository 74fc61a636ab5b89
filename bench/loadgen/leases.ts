// Leases. `lease-rtt`: one client's claim and release of a new glob each time, interleaved request by
// request with a send and the recipient's ack on the same daemon, so the machine's noise falls on
// all alike. `lease-burst`: one connection per claimant (opened and attested first), then every
// claimant's request written at once: one path glob, one pooled task by id, a pool of tasks. Every
// answer is classified, so the harness can assert who won and that nothing else went wrong.
import type { Agent } from 'node:http';
import { Poster, keepAlive, progressReporter, type Reply } from './http.js';
import { msSince, nowNs, summarize, type Summary } from '../lib/stats.js';
import { cpuSeconds, waitIdle } from '../lib/procs.js';

export interface LeaseRttSpec {
  mode: 'lease-rtt';
  port: number;
  holder: string;
  sender: string;
  /** Recipients of the sends (round robin, as in scenario 2), each acking its own. */
  readers: { id: string; token: string }[];
  root: string;
  count: number;
  warmup: number;
}

export interface LeaseRttResult {
  count: number;
  claim: Summary;
  release: Summary;
  claimRelease: Summary;
  send: Summary;
  ack: Summary;
  sendAck: Summary;
}

export type BurstKind = 'path' | 'task' | 'pool';

export interface LeaseBurstSpec {
  mode: 'lease-burst';
  port: number;
  /** Claimants' secrets: one account, one connection each. */
  claimants: string[];
  /** Creates the tasks (a member of `room`). */
  requester: string;
  room: string;
  root: string;
  rounds: number;
  poolTasks: number;
  daemonPid: number;
}

export interface BurstRound {
  kind: BurstKind;
  round: number;
  requests: number;
  /** 200 with a lease (path, task) or a task (pool). */
  winners: number;
  /** 409 lease_conflict. */
  conflicts: number;
  /** 200 {task: null, lease: null}: nothing left on offer (pool only). */
  empty: number;
  other: number;
  otherSamples: string[];
  /** Pool: distinct tasks won, and how many of the round's tasks that is. */
  distinctWon: number;
  /** Live leases on the contended resource(s) afterwards, read back from the daemon. */
  liveAfter: number;
  /** Connections opened during the burst (0: every request went out on its attested connection). */
  newConnections: number;
  /** From the first write to the last answer. */
  wallMs: number;
  /** Time the client took to write every request (inside wallMs). */
  dispatchMs: number;
  /** Each answer's arrival, from the first write. */
  answers: Summary;
  /** The daemon's user+system CPU during the burst (10 ms ticks). */
  daemonCpuMs: number;
}

export interface LeaseBurstResult {
  claimants: number;
  connectMs: number;
  rounds: BurstRound[];
}

const ok = async <T>(p: Poster, path: string, body: unknown): Promise<T> => p.json<T>(path, body);

export async function runLeaseRtt(s: LeaseRttSpec): Promise<LeaseRttResult> {
  const holder = new Poster(keepAlive(1), s.port, s.holder);
  const sender = new Poster(keepAlive(1), s.port, s.sender);
  const readers = s.readers.map((r) => ({ id: r.id, p: new Poster(keepAlive(1), s.port, r.token) }));
  const samples = { claim: [] as number[], release: [] as number[], claimRelease: [] as number[], send: [] as number[], ack: [] as number[], sendAck: [] as number[] };
  const tick = progressReporter(s.count, 'rounds');
  for (let i = -s.warmup; i < s.count; i++) {
    // A glob no earlier claim named, so every claim takes a fresh resource.
    const t0 = nowNs();
    const l = await ok<{ lease_id: string; epoch: number }>(holder, '/lease/claim', { resource: `path:seq/${i + s.warmup}/**`, root: s.root, reason: 'bench' });
    const t1 = nowNs();
    await ok(holder, '/lease/release', { lease_id: l.lease_id, epoch: l.epoch });
    const t2 = nowNs();
    const r = readers[(i + s.warmup) % readers.length]!;
    const m = await ok<{ message_id: string }>(sender, '/mail/send', { to: r.id, subject: 'latency', body: 'x'.repeat(200) });
    const t3 = nowNs();
    await ok(r.p, '/mail/ack', { message_id: m.message_id });
    const t4 = nowNs();
    if (i < 0) continue;
    const d = (a: bigint, b: bigint): number => Number(b - a) / 1e6;
    samples.claim.push(d(t0, t1));
    samples.release.push(d(t1, t2));
    samples.claimRelease.push(d(t0, t2));
    samples.send.push(d(t2, t3));
    samples.ack.push(d(t3, t4));
    samples.sendAck.push(d(t2, t4));
    tick(i + 1);
  }
  for (const p of [holder, sender, ...readers.map((r) => r.p)]) p.close();
  return {
    count: s.count,
    claim: summarize(samples.claim),
    release: summarize(samples.release),
    claimRelease: summarize(samples.claimRelease),
    send: summarize(samples.send),
    ack: summarize(samples.ack),
    sendAck: summarize(samples.sendAck),
  };
}

/** Counts the connections an agent opens (wraps its createConnection). */
function counted(agent: Agent): { agent: Agent; opened: () => number } {
  let n = 0;
  const orig = agent.createConnection.bind(agent);
  agent.createConnection = (...a: Parameters<Agent['createConnection']>) => {
    n++;
    return orig(...a);
  };
  return { agent, opened: () => n };
}

const codeOf = (r: Reply): string | undefined => {
  try {
    return (JSON.parse(r.text) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
};

export async function runLeaseBurst(s: LeaseBurstSpec): Promise<LeaseBurstResult> {
  const conns = s.claimants.map((t) => {
    const c = counted(keepAlive(1));
    return { poster: new Poster(c.agent, s.port, t), opened: c.opened };
  });
  const requester = new Poster(keepAlive(1), s.port, s.requester);
  // Open and attest every claimant's connection (its session registered), in waves as scenario 4 does.
  const tc = nowNs();
  const tick0 = progressReporter(conns.length, 'claimants connected');
  let connected = 0;
  for (let i = 0; i < conns.length; i += 200) {
    await Promise.all(
      conns.slice(i, i + 200).map(async (c) => {
        await ok(c.poster, '/mail/unread', {});
        tick0(++connected);
      }),
    );
  }
  const connectMs = Math.round(msSince(tc));
  await ok(requester, '/mail/unread', {});
  const probe = conns[0]!.poster;
  const rounds: BurstRound[] = [];
  const tick = progressReporter(s.rounds * 3, 'bursts');

  const burst = async (kind: BurstKind, round: number, path: string, body: string, classify: (r: Reply) => 'win' | 'conflict' | 'empty' | 'other') => {
    await waitIdle(s.daemonPid, 30_000);
    const before = conns.reduce((n, c) => n + c.opened(), 0);
    const cpu0 = cpuSeconds(s.daemonPid);
    const arrived: number[] = [];
    const t0 = nowNs();
    const pending = conns.map((c) =>
      c.poster.post(path, body).then(
        (r) => (arrived.push(msSince(t0)), r),
        (e: unknown) => (arrived.push(msSince(t0)), { status: 0, text: String(e) }),
      ),
    );
    const dispatchMs = msSince(t0);
    const replies = await Promise.all(pending);
    const wallMs = msSince(t0);
    const daemonCpuMs = Math.round((cpuSeconds(s.daemonPid) - cpu0) * 1000);
    const out: BurstRound = {
      kind,
      round,
      requests: replies.length,
      winners: 0,
      conflicts: 0,
      empty: 0,
      other: 0,
      otherSamples: [],
      distinctWon: 0,
      liveAfter: -1,
      newConnections: conns.reduce((n, c) => n + c.opened(), 0) - before,
      wallMs: Math.round(wallMs * 10) / 10,
      dispatchMs: Math.round(dispatchMs * 10) / 10,
      answers: summarize(arrived),
      daemonCpuMs,
    };
    for (const r of replies) {
      const k = classify(r);
      if (k === 'win') out.winners++;
      else if (k === 'conflict') out.conflicts++;
      else if (k === 'empty') out.empty++;
      else {
        out.other++;
        if (out.otherSamples.length < 3) out.otherSamples.push(`${r.status} ${r.text.slice(0, 200)}`);
      }
    }
    rounds.push(out);
    tick(rounds.length, true);
    return { out, replies };
  };
  const conflict = (r: Reply): boolean => r.status === 409 && codeOf(r) === 'lease_conflict';
  const live = async (prefix: string, root?: string): Promise<number> =>
    (await ok<{ leases: unknown[] }>(probe, '/lease/list', { resource_prefix: prefix, ...(root ? { root } : {}), limit: 500 })).leases.length;
  const newTask = async (title: string): Promise<string> => (await ok<{ task_id: string }>(requester, '/task/create', { to: `#${s.room}`, title })).task_id;

  for (let k = 0; k < s.rounds; k++) {
    // One exclusive path lease: a glob no earlier round named.
    const glob = `burst/${k}/**`;
    const p = await burst('path', k, '/lease/claim', JSON.stringify({ resource: `path:${glob}`, root: s.root, ttl_secs: 3600, reason: 'bench burst' }), (r) =>
      r.status === 200 ? 'win' : conflict(r) ? 'conflict' : 'other',
    );
    p.out.liveAfter = await live(`path:burst/${k}/`, s.root);
    // One pooled task claimed by id.
    const one = await newTask(`burst ${k}: one task`);
    const t = await burst('task', k, '/task/claim', JSON.stringify({ task_id: one, ttl_secs: 3600 }), (r) => (r.status === 200 ? 'win' : conflict(r) ? 'conflict' : 'other'));
    t.out.liveAfter = await live(one);
    // A pool of tasks claimed as "the oldest on offer". The leases outlive the run (an hour), so
    // no earlier round's task comes back on offer.
    const ids: string[] = [];
    for (let i = 0; i < s.poolTasks; i++) ids.push(await newTask(`burst ${k}: pool ${i}`));
    const won = new Set<string>();
    const pl = await burst('pool', k, '/task/claim', JSON.stringify({ pool: `#${s.room}`, ttl_secs: 3600 }), (r) => {
      if (r.status !== 200) return 'other';
      const b = JSON.parse(r.text) as { task: { task_id: string } | null; lease: unknown };
      if (b.task === null && b.lease === null) return 'empty';
      if (!b.task || !b.lease || !ids.includes(b.task.task_id)) return 'other';
      won.add(b.task.task_id);
      return 'win';
    });
    pl.out.distinctWon = won.size;
    let held = 0;
    for (const id of ids) held += await live(id);
    pl.out.liveAfter = held;
    // The path lease goes (the tasks stay held: released, they would be on offer again).
    const winner = p.replies.find((r) => r.status === 200);
    if (winner) {
      const l = JSON.parse(winner.text) as { lease_id: string; epoch: number };
      await ok(conns[p.replies.indexOf(winner)]!.poster, '/lease/release', { lease_id: l.lease_id, epoch: l.epoch });
    }
  }
  for (const c of conns) c.poster.close();
  requester.close();
  return { claimants: conns.length, connectMs, rounds };
}
