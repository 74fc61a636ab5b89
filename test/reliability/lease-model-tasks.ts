// Pooled tasks for the lease model test (lease-model.test.ts): created by the requester with
// max_attempts and a backoff, claimed by name (through task/claim or lease/claim of the task id)
// or from the pool, updated by their holder, by others and by the requester with the right epoch,
// a stale one or none, and canceled; each verdict predicted in the engine's order (docs/tasks.md,
// engine/pool.ts) and the model moved with it (lease-model-world.ts checks the rest after each).
import assert from 'node:assert/strict';
import type { ErrorCode } from '../../src/wire/errors.js';
import { LEASE_LIMITS, type LeaseOut } from '../../src/wire/leases.js';
import type { TaskClaimResponse, TaskOut } from '../../src/wire/tasks.js';
import { expectCode, refusal } from './engine-model-world.js';
import { POOL, SLOTS, Step, caller, conflictCheck, count, details, type MTask, type Model, type PState, type Real } from './lease-model-world.js';

export class TaskCreate extends Step {
  constructor(
    readonly maxAttempts: number,
    readonly retryDelaySecs: number | null,
  ) {
    super();
  }
  async step(model: Model, real: Real) {
    const title = `pooled ${model.tasks.length + 1}`;
    const out = await real.engine.tasks.create(real.lead, {
      to: { kind: 'room', room: POOL },
      title,
      max_attempts: this.maxAttempts,
      ...(this.retryDelaySecs !== null ? { retry_delay_secs: this.retryDelaySecs } : {}),
    });
    assert.deepEqual(out.pool, { room: `#${POOL}`, attempt: 0, max_attempts: this.maxAttempts }, this.toString());
    model.tasks.push({
      id: out.task_id,
      thread: out.thread_id,
      title,
      createdAt: model.now,
      maxAttempts: this.maxAttempts,
      retryDelaySecs: this.retryDelaySecs || null,
      state: 'submitted',
      attempt: 0,
      availableAt: null,
      lease: null,
      failReason: null,
      history: [{ state: 'submitted', note: null }],
    });
  }
  toString = () => `task.create(max ${this.maxAttempts}${this.retryDelaySecs !== null ? ` delay ${this.retryDelaySecs}` : ''})`;
}

/** The model's side of a claim that took task t with lease `got`. */
export function took(model: Model, t: MTask, got: LeaseOut, slot: number, ttl: number, where: string): void {
  t.attempt++;
  assert.equal(got.attempt, t.attempt, `${where}: the lease's attempt`);
  t.lease = model.claimed(got, `task:${t.id}`, t.id, 'exclusive', SLOTS[slot]!.name, ttl, where);
  t.state = 'working';
  t.availableAt = null;
  t.history.push({ state: 'working', note: `claimed (attempt ${t.attempt} of ${t.maxAttempts})` });
}

const isTerminalState = (s: PState) => s === 'completed' || s === 'failed' || s === 'canceled';

/** A claim of a named task (through task/claim or lease/claim of its id), or of the pool's oldest on offer. */
export class TaskClaim extends Step {
  constructor(
    readonly slot: number,
    readonly pick: number | null,
    readonly viaLease: boolean,
    readonly ttl: number,
  ) {
    super();
  }
  async step(model: Model, real: Real) {
    const name = SLOTS[this.slot]!.name;
    const c = caller(real, this.slot);
    const named = this.pick === null || model.tasks.length === 0 ? null : model.tasks[this.pick % model.tasks.length]!;
    const where = `${this.toString()}${named ? ` ${named.id} (${named.state})` : ''}`;
    const t = named ?? model.offered()[0] ?? null;
    let expected: ErrorCode | null = null;
    let want: Record<string, unknown> = {};
    if (named && isTerminalState(named.state)) [expected, want] = ['task_terminal', { task_id: named.id, state: named.state }];
    else if (named && named.state === 'submitted' && named.availableAt !== null && named.availableAt > model.now)
      [expected, want] = ['invalid_transition', { from: 'submitted', to: 'working' }];
    else if (named && named.state !== 'submitted') expected = 'lease_conflict';
    else if (t && model.heldBy(name) >= LEASE_LIMITS.perHolder) expected = 'too_many_leases';
    const box: { lease: LeaseOut | null; task: TaskOut | null } = { lease: null, task: null };
    const err = await refusal(
      (async () => {
        if (named && this.viaLease) box.lease = await real.engine.leases.claim(c, { resource: named.id, ttl_secs: this.ttl });
        else {
          const r: TaskClaimResponse = await real.engine.tasks.pool.claim(c, { ...(named ? { task_id: named.id } : { pool: `#${POOL}` }), ttl_secs: this.ttl });
          [box.lease, box.task] = [r.lease, r.task];
        }
      })(),
    );
    expectCode(err, expected, where);
    count(`task.claim ${named ? (this.viaLease ? 'named via lease' : 'named') : 'pool'}`, err ?? (t ? null : 'none on offer'));
    details(err, want, where);
    if (err?.code === 'lease_conflict') conflictCheck(err, named!.lease ? [named!.lease] : [], where);
    if (err) return;
    const { lease, task } = box;
    if (!t) return assert.deepEqual([task, lease], [null, null], `${where}: nothing on offer`);
    assert.ok(lease, `${where}: a lease`);
    if (!this.viaLease || !named) {
      assert.equal(task?.task_id, t.id, `${where}: the oldest on offer`);
      assert.equal(task.state, 'working', where);
    }
    took(model, t, lease, this.slot, this.ttl, where);
    if (task) assert.equal(task.pool?.lease_id, t.lease!.id, `${where}: the task names its lease`);
  }
  toString = () => `task.claim(${SLOTS[this.slot]!.name} ${this.pick === null ? `#${POOL}` : `#${this.pick}`}${this.viaLease ? ' via lease' : ''} ttl ${this.ttl})`;
}

