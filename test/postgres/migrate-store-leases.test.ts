// migrate-store and leases: pooled tasks move with their pool columns and fail reason, the epochs
// of (space, resource) move so no fencing token is handed out again, and the leases stay behind.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { migrateSqliteToPostgres } from '../../src/store/migrate-store.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { claimOpts, lease } from '../support/lease-conformance.js';
import { pooled } from '../support/pool-conformance.js';
import { task, taskQuery } from '../support/task-conformance.js';
import { freshSchema, noteFailure, pgSkip } from './support/pg.js';

const dir = mkdtempSync(join(tmpdir(), 'm4a-migrate-leases-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('postgres: migrate-store with leases and pooled tasks', { skip: pgSkip }, () => {
  it('moves pooled tasks and lease epochs, leaves the leases behind, and a second run copies nothing', async () => {
    try {
      const path = join(dir, 'mail.db');
      const sqlite = openSqliteStore({ path });
      // Three claims of t-1: the third still live, holding the task.
      for (let i = 1; i <= 3; i++) {
        const out = await sqlite.claimLease(lease(`l-${i}`, { createdAt: i * 1_000, attempt: i }), claimOpts(i * 1_000));
        assert.equal(out.kind, 'claimed');
        if (i < 3) await sqlite.endLease(`l-${i}`, i, 'expired', i * 1_000 + 1);
      }
      const held = pooled('t-1', { state: 'working', lastSeq: 5 }, { attempt: 3, retryDelaySecs: 30, availableAt: 2_500, leaseId: 'l-3', leaseEpoch: 3 });
      const dead = pooled('t-2', { state: 'failed', failReason: 'lease_exhausted', lastSeq: 6 }, { attempt: 3 });
      const open = pooled('t-3', { lastSeq: 7 }, { room: 'dev' });
      for (const t of [held, dead, open, task('t-plain', { lastSeq: 8 })]) await sqlite.createTask(t, 0);
      const before = {
        tasks: await sqlite.listTasks(taskQuery('alice', { role: 'requested' })),
        dead: await sqlite.listTasks(taskQuery('alice', { role: 'requested', state: 'failed', failReason: 'lease_exhausted' })),
        pool: await sqlite.poolTasks({ room: 'ops', limit: 10 }),
        offered: await sqlite.poolTasks({ room: 'dev', offeredAt: 1_000, limit: 10 }),
      };
      await sqlite.close();

      const { spec } = await freshSchema('migrate_leases');
      const first = await migrateSqliteToPostgres(path, spec);
      assert.deepEqual(first.tables.tasks, { source: 4, copied: 4 });
      assert.deepEqual(first.tables.leaseEpochs, { source: 1, copied: 1 });
      const pg = await openPostgresStore({ spec, max: 2 });
      try {
        assert.deepEqual(
          {
            tasks: await pg.listTasks(taskQuery('alice', { role: 'requested' })),
            dead: await pg.listTasks(taskQuery('alice', { role: 'requested', state: 'failed', failReason: 'lease_exhausted' })),
            pool: await pg.poolTasks({ room: 'ops', limit: 10 }),
            offered: await pg.poolTasks({ room: 'dev', offeredAt: 1_000, limit: 10 }),
          },
          before,
        );
        assert.equal(await pg.getLease('l-3'), null, 'leases stay behind');
        assert.deepEqual(await pg.unsettledLeases(10), []);
        const next = await pg.claimLease(lease('l-4', { createdAt: 20_000, expiresAt: 30_000 }), claimOpts(20_000));
        assert.equal(next.kind === 'claimed' && next.lease.epoch, 4, 'the epoch counts on from the source');

        const second = await migrateSqliteToPostgres(path, spec);
        for (const [name, c] of Object.entries(second.tables)) assert.equal(c.copied, 0, `${name}: nothing copied twice`);
        const again = await pg.claimLease(lease('l-5', { space: 'task:t-1', createdAt: 40_000, expiresAt: 50_000 }), claimOpts(40_000));
        assert.equal(again.kind === 'claimed' && again.lease.epoch, 5, 'a second run never lowers an epoch');
      } finally {
        await pg.close();
      }
    } catch (err) {
      noteFailure();
      throw err;
    }
  });
});
