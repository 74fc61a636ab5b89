// The world of the lease model test (lease-model.test.ts): two accounts with two session slots
// each (a slot's session can end and a new one take its place), a requester, one room whose pooled
// tasks they claim, two repository roots, a small set of globs with an overlap table of our own,
// the reference model, the invariants every step must keep, and what the steps share (the steps
// are in lease-model.test.ts, the pooled tasks' in lease-model-tasks.ts).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { AdminOps } from '../../src/engine/admin-ops.js';
import { ManualClock } from '../../src/engine/clock.js';
import { globsOverlap } from '../../src/engine/glob-overlap.js';
import { MailEngine, type Caller } from '../../src/engine/mail-engine.js';
import type { Attestation } from '../../src/attest/types.js';
import type { MailError } from '../../src/wire/errors.js';
import type { LeaseEndReason, LeaseMode, LeaseRecord, Store } from '../../src/store/types.js';
import { LEASE_LIMITS } from '../../src/wire/leases.js';
import { ids } from './engine-model-world.js';

// ---- globs, and whether two overlap, decided here by brute force over a set of paths

export const ROOTS = ['/repo/one', '/repo/two'] as const;
export const GLOBS = ['src/**', 'src/*.ts', 'src/a.ts', 'src/x/**', 'src/x/y.ts', 'docs/**', '**/*.md', 'docs/a.md', 'lib/?.c', '*'] as const;
const SEGMENTS = ['src', 'docs', 'lib', 'x', 'a.ts', 'y.ts', 'a.md', 'a.c'];

const segmentRe = (g: string) =>
  new RegExp(
    `^${g
      .replace(/[.+^${}()|\\]/g, '\\$&')
      .replace(/\*/g, '[^/]*')
      .replace(/\?/g, '[^/]')}$`,
  );
/** `**` as a whole segment: zero or more segments; `*` and `?` within one. */
function matches(glob: string[], path: string[]): boolean {
  if (glob.length === 0) return path.length === 0;
  const [g, ...rest] = glob as [string, ...string[]];
  if (g === '**') return matches(rest, path) || (path.length > 0 && matches(glob, path.slice(1)));
  return path.length > 0 && segmentRe(g).test(path[0]!) && matches(rest, path.slice(1));
}
const PATHS: string[][] = [];
for (const a of SEGMENTS) {
  PATHS.push([a]);
  for (const b of SEGMENTS) {
    PATHS.push([a, b]);
    for (const c of SEGMENTS) PATHS.push([a, b, c]);
  }
}
/** Every pair of GLOBS that some path matches both of (the paths reach every witness these need). */
const OVERLAP = new Set<string>();
for (const a of GLOBS) for (const b of GLOBS) if (PATHS.some((p) => matches(a.split('/'), p) && matches(b.split('/'), p))) OVERLAP.add(`${a}\n${b}`);
export const overlaps = (a: string, b: string): boolean => OVERLAP.has(`${a}\n${b}`);

/** The engine's overlap agrees with this table on every pair (else the model would be wrong). */
export function checkOverlapTable(): void {
  for (const a of GLOBS) for (const b of GLOBS) assert.equal(globsOverlap(a, b), overlaps(a, b), `globsOverlap(${a}, ${b})`);
}

/** Whether two live leases of one space may not coexist. */
export function clash(a: { space: string; resource: string; mode: LeaseMode }, b: { space: string; resource: string; mode: LeaseMode }): boolean {
  if (a.space !== b.space) return false;
  if (a.space.startsWith('task:')) return true;
  return overlaps(a.resource, b.resource) && !(a.mode === 'shared' && b.mode === 'shared');
}

// ---- who takes part

export const SLOTS = [
  { name: 'a1', account: 'alice' },
  { name: 'a2', account: 'alice' },
  { name: 'b1', account: 'bob' },
  { name: 'b2', account: 'bob' },
] as const;
export type Slot = (typeof SLOTS)[number];
export const POOL = 'pool';

export interface Real {
  store: Store;
  engine: MailEngine;
  clock: ManualClock;
  /** The current caller of each slot (its session replaced when the previous one ended). */
  callers: Map<string, Caller>;
  lead: Caller;
  /** Processes that exited: the engine's isAlive answers false for them. */
  dead: Set<number>;
  /** The end listener's calls per lease id. */
  endCalls: Map<string, LeaseEndReason[]>;
}

