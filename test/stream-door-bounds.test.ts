// The stream door's bounds on a real daemon: 64 requests in flight (then reading stops, no error),
// unsent output (a client that does not read stops being read), connections without hello (a cap,
// the oldest closed first, and the 5 s deadline).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { STREAM_LIMITS } from '../src/wire/stream.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { helloRaw, openRaw } from './support/stream-raw.js';
import { until } from './support/until.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('stream door bounds', () => {
  let d: TestDaemon;
  let secret: string;

  before(async () => {
    // One session parks more than the default 8 waits here, to fill 64 slots with parked reads.
    d = await startTestDaemon({ waitCaps: { perSession: 256, perAccount: 2048, total: 20_000 }, streamLimits: { maxUnauthenticated: 4 } });
    secret = (await d.account('claude')).secret;
  });
  after(() => d.stop());

  it('64 requests in flight: the 65th waits unread (no error) until one finishes', async () => {
    const s = await helloRaw(d.socketPath!, secret);
    const head = (await s.call('inbox', { limit: 1 })).result.next_cursor;
    for (let i = 0; i < STREAM_LIMITS.maxInFlight; i++) s.write({ id: i, op: 'inbox', input: { after: head, wait_secs: 30 } });
    s.write({ id: 'next', op: 'whoami' });
    await until('64 parked', () => d.engine.parkedWaits() === STREAM_LIMITS.maxInFlight);
    await sleep(300);
    assert.equal(d.engine.parkedWaits(), STREAM_LIMITS.maxInFlight, 'no 65th request started');
    assert.equal(
      s.frames.find((f) => f.id === 'next'),
      undefined,
      'the request past the bound was not read',
    );
    assert.equal(s.frames.length, 2, 'no refusal: only the hello and the first inbox answered');
    assert.equal(s.isClosed(), false);
    // One commit answers every wait; the held request is read and answered after them.
    await d.operator.send({ to: 'claude', subject: 'wake all', body: 'x' });
    const next = await s.next((f) => f.id === 'next');
    assert.equal(next.result.account, 'claude');
    const answered = s.frames.filter((f) => typeof f.id === 'number');
    assert.equal(answered.length, STREAM_LIMITS.maxInFlight);
    assert.ok(answered.every((f) => f.result.messages.length === 1));
    s.close();
  });

  it('a client that does not read: reading stops once its unsent output passes the bound; nothing is lost', async () => {
    const body = 'b'.repeat(60_000);
    const sent = await d.operator.send({ to: 'claude', subject: 'big', body });
    const s = await helloRaw(d.socketPath!, secret);
    s.sock.pause();
    const before = d.streamDoor!.stats().requests;
    const n = 300; // ~18 MB of answers
    for (let i = 0; i < n; i++) s.write({ id: i, op: 'get', input: { message_id: sent.message_id } });
    let last = -1;
    await until(
      'the door stopped reading',
      async () => {
        const now = d.streamDoor!.stats().requests;
        const still = now === last;
        last = now;
        await sleep(100);
        return still && d.streamDoor!.busy === 0;
      },
      10_000,
    );
    const started = d.streamDoor!.stats().requests - before;
    assert.ok(started < n, `reading stopped: ${started} of ${n} requests read`);
    // Requests read before the bound was passed still answer: at most one answer per slot beyond it.
    const unsent = d.streamDoor!.stats().unsentBytes;
    const answerBytes = 61_000;
    assert.ok(unsent > STREAM_LIMITS.maxQueuedBytes, `unsent output ${unsent} reached the bound`);
    assert.ok(
      unsent < STREAM_LIMITS.maxQueuedBytes + (STREAM_LIMITS.maxInFlight + 1) * answerBytes,
      `unsent output ${unsent} stops past the bound by at most the requests in flight`,
    );
    s.sock.resume();
    await until('every answer', () => s.frames.filter((f) => typeof f.id === 'number' && f.result?.message?.body === body).length === n, 20_000);
    s.close();
  });

  it('connections without hello are capped: past the cap the oldest is closed, and hello still gets in', async () => {
    const evicted = d.streamDoor!.stats().evicted;
    const idle = [];
    for (let i = 0; i < 6; i++) idle.push(await openRaw(d.socketPath!));
    await Promise.all([idle[0]!.closed, idle[1]!.closed]);
    assert.equal(d.streamDoor!.stats().evicted - evicted, 2);
    assert.equal(d.streamDoor!.stats().unauthenticated, 4);
    const fresh = await helloRaw(d.socketPath!, secret);
    assert.equal(fresh.hello.account, 'claude', 'a newcomer that says hello gets in (it pushes out an idle one)');
    assert.equal(d.streamDoor!.stats().unauthenticated, 3, 'it left the unauthenticated count');
    for (const s of [...idle, fresh]) s.close();
  });
});

describe('stream door hello deadline', () => {
  it('closes a connection without hello 5 s after connect; one that said hello stays', async () => {
    const d = await startTestDaemon();
    try {
      const { secret } = await d.account('claude');
      const quiet = await openRaw(d.socketPath!);
      const greeted = await helloRaw(d.socketPath!, secret);
      const t0 = Date.now();
      await sleep(1_000);
      assert.equal((await quiet.call('whoami')).error.code, 'unauthenticated', 'still open after 1 s');
      await quiet.closed;
      const waited = Date.now() - t0;
      assert.ok(waited >= 3_500, `closed after ${waited} ms, not before the deadline`);
      await sleep(300);
      assert.equal((await greeted.call('whoami')).result.account, 'claude');
      greeted.close();
    } finally {
      await d.stop();
    }
  });
});