/** An update by a slot (the task's holder: -2; the requester: -1) with the task's epoch, a stale one or none. */
export class TaskUpdate extends Step {
  constructor(
    readonly slot: number,
    readonly pick: number,
    readonly state: 'working' | 'input_required' | 'completed' | 'failed',
    readonly epoch: 'right' | 'stale' | 'none',
  ) {
    super();
  }
  async step(model: Model, real: Real) {
    // Even picks take a task that is held, when one is.
    const held = model.tasks.filter((x) => x.state === 'working' || x.state === 'input_required');
    const from = held.length && this.pick % 2 === 0 ? held : model.tasks;
    const t = from[Math.floor(this.pick / 2) % Math.max(1, from.length)];
    if (!t) return;
    const slot =
      this.slot === -2
        ? Math.max(
            0,
            SLOTS.findIndex((s) => s.name === t.lease?.slot),
          )
        : this.slot;
    this.shown = `${SLOTS[slot]?.name ?? 'lead'} ${t.id} (${t.state}${t.lease ? ` e${t.lease.epoch}` : ''})`;
    const where = this.toString();
    const c = slot < 0 ? real.lead : caller(real, slot);
    const last = t.lease?.epoch ?? model.epochs.get(`task:${t.id}\n${t.id}`) ?? 1;
    const epoch = this.epoch === 'right' ? last : this.epoch === 'stale' ? last - 1 : undefined;
    const assignee = t.lease !== null && slot >= 0 && c.session!.id === t.lease.session;
    let expected: ErrorCode | null = null;
    if (isTerminalState(t.state)) expected = 'task_terminal';
    else if (!assignee) expected = slot < 0 ? 'invalid_transition' : 'not_task_party';
    else if (this.state === t.state) expected = 'invalid_transition';
    else if (this.epoch !== 'right') expected = 'lease_lost';
    const note = this.state === 'input_required' ? `which one? ${model.now}` : undefined;
    const err = await refusal(real.engine.tasks.update(c, { task_id: t.id, state: this.state, ...(note ? { note } : {}), ...(epoch !== undefined ? { epoch } : {}) }));
    expectCode(err, expected, where);
    count(`task.update → ${this.state}`, err);
    if (err) return;
    t.state = this.state;
    t.history.push({ state: this.state, note: note ?? null });
    // The lease ends with the task, which keeps naming it (the claim that finished it).
    if (isTerminalState(this.state)) t.lease!.ended = 'released';
  }
  private shown = '';
  toString = () => `task.update(${this.shown || `#${this.pick}`} → ${this.state} epoch ${this.epoch})`;
}

/** The requester cancels (slot -1), or a claimant tries to. */
export class TaskCancel extends Step {
  constructor(
    readonly slot: number,
    readonly pick: number,
  ) {
    super();
  }
  async step(model: Model, real: Real) {
    if (model.tasks.length === 0) return;
    const t = model.tasks[this.pick % model.tasks.length]!;
    const where = `${this.toString()} ${t.id} (${t.state})`;
    const c = this.slot < 0 ? real.lead : caller(real, this.slot);
    const holderAccount = t.lease ? SLOTS.find((s) => s.name === t.lease!.slot)!.account : null;
    let expected: ErrorCode | null = null;
    if (isTerminalState(t.state)) expected = 'task_terminal';
    else if (this.slot >= 0) expected = SLOTS[this.slot]!.account === holderAccount ? 'invalid_transition' : 'not_task_party';
    const err = await refusal(real.engine.tasks.cancel(c, { task_id: t.id }));
    expectCode(err, expected, where);
    count('task.cancel', err);
    if (expected) return;
    t.state = 'canceled';
    t.history.push({ state: 'canceled', note: null });
    if (t.lease) t.lease.ended = 'released';
  }
  toString = () => `task.cancel(${this.slot < 0 ? 'lead' : SLOTS[this.slot]!.name} #${this.pick})`;
}
