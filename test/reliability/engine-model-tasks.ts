// Task transitions for the engine-model property test: random creates, updates and cancels by
// random parties (the requester, the assignee, a stranger; several sessions of one account) with
// random target states, each verdict compared with the rules of docs/tasks.md, and every stored
// change checked:
//  - a terminal task never changes again: every later change by a party is task_terminal;
//  - version = 1 + the number of accepted changes, and the history holds exactly that many entries;
//  - every accepted change is exactly one message in the task's thread, from the party who made it
//    to the other, carrying task {task_id, state, version}; ordinary mail carries none;
//  - a refused move stores no message and leaves the task as it was.
// The task's messages join the mail model, so every page, get, ack and unread count checks them too.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ErrorCode } from '../../src/wire/errors.js';
import { ASSIGNEE_STATES, TASK_STATES, isTerminal, type TaskOut, type TaskState } from '../../src/wire/tasks.js';
import {
  READERS,
  addressOf,
  expectCode,
  printed,
  readerArb,
  refusal,
  showTarget,
  type Cmd,
  type MMsg,
  type MTask,
  type Model,
  type Real,
  type Reader,
  type Target,
} from './engine-model-world.js';

const accountOf = (t: MTask): string => (t.to.kind === 'account' ? t.to.account : READERS.find((r) => r.name === (t.to as { reader: string }).reader)!.account);
const isRequester = (t: MTask, r: Reader): boolean => r.account === t.requester.account;
const isAssignee = (t: MTask, r: Reader): boolean => r.account === accountOf(t) && (t.to.kind === 'account' || t.to.reader === r.name);
/** The task as the store has it, for "a refusal changes nothing". */
const snapshot = async (real: Real, id: string): Promise<string> => JSON.stringify(await real.store.getTask(id));

/** Checks an answer against the model's task (its changes so far). */
function taskCheck(got: TaskOut, t: MTask, where: string): void {
  assert.equal(got.task_id, t.id, where);
  assert.equal(got.thread_id, t.thread, `${where}: thread`);
  assert.equal(got.state, t.changes[t.changes.length - 1], `${where}: state`);
  assert.equal(got.version, t.changes.length, `${where}: version is 1 + the accepted changes`);
  assert.deepEqual(
    got.history.map((h) => h.state),
    t.changes,
    `${where}: one history entry per version`,
  );
}

// ---- create

/** Creating: from a reader's session to an account or a session (pooled tasks, for rooms, have a
 *  model of their own: test/reliability/lease-model.test.ts); a room that does not exist is refused. */
export class TaskCreateCmd implements Cmd {
  constructor(
    readonly from: number,
    readonly to: Target,
    readonly instructions: boolean,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const r = READERS[this.from]!;
    const where = this.toString();
    const title = `task ${model.tasks.length + 1} of ${++model.sent}`;
    const instructions = this.instructions ? `do ${title}` : undefined;
    let expected: ErrorCode | null = null;
    if (this.to.kind === 'room') expected = 'unknown_room';
    else if (this.to.kind === 'account' && this.to.account === 'nobody') expected = 'unknown_participant';
    else if (this.to.kind === 'session' && this.to.reader === 'gone') expected = 'unknown_session';
    const head = await real.store.headSeq();
    let res: TaskOut | undefined;
    const req = { to: addressOf(this.to), title, ...(instructions ? { instructions } : {}) };
    const err = await refusal(real.engine.tasks.create(real.callers.get(r.name)!, req).then((x) => void (res = x)));
    expectCode(err, expected, where);
    if (err) {
      assert.equal(await real.store.headSeq(), head, `${where}: a refused task sends nothing`);
      return;
    }
    const to = this.to as MTask['to'];
    const t: MTask = { id: res!.task_id, thread: res!.thread_id, title, requester: r, to, changes: ['submitted'] };
    assert.ok(!model.tasks.some((x) => x.id === t.id), `${where}: a fresh task id`);
    taskCheck(res!, t, where);
    assert.equal(res!.from, printed.get(r.name), `${where}: from`);
    assert.equal(res!.to, to.kind === 'account' ? to.account : printed.get(to.reader), `${where}: to`);
    assert.equal(await real.store.headSeq(), head + 1, `${where}: one message`);
    model.tasks.push(t);
    const m: MMsg = {
      id: t.thread,
      thread: t.thread,
      from: r.account,
      fromReader: r.name,
      to,
      subject: `Task: ${title}`,
      body: instructions ?? title,
      fingerprint: '',
      task: { task_id: t.id, state: 'submitted', version: 1 },
    };
    model.msgs.push(m);
  }
  toString = () => `task.create(${READERS[this.from]!.name}→${showTarget(this.to)})`;
}

