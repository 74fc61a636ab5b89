// Parked inbox waits: woken by a send within milliseconds, clamped, empty on expiry, never
// blocking another caller, capped per session and in total.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { MailError } from '../src/wire/errors.js';
import type { MailClient } from '../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

const tick = () => new Promise((r) => setTimeout(r, 20));

async function settledWithin<T>(p: Promise<T>, ms: number): Promise<{ done: boolean; value?: T }> {
  let done = false;
  let value: T | undefined;
  void p.then(
    (v) => {
      done = true;
      value = v;
    },
    () => (done = true),
  );
  await new Promise((r) => setTimeout(r, ms));
  return value === undefined ? { done } : { done, value };
}

describe('waits (real clock)', () => {
  let d: TestDaemon;
  let a: MailClient;
  let b: MailClient;
  before(async () => {
    d = await startTestDaemon();
    a = (await d.account('a')).client;
    b = (await d.account('b')).client;
  });
  after(() => d.stop());

  it('a parked reader is answered within milliseconds of a send', async () => {
    const head = (await b.inbox({ include_acked: true })).next_cursor!;
    const waiting = b.inbox({ wait_secs: 30, after: head });
    await tick();
    const t0 = performance.now();
    const sent = await a.send({ to: 'b', subject: 'wake', body: '' });
    const page = await waiting;
    const ms = performance.now() - t0;
    assert.deepEqual(
      page.messages.map((m) => m.message_id),
      [sent.message_id],
    );
    assert.ok(ms < 1000, `woken after ${ms.toFixed(1)} ms (sanity bound, not a benchmark)`);
  });

  it('without a cursor, parks until there is mail it was not shown; what it was shown stays in the answer', async () => {
    const pending = (await b.inbox()).messages.map((m) => m.message_id);
    if (pending.length) await b.ack(pending);
    const w = b.inbox({ wait_secs: 30 });
    await until('the wait parked', () => d.engine.parkedWaits() === 1);
    const sent = await a.send({ to: 'b', subject: 'x', body: '' });
    assert.deepEqual(
      (await w).messages.map((m) => m.message_id),
      [sent.message_id],
    );
    // Left unacknowledged: it was shown, so it does not end the next wait (no spinning)…
    const again = b.inbox({ wait_secs: 30 });
    await until('the second wait parked', () => d.engine.parkedWaits() === 1);
    // …new mail does, and the answer lists both.
    const next = await a.send({ to: 'b', subject: 'y', body: '' });
    assert.deepEqual(
      (await again).messages.map((m) => m.message_id),
      [sent.message_id, next.message_id],
    );
    await b.ack([sent.message_id, next.message_id]);
  });

  it("a parked wait never blocks another caller's send or read", async () => {
    const w = b.inbox({ wait_secs: 30, after: (await b.inbox({ include_acked: true })).next_cursor! });
    await tick();
    const t0 = performance.now();
    await a.send({ to: 'a', subject: 'self', body: '' });
    await a.inbox();
    await a.unread();
    assert.ok(performance.now() - t0 < 1000);
    await a.send({ to: 'b', subject: 'release', body: '' });
    assert.equal((await w).messages.length, 1);
  });

  it('mail for someone else does not answer the wait', async () => {
    const w = b.inbox({ wait_secs: 30, after: (await b.inbox({ include_acked: true })).next_cursor! });
    await a.send({ to: 'a', subject: 'not for b', body: '' });
    assert.equal((await settledWithin(w, 80)).done, false);
    await a.send({ to: 'b', subject: 'for b', body: '' });
    assert.deepEqual(
      (await w).messages.map((m) => m.subject),
      ['for b'],
    );
  });
});

