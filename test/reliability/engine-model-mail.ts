// The commands of the engine model (engine-model.test.ts): sends, acks, inbox pages, gets, room
// membership changes and waits, each run against the engine and the reference model of
// engine-model-world.ts, and the final check of a sequence. Task commands are in engine-model-tasks.ts.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodeCursor } from '../../src/engine/cursor.js';
import type { ErrorCode } from '../../src/wire/errors.js';
import type * as W from '../../src/wire/ops.js';
import {
  ACCOUNTS,
  READERS,
  ROOMS,
  Model,
  addressOf,
  compact,
  expectCode,
  flush,
  iso,
  presentCheck,
  printed,
  readerArb,
  refusal,
  showTarget,
  targetArb,
  type Cmd,
  type MMsg,
  type Real,
  type Target,
} from './engine-model-world.js';
import { taskCreateArb, taskFinalCheck, taskMoveArb } from './engine-model-tasks.js';

// ---- the send rule, shared by the send and wait commands

interface SendSpec {
  from: number;
  to: Target;
  reply: number | null;
  idem: { key: number; same: boolean } | null;
}
const showSend = (s: SendSpec) =>
  `send(${READERS[s.from % READERS.length]!.name}→${showTarget(s.to)}${s.reply !== null ? ` reply#${s.reply}` : ''}${s.idem ? ` key${s.idem.key}${s.idem.same ? '' : '*'}` : ''})`;

/** Runs one send against the engine and the model; returns the new message if one was stored. */
async function doSend(model: Model, real: Real, s: SendSpec): Promise<MMsg | null> {
  const reader = READERS[s.from % READERS.length]!;
  const caller = real.callers.get(reader.name)!;
  const where = showSend(s);
  const parent = s.reply === null ? null : (model.msgs[s.reply % Math.max(1, model.msgs.length)] ?? null);
  const replyId = s.reply === null ? undefined : (parent?.id ?? 'm-unknown');
  const n = ++model.sent;
  const subject = s.idem?.same ? `idem ${s.idem.key}` : `subject ${n}`;
  const body = s.idem?.same ? `same body ${s.idem.key}` : `body ${n}`;
  const to = addressOf(s.to);
  const req: W.SendRequest = { to, subject, body, ...(replyId ? { reply_to: replyId } : {}), ...(s.idem ? { idempotency_key: `key-${s.idem.key}` } : {}) };
  // The model's verdict, in the engine's order: reply_to, recipient, idempotency key.
  let expected: ErrorCode | null = null;
  if (replyId && !parent) expected = 'unknown_message';
  else if (parent && parent.from !== reader.account && !model.readable(reader, parent)) expected = 'not_addressed_to_you';
  else if (s.to.kind === 'account' && s.to.account === 'nobody') expected = 'unknown_participant';
  else if (s.to.kind === 'room' && s.to.room === 'nowhere') expected = 'unknown_room';
  else if (s.to.kind === 'room' && !model.members.get(s.to.room)?.has(reader.account))
    expected = 'permission_denied'; // members only
  else if (s.to.kind === 'session' && s.to.reader === 'gone') expected = 'unknown_session';
  const fingerprint = JSON.stringify([compact(to), subject, body, replyId ?? null]);
  const prior = expected === null && s.idem ? model.idem.get(`${reader.account}\n${s.idem.key}`) : undefined;
  if (prior && prior.fingerprint !== fingerprint) expected = 'idempotency_conflict';
  const head = await real.store.headSeq();
  let res: W.SendResponse | undefined;
  const err = await refusal(real.engine.send(caller, req).then((r) => void (res = r)));
  expectCode(err, expected, where);
  if (err) {
    if (expected === 'idempotency_conflict') assert.equal(err.details.message_id, prior!.id, `${where}: conflict names the original`);
    assert.equal(await real.store.headSeq(), head, `${where}: a refused send stores nothing`);
    return null;
  }
  assert.ok(res);
  assert.equal(res.from, printed.get(reader.name), `${where}: from is the caller's session, printed short`);
  assert.equal(res.redirected, false, where);
  if (prior) {
    assert.equal(res.duplicate, true, `${where}: a retry is a duplicate`);
    assert.equal(res.message_id, prior.id, `${where}: a retry returns the original id`);
    assert.equal(res.thread_id, prior.thread, where);
    assert.equal(await real.store.headSeq(), head, `${where}: a duplicate stores nothing`);
    return null;
  }
  assert.equal(res.duplicate, false, where);
  assert.equal(res.to, s.to.kind === 'session' ? printed.get(s.to.reader) : compact(to), `${where}: to`);
  assert.ok(!model.byId(res.message_id), `${where}: a fresh id`);
  assert.equal(res.thread_id, parent ? parent.thread : res.message_id, `${where}: thread`);
  const m: MMsg = { id: res.message_id, thread: res.thread_id, from: reader.account, fromReader: reader.name, to: s.to, subject, body, fingerprint };
  model.msgs.push(m);
  if (s.idem) model.idem.set(`${reader.account}\n${s.idem.key}`, m);
  return m;
}

