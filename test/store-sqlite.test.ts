import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openStore } from '../src/store/index.js';
import { pageSql } from '../src/store/sqlite/page-query.js';
import { openSqliteStore, type SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { keyOfLineage } from '../src/store/types.js';
import { A, R, account, item, message, q, runStoreConformance, scope, send, seqs, session } from './support/store-conformance.js';

const dir = mkdtempSync(join(tmpdir(), 'm4a-store-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshPath = () => join(dir, `store-${++files}.db`);

runStoreConformance('sqlite file', async () => openSqliteStore({ path: freshPath() }));
runStoreConformance('sqlite :memory:', async () => openSqliteStore({ path: ':memory:' }));

describe('sqlite store', () => {
  const open: SqliteStore[] = [];
  const openAt = (path: string) => {
    const s = openSqliteStore({ path });
    open.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });

  it('keeps messages, acks, counters, rooms, sessions and meta across close and reopen', async () => {
    const path = freshPath();
    const first = openAt(path);
    await first.addAccount(account('alice'));
    await first.addRoom('lobby', 1);
    await first.addMember('lobby', 'alice');
    await first.initMeta('schema-owner', 'me');
    await first.registerSession(session('alice', 's1'));
    await first.registerSession(session('alice', 's2', { predecessor: 's1', createdAt: 3_000 }));
    const me = scope('alice', 's1', ['lobby']);
    const ms = [
      await send(first, A('alice')),
      await send(first, A('alice')),
      await send(first, keyOfLineage('alice', 's1')),
      await send(first, R('lobby')),
      await send(first, R('lobby')),
    ];
    await first.ack(me, [item(ms[0]!), item(ms[2]!), item(ms[3]!)], 42);
    const pageBefore = await first.page(me, q());
    const sessionsBefore = await first.listSessions();
    await first.close();

    const again = openAt(path);
    assert.equal(await again.headSeq(), 5);
    assert.deepEqual(await again.page(me, q()), pageBefore);
    assert.deepEqual(seqs(await again.page(me, q({ pendingOnly: true }))), [2, 5]);
    assert.equal(await again.unread(me), 2);
    assert.deepEqual(await again.ack(me, [item(ms[0]!)], 99), [{ seq: 1, ackedAt: 42, fresh: false }]);
    assert.deepEqual(await again.listSessions(), sessionsBefore);
    assert.equal((await again.getSession('alice', 's2'))?.lineage, 's1');
    assert.deepEqual(await again.roomsOf('alice'), ['lobby']);
    assert.equal(await again.getMeta('schema-owner'), 'me');
    assert.equal((await again.findAccountByDigest(account('alice').secretDigest))?.id, 'alice');
  });

  it('keeps seqs strictly increasing across reopen', async () => {
    const path = freshPath();
    const first = openAt(path);
    for (let i = 0; i < 3; i++) await send(first, A('bob'));
    await first.close();
    const again = openAt(path);
    assert.equal((await send(again, A('bob'))).seq, 4);
    assert.equal(await again.headSeq(), 4);
  });

  it('shares one transaction among appends made in the same turn', async () => {
    const store = openAt(freshPath());
    const before = store.stats();
    const outs = await Promise.all(Array.from({ length: 100 }, () => store.appendMessage(message(A('bob')), 0)));
    const spent = store.stats().commits - before.commits;
    assert.ok(spent < 100, `100 appends took ${spent} commits`);
    assert.equal(spent, 1);
    assert.deepEqual(outs.map((o) => o.message.seq), Array.from({ length: 100 }, (_, i) => i + 1));
    assert.equal(await store.unread(scope('bob')), 100);
  });

  it('evaluates an idempotent pair in one batch as created, then duplicate', async () => {
    const store = openAt(freshPath());
    const before = store.stats().appendBatches;
    const m = message(A('bob'), { fromAccount: 'alice', idempotencyKey: 'k', fingerprint: 'f' });
    const [a, b] = await Promise.all([store.appendMessage(m, 0), store.appendMessage({ ...m, id: 'retry' }, 0)]);
    assert.equal(store.stats().appendBatches - before, 1, 'one batch');
    assert.equal(a.kind, 'created');
    assert.deepEqual(b, { kind: 'duplicate', message: a.message });
    assert.equal(await store.headSeq(), 1);
  });

  it('rejects every caller of a failing batch with the original error and commits none of it', async () => {
    const store = openAt(freshPath());
    const good = message(A('bob'));
    const results = await Promise.allSettled([
      store.appendMessage(good, 0),
      store.appendMessage(message(A('bob'), { id: good.id }), 0),
    ]);
    for (const r of results) {
      assert.equal(r.status, 'rejected');
      if (r.status === 'rejected') assert.equal((r.reason as { code?: string }).code, 'SQLITE_CONSTRAINT_UNIQUE');
    }
    assert.equal(await store.headSeq(), 0);
    assert.equal(await store.getMessage(good.id), null);
    assert.equal(await store.unread(scope('bob')), 0);
    assert.equal((await send(store, A('bob'))).seq, 1, 'the store goes on');
  });

  it('flushes queued appends on close', async () => {
    const path = freshPath();
    const store = openSqliteStore({ path });
    const pending = store.appendMessage(message(A('bob')), 0);
    await store.close();
    assert.equal((await pending).kind, 'created');
    const again = openAt(path);
    assert.equal(await again.headSeq(), 1);
  });

  it('surfaces a database error as a rejected promise', async () => {
    const store = openSqliteStore({ path: freshPath() });
    await store.close();
    await assert.rejects(store.getAccount('alice'), TypeError);
    await assert.rejects(store.appendMessage(message(A('bob')), 0), TypeError);
  });

  it('pages each key by an index range, sorting only the rows each key returns', () => {
    const path = freshPath();
    openAt(path); // creates the schema
    const db = new Database(path, { readonly: true });
    try {
      for (const thread of [false, true]) {
        for (const pendingOnly of [false, true]) {
          const sql = pageSql({ keys: 3, pendingOnly, thread });
          const params = Array.from({ length: (thread ? 5 : 4) * 3 + 1 }, () => 1);
          const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { id: number; parent: number; detail: string }[];
          const text = plan.map((r) => r.detail).join('\n');
          const index = thread ? 'messages_by_thread' : 'messages_by_key';
          const scans = plan.filter((r) => /^(SEARCH|SCAN) m\b/.test(r.detail)).map((r) => r.detail);
          // One index range per key, then one fetch by seq per row kept.
          assert.equal(scans.length, 4, text);
          for (const d of scans.slice(0, 3)) {
            assert.match(d, new RegExp(`^SEARCH m USING (COVERING )?INDEX ${index} \\(\\w+=\\? AND seq>\\?\\)`), text);
          }
          assert.match(scans[3] ?? '', /^SEARCH m USING INTEGER PRIMARY KEY/, text);
          // A sort inside a per-key scan would sort the whole mailbox; the merge may sort <= limit rows.
          const byId = new Map(plan.map((r) => [r.id, r.detail]));
          for (const r of plan.filter((r) => r.detail.includes('TEMP B-TREE'))) {
            assert.doesNotMatch(byId.get(r.parent) ?? '', /CO-ROUTINE/, text);
          }
        }
      }
    } finally {
      db.close();
    }
  });
});

describe('openStore', () => {
  it('opens a store from its spec', async () => {
    const mem = await openStore('memory');
    assert.equal(mem.kind, 'memory');
    await mem.close();
    for (const spec of [`sqlite:${freshPath()}`, freshPath()]) {
      const s = await openStore(spec);
      assert.equal(s.kind, 'sqlite', spec);
      await s.close();
    }
    await assert.rejects(openStore('postgres://nowhere'), /unknown store spec/);
    await assert.rejects(openStore('sqlite:'), /names no file/);
  });
});
