// The PostgreSQL store: the conformance suite every store passes, then what sharing adds.
import { describe } from 'node:test';
import { runStoreConformance } from '../support/store-conformance.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
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