// ---- commands

const sendArb: fc.Arbitrary<SendSpec> = fc.record({
  from: readerArb,
  to: targetArb,
  reply: fc.option(fc.nat(), { freq: 4 }),
  idem: fc.option(fc.record({ key: fc.nat({ max: 3 }), same: fc.boolean() }), { freq: 2 }),
});

class SendCmd implements Cmd {
  constructor(readonly s: SendSpec) {}
  check = () => true;
  async run(model: Model, real: Real) {
    await doSend(model, real, this.s);
  }
  toString = () => showSend(this.s);
}

class AckCmd implements Cmd {
  constructor(
    readonly reader: number,
    readonly picks: number[],
    readonly unknownAt: number | null,
    readonly single: boolean,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const r = READERS[this.reader]!;
    let ids = model.msgs.length ? this.picks.map((p) => model.msgs[p % model.msgs.length]!.id) : [];
    if (this.unknownAt !== null || ids.length === 0) ids.splice((this.unknownAt ?? 0) % (ids.length + 1), 0, 'm-unknown');
    if (this.single) ids = ids.slice(0, 1);
    const where = `${this.toString()}: ${ids.join(',')}`;
    const unique = [...new Set(ids)];
    let expected: ErrorCode | null = null;
    let failing: string | undefined;
    for (const id of unique) {
      const m = model.byId(id);
      if (!m) expected = 'unknown_message';
      else if (!model.readable(r, m)) expected = 'not_addressed_to_you';
      if (expected) {
        failing = id;
        break;
      }
    }
    const unreadBefore = await real.engine.unread(real.callers.get(r.name)!);
    let res: W.AckResponse | undefined;
    const req: W.AckRequest = this.single ? { message_id: ids[0]! } : { message_ids: ids };
    const err = await refusal(real.engine.ack(real.callers.get(r.name)!, req).then((x) => void (res = x)));
    expectCode(err, expected, where);
    if (err) {
      assert.equal(err.details.message_id, failing, `${where}: names the first id it refused`);
      assert.deepEqual(await real.engine.unread(real.callers.get(r.name)!), unreadBefore, `${where}: a refused ack changes nothing`);
      return;
    }
    const now = real.clock.now();
    const expectedAcks = unique.map((id) => {
      const m = model.byId(id)!;
      const key = model.ackKey(r, m);
      const acks = model.acks.get(key) ?? new Map<string, number>();
      model.acks.set(key, acks);
      if (!acks.has(id)) acks.set(id, now);
      return { message_id: id, acked_at: iso(acks.get(id)!) };
    });
    assert.deepEqual(res!.acked, expectedAcks, `${where}: acked (a second ack returns the first time)`);
    assert.equal(res!.unread, model.unread(r), `${where}: unread`);
  }
  toString = () => `ack(${READERS[this.reader]!.name} ${this.picks.join('/')}${this.unknownAt !== null ? ' +unknown' : ''}${this.single ? ' single' : ''})`;
}

