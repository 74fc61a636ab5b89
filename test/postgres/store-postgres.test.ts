// The PostgreSQL store: the conformance suite every store passes, then what sharing adds, and
// schema upgrades that change rows.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runStoreConformance } from '../support/store-conformance.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { admin, freshSchema, pgSkip } from './support/pg.js';

describe('postgres store conformance', { skip: pgSkip }, () => {
  // One schema for the file, emptied before each case (a schema per case costs its migration).
  let spec: Promise<{ schema: string; spec: string }> | null = null;
  runStoreConformance('postgres', async () => {
    spec ??= freshSchema('conf');
    const { schema, spec: s } = await spec;
    const sql = admin();
    await sql.unsafe(`SET search_path TO "${schema}"`);
    const tables = await sql<{ t: string }[]>`SELECT tablename AS t FROM pg_tables WHERE schemaname = ${schema} AND tablename NOT IN ('m4a_migrations', 'message_head')`;
    // DELETE, not TRUNCATE: on these tiny tables it is ten times faster.
    for (const t of tables) await sql.unsafe(`DELETE FROM "${schema}"."${t.t}"`);
    await sql.unsafe(`UPDATE "${schema}".message_head SET seq = 0`).catch(() => undefined);
    await sql.end();
    return openPostgresStore({ spec: s, max: 4 });
  });
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
      assert.deepEqual((await store.namesOf('alice')).map((n) => [n.name, n.kind, n.lineage]), [
        ['@billing', 'slug', 's3'],
        ['@front', 'alias', 's1'],
        ['@kept', 'alias', 's2'],
        ['web', 'slug', 's1'],
      ]);
    } finally {
      await store.close();
    }
  });
});