// ---- update and cancel

export type Move = { kind: 'update'; state: TaskState; note: boolean; summary: boolean } | { kind: 'cancel'; reason: boolean };
const showMove = (m: Move) => (m.kind === 'cancel' ? `cancel${m.reason ? ' +reason' : ''}` : `update ${m.state}${m.note ? ' +note' : ''}${m.summary ? ' +summary' : ''}`);

/** The engine's verdict on a move, in its order: a party at all, terminal, the party's right, the state. */
function verdict(t: MTask, r: Reader, move: Move): { code: ErrorCode; details?: Record<string, unknown> } | null {
  const state = t.changes[t.changes.length - 1]!;
  const to: TaskState = move.kind === 'cancel' ? 'canceled' : move.state;
  if (!isRequester(t, r) && r.account !== accountOf(t)) return { code: 'not_task_party', details: { task_id: t.id } };
  if (isTerminal(state)) return { code: 'task_terminal', details: { task_id: t.id, state } };
  if (move.kind === 'cancel') return isRequester(t, r) ? null : { code: 'invalid_transition', details: { from: state, to } };
  if (!isAssignee(t, r)) return isRequester(t, r) ? { code: 'invalid_transition', details: { from: state, to } } : { code: 'not_task_party', details: { task_id: t.id } };
  const allowed = ASSIGNEE_STATES.includes(to) && to !== state && (state !== 'auth_required' || to === 'failed');
  if (!allowed) return { code: 'invalid_transition', details: { from: state, to } };
  if (to === 'input_required' && !move.note) return { code: 'malformed', details: { field: 'note' } };
  return null;
}

/** Who moves: mostly one of the task's parties (any session of its account), sometimes anyone. */
export interface By {
  role: 'assignee' | 'requester' | 'anyone';
  n: number;
}
function moverOf(t: MTask | null, by: By): Reader {
  const pool = !t || by.role === 'anyone' ? READERS : READERS.filter((r) => (by.role === 'assignee' ? r.account === accountOf(t) : isRequester(t, r)));
  return pool[by.n % pool.length]!;
}

export class TaskMoveCmd implements Cmd {
  constructor(
    readonly pick: number,
    readonly by: By,
    readonly move: Move,
    /** Names a task that does not exist (else one of the model's, once there is one). */
    readonly unknown: boolean,
  ) {}
  private shownId = '';
  private mover: Reader | null = null;
  check = (model: Readonly<Model>) => this.unknown || model.tasks.length > 0;
  async run(model: Model, real: Real) {
    const t = this.unknown ? null : model.tasks[this.pick % model.tasks.length]!;
    const r = (this.mover = moverOf(t, this.by));
    const caller = real.callers.get(r.name)!;
    const id = t?.id ?? 't-unknown';
    this.shownId = id;
    const where = this.toString();
    const note = (this.move.kind === 'update' ? this.move.note : this.move.reason) ? `why ${++model.sent}` : undefined;
    const summary = this.move.kind === 'update' && this.move.summary ? `summary ${model.sent}` : undefined;
    const head = await real.store.headSeq();
    const before = await snapshot(real, id);
    let res: TaskOut | undefined;
    const call =
      this.move.kind === 'cancel'
        ? real.engine.tasks.cancel(caller, { task_id: id, ...(note ? { reason: note } : {}) })
        : real.engine.tasks.update(caller, { task_id: id, state: this.move.state, ...(note ? { note } : {}), ...(summary ? { result: { summary } } : {}) });
    const err = await refusal(call.then((x) => void (res = x)));
    const want = t ? verdict(t, r, this.move) : { code: 'unknown_task' as const, details: { task_id: id } };
    expectCode(err, want?.code ?? null, where);
    if (err) {
      for (const [k, v] of Object.entries(want?.details ?? {})) assert.deepEqual(err.details[k], v, `${where}: ${k}`);
      assert.equal(await real.store.headSeq(), head, `${where}: a refused move sends nothing`);
      assert.equal(await snapshot(real, id), before, `${where}: a refused move changes nothing`);
      return;
    }
    const task = t!;
    const state: TaskState = this.move.kind === 'cancel' ? 'canceled' : this.move.state;
    task.changes.push(state);
    taskCheck(res!, task, where);
    if (summary) assert.equal(res!.result?.summary, summary, `${where}: the result`);
    // Exactly one new message: the change, from the mover to the other party, in the task's thread.
    assert.equal(await real.store.headSeq(), head + 1, `${where}: one message`);
    const stored = (await real.store.getThread(task.thread)).at(-1)!;
    assert.equal(stored.seq, head + 1, `${where}: the change is in the task's thread`);
    const version = task.changes.length;
    assert.deepEqual(stored.task, { task_id: task.id, state, version }, `${where}: the message carries the change`);
    const to: Target = this.move.kind === 'cancel' ? task.to : { kind: 'session', reader: task.requester.name };
    model.msgs.push({
      id: stored.id,
      thread: task.thread,
      from: r.account,
      fromReader: r.name,
      to,
      subject: `Task ${state}: ${task.title}`,
      body: [`${state}${note ? `: ${note}` : ''}`, ...(summary ? [`Result: ${summary}`] : [])].join('\n'),
      fingerprint: '',
      task: { task_id: task.id, state, version },
    });
  }
  toString = () => `task.${showMove(this.move)}(${this.mover?.name ?? `${this.by.role}#${this.by.n}`} ${this.shownId || `#${this.pick}`})`;
}

