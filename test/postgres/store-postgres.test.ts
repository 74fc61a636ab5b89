// The PostgreSQL store: the conformance suites every store passes (mail, tasks, leases), then what
// sharing adds, and schema upgrades that change rows.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runLeaseConformance } from '../support/lease-conformance.js';
import { runStoreConformance } from '../support/store-conformance.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { STORE_METHODS } from '../../src/store/types.js';
import { isConnectionLoss } from '../../src/store/postgres/with-retry.js';
import { until } from '../support/until.js';
import { admin, freshSchema, pgSkip } from './support/pg.js';

// One schema for the file, emptied before each case (a schema per case costs its migration).
let conf: Promise<{ schema: string; spec: string }> | null = null;
async function emptied(): Promise<PostgresStore> {
  conf ??= freshSchema('conf');
  const { schema, spec: s } = await conf;
  const sql = admin();
  await sql.unsafe(`SET search_path TO "${schema}"`);
  const tables = await sql<{ t: string }[]>`SELECT tablename AS t FROM pg_tables WHERE schemaname = ${schema} AND tablename NOT IN ('m4a_migrations', 'message_head')`;
  // DELETE, not TRUNCATE: on these tiny tables it is ten times faster.
  for (const t of tables) await sql.unsafe(`DELETE FROM "${schema}"."${t.t}"`);
  await sql.unsafe(`UPDATE "${schema}".message_head SET seq = 0`).catch(() => undefined);
  await sql.end();
  return openPostgresStore({ spec: s, max: 4 });
}

describe('postgres store conformance', { skip: pgSkip }, () => {
  runStoreConformance('postgres', emptied);
});

describe('postgres lease conformance', { skip: pgSkip }, () => {
  runLeaseConformance('postgres', emptied);
});

describe('postgres schema upgrades', { skip: pgSkip }, () => {
  it('writes the aliases of a schema made at migration 3 with their leading @', async () => {
    const { schema, spec } = await freshSchema('upgrade');
    const sql = admin();
    await sql.unsafe(`SET search_path TO "${schema}"`);
    for (const m of MIGRATIONS.slice(0, 3)) await sql.unsafe(m);
    await sql.unsafe('CREATE TABLE m4a_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    await sql.unsafe('INSERT INTO m4a_migrations (version) VALUES (1), (2), (3)');
    await sql.unsafe(`INSERT INTO names (account, name, lineage, kind) VALUES
      ('alice', 'web', 's1', 'slug'), ('alice', 'front', 's1', 'alias'), ('alice', 'billing', 's2', 'alias'),
      ('alice', '@billing', 's3', 'slug'), ('alice', '@kept', 's2', 'alias')`);
    await sql.end();
    const store = await openPostgresStore({ spec, max: 2 });
    try {
      assert.deepEqual(
        (await store.namesOf('alice')).map((n) => [n.name, n.kind, n.lineage]),
        [
          ['@billing', 'slug', 's3'],
          ['@front', 'alias', 's1'],
          ['@kept', 'alias', 's2'],
          ['web', 'slug', 's1'],
        ],
      );
    } finally {
      await store.close();
    }
  });
});

describe('postgres store: a connection killed under a call', { skip: pgSkip }, () => {
  it('a read (STORE_METHODS) runs once more on a new connection; a write is not repeated', async () => {
    assert.equal(STORE_METHODS.getMeta, 'read');
    assert.equal(STORE_METHODS.setRoomOpen, 'write');
    const { schema, spec } = await freshSchema('retry');
    const app = `m4a-retry-${schema.slice(-8)}`;
    const store = await openPostgresStore({ spec, max: 2, applicationName: app });
    assert.equal(store.shared, true, 'several daemons may share a PostgreSQL store');
    const sql = admin();
    const locks: { release: () => Promise<void> }[] = [];
    // A table lock makes the store's statement wait in flight, so its backend can be killed then.
    const lockTable = (table: string) => {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const taken = new Promise<void>((r) => (locked = r));
      const tx = sql.begin(async (t) => {
        await t.unsafe(`LOCK TABLE "${schema}"."${table}" IN ACCESS EXCLUSIVE MODE`);
        locked();
        await released;
      });
      const lock = { taken, release: async () => (release(), await tx) };
      locks.push(lock);
      return lock;
    };
    const waiting = async (): Promise<number[]> =>
      (await sql<{ pid: number }[]>`SELECT pid FROM pg_stat_activity WHERE application_name = ${app} AND wait_event_type = 'Lock'`).map((r) => r.pid);
    const oneWaiting = async (): Promise<number[] | null> => {
      const w = await waiting();
      return w.length === 1 ? w : null;
    };
    try {
      await store.initMeta('k', 'v');
      await store.addRoom('r', 1);

      const meta = lockTable('meta');
      await meta.taken;
      const read = store.getMeta('k');
      const [first] = await until('the read waits on the lock', oneWaiting);
      await sql`SELECT pg_terminate_backend(${first as number})`;
      await until('the read waits again, on another connection', async () => ((await waiting()).some((p) => p !== first) ? true : null));
      await meta.release();
      assert.equal(await read, 'v');

      const rooms = lockTable('rooms');
      await rooms.taken;
      const write = store.setRoomOpen('r', true).then(
        () => null,
        (err: unknown) => err as { code?: string },
      );
      const [writer] = await until('the write waits on the lock', oneWaiting);
      await sql`SELECT pg_terminate_backend(${writer as number})`;
      const err = await write;
      assert.ok(isConnectionLoss(err), `the write failed with its connection: ${String(err?.code)}`);
      assert.deepEqual(await waiting(), [], 'the write did not run again');
      await rooms.release();
      assert.equal((await store.getRoom('r'))?.open, false);
    } finally {
      // A lock left held (a failed assertion) would block dropping the schema at the end.
      for (const l of locks) await l.release();
      await store.close();
    }
  });
});