class InboxCmd implements Cmd {
  constructor(
    readonly reader: number,
    readonly useCursor: boolean,
    readonly pending: boolean,
    readonly limit: number | null,
    readonly thread: number | null,
    readonly bodies: boolean,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const r = READERS[this.reader]!;
    const cur = this.useCursor ? model.cursors.get(r.name) : undefined;
    const threadMsg = this.thread === null || model.msgs.length === 0 ? null : model.msgs[this.thread % model.msgs.length]!;
    const req: W.InboxRequest = {
      ...(cur ? { after: cur.cursor } : {}),
      ...(this.pending ? {} : { include_acked: true }),
      ...(this.limit !== null ? { limit: this.limit } : {}),
      ...(threadMsg ? { thread_id: threadMsg.thread } : {}),
      ...(this.bodies ? {} : { include_bodies: false }),
    };
    const where = `${this.toString()} ${JSON.stringify(req)}`;
    const page = await real.engine.inbox(real.callers.get(r.name)!, req);
    const want = model.page(r, { pos: cur?.pos ?? null, pending: this.pending, limit: this.limit ?? 50, thread: threadMsg?.thread ?? null });
    assert.deepEqual(
      page.messages.map((m) => m.message_id),
      want.map((m) => m.id),
      `${where}: page`,
    );
    page.messages.forEach((got, i) => presentCheck(model, r, got, want[i]!, `${where} #${i}`, this.bodies));
    assert.equal(page.unread, model.unread(r), `${where}: unread`);
    if (!threadMsg) model.show(r, want);
    const last = want[want.length - 1];
    const pos = last ? model.msgs.indexOf(last) + 1 : (cur?.pos ?? model.msgs.length);
    assert.ok(page.next_cursor);
    model.cursors.set(r.name, { cursor: page.next_cursor, pos });
  }
  toString = () =>
    `inbox(${READERS[this.reader]!.name}${this.useCursor ? ' after' : ''}${this.pending ? '' : ' all'} limit ${this.limit}${this.thread !== null ? ` thread#${this.thread}` : ''})`;
}

class GetCmd implements Cmd {
  constructor(
    readonly reader: number,
    readonly pick: number,
    readonly thread: boolean,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const r = READERS[this.reader]!;
    const m = model.msgs.length ? model.msgs[this.pick % model.msgs.length]! : null;
    const id = m?.id ?? 'm-unknown';
    const where = `${this.toString()} ${id}`;
    const mayRead = (x: MMsg) => model.readable(r, x) || x.from === r.account;
    let res: W.GetResponse | undefined;
    const err = await refusal(real.engine.get(real.callers.get(r.name)!, { message_id: id, ...(this.thread ? { thread: true } : {}) }).then((x) => void (res = x)));
    expectCode(err, !m ? 'unknown_message' : mayRead(m) ? null : 'not_addressed_to_you', where);
    if (err || !m) return;
    presentCheck(model, r, res!.message, m, where);
    if (this.thread) {
      const want = model.msgs.filter((x) => x.thread === m.thread && mayRead(x));
      assert.deepEqual(
        res!.thread?.map((x) => x.message_id),
        want.map((x) => x.id),
        `${where}: the readable part of the thread`,
      );
    } else assert.equal(res!.thread, undefined);
  }
  toString = () => `get(${READERS[this.reader]!.name} #${this.pick}${this.thread ? ' thread' : ''})`;
}

class MemberCmd implements Cmd {
  constructor(
    readonly room: number,
    readonly account: number,
  ) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const room = ROOMS[this.room]!;
    const account = ACCOUNTS[this.account]!;
    const members = model.members.get(room)!;
    if (members.has(account)) {
      await real.admin.memberRemove(real.op, room, account);
      members.delete(account);
    } else {
      await real.admin.memberAdd(real.op, room, account);
      members.add(account);
    }
    assert.deepEqual((await real.store.getRoom(room))?.members, [...members].sort(), `${this.toString()}: members`);
  }
  toString = () => `member(#${ROOMS[this.room]} ${ACCOUNTS[this.account]})`;
}

/** A wait started before a send: answered with the send when the caller may read it (also mail
 *  to a room its account joined while it was parked), otherwise it stays parked (a membership
 *  revoked meanwhile, or mail acknowledged before the reader was answered) and expires empty. */
