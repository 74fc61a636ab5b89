// Two notices of one session parked at once (Copilot CLI in listen mode with the extension: the
// agentStop hook's wait and the extension's live wait) wake for the same mail: one tells it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MailClient } from '../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

/** Long enough for a notice request to reach the daemon and park (sanity bound, not a wait for a result). */
const PARK_MS = 700;
const park = () => new Promise((r) => setTimeout(r, PARK_MS));
const ids = (n: { mail: { message_id: string }[] }) => n.mail.map((m) => m.message_id);

describe('concurrent notices of one session', () => {
  let d: TestDaemon;
  let sender: MailClient;

  before(async () => {
    d = await startTestDaemon();
    sender = (await d.account('sender')).client;
  });
  after(async () => {
    await d.stop();
  });

  // Parked in either order (the first parked is the first woken): the live wait that wakes first
  // leaves the mail to the Stop; the one that wakes second finds it told.
  for (const liveFirst of [true, false]) {
    it(`a listening Stop wait and a live wait (${liveFirst ? 'live' : 'Stop'} parked first): the Stop blocks with the mail, the live wait tells only the next`, async () => {
      const name = liveFirst ? 'pilot' : 'pilot2';
      const me = (await d.account(name)).client;
      await me.listen(true);
      assert.deepEqual((await me.notice({ event: 'stop' })).mail, []);
      let live: Promise<{ mail: { message_id: string }[] }>;
      let stop: ReturnType<MailClient['notice']>;
      if (liveFirst) {
        live = me.notice({ event: 'live', wait_secs: 20 });
        await park();
        stop = me.notice({ event: 'stop', wait_secs: 20 });
      } else {
        stop = me.notice({ event: 'stop', wait_secs: 20 });
        await park();
        live = me.notice({ event: 'live', wait_secs: 20 });
      }
      let liveDone = false;
      void live.then(() => (liveDone = true));
      await park();
      const first = await sender.send({ to: name, subject: 'one message', body: 'x' });
      const s = await stop;
      assert.deepEqual(ids(s), [first.message_id], 'the Stop hook tells it');
      assert.equal(s.block, true);
      await park();
      assert.equal(liveDone, false, 'the live wait did not answer with the mail the Stop told; it waits on');
      const second = await sender.send({ to: name, subject: 'the next', body: 'x' });
      assert.deepEqual(ids(await live), [second.message_id], 'the live wait tells only mail after it');
      assert.deepEqual((await me.notice({ event: 'stop' })).mail, [], 'both told: nothing is news again');
    });
  }

  it('two live waits tell one message once', async () => {
    const me = (await d.account('pilot3')).client;
    await me.notice({ event: 'live' });
    const a = me.notice({ event: 'live', wait_secs: 20 });
    const b = me.notice({ event: 'live', wait_secs: 20 });
    const answered: string[][] = [];
    void a.then((n) => answered.push(ids(n)));
    void b.then((n) => answered.push(ids(n)));
    await park();
    const first = await sender.send({ to: 'pilot3', subject: 'once', body: 'x' });
    await Promise.race([a, b]);
    await park();
    assert.deepEqual(answered, [[first.message_id]], 'one wait told it; the other waits on');
    const second = await sender.send({ to: 'pilot3', subject: 'twice', body: 'x' });
    await Promise.all([a, b]);
    assert.deepEqual(answered, [[first.message_id], [second.message_id]]);
  });

  it('without a Stop waiting, a live wait tells the mail itself', async () => {
    const me = (await d.account('pilot4')).client;
    await me.listen(true);
    await me.notice({ event: 'live' });
    const live = me.notice({ event: 'live', wait_secs: 20 });
    await park();
    const m = await sender.send({ to: 'pilot4', subject: 'live only', body: 'x' });
    const l = await live;
    assert.deepEqual(ids(l), [m.message_id]);
    assert.equal(l.block, true);
  });
});