describe('waits (manual clock)', () => {
  let d: TestDaemon;
  let clock: ManualClock;
  let a: MailClient;
  let b: MailClient;
  before(async () => {
    clock = new ManualClock(Date.now());
    d = await startTestDaemon({ clock, waitCaps: { perSession: 2, perAccount: 3, total: 4 } });
    a = (await d.account('a')).client;
    b = (await d.account('b')).client;
  });
  after(() => d.stop());

  it('expiry answers an empty page, never an error', async () => {
    const w = b.inbox({ wait_secs: 10, after: (await b.inbox({ include_acked: true })).next_cursor! });
    await tick();
    clock.advance(9_999);
    assert.equal((await settledWithin(w, 30)).done, false);
    clock.advance(1);
    const page = await w;
    assert.deepEqual(page.messages, []);
    assert.ok(page.next_cursor);
  });

  it('clamps wait_secs to 60 over HTTP instead of refusing', async () => {
    const w = b.inbox({ wait_secs: 3600, after: (await b.inbox({ include_acked: true })).next_cursor! });
    await tick();
    clock.advance(59_999);
    assert.equal((await settledWithin(w, 30)).done, false, 'still parked before 60 s');
    clock.advance(1);
    assert.deepEqual((await w).messages, [], 'answered at 60 s');
  });

  it('caps waits per session (the oldest answers empty) and in total (rate_limited)', async () => {
    const cur = (await b.inbox({ include_acked: true })).next_cursor!;
    const w1 = b.inbox({ wait_secs: 30, after: cur });
    await tick();
    const w2 = b.inbox({ wait_secs: 30, after: cur });
    await tick();
    const w3 = b.inbox({ wait_secs: 30, after: cur });
    assert.deepEqual((await w1).messages, [], 'the oldest wait of the session was answered empty');
    assert.equal((await settledWithin(w2, 30)).done, false);
    const aCur = (await a.inbox({ include_acked: true })).next_cursor!;
    const w4 = a.inbox({ wait_secs: 30, after: aCur });
    await tick();
    const w5 = a.inbox({ wait_secs: 30, after: aCur });
    await tick();
    // a's third wait displaces a's oldest (w4) instead of counting against the total
    const w6 = a.inbox({ wait_secs: 30, after: aCur });
    assert.deepEqual((await w4).messages, [], "w4 answered empty by its own session's newer wait");
    assert.equal(d.engine.parkedWaits(), 4);
    const c = (await d.account('c')).client;
    const refusedWait = await c.inbox({ wait_secs: 30, after: aCur }).catch((e: unknown) => e);
    assert.ok(refusedWait instanceof MailError && refusedWait.code === 'rate_limited', 'over the total cap: rate_limited');
    assert.equal(typeof refusedWait.details.retry_after, 'number');
    assert.equal(d.engine.parkedWaits(), 4, 'the refused wait parked nothing');
    clock.advance(30_000);
    await Promise.all([w2, w3, w5, w6]);
  });

  it('shutdown answers parked waits at once', async () => {
    const w = b.inbox({ wait_secs: 30, after: (await b.inbox({ include_acked: true })).next_cursor! });
    await tick();
    await d.engine.close();
    assert.deepEqual((await w).messages, []);
  });
});

describe('waits woken together are answered in batches', () => {
  let d: TestDaemon;
  const members: MailClient[] = [];
  let sender: MailClient;
  before(async () => {
    d = await startTestDaemon();
    // Open: the sender posts without being a member (and so is never among the woken).
    await d.operator.admin.roomAdd('crowd', { open: true });
    for (let i = 0; i < 20; i++) {
      members.push((await d.account(`m${i}`)).client);
      await d.operator.admin.memberAdd('crowd', `m${i}`);
    }
    sender = (await d.account('sender')).client;
  });
  after(() => d.stop());

  it('one send to a room answers every parked member from one query', async () => {
    const cursors = await Promise.all(members.map(async (m) => (await m.inbox({ include_acked: true })).next_cursor!));
    const waits = members.map((m, i) => (i % 2 ? m.inbox({ wait_secs: 30, after: cursors[i]! }) : m.inbox({ wait_secs: 30 })));
    while (d.engine.parkedWaits() < members.length) await tick();
    const before = { ...d.engine.wakeStats() };
    const s = await sender.send({ to: '#crowd', subject: 'to all of you', body: 'b' });
    const pages = await Promise.all(waits);
    for (const p of pages) {
      assert.deepEqual(
        p.messages.map((m) => m.message_id),
        [s.message_id],
      );
      assert.equal(p.messages[0]?.acked_at, undefined, 'unacknowledged (acked_at left out)');
      assert.equal(p.unread >= 1, true);
    }
    assert.equal(d.engine.wakeStats().readers - before.readers, members.length, 'every reader answered by the batch');
    assert.equal(d.engine.wakeStats().fetches - before.fetches, 1, 'one query for the whole room');
    // A cursor from a batched answer continues exactly where it should.
    const next = await members[1]!.inbox({ after: pages[1]!.next_cursor! });
    assert.deepEqual(next.messages, []);
    await Promise.all(members.map((m) => m.ack(s.message_id)));
  });

  it('a member removed while parked stops watching the room at once', async () => {
    const m0 = members[0]!;
    const cur = (await m0.inbox({ include_acked: true })).next_cursor!;
    const w = m0.inbox({ wait_secs: 30, after: cur });
    await tick();
    await d.operator.admin.memberRemove('crowd', 'm0');
    await sender.send({ to: '#crowd', subject: 'after m0 left', body: '' });
    assert.equal((await settledWithin(w, 100)).done, false, 'the removed member is not answered with room mail');
    const direct = await sender.send({ to: 'm0', subject: 'direct', body: '' });
    assert.deepEqual(
      (await w).messages.map((m) => m.message_id),
      [direct.message_id],
    );
  });
});

