// Retention on one schema shared by two daemons' stores: a run held by another daemon is not
// repeated (its lock record), a lock its dead daemon left is taken over once it expires, and the
// last run's report is what every daemon lists.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { ManualClock } from '../../src/engine/clock.js';
import { silentLogger } from '../../src/engine/log.js';
import { RetentionBook } from '../../src/engine/retention.js';
import type { Caller } from '../../src/engine/mail-engine.js';
import { keyOfAccount, type AccountRecord, type NewAccount } from '../../src/store/types.js';
import { freshSchema, pgSkip } from './support/pg.js';

const opened: PostgresStore[] = [];
after(async () => {
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

const person = (id: string, operator = false): NewAccount => ({
  id,
  kind: 'agent',
  label: id,
  permissions: { send: true, read: true, urgent: false, operator },
  bindProvider: null,
  secretDigest: `digest-${id}`,
  createdAt: 1_000,
});

describe('postgres: retention across two daemons', { skip: pgSkip }, () => {
  it('runs on one daemon at a time, takes over an expired lock, and shares its report', async () => {
    const { spec } = await freshSchema('retention_shared');
    const a = await openPostgresStore({ spec, max: 4 });
    const b = await openPostgresStore({ spec, max: 4 });
    opened.push(a, b);
    const clock = new ManualClock();
    await a.addAccount(person('root', true));
    await a.addAccount(person('bob'));
    const op: Caller = { account: (await a.getAccount('root')) as AccountRecord, session: null };
    const onA = new RetentionBook({ store: a, clock, log: silentLogger, hostId: 'host-a' });
    const onB = new RetentionBook({ store: b, clock, log: silentLogger, hostId: 'host-b' });
    const sent = await a.appendMessage(
      {
        id: 'm-old',
        threadId: 'm-old',
        fromAccount: 'root',
        fromSession: null,
        fromKind: 'agent',
        toAddress: 'bob',
        toKey: keyOfAccount('bob'),
        subject: 's',
        body: 'b',
        replyTo: null,
        correlation: null,
        refs: [],
        priority: 'normal',
        createdAt: clock.now(),
        idempotencyKey: null,
        fingerprint: null,
      },
      0,
    );
    assert.equal(sent.kind, 'created');
    await a.ack({ account: 'bob', sessionKey: null, rooms: [] }, [{ seq: sent.message.seq, toKey: keyOfAccount('bob') }], clock.now());
    await onA.set(op, { account: 'bob', days: 1 });
    clock.advance(2 * 24 * 3600_000);

    // Another daemon is mid-run: its lock stands, nothing is done here.
    await b.putRecord({ kind: 'retention_lock', id: 'run', value: JSON.stringify({ host: 'host-c', until: clock.now() + 60_000 }), updatedAt: clock.now() });
    const held = await onA.run(op);
    assert.equal(held.ran, false);
    assert.notEqual(await b.getMessage('m-old'), null);
    assert.equal((await onB.list(op)).last_run, null);

    // It died: once its lock expires, a run takes it over and does the work.
    clock.advance(61_000);
    const ran = await onA.run(op);
    assert.equal(ran.ran, true);
    assert.equal(ran.messages_deleted, 1);
    assert.equal(await b.getMessage('m-old'), null);
    assert.equal(await b.getRecord('retention_lock', 'run'), null, 'released after the run');
    assert.deepEqual((await onB.list(op)).last_run, ran, "the other daemon lists this daemon's run");
    assert.deepEqual((await onB.list(op)).settings, [{ account: 'bob', days: 1, set_at: new Date(clock.now() - 2 * 24 * 3600_000 - 61_000).toISOString() }]);
    await onA.close();
    await onB.close();
  });
});
