// Store.tallies on every store (what `m4a report` counts): messages stored now, not the head seq,
// after retention deleted some; tasks and approvals by state, an approval pending past its expiry
// counted as expired.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openStore } from '../src/store/index.js';
import { keyOfAccount, keyOfRoom, type Store } from '../src/store/types.js';
import { account, scope, send } from './support/store-conformance.js';
import { approval, task } from './support/task-conformance.js';
import { freshSchema, pgSkip } from './postgres/support/pg.js';

const dir = mkdtempSync(join(tmpdir(), 'm4a-tallies-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const stores: [string, () => Promise<Store>, string | false][] = [
  ['memory', () => openStore('memory'), false],
  ['sqlite', () => openStore(`sqlite:${join(dir, 'mail.db')}`), false],
  ['postgres', async () => openStore((await freshSchema('tallies')).spec), pgSkip],
];

for (const [name, open, skip] of stores) {
  describe(`Store.tallies (${name})`, { skip }, () => {
    it('counts the messages stored, tasks and approvals by state', async () => {
      const s = await open();
      try {
        const zero = await s.tallies(5_000);
        assert.equal(zero.messages, 0);
        assert.ok(Object.values(zero.tasks).every((n) => n === 0) && Object.values(zero.approvals).every((n) => n === 0), JSON.stringify(zero));

        for (const id of ['alice', 'bob']) await s.addAccount(account(id));
        await s.addRoom('ops', 1_000);
        const old = [await send(s, keyOfAccount('alice')), await send(s, keyOfAccount('alice'))];
        await send(s, keyOfAccount('bob'));
        await send(s, keyOfRoom('ops'));
        await s.ack(
          scope('alice'),
          old.map((m) => ({ seq: m.seq, toKey: m.toKey })),
          20_000,
        );
        const pruned = await s.pruneMail({ target: { account: 'alice' }, before: 1_000_000, after: 0, limit: 100, byMessage: [] });
        assert.equal(pruned.deleted, 2);

        await s.createTask(task('t-1'), 0);
        await s.createTask(task('t-2', { state: 'working' }), 0);
        await s.createTask(task('t-3', { state: 'completed' }), 0);
        await s.createApproval(approval('a-1'));
        await s.createApproval(approval('a-2', { expiresAt: 4_000 }));
        await s.createApproval(approval('a-3', { expiresAt: 9_000 }));
        await s.createApproval(approval('a-4'));
        assert.ok(await s.decideApproval('a-4', 'rejected', 'no', 2_000));

        const t = await s.tallies(5_000);
        assert.equal(await s.headSeq(), 4);
        assert.equal(t.messages, 2, 'the two retention deleted are not counted');
        assert.deepEqual(t.tasks, { submitted: 1, working: 1, input_required: 0, auth_required: 0, completed: 1, failed: 0, canceled: 0, rejected: 0 });
        assert.deepEqual(t.approvals, { pending: 2, approved: 0, rejected: 1, expired: 1 });
        assert.deepEqual((await s.tallies(10_000)).approvals, { pending: 1, approved: 0, rejected: 1, expired: 2 }, 'expired as of the time asked');
      } finally {
        await s.close();
      }
    });
  });
}