class WaitCmd implements Cmd {
  constructor(
    readonly reader: number,
    readonly withCursor: boolean,
    readonly during: 'none' | 'revoke' | 'join',
    readonly send: SendSpec | null,
    readonly ackRace: boolean,
  ) {}
  /** The send as made (joining a room redirects it to that room). */
  private made: SendSpec | null = null;
  check = () => true;
  async run(model: Model, real: Real) {
    const r = READERS[this.reader]!;
    const caller = real.callers.get(r.name)!;
    const where = `${this.toString()}`;
    const head = encodeCursor(await real.store.headSeq());
    const headPos = model.msgs.length;
    const box: { settled: W.InboxResponse | Error | null } = { settled: null };
    const wait = real.engine.inbox(caller, { wait_secs: 10, ...(this.withCursor ? { after: head } : {}) });
    void wait.then(
      (v) => (box.settled = v),
      (e: Error) => (box.settled = e),
    );
    const answered = (why: string): W.InboxResponse => {
      const v = box.settled;
      assert.ok(v !== null, `${where}: ${why}`);
      if (v instanceof Error) throw v;
      return v;
    };
    await flush();
    // Without a cursor, unacknowledged mail the reader was not shown answers at once (with the rest
    // of the page); what it was shown does not.
    const pendingNow = this.withCursor ? [] : model.page(r, { pos: null, pending: true, limit: 50, thread: null });
    if (model.news(r, pendingNow)) {
      assert.deepEqual(
        answered('unshown mail answers at once').messages.map((m) => m.message_id),
        pendingNow.map((m) => m.id),
        where,
      );
      model.show(r, pendingNow);
      return;
    }
    assert.equal(box.settled, null, `${where}: parked while there is nothing new to read`);
    let send = this.send;
    if (this.during === 'revoke') {
      // Revoked while parked: that room's mail must not reach the reader.
      for (const room of ROOMS) {
        if (model.members.get(room)!.has(r.account)) {
          await real.admin.memberRemove(real.op, room, r.account);
          model.members.get(room)!.delete(r.account);
        }
      }
    } else if (this.during === 'join') {
      // Joined while parked: the room's new mail must reach the reader.
      const room = ROOMS.find((x) => !model.members.get(x)!.has(r.account));
      if (room) {
        await real.admin.memberAdd(real.op, room, r.account);
        model.members.get(room)!.add(r.account);
        if (send) send = { ...send, to: { kind: 'room', room }, reply: null };
      }
    }
    await flush();
    if (box.settled !== null) {
      // A joined room's history can make the page non-empty without any commit: answering it then
      // is allowed (the query is the truth), but only with exactly that page.
      const want = model.page(r, { pos: this.withCursor ? headPos : null, pending: true, limit: 50, thread: null });
      assert.ok(this.during === 'join' && model.news(r, want), `${where}: answered with nothing new to read: ${JSON.stringify(box.settled).slice(0, 300)}`);
      assert.deepEqual(
        answered('answered').messages.map((x) => x.message_id),
        want.map((x) => x.id),
        `${where}: answered after joining, with the page as it now is`,
      );
      model.show(r, want);
      model.cursors.set(r.name, { cursor: answered('answered').next_cursor!, pos: model.msgs.indexOf(want[want.length - 1]!) + 1 });
      return;
    }
    this.made = send;
    const m = send ? await doSend(model, real, send) : null;
    // Over a socket the woken wait's read and the ack race with no order: an answer read before the
    // ack committed is as right as one after, so the race is only run where it has one.
    if (m && this.ackRace && !real.overSocket && model.readable(r, m)) {
      // Acknowledged before the woken reader is answered (no turn of the event loop between):
      // a page of pending mail must not bring it back.
      const res = await real.engine.ack(caller, { message_id: m.id });
      const key = model.ackKey(r, m);
      const acks = model.acks.get(key) ?? new Map<string, number>();
      model.acks.set(key, acks);
      acks.set(m.id, real.clock.now());
      assert.equal(res.acked[0]?.acked_at, iso(real.clock.now()), where);
    }
    await flush();
    if (m && model.readable(r, m) && model.ackedAt(r, m) === null) {
      const page = answered('a send the caller may read answers the wait');
      // With a cursor: exactly the new message; without: the unacknowledged page, ending with it.
      const want = this.withCursor ? [m] : model.page(r, { pos: null, pending: true, limit: 50, thread: null });
      assert.deepEqual(
        page.messages.map((x) => x.message_id),
        want.map((x) => x.id),
        `${where}: answered with the new message${this.withCursor ? '' : ' after the unacknowledged mail'}`,
      );
      presentCheck(model, r, page.messages[page.messages.length - 1]!, m, where);
      model.show(r, want);
      assert.equal(page.unread, model.unread(r), `${where}: unread`);
      model.cursors.set(r.name, { cursor: page.next_cursor!, pos: model.msgs.length });
      return;
    }
    assert.equal(box.settled, null, `${where}: nothing the caller may read and has not acknowledged: still parked (got ${JSON.stringify(box.settled)?.slice(0, 300)})`);
    real.clock.advance(10_000);
    await flush();
    const page = answered('the wait expires');
    assert.deepEqual(page.messages, [], `${where}: expiry is an empty page`);
    if (this.withCursor) assert.equal(page.next_cursor, head, `${where}: the cursor stays where it was`);
    model.cursors.set(r.name, { cursor: page.next_cursor!, pos: this.withCursor ? headPos : model.msgs.length });
  }
  toString = () =>
    `wait(${READERS[this.reader]!.name}${this.withCursor ? ' after head' : ''}${this.during !== 'none' ? ` ${this.during}` : ''} then ${(this.made ?? this.send) ? showSend((this.made ?? this.send)!) : 'nothing'}${this.ackRace ? ' +ack' : ''})`;
}

