// What lease-crash.test.ts checks in the SQLite file a killed (or stopped) daemon left: at most one
// exclusive holder of anything, every acknowledged claim still there (live or ended for a reason
// the client gave), every pooled task in one consistent state, and epochs only growing.
import assert from 'node:assert/strict';
import { openSqliteStore } from '../../src/store/index.js';
import type { LeaseRecord, Store, TaskRecord } from '../../src/store/types.js';
import { clash } from './lease-model-world.js';

/** A claim the daemon acknowledged (a 200 the client saw), and what the client did with it since. */
export interface Acked {
  kind: 'path' | 'task';
  leaseId: string;
  epoch: number;
  space: string;
  resource: string;
  account: string;
  /** The latest expiry an answer named (the claim's, or a renew's). */
  expiresAt: number;
  sentAt: number;
  ackedAt: number;
  /** A release (or, for a task, its completion) was sent: it may have ended the lease. */
  endTried: boolean;
  /** ... and was acknowledged. */
  endAcked: boolean;
  /** A lane is acting on it (so two lanes of one account never race on one lease). */
  busy: boolean;
}

const HELD = ['working', 'input_required'];
const count = (t: TaskRecord, prefix: string) => t.history.filter((h) => h.note?.startsWith(prefix)).length;

export interface CheckOptions {
  room: string;
  /** After a graceful stop, nothing may wait to be acted on; after a kill, some may. */
  strict: boolean;
  /** Known crash windows of src/ found (reported, not yet fixed): noted here instead of failing. */
  gaps: Set<string>;
  /** Stray claim leases a kill left on tasks on offer (tolerated: the next claim ends them). */
  strays: Set<string>;
}

/** Opens the file (the daemon is not running), checks it, closes it. */
export async function checkFile(path: string, acked: Acked[], o: CheckOptions, where: string): Promise<{ live: number; tasks: number }> {
  const store = openSqliteStore({ path });
  try {
    return await checkStore(store, acked, o, where);
  } finally {
    await store.close();
  }
}

async function checkStore(store: Store, acked: Acked[], o: CheckOptions, where: string): Promise<{ live: number; tasks: number }> {
  const now = Date.now();
  const live = await store.listLeases({ now, limit: 100_000 });
  for (const [i, a] of live.entries())
    for (const b of live.slice(i + 1)) assert.ok(!clash(a, b), `${where}: ${a.id} (${a.mode} ${a.space} ${a.resource}) and ${b.id} (${b.mode} ${b.resource}) are live together`);
  const unsettled = await store.unsettledLeases(10_000);
  if (o.strict)
    assert.deepEqual(
      unsettled.map((l) => l.id),
      [],
      `${where}: after a graceful stop every ended lease was acted on`,
    );
  // Every acknowledged claim is there: live, or ended for a reason its client gave (a release
  // or completion it sent) or by expiry; never silently gone, never ended otherwise.
  for (const a of acked) {
    const l = await store.getLease(a.leaseId);
    const w = `${where}: acknowledged ${a.kind} claim ${a.leaseId} (${a.resource}, epoch ${a.epoch}, by ${a.account})`;
    assert.ok(l, `${w} is gone`);
    assert.deepEqual([l.space, l.resource, l.epoch, l.holderAccount], [a.space, a.resource, a.epoch, a.account], w);
    assert.ok(l.expiresAt >= a.expiresAt, `${w}: expires at ${l.expiresAt}, before the ${a.expiresAt} an answer named`);
    if (l.endedAt === null) {
      assert.ok(!a.endAcked, `${w}: its release or completion was acknowledged, yet it is not ended`);
      continue;
    }
    if (l.endReason === 'expired') assert.ok(l.expiresAt <= l.endedAt, `${w}: ended as expired before its expiry`);
    else assert.ok(l.endReason === 'released' && a.endTried, `${w}: ended ${l.endReason} though nobody released it`);
  }
  // Epochs only grow: a claim sent after another of the same resource was acknowledged has a higher epoch.
  const byResource = new Map<string, Acked[]>();
  for (const a of acked) byResource.set(`${a.space}\n${a.resource}`, [...(byResource.get(`${a.space}\n${a.resource}`) ?? []), a]);
  for (const list of byResource.values())
    for (const a of list)
      for (const b of list)
        if (a.ackedAt < b.sentAt) assert.ok(b.epoch > a.epoch, `${where}: ${b.leaseId} (epoch ${b.epoch}) claimed after ${a.leaseId} (epoch ${a.epoch}) was acknowledged`);
  const tasks = await store.poolTasks({ room: o.room, limit: 10_000 });
  for (const t of tasks) await checkTask(store, t, live, unsettled, o, `${where}: task ${t.id} (${t.state}, attempt ${t.pool!.attempt})`);
  return { live: live.length, tasks: tasks.length };
}

