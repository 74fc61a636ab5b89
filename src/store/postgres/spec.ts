// The store spec for PostgreSQL: a libpq-style URL, with the schema as a query parameter.
//   postgres://user@db-host:5432/mail4agent
//   postgresql://user@db-host/mail4agent?schema=team_a        (also ?search_path=team_a)
// The password is best kept out of the URL (it would show in `ps`): PGPASSWORD in the daemon's
// environment is read when the URL has none. Other query parameters (sslmode …) pass through.

export interface PostgresSpec {
  /** The URL without the schema parameter, as postgres.js takes it. */
  url: string;
  /** The schema holding the tables, created on first start; null: the server's default (public). */
  schema: string | null;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function isPostgresSpec(spec: string): boolean {
  return spec.startsWith('postgres://') || spec.startsWith('postgresql://');
}

export function parsePostgresSpec(spec: string): PostgresSpec {
  let u: URL;
  try {
    u = new URL(spec);
  } catch {
    throw new Error(`store spec '${redact(spec)}' is not a valid postgres:// URL`);
  }
  let schema: string | null = null;
  for (const p of ['schema', 'search_path']) {
    const v = u.searchParams.get(p);
    if (v === null) continue;
    if (!SCHEMA_NAME.test(v)) throw new Error(`schema '${v}' in the store spec: use lower-case letters, digits and _ (at most 63)`);
    schema = v;
    u.searchParams.delete(p);
  }
  return { url: u.toString(), schema };
}

/** The spec with any password replaced, for messages and logs. */
export function redact(spec: string): string {
  return spec.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@');
}