let pidNo = 20_000;
/** A session of the account in a process never seen before. */
async function sessionOf(engine: MailEngine, store: Store, account: string): Promise<Caller> {
  const pid = ++pidNo;
  const facts = { pid, startTime: pid, exe: '/usr/bin/agent', uid: 1000, ppid: 1 };
  const att: Attestation = { session: facts, peer: facts, sessionId: `s-${createHash('sha256').update(`lease-model ${pid}`).digest('hex')}`, corroborated: {} };
  return engine.callerFor((await store.getAccount(account))!, att);
}

/** The slot's next session (its previous process ended). */
export async function newSession(real: Real, slot: Slot): Promise<Caller> {
  const c = await sessionOf(real.engine, real.store, slot.account);
  real.callers.set(slot.name, c);
  return c;
}

/** Kills the slot's process as far as the engine can tell (the session sweep asks isAlive). */
export function killSession(real: Real, slot: Slot): void {
  real.dead.add(real.callers.get(slot.name)!.session!.pid);
}

export async function makeWorld(store: Store): Promise<Real> {
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  const dead = new Set<number>();
  const engine = new MailEngine({ store, clock, ids, hostId: 'host-lease-model', isAlive: (pid) => !dead.has(pid) });
  await engine.start();
  const admin = new AdminOps(engine);
  const opRec = await admin.createAccount({ id: 'operator', kind: 'service', permissions: { send: true, read: true, urgent: true, operator: true } });
  const op: Caller = { account: (await store.getAccount(opRec.account.id))!, session: null };
  for (const a of ['alice', 'bob', 'lead']) await admin.createAccount({ id: a });
  await admin.roomAdd(op, POOL);
  for (const a of ['alice', 'bob', 'lead']) await admin.memberAdd(op, POOL, a);
  const real: Real = { store, engine, clock, callers: new Map(), lead: await sessionOf(engine, store, 'lead'), dead, endCalls: new Map() };
  for (const s of SLOTS) await newSession(real, s);
  engine.leases.onEnded((l) => {
    real.endCalls.set(l.id, [...(real.endCalls.get(l.id) ?? []), l.endReason!]);
  });
  return real;
}

// ---- the reference model

export interface MLease {
  id: string;
  space: string;
  resource: string;
  mode: LeaseMode;
  slot: string;
  session: string;
  epoch: number;
  expiresAt: number;
  /** null while not ended. */
  ended: LeaseEndReason | null;
  /** Ended through the end listeners (release, expiry, session end), not by its task ending. */
  viaListener: boolean;
}

export type PState = 'submitted' | 'working' | 'input_required' | 'completed' | 'failed' | 'canceled';

export interface MTask {
  id: string;
  thread: string;
  title: string;
  createdAt: number;
  maxAttempts: number;
  retryDelaySecs: number | null;
  state: PState;
  attempt: number;
  availableAt: number | null;
  /** Its current claim; a task its holder finished or its requester canceled keeps naming the last one (ended). */
  lease: MLease | null;
  failReason: 'lease_exhausted' | null;
  /** Every change as the history must show it: the state, and what its note starts with. */
  history: { state: PState; note: string | null }[];
}

export class Model {
  leases: MLease[] = [];
  readonly epochs = new Map<string, number>();
  tasks: MTask[] = [];
  /** The session id of each slot's current session. */
  readonly sessions = new Map<string, string>();
  now = 0;