describe('a reader that never acknowledges', () => {
  let d: TestDaemon;
  let clock: ManualClock;
  let a: MailClient;
  let b: MailClient;
  before(async () => {
    clock = new ManualClock(Date.now());
    d = await startTestDaemon({ clock });
    a = (await d.account('a')).client;
    b = (await d.account('b')).client;
  });
  after(() => d.stop());

  const ids = (p: { messages: { message_id: string }[] }) => p.messages.map((m) => m.message_id);
  const send = async (subject: string) => (await a.send({ to: 'b', subject, body: '' })).message_id;
  /** Starts a wait; resolves once the daemon holds it parked (boxed: a promise would be awaited). */
  const park = async (req: { limit?: number; thread_id?: string } = {}) => {
    const before = d.engine.parkedWaits();
    const answer = b.inbox({ wait_secs: 30, ...req });
    await until('the wait parked', () => d.engine.parkedWaits() === before + 1);
    return { answer };
  };

  it('a wait after a page that showed unacknowledged mail parks for its full time', async () => {
    const m1 = await send('one');
    assert.deepEqual(ids(await b.inbox()), [m1], 'shown, never acknowledged');
    let settled = false;
    const w = (await park()).answer.finally(() => (settled = true));
    clock.advance(29_999);
    assert.equal(d.engine.parkedWaits(), 1, 'still parked just before its time');
    assert.equal(settled, false);
    clock.advance(1);
    const page = await w;
    assert.deepEqual(page.messages, [], 'expired empty: nothing new');
    assert.equal(page.unread, 1, 'the shown mail is still unacknowledged');
  });

  it('new mail ends the wait, and the answer lists the old unacknowledged mail and the new', async () => {
    const [m1] = ids(await b.inbox());
    const w = (await park()).answer;
    const m2 = await send('two');
    assert.deepEqual(ids(await w), [m1, m2]);
    const w2 = (await park()).answer;
    const m3 = await send('three');
    assert.deepEqual(ids(await w2), [m1, m2, m3], 'and again: each wait parks, none returns at once');
  });

  it('a page full of shown mail makes room for the new mail, so the next wait parks again', async () => {
    const [m1] = ids(await b.inbox());
    const w = (await park({ limit: 2 })).answer;
    const m4 = await send('four');
    assert.deepEqual(ids(await w), [m1, m4], 'woken: the oldest shown mail made room');
    // Mail that came while nobody waited, more than fits: each wait answers some of it, none spins.
    const [m5, m6, m7] = [await send('five'), await send('six'), await send('seven')];
    assert.deepEqual(ids(await b.inbox({ wait_secs: 30, limit: 2 })), [m5, m6]);
    assert.deepEqual(ids(await b.inbox({ wait_secs: 30, limit: 2 })), [m1, m7]);
    const w2 = (await park({ limit: 2 })).answer;
    clock.advance(30_000);
    assert.deepEqual((await w2).messages, [], 'all of it shown: parked until its time');
  });

  it('a hook notice tells only mail the inbox has not shown, and what it told does not end a wait', async () => {
    assert.deepEqual((await b.notice({ event: 'peek' })).mail, [], 'the inbox showed it all: no news');
    const m8 = await send('eight');
    assert.deepEqual(
      (await b.notice({ event: 'peek' })).mail.map((m) => m.message_id),
      [m8],
      'new: announced (a peek tells without marking)',
    );
    const told = await b.notice({ event: 'stop' });
    assert.deepEqual(
      told.mail.map((m) => m.message_id),
      [m8],
    );
    const w = (await park()).answer;
    const m9 = await send('nine');
    assert.deepEqual(ids(await w).slice(-2), [m8, m9], 'the wait ended on m9 only; m8, told, is listed as unacknowledged');
    assert.deepEqual((await b.notice({ event: 'peek' })).mail, [], 'the wait showed m9: not announced again');
  });

  it('a wait on one thread parks on what that thread showed, whatever other threads hold', async () => {
    const root = await send('a thread');
    const page = await b.inbox({ thread_id: root });
    assert.deepEqual(ids(page), [root]);
    const w = (await park({ thread_id: root })).answer;
    await send('another thread');
    const reply = (await a.send({ to: 'b', subject: 'Re: a thread', body: '', reply_to: root })).message_id;
    assert.deepEqual(ids(await w), [root, reply]);
    const w2 = (await park({ thread_id: root })).answer;
    clock.advance(30_000);
    assert.deepEqual((await w2).messages, []);
  });
});
