// The shown mark at the engine: a caller without a session (a person in the browser) has one per
// account, and a wait's answer cut to a byte budget (MCP) keeps the new mail, never only the old.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MailEngine, type Caller } from '../src/engine/mail-engine.js';
import { AdminOps } from '../src/engine/admin-ops.js';
import { ManualClock, systemIds } from '../src/engine/clock.js';
import { createMemoryStore } from '../src/store/index.js';
import type { Store } from '../src/store/types.js';
import type * as W from '../src/wire/ops.js';

const ids = (p: W.InboxResponse) => p.messages.map((m) => m.message_id);

describe('the shown mark of a caller without a session', () => {
  let store: Store;
  let engine: MailEngine;
  let clock: ManualClock;
  let a: Caller;
  let b: Caller;
  before(async () => {
    store = createMemoryStore();
    clock = new ManualClock();
    engine = new MailEngine({ store, clock, ids: systemIds, hostId: 'host-test', isAlive: () => true });
    await engine.start();
    const admin = new AdminOps(engine);
    for (const id of ['a', 'b']) await admin.createAccount({ id });
    a = { account: (await store.getAccount('a'))!, session: null };
    b = { account: (await store.getAccount('b'))!, session: null };
  });
  after(async () => {
    await engine.close();
    await store.close();
  });

  const send = async (subject: string, body = '') => (await engine.send(a, { to: { kind: 'direct', participant: 'b' }, subject, body })).message_id;
  /** Starts a wait and resolves once it is parked (boxed: a promise would be awaited). */
  const park = async (door: { maxWaitSecs: number; budgetBytes?: number } = { maxWaitSecs: 60 }) => {
    const n = engine.parkedWaits();
    const answer = engine.inbox(b, { wait_secs: 30 }, door);
    while (engine.parkedWaits() === n) await new Promise((r) => setImmediate(r));
    return { answer };
  };

  it('a page shown to the account does not end its next wait; new mail does', async () => {
    const m1 = await send('one');
    assert.deepEqual(ids(await engine.inbox(b, {})), [m1]);
    const w = (await park()).answer;
    clock.advance(29_999);
    assert.equal(engine.parkedWaits(), 1, 'shown, unacknowledged: still parked');
    const m2 = await send('two');
    assert.deepEqual(ids(await w), [m1, m2]);
  });

  it('a wait answer cut to a byte budget keeps the new mail, so the next wait parks', async () => {
    const big = 'x'.repeat(4_000);
    const [m3, m4] = [await send('three', big), await send('four', big)];
    assert.equal((await engine.inbox(b, {})).messages.length, 4, 'all shown');
    const door = { maxWaitSecs: 60, budgetBytes: 400 };
    const w = (await park(door)).answer;
    const m5 = await send('five', big);
    const got = ids(await w);
    assert.ok(got.includes(m5), `the new mail is in the cut answer: ${JSON.stringify(got)} (not only ${[m3, m4].join(', ')})`);
    const w2 = (await park(door)).answer;
    clock.advance(30_000);
    assert.deepEqual((await w2).messages, [], 'nothing new: parked for its full time');
  });
});
