// The SQLite store's leases and pooled tasks beyond the conformance suite: durability across
// reopen, the upgrade from migration 7, claims of one turn in one transaction, and query plans.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { MIGRATIONS } from '../src/store/sqlite/migrations.js';
import { prepareLeaseStatements } from '../src/store/sqlite/leases.js';
import { openSqliteStore, type SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { prepareTaskStatements } from '../src/store/sqlite/tasks.js';
import { taskParams } from '../src/store/sqlite/task-rows.js';
import { claimOpts, lease } from './support/lease-conformance.js';
import { pooled } from './support/pool-conformance.js';
import { task, taskQuery } from './support/task-conformance.js';

const dir = mkdtempSync(join(tmpdir(), 'm4a-leases-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshPath = () => join(dir, `store-${++files}.db`);

describe('sqlite store: leases and pooled tasks', () => {
  const open: SqliteStore[] = [];
  const openAt = (path: string) => {
    const s = openSqliteStore({ path });
    open.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });

  it('keeps leases, their ends and the epochs across close and reopen', async () => {
    const path = freshPath();
    const first = openAt(path);
    const a = await first.claimLease(lease('l-1'), claimOpts(1_000));
    assert.equal(a.kind, 'claimed');
    await first.endLease('l-1', 1, 'released', 2_000);
    await first.settleLease('l-1');
    await first.claimLease(lease('l-2', { createdAt: 2_000 }), claimOpts(2_000));
    await first.createTask(pooled('t-1', {}, { attempt: 2, leaseId: 'l-2', leaseEpoch: 2 }), 0);
    const before = [await first.getLease('l-1'), await first.getLease('l-2'), await first.getTask('t-1')];
    await first.close();
    const again = openAt(path);
    assert.deepEqual([await again.getLease('l-1'), await again.getLease('l-2'), await again.getTask('t-1')], before);
    await again.endLease('l-2', 2, 'released', 3_000);
    await again.settleLease('l-2');
    assert.equal(await again.pruneLeases(10_000), 2);
    const next = await again.claimLease(lease('l-3', { createdAt: 4_000 }), claimOpts(4_000));
    assert.equal(next.kind === 'claimed' && next.lease.epoch, 3, 'the epoch counts on after reopen and pruning');
  });

  it('runs the claims of one turn in one transaction, each seeing the ones before it, and flushes them on close', async () => {
    const path = freshPath();
    const store = openAt(path);
    const before = store.stats().commits;
    const outs = await Promise.all(Array.from({ length: 50 }, (_, i) => store.claimLease(lease(`l-${i}`, { holderSession: `s-${i}` }), claimOpts(1_000))));
    assert.equal(store.stats().commits - before, 1, 'one commit');
    assert.deepEqual(
      outs.map((o) => o.kind),
      ['claimed', ...Array.from({ length: 49 }, () => 'conflict')],
    );
    const pending = store.claimLease(lease('l-other', { space: 'task:t-2' }), claimOpts(1_000));
    await store.close();
    assert.equal((await pending).kind, 'claimed');
    const again = openAt(path);
    assert.equal((await again.getLease('l-other'))?.epoch, 1);
  });

  it('upgrades a database made at migration 7: its tasks come back ordinary, and leases work', async () => {
    const path = freshPath();
    const old = new Database(path);
    for (const sql of MIGRATIONS.slice(0, 7)) old.exec(sql);
    old.pragma('user_version = 7');
    const t = task('t-old', { lastSeq: 3 });
    // The row as migration 7's columns hold it.
    const row = Object.fromEntries(Object.entries(taskParams(t)).filter(([k]) => !k.startsWith('pool_') && k !== 'fail_reason'));
    const cols = Object.keys(row);
    old.prepare(`INSERT INTO tasks (${cols.join(', ')}) VALUES (${cols.map((c) => `@${c}`).join(', ')})`).run(row);
    old.close();
    const store = openAt(path);
    assert.deepEqual(await store.getTask('t-old'), t);
    assert.deepEqual(await store.listTasks(taskQuery('bob')), [t]);
    assert.deepEqual(await store.poolTasks({ room: 'ops', limit: 10 }), []);
    assert.equal((await store.claimLease(lease('l-1'), claimOpts(1_000))).kind, 'claimed');
  });

  it('reads leases and pools by index ranges', () => {
    const path = freshPath();
    openAt(path); // creates the schema
    const db = new Database(path, { readonly: true });
    try {
      const plan = (stmt: unknown) => {
        const sql = (stmt as { source: string }).source;
        const named = Object.fromEntries(Array.from(sql.matchAll(/@(\w+)/g), (m) => [m[1], 'x']));
        const q = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
        return ((Object.keys(named).length ? q.all(named) : q.all(...Array.from(sql.matchAll(/\?/g), () => 'x'))) as { detail: string }[]).map((r) => r.detail);
      };
      const ls = prepareLeaseStatements(db);
      const ts = prepareTaskStatements(db);
      for (const [stmt, search] of [
        [ls.countHeld, 'leases USING INDEX leases_live_by_holder (holder_account=? AND holder_session=? AND expires_at>?)'],
        [ls.liveOfSpace, 'leases USING INDEX leases_live_by_space (space=?)'],
        [ls.expire, 'leases USING INDEX leases_live_by_expiry (expires_at<?)'],
        [ls.endSession, 'leases USING INDEX leases_live_by_holder (holder_account=? AND holder_session=? AND expires_at>?)'],
        [ls.endAccount, 'leases USING INDEX leases_live_by_holder (holder_account=?)'],
        [ls.unsettled, 'leases USING INDEX leases_unsettled (ended_at>?)'],
        [ls.prune, 'leases USING INDEX leases_settled_by_end (ended_at<?)'],
        [ts.poolOffer, 'tasks USING INDEX tasks_by_pool_offer (pool_room=? AND state=?)'],
        [ts.poolAll, 'tasks USING INDEX tasks_by_pool (pool_room=? AND last_seq<?)'],
      ] as const) {
        const p = plan(stmt);
        assert.ok(p.includes(`SEARCH ${search}`), p.join('\n'));
        assert.ok(!p.some((d) => d.startsWith('SCAN')), p.join('\n'));
      }
      for (const stmt of [ls.unsettled, ts.poolOffer, ts.poolAll]) assert.ok(!plan(stmt).some((d) => d.includes('TEMP B-TREE')), 'index order, no sort');
    } finally {
      db.close();
    }
  });
});
