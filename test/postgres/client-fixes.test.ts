// The two fixes src/store/postgres/client.ts compiles into postgres.js, each shown with the client
// as the store loads it against the real server. Without the row-counter fix, the statement after
// one cut off mid-stream resolves to an array with holes where its first rows belong.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appliedFixes, postgres } from '../../src/store/postgres/client.js';
import { withRetry } from '../../src/store/postgres/with-retry.js';
import { PG_URL, pgSkip } from './support/pg.js';

describe('postgres.js as the store loads it', { skip: pgSkip }, () => {
  it('carries both fixes (one missing: its text changed upstream; see client.ts)', () => {
    assert.deepEqual([...appliedFixes].sort(), ['next_write', 'row_counter']);
  });

  it('a statement after one cut off while its rows arrived gets every row, from the first', async () => {
    // One connection, so the second statement runs where the first was cut off.
    const sql = postgres(PG_URL, { max: 1, onnotice: () => undefined, fetch_types: false });
    try {
      // Rows of 200 bytes stream out before the sleep at row 2000 passes the statement timeout.
      await sql`SET statement_timeout = 300`;
      const cut = await sql`SELECT g, repeat('x', 200) AS pad, pg_sleep(CASE WHEN g = 2000 THEN 5 ELSE 0 END) FROM generate_series(1, 3000) g`.then(
        () => null,
        (e: { code?: string }) => e.code,
      );
      assert.equal(cut, '57014', 'the first statement is cancelled by its timeout');
      const after = await sql`SELECT g FROM generate_series(1, 3) g`;
      assert.equal(after.length, 3);
      assert.deepEqual(
        Array.from(after, (r) => r?.g),
        [1, 2, 3],
      );
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it('a statement on a connection whose backend was terminated mid-stream gets every row', async () => {
    const sql = postgres(PG_URL, { max: 1, onnotice: () => undefined, fetch_types: false, connection: { application_name: 'm4a-client-fixes' } });
    const killer = postgres(PG_URL, { max: 1, onnotice: () => undefined });
    try {
      const [me] = await sql`SELECT pg_backend_pid() AS pid`;
      // The backend streams rows, then sleeps; it is terminated while the client holds some.
      const cut = sql`SELECT g, repeat('x', 200) AS pad, pg_sleep(CASE WHEN g = 2000 THEN 5 ELSE 0 END) FROM generate_series(1, 3000) g`.then(
        () => null,
        (e: { code?: string }) => e.code ?? 'error',
      );
      await new Promise((r) => setTimeout(r, 500));
      await killer`SELECT pg_terminate_backend(${me!.pid as number})`;
      assert.notEqual(await cut, null, 'the first statement fails with its connection');
      // As the store reads: again on the reconnected connection when the dying one refused it.
      const after = await withRetry(() => sql`SELECT g FROM generate_series(1, 3) g`);
      assert.deepEqual(
        Array.from(after, (r) => r?.g),
        [1, 2, 3],
      );
    } finally {
      await sql.end({ timeout: 1 });
      await killer.end({ timeout: 1 });
    }
  });
});
