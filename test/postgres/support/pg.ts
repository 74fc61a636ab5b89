// PostgreSQL for the tests: the server on this machine (127.0.0.1:5432, user postgres, database
// test; M4A_TEST_PG_URL overrides), one fresh schema per test file or per store, dropped at the end
// (kept when a test failed, M4A_KEEP_SCHEMAS=1 keeps all). Without a reachable server the files
// skip with the reason printed, unless M4A_REQUIRE_POSTGRES=1 (CI), which turns the skip into a failure.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { after, it, type TestContext } from 'node:test';
import postgres from 'postgres';

export const PG_URL = process.env.M4A_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REQUIRED = process.env.M4A_REQUIRE_POSTGRES === '1';

/** Resolves to null when the server accepts connections, else the reason it does not. */
async function unreachable(): Promise<string | null> {
  const u = new URL(PG_URL);
  const host = u.hostname || '127.0.0.1';
  const port = Number(u.port || 5432);
  const tcp = await new Promise<string | null>((resolve) => {
    const s = connect({ host, port });
    const done = (why: string | null) => {
      s.destroy();
      resolve(why);
    };
    s.setTimeout(2000, () => done(`no answer from ${host}:${port} within 2 s`));
    s.once('connect', () => done(null));
    s.once('error', (e) => done(`${host}:${port}: ${(e as NodeJS.ErrnoException).code ?? e.message}`));
  });
  if (tcp) return tcp;
  const sql = postgres(PG_URL, { max: 1, connect_timeout: 5, onnotice: () => undefined });
  try {
    await sql`SELECT 1`;
    return null;
  } catch (e) {
    return `${redactUrl(PG_URL)}: ${(e as Error).message}`;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

const redactUrl = (u: string) => u.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@');

const why = await unreachable();

/**
 * The `skip` option for this file's suites: false when PostgreSQL is there. When it is not, the
 * reason (also printed once to stderr); with M4A_REQUIRE_POSTGRES=1 a failing test instead.
 */
export const pgSkip: string | false = (() => {
  if (why === null) return false;
  if (REQUIRED) {
    it('PostgreSQL is required here (M4A_REQUIRE_POSTGRES=1)', () => {
      throw new Error(`PostgreSQL tests cannot run: ${why}`);
    });
    return 'PostgreSQL required but unreachable (see the failing test)';
  }
  const reason = `PostgreSQL tests SKIPPED: ${why} (start PostgreSQL on 127.0.0.1:5432 or set M4A_TEST_PG_URL; CI sets M4A_REQUIRE_POSTGRES=1)`;
  process.stderr.write(`\n# ${reason}\n`);
  return reason;
})();

let failed = false;
/** Marks the file as failed so its schemas are kept for a look. */
export function noteFailure(): void {
  failed = true;
}

/** A test body that marks the file as failed (noteFailure) when it throws. */
export const kept =
  (fn: (ctx: TestContext) => Promise<void>) =>
  async (ctx: TestContext): Promise<void> => {
    try {
      await fn(ctx);
    } catch (err) {
      noteFailure();
      throw err;
    }
  };

const admins: postgres.Sql[] = [];
const schemas: string[] = [];

/** A superuser connection to the test database (no schema of its own). */
export function admin(): postgres.Sql {
  const sql = postgres(PG_URL, { max: 2, onnotice: () => undefined });
  admins.push(sql);
  return sql;
}

/** A new empty schema (created, so `CREATE SCHEMA` rights are not needed later). */
export async function freshSchema(tag: string): Promise<{ schema: string; spec: string }> {
  const schema = `t_${tag.replace(/[^a-z0-9_]/g, '_')}_${randomBytes(4).toString('hex')}`;
  const sql = admins[0] ?? admin();
  await sql.unsafe(`CREATE SCHEMA "${schema}"`);
  schemas.push(schema);
  return { schema, spec: specFor(schema) };
}

export function specFor(schema: string): string {
  const u = new URL(PG_URL);
  u.searchParams.set('schema', schema);
  return u.toString();
}

/** Drops this file's schemas at the end (kept after a failure or with M4A_KEEP_SCHEMAS=1). */
after(async () => {
  if (why !== null) return;
  const sql = admins[0] ?? admin();
  try {
    if (failed || process.env.M4A_KEEP_SCHEMAS === '1') {
      if (schemas.length > 0) process.stderr.write(`# kept PostgreSQL schemas for inspection: ${schemas.join(', ')}\n`);
    } else {
      for (const s of schemas) await sql.unsafe(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    }
  } finally {
    for (const a of admins) await a.end({ timeout: 2 });
  }
});

/** Ends every connection (by backend pid) whose application_name is the given one. */
export async function terminateBackends(sql: postgres.Sql, applicationName: string): Promise<number> {
  const rows = await sql<{ ok: boolean }[]>`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
    WHERE application_name = ${applicationName} AND pid <> pg_backend_pid()`;
  return rows.filter((r) => r.ok).length;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
}
