// The world of the engine-model property tests (engine-model.test.ts): three accounts, four
// reader sessions, two rooms, the reference model of what each reader may read, and the checks an
// answer must pass. Shared by the mail commands and the task commands (engine-model-tasks.ts).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { MailEngine, type Caller } from '../../src/engine/mail-engine.js';
import { AdminOps } from '../../src/engine/admin-ops.js';
import { ManualClock, type Ids } from '../../src/engine/clock.js';
import { MailError, type ErrorCode } from '../../src/wire/errors.js';
import { formatAddress, type Address } from '../../src/wire/address.js';
import type * as W from '../../src/wire/ops.js';
import type { Store } from '../../src/store/types.js';
import type { Attestation } from '../../src/attest/types.js';
import type { TaskState } from '../../src/wire/tasks.js';

// ---- the world every run starts from

export const ACCOUNTS = ['alice', 'bob', 'carol'] as const;
export type Account = (typeof ACCOUNTS)[number];
export const READERS = [
  { name: 'a1', account: 'alice' },
  { name: 'a2', account: 'alice' },
  { name: 'b1', account: 'bob' },
  { name: 'c1', account: 'carol' },
] as const satisfies readonly { name: string; account: Account }[];
export type Reader = (typeof READERS)[number];
export const ROOMS = ['r1', 'r2'] as const;
export const sessionIdOf = (name: string) => `s-${createHash('sha256').update(name).digest('hex')}`;
export const iso = (ms: number) => new Date(ms).toISOString();
/** Message items carry seconds. */
export const isoSecs = (ms: number) => iso(ms).replace(/\.\d{3}Z$/, 'Z');
/** What answers print for each reader's session: account/slug, as this run's store named it. */
export const printed = new Map<string, string>();

export type Target =
  { kind: 'account'; account: Account | 'nobody' } | { kind: 'session'; reader: Reader['name'] | 'gone' } | { kind: 'room'; room: (typeof ROOMS)[number] | 'nowhere' };

export function addressOf(t: Target): Address {
  if (t.kind === 'account') return { kind: 'direct', participant: t.account };
  if (t.kind === 'room') return { kind: 'room', room: t.room };
  if (t.reader === 'gone') return { kind: 'session', participant: 'alice', session: sessionIdOf('gone') };
  const r = READERS.find((x) => x.name === t.reader)!;
  return { kind: 'session', participant: r.account, session: sessionIdOf(r.name) };
}
export const compact = (a: Address) => formatAddress(a);
/** A target as a message item shows it to reader r: short, and left out when it is r's account. */
export const shown = (t: Target, r: Reader): string | undefined =>
  t.kind === 'account' ? (t.account === r.account ? undefined : t.account) : t.kind === 'room' ? `#${t.room}` : printed.get(t.reader);
export const showTarget = (t: Target) => (t.kind === 'account' ? t.account : t.kind === 'room' ? `#${t.room}` : `session:${t.reader}`);

// ---- the reference model

export interface MMsg {
  id: string;
  thread: string;
  from: Account;
  fromReader: Reader['name'];
  to: Target;
  subject: string;
  body: string;
  fingerprint: string;
  /** A task's change: which task, the state it entered, its version (every reader is shown it). */
  task?: { task_id: string; state: TaskState; version: number };
}

/** A task as the model knows it: who asked whom, and every change the engine accepted, in order. */
export interface MTask {
  id: string;
  /** Its thread: the id of the message that handed it over. */
  thread: string;
  title: string;
  requester: Reader;
  /** The assignee as created: an account or one reader's session. */
  to: Target & { kind: 'account' | 'session' };
  /** Accepted changes, the creation first: state i is version i + 1. */
  changes: TaskState[];
}

export class Model {
  readonly msgs: MMsg[] = [];
  readonly members = new Map<string, Set<Account>>([
    ['r1', new Set<Account>(['alice', 'bob'])],
    ['r2', new Set<Account>()],
  ]);
  /** ack key (a:<account> or s:<reader>) → message id → acked at */
  readonly acks = new Map<string, Map<string, number>>();
  readonly idem = new Map<string, MMsg>();
  readonly tasks: MTask[] = [];
  /** Each reader's cursor: the engine's string and how many messages it has passed. */
  readonly cursors = new Map<string, { cursor: string; pos: number }>();
  /** Each reader's shown mark: the position of the last message a page (not filtered to a thread) returned. */
  readonly shown = new Map<string, number>();
  sent = 0;

  readable(r: Reader, m: MMsg): boolean {
    const t = m.to;
    if (t.kind === 'account') return t.account === r.account;
    if (t.kind === 'session') return t.reader === r.name;
    return this.members.get(t.room)?.has(r.account) ?? false;
  }
  ackKey(r: Reader, m: MMsg): string {
    return m.to.kind === 'session' ? `s:${r.name}` : `a:${r.account}`;
  }
  ackedAt(r: Reader, m: MMsg): number | null {
    return this.acks.get(this.ackKey(r, m))?.get(m.id) ?? null;
  }
  page(r: Reader, o: { pos: number | null; pending: boolean; limit: number; thread: string | null }): MMsg[] {
    return this.msgs
      .filter((m, i) => this.readable(r, m) && (o.pos === null || i >= o.pos) && (o.thread === null || m.thread === o.thread) && (!o.pending || this.ackedAt(r, m) === null))
      .slice(0, o.limit);
  }
  unread(r: Reader): number {
    return this.msgs.filter((m) => this.readable(r, m) && this.ackedAt(r, m) === null).length;
  }
  /** A page returned `page` to the reader: its last message is shown, and all before it. */
  show(r: Reader, page: MMsg[]): void {
    const last = page[page.length - 1];
    if (last) this.shown.set(r.name, Math.max(this.shownOf(r), this.msgs.indexOf(last)));
  }
  shownOf(r: Reader): number {
    return this.shown.get(r.name) ?? -1;
  }
  /** Whether a page holds mail the reader was not shown. */
  news(r: Reader, page: MMsg[]): boolean {
    return page.some((m) => this.msgs.indexOf(m) > this.shownOf(r));
  }
  byId(id: string): MMsg | undefined {
    return this.msgs.find((m) => m.id === id);
  }
}