  liveLeases(): MLease[] {
    return this.leases.filter((l) => l.ended === null && l.expiresAt > this.now);
  }
  nextEpoch(space: string, resource: string): number {
    return (this.epochs.get(`${space}\n${resource}`) ?? 0) + 1;
  }
  heldBy(slot: string): number {
    return this.liveLeases().filter((l) => l.session === this.sessions.get(slot)).length;
  }
  /** Offered to a pool claim now: submitted and past its backoff, oldest first (id breaks ties). */
  offered(): MTask[] {
    return this.tasks
      .filter((t) => t.state === 'submitted' && (t.availableAt === null || t.availableAt <= this.now))
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
  taskOf(l: MLease): MTask | undefined {
    return l.space.startsWith('task:') ? this.tasks.find((t) => t.lease === l) : undefined;
  }

  /** A lease ended through the listeners: its task (if it holds one) goes back, or fails. */
  endLease(l: MLease, why: LeaseEndReason): void {
    l.ended = why;
    l.viaListener = true;
    const t = this.taskOf(l);
    if (!t) return;
    t.lease = null;
    const text = why === 'session_ended' ? 'its holder’s process ended' : why === 'expired' ? 'the claim expired' : 'released';
    if (t.attempt >= t.maxAttempts) {
      t.state = 'failed';
      t.failReason = 'lease_exhausted';
      t.history.push({ state: 'failed', note: `lease_exhausted: claimed ${t.attempt} times without finishing (last: ${text})` });
      return;
    }
    const delay = t.retryDelaySecs ? Math.min(LEASE_LIMITS.retryDelayMaxSecs, t.retryDelaySecs * 2 ** (t.attempt - 1)) * 1000 : 0;
    t.state = 'submitted';
    t.availableAt = delay ? this.now + delay : null;
    t.history.push({ state: 'submitted', note: `back in the pool: ${text} (attempt ${t.attempt} of ${t.maxAttempts})` });
  }

  /** A successful claim the engine answered with lease `got`. */
  claimed(got: { lease_id: string; epoch: number; expires_at: string }, space: string, resource: string, mode: LeaseMode, slot: string, ttlSecs: number, where: string): MLease {
    const epoch = this.nextEpoch(space, resource);
    assert.equal(got.epoch, epoch, `${where}: the epoch is one more than the last claim of ${resource}'s`);
    assert.equal(got.expires_at, new Date(this.now + ttlSecs * 1000).toISOString(), `${where}: expires_at`);
    assert.ok(!this.leases.some((l) => l.id === got.lease_id), `${where}: a fresh lease id`);
    this.epochs.set(`${space}\n${resource}`, epoch);
    const l: MLease = {
      id: got.lease_id,
      space,
      resource,
      mode,
      slot,
      session: this.sessions.get(slot)!,
      epoch,
      expiresAt: this.now + ttlSecs * 1000,
      ended: null,
      viaListener: false,
    };
    this.leases.push(l);
    return l;
  }
}

// ---- the invariants, checked against the store after every step

const heldStates: PState[] = ['working', 'input_required'];

export async function checkInvariants(model: Model, real: Real, where: string): Promise<void> {
  const now = real.clock.now();
  assert.equal(now, model.now, `${where}: the clocks agree`);
  const live = await real.store.listLeases({ now, limit: 10_000 });
  // Never two holders that may not coexist: exclusive with anything overlapping, one per task.
  for (const [i, a] of live.entries())
    for (const b of live.slice(i + 1)) assert.ok(!clash(a, b), `${where}: ${a.id} (${a.mode} ${a.space} ${a.resource}) and ${b.id} (${b.mode} ${b.resource}) are live together`);
  const want = model.liveLeases();
  assert.deepEqual(live.map((l) => l.id).sort(), want.map((l) => l.id).sort(), `${where}: the live leases are the model's`);
  for (const l of live) {
    const m = want.find((x) => x.id === l.id)!;
    assert.deepEqual(
      [l.space, l.resource, l.mode, l.holderSession, l.epoch, l.expiresAt],
      [m.space, m.resource, m.mode, m.session, m.epoch, m.expiresAt],
      `${where}: lease ${l.id}`,
    );
  }
  // Every lease that ended was acted on and settled; each one the listeners saw, exactly once.
  assert.deepEqual(
    (await real.store.unsettledLeases(100)).map((l) => l.id),
    [],
    `${where}: nothing left unsettled`,
  );
  for (const l of model.leases) {
    const calls = real.endCalls.get(l.id) ?? [];
    assert.deepEqual(calls, l.viaListener ? [l.ended] : [], `${where}: the end of ${l.id} (${l.resource}, ${l.ended ?? 'live'}) seen by the listeners`);
  }
  for (const t of model.tasks) await checkTask(model, real, t, live, where);
}

async function checkTask(model: Model, real: Real, t: MTask, live: LeaseRecord[], where: string): Promise<void> {
  const got = (await real.store.getTask(t.id))!;
  const w = `${where}: task ${t.id} (${t.title})`;
  const p = got.pool!;
  assert.equal(got.state, t.state, `${w}: state`);
  assert.equal(p.attempt, t.attempt, `${w}: attempt`);
  assert.equal(p.leaseId, t.lease?.id ?? null, `${w}: its lease`);
  assert.equal(p.leaseEpoch, t.lease?.epoch ?? null, `${w}: its epoch`);
  assert.equal(got.failReason ?? null, t.failReason, `${w}: fail reason`);
  if (t.state === 'submitted') assert.equal(p.availableAt, t.availableAt, `${w}: offered again at`);
  // Held by a live lease ⇔ working (or asking) with that lease; unheld ⇔ nobody is its assignee.
  const mine = live.filter((l) => l.space === `task:${t.id}`);
  if (heldStates.includes(t.state)) {
    assert.deepEqual(
      mine.map((l) => l.id),
      [p.leaseId],
      `${w}: held by exactly its lease`,
    );
    assert.equal(got.toAccount, mine[0]!.holderAccount, `${w}: the holder is its assignee`);
  } else {
    assert.deepEqual(mine, [], `${w}: no live claim of a task that is ${t.state}`);
    if (t.state === 'submitted' || t.failReason) assert.equal(got.toAccount, '', `${w}: nobody is the assignee`);
  }
  assert.deepEqual(
    got.history.map((h) => h.state),
    t.history.map((h) => h.state),
    `${w}: history states`,
  );
  got.history.forEach((h, i) => {
    const n = t.history[i]!.note;
    if (n !== null) assert.ok(h.note?.startsWith(n), `${w}: history #${i} note ${JSON.stringify(h.note)} starts ${JSON.stringify(n)}`);
  });
  const backs = got.history.filter((h) => h.note?.startsWith('back in the pool')).length;
  assert.equal(backs, t.history.filter((h) => h.note?.startsWith('back in the pool')).length, `${w}: back in the pool once per ended claim`);
}

/** After a run: each task's thread holds one message per change, and the room was told of every
 *  return exactly once (a `submitted` change after the first). */
export async function checkThreads(model: Model, real: Real): Promise<void> {
  for (const t of model.tasks) {
    const got = await real.engine.get(real.lead, { message_id: t.thread, thread: true });
    const changes = (got.thread ?? []).filter((m) => m.task?.task_id === t.id);
    assert.deepEqual(
      changes.map((m) => m.task!.state),
      t.history.map((h) => h.state),
      `task ${t.id}: one message per change, in order`,
    );
    const returns = changes.filter((m) => m.task!.state === 'submitted' && m.task!.version > 1);
    assert.equal(returns.length, t.history.filter((h) => h.note?.startsWith('back in the pool')).length, `task ${t.id}: one room mail per return`);
    for (const m of returns) assert.equal(m.to, `#${POOL}`, `task ${t.id}: a return is told to the room`);
  }
}

// ---- what every step of lease-model.test.ts and lease-model-tasks.ts shares

export type Cmd = fc.AsyncCommand<Model, Real>;
export const TTLS = [10, 30, 60, 600] as const;
export const slotArb = fc.nat({ max: SLOTS.length - 1 });
export const caller = (real: Real, slot: number) => real.callers.get(SLOTS[slot]!.name)!;

/** How often each step ended how (printed as a diagnostic: the runs must reach every outcome). */
export const tally = new Map<string, number>();
export const count = (step: string, err: MailError | null | string) => {
  const k = `${step} ${typeof err === 'string' ? err : (err?.code ?? 'ok')}`;
  tally.set(k, (tally.get(k) ?? 0) + 1);
};

/** Checks an error's details against what the model expects. */
export function details(err: MailError | null, want: Record<string, unknown>, where: string): void {
  for (const [k, v] of Object.entries(want)) assert.deepEqual(err?.details[k], v, `${where}: ${k}`);
}

/** A lease_conflict names the model's conflicting live leases (up to 20), as (resource, mode, expiry). */
export function conflictCheck(err: MailError, holders: MLease[], where: string): void {
  const shown = (err.details.holders as { resource: string; mode: string; expires_at: string }[]).map((h) => `${h.resource} ${h.mode} ${h.expires_at}`).sort();
  const want = holders.map((l) => `${l.space.startsWith('path:') ? `path:${l.resource}` : l.resource} ${l.mode} ${new Date(l.expiresAt).toISOString()}`).sort();
  if (holders.length <= 20) assert.deepEqual(shown, want, `${where}: the holders named`);
  else assert.equal(shown.length, 20, `${where}: at most 20 holders named`);
}

/** Runs the step, then checks every invariant. */
export abstract class Step implements Cmd {
  check = () => true;
  abstract step(model: Model, real: Real): Promise<void>;
  abstract toString(): string;
  async run(model: Model, real: Real): Promise<void> {
    await this.step(model, real);
    await checkInvariants(model, real, `after ${this.toString()}`);
  }
}