// ---- arbitraries

const taskTargetArb: fc.Arbitrary<Target> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom<Target>({ kind: 'account', account: 'alice' }, { kind: 'account', account: 'bob' }, { kind: 'account', account: 'carol' }) },
  { weight: 4, arbitrary: fc.constantFrom<Target>(...READERS.map((r) => ({ kind: 'session' as const, reader: r.name }))) },
  { weight: 1, arbitrary: fc.constantFrom<Target>({ kind: 'room', room: 'nowhere' }, { kind: 'account', account: 'nobody' }, { kind: 'session', reader: 'gone' }) },
);
const moveArb: fc.Arbitrary<Move> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('update' as const),
      // Every state, the ones a task goes on from a little more often (longer histories).
      state: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...TASK_STATES) }, { weight: 2, arbitrary: fc.constantFrom<TaskState>('working', 'input_required') }),
      note: fc.boolean(),
      summary: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), reason: fc.boolean() }) },
);

const byArb: fc.Arbitrary<By> = fc.record({
  role: fc.oneof(
    { weight: 3, arbitrary: fc.constant('assignee' as const) },
    { weight: 2, arbitrary: fc.constant('requester' as const) },
    { weight: 1, arbitrary: fc.constant('anyone' as const) },
  ),
  n: fc.nat({ max: READERS.length - 1 }),
});

export const taskCreateArb = fc.tuple(readerArb, taskTargetArb, fc.boolean()).map(([r, to, i]) => new TaskCreateCmd(r, to, i));
export const taskMoveArb = fc.tuple(fc.nat(), byArb, moveArb, fc.nat({ max: 9 })).map(([p, r, m, u]) => new TaskMoveCmd(p, r, m, u === 0));

// ---- after a sequence

/** Every task: its row, its thread and its answer agree with the changes the model accepted, and
 *  a terminal one refuses every further change by any party, changing nothing. */
export async function taskFinalCheck(model: Model, real: Real): Promise<void> {
  for (const t of model.tasks) {
    const where = `final ${t.id}`;
    const row = (await real.store.getTask(t.id))!;
    assert.equal(row.version, t.changes.length, `${where}: version`);
    assert.deepEqual(
      row.history.map((h) => h.state),
      t.changes,
      `${where}: history`,
    );
    const marks = (await real.store.getThread(t.thread)).filter((m) => m.task).map((m) => m.task);
    assert.deepEqual(
      marks,
      t.changes.map((state, i) => ({ task_id: t.id, state, version: i + 1 })),
      `${where}: every accepted change is in the thread exactly once, in order`,
    );
    taskCheck(await real.engine.tasks.get(real.callers.get(t.requester.name)!, { task_id: t.id }), t, where);
    const state = t.changes[t.changes.length - 1]!;
    if (!isTerminal(state)) continue;
    const head = await real.store.headSeq();
    const before = await snapshot(real, t.id);
    for (const r of READERS) {
      if (!isRequester(t, r) && r.account !== accountOf(t)) continue;
      const c = real.callers.get(r.name)!;
      // One at a time: a second call started beside the first would reject unobserved while the
      // first is awaited (an unhandled rejection once the store answers over a socket).
      for (const move of [() => real.engine.tasks.cancel(c, { task_id: t.id }), () => real.engine.tasks.update(c, { task_id: t.id, state: 'working' })]) {
        const err = await refusal(move());
        expectCode(err, 'task_terminal', `${where}: ${r.name} moves a ${state} task`);
        assert.equal(err!.details.state, state, where);
      }
    }
    assert.equal(await real.store.headSeq(), head, `${where}: nothing sent`);
    assert.equal(await snapshot(real, t.id), before, `${where}: nothing changed`);
  }
}