/** Runs a command, then checks every reader's unread count: a step may change anyone's. */
class Checked implements Cmd {
  constructor(readonly inner: Cmd) {}
  check = (m: Readonly<Model>) => this.inner.check(m);
  async run(model: Model, real: Real) {
    await this.inner.run(model, real);
    for (const r of READERS) assert.equal((await real.engine.unread(real.callers.get(r.name)!)).unread, model.unread(r), `after ${this.inner.toString()}: unread of ${r.name}`);
  }
  toString = () => String(this.inner);
}

const ackArb = fc
  .tuple(readerArb, fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), fc.option(fc.nat(), { freq: 5 }), fc.boolean())
  .map(([r, p, u, s]) => new AckCmd(r, p, u, s));
const inboxArb = fc
  .tuple(readerArb, fc.boolean(), fc.boolean(), fc.option(fc.integer({ min: 1, max: 4 })), fc.option(fc.nat(), { freq: 5 }), fc.boolean())
  .map(([r, c, p, l, t, b]) => new InboxCmd(r, c, p, l, t, b));
const getArb = fc.tuple(readerArb, fc.nat(), fc.boolean()).map(([r, p, t]) => new GetCmd(r, p, t));
const sendCmdArb = sendArb.map((s) => new SendCmd(s));

const checked = (arbs: fc.Arbitrary<Cmd>[]): fc.Arbitrary<Cmd>[] => arbs.map((arb) => arb.map((c): Cmd => new Checked(c)));

export const commands = checked([
  sendCmdArb,
  sendCmdArb,
  ackArb,
  inboxArb,
  getArb,
  fc.tuple(fc.nat({ max: ROOMS.length - 1 }), fc.nat({ max: ACCOUNTS.length - 1 })).map(([room, a]) => new MemberCmd(room, a)),
  fc
    .tuple(readerArb, fc.boolean(), fc.constantFrom('none' as const, 'none' as const, 'revoke' as const, 'join' as const), fc.option(sendArb, { freq: 6 }), fc.boolean())
    .map(([r, c, during, s, race]) => new WaitCmd(r, c, during, s, race)),
  taskCreateArb,
  taskMoveArb,
]);

/** Mostly task transitions, with the mail a task's parties send and read around them. */
export const taskCommands = checked([taskCreateArb, taskMoveArb, taskMoveArb, taskMoveArb, taskMoveArb, taskMoveArb, sendCmdArb, ackArb, inboxArb, getArb]);

// ---- one run

/** After a sequence: every reader's full cursor walk and a get of every message agree with the model. */
export async function finalCheck(model: Model, real: Real): Promise<void> {
  await taskFinalCheck(model, real);
  for (const r of READERS) {
    const c = real.callers.get(r.name)!;
    for (const pending of [false, true]) {
      const seen: string[] = [];
      let after: string | undefined;
      for (let pages = 0; pages < 100; pages++) {
        const p = await real.engine.inbox(c, { limit: 3, ...(pending ? {} : { include_acked: true }), ...(after ? { after } : {}) });
        if (p.messages.length === 0) break;
        seen.push(...p.messages.map((m) => m.message_id));
        after = p.next_cursor!;
      }
      const want = model.page(r, { pos: null, pending, limit: 1e9, thread: null }).map((m) => m.id);
      assert.deepEqual(seen, want, `final walk of ${r.name} (${pending ? 'pending' : 'all'}): each readable message once, in send order`);
    }
    assert.equal((await real.engine.unread(c)).unread, model.unread(r), `final unread of ${r.name}`);
    for (const m of model.msgs) {
      const may = model.readable(r, m) || m.from === r.account;
      const err = await refusal(real.engine.get(c, { message_id: m.id }));
      expectCode(err, may ? null : 'not_addressed_to_you', `final get of ${m.id} by ${r.name}`);
    }
  }
}
