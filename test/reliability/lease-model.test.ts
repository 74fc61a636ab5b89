// Model-based property test of leases and pooled tasks, on the memory and the SQLite store, with
// the engine's clock moved by hand: random path claims (exclusive and shared, overlapping and
// disjoint globs of two roots, by four sessions of two accounts), renews and releases with the
// right and stale epochs by the holder and by others, clock advances with the expiry sweep,
// sessions whose process ends (the session sweep, told by isAlive: no OS process is killed, the
// engine's own path from a dead pid to ended leases is what runs), pooled tasks created, claimed
// (named, from the pool, through lease/claim, several claimants at once), updated with epochs,
// released and canceled (lease-model-tasks.ts). After every step, against the model
// (lease-model-world.ts):
//  - never two live leases that may not coexist (exclusive with anything overlapping; one per task);
//  - the live leases are exactly the model's; every ended lease was settled, and each one the end
//    listeners saw (release, expiry, session end) they saw exactly once;
//  - every pooled task is in the one state the model predicts (in the pool, held by one live lease
//    that is its lease, failed lease_exhausted, completed …), with one "back in the pool" history
//    entry per ended claim (and, at the end of a run, one room mail per return);
//  - every claim's epoch is one more than the previous claim of its resource (strictly increasing).
// M4A_MODEL_RUNS and M4A_MODEL_SEED scale and replay it, as in engine-model.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { ErrorCode } from '../../src/wire/errors.js';
import { LEASE_LIMITS, type LeaseOut } from '../../src/wire/leases.js';
import type { LeaseMode } from '../../src/store/types.js';
import { createMemoryStore, openSqliteStore } from '../../src/store/index.js';
import { expectCode, refusal } from './engine-model-world.js';
import {
  GLOBS,
  Model,
  POOL,
  ROOTS,
  SLOTS,
  Step,
  TTLS,
  caller,
  checkOverlapTable,
  checkThreads,
  clash,
  conflictCheck,
  count,
  details,
  killSession,
  makeWorld,
  newSession,
  slotArb,
  tally,
  type Cmd,
  type MLease,
  type Real,
} from './lease-model-world.js';
import { TaskCancel, TaskClaim, TaskCreate, TaskUpdate, took } from './lease-model-tasks.js';

const RUNS = Number(process.env.M4A_MODEL_RUNS ?? 0) || 100;
const SEED = process.env.M4A_MODEL_SEED ? { seed: Number(process.env.M4A_MODEL_SEED) } : {};

// ---- path leases

class PathClaim extends Step {
  constructor(
    readonly slot: number,
    readonly root: number,
    readonly glob: number,
    readonly mode: LeaseMode,
    readonly ttl: number,
  ) {
    super();
  }
  async step(model: Model, real: Real) {
    const where = this.toString();
    const space = `path:${ROOTS[this.root]}`;
    const glob = GLOBS[this.glob]!;
    const name = SLOTS[this.slot]!.name;
    const holders = model.liveLeases().filter((l) => clash({ space, resource: glob, mode: this.mode }, l));
    const expected: ErrorCode | null = model.heldBy(name) >= LEASE_LIMITS.perHolder ? 'too_many_leases' : holders.length ? 'lease_conflict' : null;
    let got: LeaseOut | undefined;
    const err = await refusal(
      real.engine.leases.claim(caller(real, this.slot), { resource: `path:${glob}`, root: ROOTS[this.root], mode: this.mode, ttl_secs: this.ttl }).then((x) => void (got = x)),
    );
    expectCode(err, expected, where);
    count(`claim ${this.mode}`, err);
    if (err?.code === 'lease_conflict') conflictCheck(err, holders, where);
    if (err) return;
    assert.equal(got!.resource, `path:${glob}`, where);
    assert.equal(got!.mode, this.mode, where);
    model.claimed(got!, space, glob, this.mode, name, this.ttl, where);
  }
  toString = () => `claim(${SLOTS[this.slot]!.name} ${this.mode} ${ROOTS[this.root]}:${GLOBS[this.glob]} ttl ${this.ttl})`;
}

/** A lease of the model: a live one (even picks, when there is one) or any, ended ones too. */
const pickLease = (model: Model, pick: number): MLease | undefined => {
  const live = model.liveLeases();
  const from = live.length && pick % 2 === 0 ? live : model.leases;
  return from[Math.floor(pick / 2) % Math.max(1, from.length)];
};