async function checkTask(store: Store, t: TaskRecord, live: LeaseRecord[], unsettled: LeaseRecord[], o: CheckOptions, w: string): Promise<void> {
  const p = t.pool!;
  const claims = count(t, 'claimed (attempt');
  const backs = count(t, 'back in the pool');
  assert.equal(p.attempt, claims, `${w}: attempt counts the claims in its history`);
  const mine = live.filter((l) => l.space === `task:${t.id}`);
  // A claim ends once: back in the pool, failed lease_exhausted, finished by its holder, or still held.
  if (HELD.includes(t.state)) {
    assert.equal(claims, backs + 1, `${w}: every claim but the current one came back once`);
    assert.ok(p.leaseId && p.leaseEpoch !== null, `${w}: held, so it names its lease`);
    const l = await store.getLease(p.leaseId);
    assert.ok(l && l.space === `task:${t.id}` && l.epoch === p.leaseEpoch, `${w}: its lease ${p.leaseId} is there with its epoch`);
    // Held by a live lease that is its own; or that lease just ended (by expiry, awaiting the
    // sweep, or ended and not yet acted on: after a kill, or a stop before the next sweep).
    assert.ok(
      mine.every((x) => x.id === l.id),
      `${w}: no other live claim`,
    );
    if (l.endedAt !== null) {
      assert.ok(!l.settled, `${w}: its lease ended and was settled, yet the task was not returned`);
      assert.ok(!o.strict || unsettled.some((u) => u.id === l.id), `${w}: waits to be returned`);
    }
    return;
  }
  // A kill between a claim's lease and the task's move to working (pool.ts take) leaves a stray
  // live lease on a task still on offer: by design since 2e266f8 the next claim of it ends the
  // stray once it is 30 s old (STRAY_AFTER_MS), so it is tolerated here, and counted. A kill
  // between the holder's completion and the end of its lease (tasks.ts update: transition, then
  // pool.ended) leaves the lease live until the next session sweep ends it (pool.ts reconcile):
  // tolerated and counted the same way.
  const stray = t.state === 'submitted' && mine.length === 1 && mine[0]!.id !== p.leaseId;
  const lingering = t.state === 'completed' && mine.length === 1 && mine[0]!.id === p.leaseId;
  if (stray || lingering) o.strays.add(mine[0]!.id);
  else
    assert.deepEqual(
      mine.map((l) => l.id),
      [],
      `${w}: a live claim of a task that is ${t.state} (the task is not held by it)`,
    );
  if (t.state === 'submitted') {
    assert.equal(claims, backs, `${w}: every claim came back exactly once`);
    assert.equal(p.leaseId, null, w);
    assert.equal(t.toAccount, '', `${w}: nobody is its assignee`);
  } else if (t.failReason === 'lease_exhausted') {
    assert.equal(claims, backs + 1, `${w}: the last claim failed it, the others came back once`);
    assert.equal(claims, p.maxAttempts, `${w}: failed after max_attempts claims`);
    assert.equal(p.leaseId, null, w);
  } else {
    assert.equal(t.state, 'completed', `${w}: only its holder's completion ends it otherwise`);
    assert.equal(claims, backs + 1, `${w}: finished by its last claim`);
  }
}