export interface Real {
  store: Store;
  engine: MailEngine;
  admin: AdminOps;
  op: Caller;
  clock: ManualClock;
  callers: Map<string, Caller>;
  /** The store answers over a socket (PostgreSQL): two calls started in one turn have no order. */
  overSocket: boolean;
}

/** Store calls not yet settled: PostgreSQL's answers come over a socket, not within a turn. */
let inFlight = 0;
const settle = () => void inFlight--;

/** The store, counting its calls in flight (for flush). */
function counted(store: Store): Store {
  return new Proxy(store, {
    get(target, key, receiver) {
      const v: unknown = Reflect.get(target, key, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        const out: unknown = (v as (...a: unknown[]) => unknown).apply(target, args);
        if (out instanceof Promise) {
          inFlight++;
          out.then(settle, settle);
        }
        return out;
      };
    },
  });
}

export const flush = async () => {
  // Commits, wake-ups and batched answers each take a turn of the event loop; leave plenty, and
  // wait out store calls still in flight (each may start the next).
  for (let quiet = 0; quiet < 20;) {
    await new Promise((r) => setImmediate(r));
    if (inFlight === 0) quiet++;
    else {
      quiet = 0;
      await new Promise((r) => setTimeout(r, 1));
    }
  }
};

export async function refusal(p: Promise<unknown>): Promise<MailError | null> {
  try {
    await p;
    return null;
  } catch (e) {
    if (e instanceof MailError) return e;
    throw e;
  }
}

export function expectCode(err: MailError | null, code: ErrorCode | null, where: string): void {
  assert.equal(err?.code ?? null, code, `${where}: expected ${code ?? 'success'}, got ${err ? `${err.code} (${err.message})` : 'success'}`);
}

export function presentCheck(model: Model, r: Reader, got: W.MessageOut, m: MMsg, where: string, includeBody = true): void {
  assert.equal(got.message_id, m.id, where);
  assert.equal(got.thread_id, m.thread === m.id ? undefined : m.thread, `${where}: thread (left out for a thread's first message)`);
  assert.equal(got.from, printed.get(m.fromReader), `${where}: from`);
  assert.equal(got.to, shown(m.to, r), `${where}: to`);
  assert.equal(got.subject, m.subject, `${where}: subject`);
  assert.equal(got.body, includeBody ? m.body : undefined, `${where}: body`);
  const at = model.readable(r, m) ? model.ackedAt(r, m) : null;
  assert.equal(got.acked_at, at === null ? undefined : isoSecs(at), `${where}: acked_at`);
  assert.deepEqual(got.task, m.task, `${where}: task (only a task's messages have it)`);
}

export type Cmd = fc.AsyncCommand<Model, Real>;

export const readerArb = fc.nat({ max: READERS.length - 1 });
export const targetArb: fc.Arbitrary<Target> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<Target>(...ACCOUNTS.map((account) => ({ kind: 'account' as const, account }))) },
  { weight: 3, arbitrary: fc.constantFrom<Target>(...READERS.map((r) => ({ kind: 'session' as const, reader: r.name }))) },
  { weight: 3, arbitrary: fc.constantFrom<Target>(...ROOMS.map((room) => ({ kind: 'room' as const, room }))) },
  { weight: 1, arbitrary: fc.constantFrom<Target>({ kind: 'account', account: 'nobody' }, { kind: 'room', room: 'nowhere' }, { kind: 'session', reader: 'gone' }) },
);

// ---- one run

export let idNo = 0;
export const ids: Ids = {
  messageId: () => `m-${(++idNo).toString(36).padStart(6, '0')}`,
  secret: () => `m4a_test_${++idNo}`,
};

export async function makeWorld(plain: Store, overSocket = false): Promise<Real> {
  const store = counted(plain);
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const engine = new MailEngine({ store, clock, ids, hostId: 'host-model', isAlive: () => true });
  // As the daemon does: learn the store's head, so woken waits take the batched answer path.
  await (engine as unknown as { start?: () => Promise<void> }).start?.();
  const admin = new AdminOps(engine);
  const opRec = await admin.createAccount({ id: 'operator', kind: 'service', permissions: { send: true, read: true, urgent: true, operator: true } });
  const op: Caller = { account: (await store.getAccount(opRec.account.id))!, session: null };
  for (const a of ACCOUNTS) await admin.createAccount({ id: a });
  for (const room of ROOMS) await admin.roomAdd(op, room);
  await admin.memberAdd(op, 'r1', 'alice');
  await admin.memberAdd(op, 'r1', 'bob');
  const callers = new Map<string, Caller>();
  for (const [i, r] of READERS.entries()) {
    const facts = { pid: 10_000 + i, startTime: 1_000 + i, exe: '/usr/bin/agent', uid: 1000, ppid: 1 };
    const att: Attestation = { session: facts, peer: facts, sessionId: sessionIdOf(r.name), corroborated: {} };
    const c = await engine.callerFor((await store.getAccount(r.account))!, att);
    callers.set(r.name, c);
    printed.set(r.name, `${r.account}/${c.session!.slug}`);
  }
  return { store, engine, admin, op, clock, callers, overSocket };
}
