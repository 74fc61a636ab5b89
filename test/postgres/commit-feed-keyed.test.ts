// The keyed commit notification: a daemon caught up to a batch's previous head announces the
// batch's seqs from the notification itself, with no catch-up query; a gap, a foreign or malformed
// payload, or a plain head (daemons of earlier versions) falls back to the catch-up.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { keyedPayload, parseKeyed } from '../../src/store/postgres/commit-feed.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { type CommitEvent, type StoredMessage } from '../../src/store/types.js';
import { A, send } from '../support/store-conformance.js';
import { admin, freshSchema, noteFailure, pgSkip, sleep } from './support/pg.js';

const opened: PostgresStore[] = [];
after(async () => {
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});
const open = async (spec: string): Promise<PostgresStore> => {
  const s = await openPostgresStore({ spec, max: 4, pollMs: 60_000 }); // no poll: only LISTEN
  opened.push(s);
  return s;
};
const until = async (ok: () => boolean, what: string): Promise<void> => {
  for (let i = 0; i < 500 && !ok(); i++) await sleep(10);
  assert.ok(ok(), what);
};

describe('keyed commit payloads', () => {
  it('round-trip, and anything else is not keyed', () => {
    const msgs = [{ toKey: 'a:bob' }, { toKey: 'r:team' }] as StoredMessage[];
    const [p] = keyedPayload(41, msgs);
    assert.deepEqual(parseKeyed(p as string), { prev: 41, keys: ['a:bob', 'r:team'] });
    assert.ok(Number.isNaN(Number(p)), 'a daemon of an earlier version ignores it');
    for (const bad of ['42', 'k:1:', 'k:x:["a"]', 'k:1:[1]', 'k:1:{"a":1}', 'k:1:["a"', 'k:9999999999999999:["a"]']) assert.equal(parseKeyed(bad), null, bad);
    const huge = Array.from({ length: 2_000 }, () => ({ toKey: 'a:someone-with-a-long-name' })) as StoredMessage[];
    assert.deepEqual(keyedPayload(1, huge), [], 'too big for a notification: the plain head alone');
  });
});

describe('postgres: keyed commit notifications between daemons', { skip: pgSkip }, () => {
  it('another daemon announces from the notification, in order, without a catch-up query', async () => {
    try {
      const { spec } = await freshSchema('keyed');
      const a = await open(spec);
      const b = await open(spec);
      const got: CommitEvent[] = [];
      b.onCommit((e) => got.push(e));
      // The first LISTEN runs a catch-up of its own: wait for it to be over.
      await until(() => b.stats().listens >= 1 && b.stats().catchUps >= 1, 'B listens');
      await sleep(100);
      const before = b.stats();
      for (let i = 0; i < 20; i++) await send(a, A(i % 2 ? 'bob' : 'carol'));
      await until(() => got.length === 20, 'all 20 announced on B');
      assert.deepEqual(
        got.map((e) => e.seq),
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      assert.deepEqual(got[1]?.keys, [A('bob')]);
      const s = b.stats();
      assert.equal(s.keyedAnnounces - before.keyedAnnounces, 20, 'each from its keyed notification');
      assert.equal(s.catchUps, before.catchUps, 'no catch-up query was needed');

      // A notification after a gap (one B never heard of) is not trusted: B catches up instead,
      // and the catch-up announces the real rows in order.
      const sql = admin();
      await sql`SELECT pg_notify(${a.channel}, ${'k:500:["a:mallory"]'})`;
      await sql`SELECT pg_notify(${a.channel}, ${'k:not json'})`;
      await until(() => b.stats().catchUps > s.catchUps, 'the gap made B catch up');
      await send(a, A('dave'));
      await until(() => got.length === 21, 'the next real commit is announced');
      assert.deepEqual(got.at(-1), { keys: [A('dave')], seq: 21 });
      assert.ok(!got.some((e) => e.keys.includes('a:mallory')), 'nothing announced from a forged gap');
    } catch (err) {
      noteFailure();
      throw err;
    }
  });
});
