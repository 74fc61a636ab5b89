// A process that opens many connections at once makes one first contact: its session is read and
// registered once and every request shares the record (scenario 5 opens 8 per account at once).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../src/engine/clock.js';
import { SessionBook } from '../src/engine/sessions.js';
import { createMemoryStore } from '../src/store/index.js';
import type { AccountRecord, Store } from '../src/store/types.js';
import type { Attestation } from '../src/attest/types.js';

const account: AccountRecord = {
  id: 'claude',
  kind: 'agent',
  label: 'claude',
  permissions: { send: true, read: true, urgent: false, operator: false },
  bindProvider: null,
  secretDigest: '00',
  createdAt: 0,
  bornSeq: 0,
  contactPolicy: 'open',
};

const facts = { pid: 4242, startTime: 99, ppid: 1, uid: 0, exe: '/usr/bin/node' };
const att: Attestation = { session: facts, peer: facts, sessionId: 's-first-contact', corroborated: { cwd: '/work/app' } };

/** The memory store, counting the session reads and registrations the book asks for. */
function counted(): { store: Store; calls: { get: number; register: number } } {
  const inner = createMemoryStore();
  const calls = { get: 0, register: 0 };
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'getSession') calls.get++;
      if (prop === 'registerSession') calls.register++;
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  return { store, calls };
}

test('eight concurrent first requests of one process: one read, one registration, one shared record', async () => {
  const { store, calls } = counted();
  const book = new SessionBook(store, new ManualClock(), { hostId: 'h', isAlive: () => true, retentionMs: 1000 });
  const recs = await Promise.all(Array.from({ length: 8 }, () => book.sessionFor(account, att)));
  assert.equal(calls.get, 1);
  assert.equal(calls.register, 1);
  for (const r of recs) assert.equal(r, recs[0]);
  assert.equal(recs[0]?.id, 's-first-contact');
  // Later requests are answered from the cache.
  assert.equal(await book.sessionFor(account, att), recs[0]);
  assert.equal(calls.get, 1);
});

test('an account forgotten while its first contact is under way is read afresh next time', async () => {
  const { store, calls } = counted();
  const book = new SessionBook(store, new ManualClock(), { hostId: 'h', isAlive: () => true, retentionMs: 1000 });
  const first = book.sessionFor(account, att);
  book.forget(account.id);
  await first;
  await book.sessionFor(account, att);
  assert.equal(calls.get, 2, 'the forgotten lookup was not cached');
  assert.equal(calls.register, 1, 'the second contact found the registered session');
});

test('a failed first contact is not cached: the next request tries again', async () => {
  const { store, calls } = counted();
  let fail = true;
  const flaky = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'registerSession' && fail) {
        fail = false;
        return () => Promise.reject(new Error('disk full'));
      }
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  const book = new SessionBook(flaky, new ManualClock(), { hostId: 'h', isAlive: () => true, retentionMs: 1000 });
  const tries = await Promise.allSettled([book.sessionFor(account, att), book.sessionFor(account, att)]);
  assert.deepEqual(
    tries.map((t) => t.status),
    ['rejected', 'rejected'],
  );
  const rec = await book.sessionFor(account, att);
  assert.equal(rec.id, 's-first-contact');
  assert.equal(calls.get, 2);
});