/** Renew or release of a lease by its holder slot (who = 0) or another slot, with its epoch or a stale one. */
class LeaseOp extends Step {
  constructor(
    readonly op: 'renew' | 'release',
    readonly pick: number,
    readonly who: number,
    readonly stale: boolean,
    readonly ttl: number | null,
  ) {
    super();
  }
  private shown = '';
  async step(model: Model, real: Real) {
    const l = pickLease(model, this.pick);
    if (!l) return;
    const slot = this.who === 0 ? SLOTS.findIndex((s) => s.name === l.slot) : this.who - 1;
    const c = caller(real, slot);
    const epoch = this.stale ? l.epoch - 1 : l.epoch;
    this.shown = `${l.id} ${l.resource} e${l.epoch}${l.ended ? ` ${l.ended}` : ''} by ${SLOTS[slot]!.name}`;
    const where = this.toString();
    const ok = model.liveLeases().includes(l) && c.session!.id === l.session && !this.stale;
    let got: LeaseOut | undefined;
    const req = { lease_id: l.id, epoch, ...(this.op === 'renew' && this.ttl !== null ? { ttl_secs: this.ttl } : {}) };
    const err = await refusal((this.op === 'renew' ? real.engine.leases.renew(c, req) : real.engine.leases.release(c, req)).then((x) => void (got = x)));
    expectCode(err, ok ? null : 'lease_lost', where);
    count(`${this.op} ${l.space.slice(0, 4)}`, err);
    if (err) return details(err, { lease_id: l.id }, where);
    assert.equal(got!.lease_id, l.id, where);
    assert.equal(got!.epoch, l.epoch, `${where}: the epoch stays`);
    if (this.op === 'renew') {
      l.expiresAt = model.now + (this.ttl ?? LEASE_LIMITS.ttlDefaultSecs) * 1000;
      assert.equal(got!.expires_at, new Date(l.expiresAt).toISOString(), `${where}: expires_at from now`);
    } else model.endLease(l, 'released');
  }
  toString = () => `${this.op}(${this.shown || `#${this.pick}`}${this.stale ? ' stale' : ''}${this.ttl !== null && this.op === 'renew' ? ` ttl ${this.ttl}` : ''})`;
}

// ---- time and sessions

class Advance extends Step {
  constructor(readonly ms: number) {
    super();
  }
  async step(model: Model, real: Real) {
    model.now += this.ms;
    const due = model.leases.filter((l) => l.ended === null && l.expiresAt <= model.now).sort((a, b) => a.expiresAt - b.expiresAt);
    for (const l of due) model.endLease(l, 'expired');
    count('advance', `${due.length ? 'expired some' : 'expired none'}`);
    real.clock.advance(this.ms);
    await real.engine.leases.tick();
  }
  toString = () => `advance(${this.ms / 1000} s)`;
}

class SessionEnd extends Step {
  constructor(readonly slot: number) {
    super();
  }
  async step(model: Model, real: Real) {
    const s = SLOTS[this.slot]!;
    const session = model.sessions.get(s.name)!;
    const held = model.liveLeases().filter((x) => x.session === session);
    for (const l of held) model.endLease(l, 'session_ended');
    count('session-end', held.length ? 'ended some' : 'held none');
    killSession(real, s);
    await real.engine.sweepSessions();
    model.sessions.set(s.name, (await newSession(real, s)).session!.id);
  }
  toString = () => `session-end(${SLOTS[this.slot]!.name})`;
}

/** Several slots claim at once, in one turn of the event loop (SQLite commits such claims
 *  together): one exclusive glob, or the pool's oldest on offer. */
class Burst extends Step {
  constructor(
    readonly slots: number[],
    readonly pool: boolean,
    readonly root: number,
    readonly glob: number,
    readonly ttl: number,
  ) {
    super();
  }
  async step(model: Model, real: Real) {
    const where = this.toString();
    if (this.pool) {
      const offered = model.offered();
      const outs = await Promise.all(this.slots.map((s) => real.engine.tasks.pool.claim(caller(real, s), { pool: `#${POOL}`, ttl_secs: this.ttl })));
      const won = outs.flatMap((o, i) => (o.task ? [{ o, slot: this.slots[i]! }] : []));
      assert.equal(won.length, Math.min(this.slots.length, offered.length), `${where}: one task per claimant while tasks last`);
      assert.deepEqual(
        won.map((w) => w.o.task!.task_id).sort(),
        offered
          .slice(0, won.length)
          .map((t) => t.id)
          .sort(),
        `${where}: the oldest on offer, each once`,
      );
      count('burst pool', `${won.length} of ${this.slots.length} won`);
      for (const w of won)
        took(
          model,
          model.tasks.find((t) => t.id === w.o.task!.task_id)!,
          w.o.lease!,
          w.slot,
          this.ttl,
          where,
        );
      return;
    }
    const space = `path:${ROOTS[this.root]}`;
    const glob = GLOBS[this.glob]!;
    const held = model.liveLeases().some((l) => clash({ space, resource: glob, mode: 'exclusive' }, l));
    const outs = await Promise.all(
      this.slots.map(async (s) => {
        const box: { got: LeaseOut | null } = { got: null };
        const err = await refusal(
          real.engine.leases.claim(caller(real, s), { resource: `path:${glob}`, root: ROOTS[this.root], ttl_secs: this.ttl }).then((x) => void (box.got = x)),
        );
        return { err, got: box.got, s };
      }),
    );
    for (const o of outs) if (o.err) expectCode(o.err, 'lease_conflict', where);
    const won = outs.filter((o) => !o.err);
    assert.equal(won.length, held ? 0 : 1, `${where}: exactly one claimant wins a free resource, none a held one`);
    count('burst path', `${won.length} of ${this.slots.length} won`);
    if (won[0]) model.claimed(won[0].got!, space, glob, 'exclusive', SLOTS[won[0].s]!.name, this.ttl, where);
  }
  toString = () => `burst(${this.slots.map((s) => SLOTS[s]!.name).join(',')} ${this.pool ? `#${POOL}` : `${ROOTS[this.root]}:${GLOBS[this.glob]}`} ttl ${this.ttl})`;
}

