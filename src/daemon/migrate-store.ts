// `m4a migrate-store --from sqlite:PATH --to postgres://…`: moves an existing mailbox over without
// losing or doubling anything (src/store/migrate-store.ts does the copy; running it again copies
// nothing twice). A daemon still writing the SQLite file would add mail after the copy's snapshot,
// so when the file sits in a data directory whose daemon runs, the command refuses; otherwise it
// holds that directory's lock while it copies, so no daemon starts on it meanwhile.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { migrateSqliteToPostgres, type MigrateStoreReport } from '../store/migrate-store.js';
import { isPostgresSpec } from '../store/postgres/spec.js';
import { acquireLock, DataDirLocked, FILES } from './data-dir.js';

export interface MigrateStoreOptions {
  from: string;
  to: string;
  json?: boolean;
}

export interface MigrateStoreIo {
  out: (s: string) => void;
  err: (s: string) => void;
}

const stdio: MigrateStoreIo = { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) };

/** Runs the command; returns the exit code (0 done, 1 refused or failed, 2 usage). */
export async function runMigrateStore(o: MigrateStoreOptions, io: MigrateStoreIo = stdio): Promise<number> {
  const path = sqlitePathOf(o.from);
  if (path === null) {
    io.err(`m4a: --from must be sqlite:/path/to/mail.db (or a path ending in .db), not '${o.from}'\n`);
    return 2;
  }
  if (!isPostgresSpec(o.to)) {
    io.err(`m4a: --to must be a postgres:// or postgresql:// URL\n`);
    return 2;
  }
  if (!existsSync(path)) {
    io.err(`m4a: no SQLite database at ${path}\n`);
    return 1;
  }
  const dir = dirname(path);
  let release: (() => void) | null = null;
  if (existsSync(join(dir, FILES.hostId)) || existsSync(join(dir, FILES.lock))) {
    try {
      release = acquireLock(dir);
    } catch (err) {
      if (err instanceof DataDirLocked) {
        io.err(`m4a: ${err.message}: stop it first (m4a daemon stop), so no mail arrives after the copy\n`);
        return 1;
      }
      throw err;
    }
  }
  try {
    const report = await migrateSqliteToPostgres(path, o.to);
    io.out(o.json ? `${JSON.stringify(report)}\n` : formatReport(report));
    return 0;
  } catch (err) {
    io.err(`m4a: migrate-store failed, the target is unchanged: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  } finally {
    release?.();
  }
}

function sqlitePathOf(spec: string): string | null {
  if (spec.startsWith('sqlite:')) return spec.length > 'sqlite:'.length ? resolve(spec.slice('sqlite:'.length)) : null;
  if (spec.endsWith('.db')) return resolve(spec);
  return null;
}

export function formatReport(r: MigrateStoreReport): string {
  const lines = [`copied ${r.from} -> ${r.to}`];
  for (const [name, c] of Object.entries(r.tables)) {
    lines.push(`  ${name.padEnd(10)} ${String(c.copied).padStart(8)} copied  ${String(c.source - c.copied).padStart(8)} already there`);
  }
  lines.push(`  head seq   ${r.headSeq}`);
  lines.push(`point the daemons at it: m4a serve --store '${r.to}'`);
  return `${lines.join('\n')}\n`;
}
