import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openStore } from '../src/store/index.js';
import { MIGRATIONS } from '../src/store/sqlite/migrations.js';
import { pageSql } from '../src/store/sqlite/page-query.js';
import { openSqliteStore, prefixUpperBound, type SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { prepareStatements } from '../src/store/sqlite/statements.js';
import { prepareTaskStatements } from '../src/store/sqlite/tasks.js';
import { keyOfLineage } from '../src/store/types.js';
import { A, R, account, item, message, q, runStoreConformance, scope, send, seqs, session } from './support/store-conformance.js';
import { task } from './support/task-conformance.js';
import { runLeaseConformance } from './support/lease-conformance.js';

const dir = mkdtempSync(join(tmpdir(), 'm4a-store-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshPath = () => join(dir, `store-${++files}.db`);

runStoreConformance('sqlite file', async () => openSqliteStore({ path: freshPath() }));
runStoreConformance('sqlite :memory:', async () => openSqliteStore({ path: ':memory:' }));
runLeaseConformance('sqlite file', async () => openSqliteStore({ path: freshPath() }));
runLeaseConformance('sqlite :memory:', async () => openSqliteStore({ path: ':memory:' }));

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

  it('keeps names and everyone rooms across close and reopen', async () => {
    const path = freshPath();
    const first = openAt(path);
    await first.addAccount(account('alice'));
    await first.addRoom('all', 1, { everyone: true });
    await first.registerSession(session('alice', 's1', { slugBase: 'web' }));
    await first.addAlias('alice', 's1', 'front');
    const names = await first.listNames();
    await first.close();
    const again = openAt(path);
    assert.deepEqual(await again.listNames(), names);
    assert.equal((await again.getSession('alice', 's1'))?.slug, 'web');
    assert.equal((await again.registerSession(session('alice', 's2', { slugBase: 'web' }))).slug, 'web-2');
    assert.equal((await again.getRoom('all'))?.everyone, true);
    await again.addAccount(account('bob'));
    assert.deepEqual(await again.roomsOf('bob'), ['all']);
  });

  it('upgrades a database made at migration 1 in place, losing nothing', async () => {
    const path = freshPath();
    // The database as the first build left it: migration 1 only, rows in its columns.
    const old = new Database(path);
    old.exec(MIGRATIONS[0] as string);
    old.pragma('user_version = 1');
    const a = account('alice');
    old
      .prepare(
        `INSERT INTO accounts (id, kind, label, perm_send, perm_read, perm_urgent, perm_operator, bind_provider,
         secret_digest, created_at) VALUES (?, ?, ?, 1, 1, 0, 0, NULL, ?, ?)`,
      )
      .run(a.id, a.kind, a.label, a.secretDigest, a.createdAt);
    old.prepare('INSERT INTO rooms (name, created_at) VALUES (?, ?)').run('lobby', 7);
    old.prepare('INSERT INTO members (room, account, acked) VALUES (?, ?, 0)').run('lobby', 'alice');
    const insertSession = old.prepare(
      `INSERT INTO sessions (account, id, lineage, host_id, pid, start_time, exe, uid, c_provider,
         c_provider_session_id, c_model, c_cwd, d_working_on, d_role, d_parent, created_at, last_seen,
         ended_at, successor)
       VALUES (?, ?, 's1', 'host-1', 4242, 77, '/usr/bin/agent', 1000, 'claude', ?, NULL, '/w/web', 'parser',
         NULL, NULL, ?, ?, ?, ?)`,
    );
    insertSession.run('alice', 's1', 'ps-s1', 2_000, 2_000, 3_000, 's2');
    insertSession.run('alice', 's2', 'ps-s1', 3_000, 3_500, null, null);
    const mail = message(R('lobby'));
    old
      .prepare(
        `INSERT INTO messages (id, thread_id, from_account, from_session, from_kind, to_address, to_key, subject,
         body, reply_to, correlation, refs, priority, created_at, idempotency_key, fingerprint)
       VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, NULL, NULL, '[]', ?, ?, NULL, NULL)`,
      )
      .run(mail.id, mail.threadId, mail.fromAccount, mail.fromKind, mail.toAddress, mail.toKey, mail.subject, mail.body, mail.priority, mail.createdAt);
    old.prepare('INSERT INTO mailbox_counts (to_key, total, unacked) VALUES (?, 1, 1)').run(mail.toKey);
    old.close();

    const store = openAt(path);
    const version = new Database(path, { readonly: true });
    try {
      assert.equal(version.pragma('user_version', { simple: true }), MIGRATIONS.length);
      assert.equal(MIGRATIONS.length, 12);
    } finally {
      version.close();
    }
    assert.deepEqual(await store.getAccount('alice'), { ...a, bornSeq: 0, contactPolicy: 'open' });
    assert.deepEqual(await store.getSession('alice', 's1'), {
      account: 'alice',
      id: 's1',
      lineage: 's1',
      hostId: 'host-1',
      pid: 4242,
      startTime: 77,
      exe: '/usr/bin/agent',
      uid: 1000,
      corroborated: { provider: 'claude', providerSessionId: 'ps-s1', cwd: '/w/web' },
      declared: { workingOn: 'parser' },
      createdAt: 2_000,
      lastSeen: 2_000,
      endedAt: 3_000,
      successor: 's2',
      slug: null,
    });
    assert.deepEqual(
      (await store.listSessions()).map((s) => [s.id, s.lineage, s.slug]),
      [
        ['s1', 's1', null],
        ['s2', 's1', null],
      ],
    );
    assert.deepEqual(
      (await store.lineageSessions('alice', 's1')).map((s) => s.id),
      ['s1', 's2'],
    );
    assert.deepEqual(await store.listRooms(), [{ name: 'lobby', createdAt: 7, members: ['alice'], everyone: false, open: false, team: false, leaders: [] }]);
    assert.deepEqual(await store.getMessage(mail.id), { ...mail, seq: 1 });
    const me = scope('alice', 's1', ['lobby']);
    assert.equal(await store.unread(me), 1);
    assert.deepEqual(await store.listNames(), []);

    // The upgraded database takes the new features: a legacy lineage stays unnamed as it goes on,
    // takes aliases, and new lineages get slugs; everyone rooms reach old and new accounts.
    const s3 = await store.registerSession(session('alice', 's3', { predecessor: 's2', slugBase: 'web', createdAt: 4_000 }));
    assert.deepEqual([s3.lineage, s3.slug], ['s1', null]);
    assert.equal(await store.addAlias('alice', 's1', 'old'), 'ok');
    assert.equal((await store.registerSession(session('alice', 's4', { slugBase: 'old' }))).slug, 'old-2');
    assert.equal(await store.addRoom('all', 9, { everyone: true }), 'ok');
    await store.addAccount(account('bob'));
    assert.deepEqual(await store.roomsOf('alice'), ['all', 'lobby']);
    assert.deepEqual(await store.roomsOf('bob'), ['all']);
    await store.ack(me, [item({ seq: 1, toKey: mail.toKey })], 10);
    assert.equal(await store.unread(me), 0);
    assert.equal((await store.createTask(task('t-1', { toAccount: 'alice' }), 0)).kind, 'created');
    const change = await send(store, A('bob'), { task: { task_id: 't-1', state: 'working', version: 2 } });
    assert.deepEqual((await store.getMessage(change.id))?.task, { task_id: 't-1', state: 'working', version: 2 }, "mail after the upgrade keeps a task's change");
    assert.equal('task' in (await store.getMessage(mail.id))!, false, 'mail from before it has none');
    await store.close();

    const again = openAt(path);
    assert.equal((await again.getSession('alice', 's4'))?.slug, 'old-2');
    assert.equal(await again.unread(me), 0);
    assert.deepEqual(await again.getTask('t-1'), task('t-1', { toAccount: 'alice' }));
  });

  it('writes the aliases of a database made at migration 4 with their leading @', async () => {
    const path = freshPath();
    const old = new Database(path);
    for (const sql of MIGRATIONS.slice(0, 4)) old.exec(sql);
    old.pragma('user_version = 4');
    const name = old.prepare('INSERT INTO names (account, name, lineage, kind) VALUES (?, ?, ?, ?)');
    name.run('alice', 'web', 's1', 'slug');
    name.run('alice', 'front', 's1', 'alias');
    name.run('alice', 'billing', 's2', 'alias');
    name.run('alice', '@billing', 's3', 'slug'); // a slug from a directory named @billing (older builds kept the @)
    name.run('alice', '@kept', 's2', 'alias');
    old.close();
    const store = openAt(path);
    assert.deepEqual(
      (await store.namesOf('alice')).map((n) => [n.name, n.kind, n.lineage]),
      [
        ['@billing', 'slug', 's3'],
        ['@front', 'alias', 's1'],
        ['@kept', 'alias', 's2'],
        ['web', 'slug', 's1'],
      ],
    );
    await store.close();
  });

  it('refuses a database made by a newer build', () => {
    const path = freshPath();
    const db = new Database(path);
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    db.close();
    assert.throws(() => openSqliteStore({ path }), /newer than this build/);
  });

  it('finds sessions by one index range and reads slugs by index', () => {
    const path = freshPath();
    openAt(path); // creates the schema
    const db = new Database(path, { readonly: true });
    try {
      const st = prepareStatements(db);
      /** The plan's steps, each parameter bound to a placeholder value. */
      const plan = (stmt: unknown) => {
        const sql = (stmt as { source: string }).source;
        const params = Array.from(sql.matchAll(/\?/g), () => 'x');
        const named = Object.fromEntries(Array.from(sql.matchAll(/@(\w+)/g), (m) => [m[1], 'x']));
        const q = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
        return ((Object.keys(named).length ? q.all(named) : q.all(...params)) as { detail: string }[]).map((r) => r.detail);
      };
      const slugJoin = /^SEARCH n USING (COVERING )?INDEX names_by_lineage \(account=\? AND lineage=\? AND kind=\?\) LEFT-JOIN$/;
      const prefix = plan(st.sessionsByPrefix);
      assert.match(prefix[0] ?? '', /^SEARCH s USING INDEX sqlite_autoindex_sessions_1 \(account=\? AND id>\? AND id<\?\)$/, prefix.join('\n'));
      assert.match(prefix[1] ?? '', slugJoin, prefix.join('\n'));
      assert.equal(prefix.length, 2, 'no sort: the index gives id order');
      const open = plan(st.sessionsByPrefixOpen);
      assert.match(open[0] ?? '', /^SEARCH s USING INDEX sqlite_autoindex_sessions_1 \(account=\? AND id>\?\)$/, open.join('\n'));
      const lineage = plan(st.lineageSessions);
      assert.match(lineage[0] ?? '', /^SEARCH s USING INDEX sessions_by_lineage \(account=\? AND lineage=\?\)$/, lineage.join('\n'));
      assert.equal(lineage.length, 2, 'no sort: the index gives (created_at, rowid) order');
      for (const stmt of [st.getSession, st.listSessions, st.findByProviderSession]) {
        const p = plan(stmt).filter((d) => d.startsWith('SEARCH n') || d.startsWith('SCAN n'));
        assert.match(p[0] ?? '', slugJoin, p.join('\n'));
      }
      const range = plan(st.namesInRange);
      assert.match(range[0] ?? '', /^SEARCH names USING PRIMARY KEY \(account=\? AND name>\? AND name<\?\)$/, range.join('\n'));
      const pruned = plan(st.prunedLineages);
      assert.match(pruned[0] ?? '', /^SEARCH sessions USING INDEX sessions_by_end \(ended_at<\?\)$/, pruned.join('\n'));
    } finally {
      db.close();
    }
  });

  it('lists tasks by one backward index range with no sort, and finds children and retries by index', () => {
    const path = freshPath();
    openAt(path); // creates the schema
    const db = new Database(path, { readonly: true });
    try {
      const st = prepareTaskStatements(db);
      const plan = (stmt: unknown) => {
        const sql = (stmt as { source: string }).source;
        return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array.from(sql.matchAll(/\?/g), () => 'x')) as { detail: string }[]).map((r) => r.detail);
      };
      for (const [stmt, index, terms] of [
        [st.assigned, 'tasks_by_to', 'to_account=? AND last_seq<?'],
        [st.assignedInState, 'tasks_by_to_state', 'to_account=? AND state=? AND last_seq<?'],
        [st.requested, 'tasks_by_from', 'from_account=? AND last_seq<?'],
        [st.requestedInState, 'tasks_by_from_state', 'from_account=? AND state=? AND last_seq<?'],
        [st.taskChildren, 'tasks_by_parent', 'parent_task_id=?'],
      ] as const) {
        const p = plan(stmt);
        assert.deepEqual(p, [`SEARCH tasks USING INDEX ${index} (${terms})`], `one range, no sort: ${p.join('\n')}`);
      }
      const retry = plan(st.findIdempotentTask);
      assert.match(retry[0] ?? '', /^SEARCH tasks USING INDEX tasks_by_idempotency \(from_account=\? AND idempotency_key=\? AND created_at>\?\)$/, retry.join('\n'));
    } finally {
      db.close();
    }
  });

  it('bounds a prefix range by the least string above it', () => {
    assert.equal(prefixUpperBound('s-ab'), 's-ac');
    assert.equal(prefixUpperBound('s-a\u{10FFFF}'), 's-b');
    assert.equal(prefixUpperBound('\u{D7FF}'), '\u{E000}');
    assert.equal(prefixUpperBound('k\u{FFFF}'), 'k\u{10000}');
    assert.equal(prefixUpperBound('\u{10FFFF}\u{10FFFF}'), null);
    assert.equal(prefixUpperBound(''), null);
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
    assert.deepEqual(
      outs.map((o) => o.message.seq),
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
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
    const results = await Promise.allSettled([store.appendMessage(good, 0), store.appendMessage(message(A('bob'), { id: good.id }), 0)]);
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
          const params = Array.from({ length: (thread ? 6 : 5) * 3 + 1 }, () => 1);
          const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { id: number; parent: number; detail: string }[];
          const text = plan.map((r) => r.detail).join('\n');
          const index = thread ? 'messages_by_thread' : 'messages_by_key';
          const scans = plan.filter((r) => /^(SEARCH|SCAN) m\b/.test(r.detail)).map((r) => r.detail);
          // One index range per key, then one fetch by seq per row kept.
          assert.equal(scans.length, 4, text);
          for (const d of scans.slice(0, 3)) {
            assert.match(d, new RegExp(`^SEARCH m USING (COVERING )?INDEX ${index} \\(\\w+=\\? AND seq>\\? AND seq<\\?\\)`), text);
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
    assert.equal(mem.shared, false, 'one daemon holds a memory store');
    await mem.close();
    for (const spec of [`sqlite:${freshPath()}`, freshPath()]) {
      const s = await openStore(spec);
      assert.equal(s.kind, 'sqlite', spec);
      assert.equal(s.shared, false, 'one daemon holds a SQLite store (the data directory lock)');
      await s.close();
    }
    await assert.rejects(openStore('mysql://nowhere'), /unknown store spec/);
    await assert.rejects(openStore('sqlite:'), /names no file/);
  });
});