// ---- the commands

const ttlArb = fc.constantFrom(...TTLS);
const rootArb = fc.nat({ max: ROOTS.length - 1 });
const globArb = fc.nat({ max: GLOBS.length - 1 });
const taskUpdateArb = fc
  .tuple(
    fc.constantFrom(-2, -2, -2, -2, -1, 0, 1, 2, 3),
    fc.nat(),
    fc.constantFrom('working' as const, 'input_required' as const, 'completed' as const, 'failed' as const),
    fc.constantFrom('right' as const, 'right' as const, 'stale' as const, 'none' as const),
  )
  .map(([s, p, st, e]) => new TaskUpdate(s, p, st, e));
const commands: fc.Arbitrary<Cmd>[] = [
  fc.tuple(slotArb, rootArb, globArb, fc.constantFrom<LeaseMode>('exclusive', 'exclusive', 'shared'), ttlArb).map(([s, r, g, m, t]) => new PathClaim(s, r, g, m, t)),
  fc.tuple(slotArb, fc.constant(0), globArb, fc.constantFrom<LeaseMode>('exclusive', 'shared'), ttlArb).map(([s, r, g, m, t]) => new PathClaim(s, r, g, m, t)),
  fc
    .tuple(fc.constantFrom('renew' as const, 'release' as const), fc.nat(), fc.constantFrom(0, 0, 0, 1, 2, 3, 4), fc.boolean(), fc.option(ttlArb))
    .map(([op, p, w, st, t]) => new LeaseOp(op, p, w, st && p % 3 === 0, t)),
  fc.tuple(fc.constant('release' as const), fc.nat(), fc.constant(0), fc.constant(false), fc.constant(null)).map(([op, p, w, st, t]) => new LeaseOp(op, p, w, st, t)),
  fc.constantFrom(1_000, 5_000, 10_000, 30_000, 61_000, 600_000).map((ms) => new Advance(ms)),
  slotArb.map((s) => new SessionEnd(s)),
  fc.tuple(fc.integer({ min: 1, max: 3 }), fc.constantFrom(null, null, 0, 10, 30)).map(([m, d]) => new TaskCreate(m, d)),
  fc.tuple(slotArb, fc.option(fc.nat(), { freq: 2 }), fc.boolean(), ttlArb).map(([s, p, v, t]) => new TaskClaim(s, p, v, t)),
  fc.tuple(slotArb, fc.option(fc.nat(), { freq: 2 }), fc.boolean(), ttlArb).map(([s, p, v, t]) => new TaskClaim(s, p, v, t)),
  taskUpdateArb,
  taskUpdateArb,
  fc.tuple(fc.constantFrom(-1, -1, 0, 2), fc.nat()).map(([s, p]) => new TaskCancel(s, p)),
  fc.tuple(fc.uniqueArray(slotArb, { minLength: 2, maxLength: SLOTS.length }), fc.boolean(), rootArb, globArb, ttlArb).map(([ss, pool, r, g, t]) => new Burst(ss, pool, r, g, t)),
];

let runNo = 0;
describe('lease model', () => {
  it('our overlap table of the globs agrees with the engine on every pair', () => checkOverlapTable());

  for (const kind of ['memory', 'sqlite'] as const) {
    describe(`${kind} store`, () => {
      let dir: string;
      before(() => {
        // On tmpfs where there is one: this checks the rules, not fsync (lease-crash.test.ts does).
        dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'm4a-lease-model-'));
      });
      after(() => rmSync(dir, { recursive: true, force: true }));

      it(`claims, renews, releases, expiries, session ends and pooled tasks match the model over ${RUNS} sequences of up to 40 steps`, async (t) => {
        tally.clear();
        await fc.assert(
          fc.asyncProperty(fc.commands(commands, { maxCommands: 40, size: 'medium' }), async (cmds) => {
            const store = kind === 'memory' ? createMemoryStore() : openSqliteStore({ path: join(dir, `run-${++runNo}.db`) });
            try {
              const real = await makeWorld(store);
              const model = new Model();
              model.now = real.clock.now();
              for (const s of SLOTS) model.sessions.set(s.name, real.callers.get(s.name)!.session!.id);
              await fc.asyncModelRun(() => ({ model, real }), cmds);
              await checkThreads(model, real);
              for (const x of model.tasks) count('task ended', x.failReason ?? x.state);
              await real.engine.close();
            } finally {
              await store.close();
            }
          }),
          { numRuns: RUNS, includeErrorInReport: true, ...SEED },
        );
        t.diagnostic(
          [...tally]
            .sort()
            .map(([k, n]) => `${k}: ${n}`)
            .join('; '),
        );
      });
    });
  }
});
