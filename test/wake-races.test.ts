// The dispatcher's races, driven by hand on an in-process engine (memory store, ManualClock, a
// fake adapter): the interleavings the daemon tests only meet by chance.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createMemoryStore } from '../src/store/memory/memory-store.js';
import { ManualClock } from '../src/engine/clock.js';
import { MailEngine, type Caller } from '../src/engine/mail-engine.js';
import { AdminOps } from '../src/engine/admin-ops.js';
import { WakeChains } from '../src/engine/wake-chains.js';
import { WakeDispatcher } from '../src/wake/dispatcher.js';
import type { WakeAdapter, WakeRequest } from '../src/wake/types.js';
import type { Store } from '../src/store/types.js';

let n = 0;
const ids = { messageId: () => `m-${String(++n).padStart(12, '0')}`, secret: () => `m4a_test_${++n}` };
const turns = async (k = 20) => {
  for (let i = 0; i < k; i++) await new Promise((r) => setImmediate(r));
};

async function world(o: { threadMax?: number } = {}) {
  const store: Store = createMemoryStore();
  const clock = new ManualClock();
  const engine = new MailEngine({ store, clock, ids, hostId: 'h', isAlive: () => true, loopGuard: { pairMax: 1000, windowMs: 60_000, threadMax: o.threadMax ?? 1000 } });
  await engine.start();
  const admin = new AdminOps(engine);
  const op = await admin.createAccount({ id: 'operator', kind: 'service', permissions: { send: true, read: true, urgent: true, operator: true } });
  const caller = async (id: string): Promise<Caller> => ({ account: (await store.getAccount(id))!, session: null });
  for (const a of ['alice', 'bob', 'carol']) await admin.createAccount({ id: a });
  const woken: WakeRequest[] = [];
  let behave: (req: WakeRequest) => Promise<{ ok: boolean; detail: string }> = async () => ({ ok: true, detail: 'reached' });
  const adapter: WakeAdapter = {
    kind: 'hooks',
    wake: async (req) => {
      woken.push(req);
      return behave(req);
    },
  };
  const chains = new WakeChains(engine.store, clock, () => true);
  const dispatcher = new WakeDispatcher({ engine, chains, adapterFor: () => adapter, hostId: 'h' });
  dispatcher.start();
  const opCaller = await caller(op.account.id);
  return {
    store,
    clock,
    engine,
    dispatcher,
    woken,
    caller,
    setBehave: (f: typeof behave) => (behave = f),
    chain: (account: string, debounce_ms: number) => chains.set(opCaller, { account, steps: [{ kind: 'hooks' }], debounce_ms }),
    close: async () => {
      await dispatcher.close();
      await engine.close();
    },
  };
}

describe('wake dispatcher races', () => {
  it('debounce 0: mail the loop guard quiets after its commit still wakes nobody', async () => {
    const w = await world({ threadMax: 1 });
    try {
      await w.chain('bob', 0);
      const alice = await w.caller('alice');
      const root = await w.engine.send(alice, { to: { kind: 'direct', participant: 'carol' }, subject: 'root', body: 'x' });
      // The guard looks at the thread after the commit; hold that look until the wake would run.
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const getThread = w.store.getThread.bind(w.store);
      w.store.getThread = async (id: string) => {
        await gate;
        return getThread(id);
      };
      const before = w.clock.pendingTimers();
      const sending = w.engine.send(alice, { to: { kind: 'direct', participant: 'bob' }, subject: 'ok', body: 'ok', reply_to: root.message_id });
      for (let i = 0; i < 100 && w.clock.pendingTimers() === before; i++) await turns(1);
      assert.ok(w.clock.pendingTimers() > before, 'the dispatcher armed its (zero) debounce');
      w.clock.advance(0);
      await turns();
      release();
      const sent = await sending;
      assert.ok(sent.quiet, 'the loop guard quieted it');
      await w.dispatcher.idle();
      assert.deepEqual(
        w.woken.flatMap((r) => r.mail.map((m) => m.message_id)),
        [],
        'quieted mail named in no wake',
      );
    } finally {
      await w.close();
    }
  });
});
