// `m4a doctor --check-store`: SQLite's integrity_check over the whole file, on a read-only
// connection of its own. That is safe beside a running daemon (WAL lets a reader of another
// process read one consistent snapshot while the daemon writes) and it works when the daemon
// refused to start, which is when it is needed. It never writes the database.
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { inspectDbFile } from './file-check.js';

export interface IntegrityReport {
  ok: boolean;
  /** SQLite's findings (at most `limit`), or why the file could not be checked. */
  problems: string[];
}

export function checkSqliteIntegrity(path: string, limit = 20): IntegrityReport {
  if (!existsSync(path)) return { ok: false, problems: [`${path} does not exist`] };
  let db: Database.Database | undefined;
  try {
    const problem = inspectDbFile(path); // throws EACCES or EISDIR on a file it cannot read
    if (problem) return { ok: false, problems: [`${path} ${problem}`] };
    db = new Database(path, { readonly: true, fileMustExist: true });
    if ((db.pragma('user_version', { simple: true }) as number) === 0) return { ok: false, problems: [`${path} holds no mailbox schema`] };
    const rows = db.pragma(`integrity_check(${limit})`) as { integrity_check: string }[];
    const found = rows.flatMap((r) => r.integrity_check.split('\n')).filter((l) => l !== '' && !l.startsWith('*** in database'));
    return found.length === 1 && found[0] === 'ok' ? { ok: true, problems: [] } : { ok: false, problems: found.slice(0, limit) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code.startsWith('E')) return { ok: false, problems: [`${path} cannot be read (${(err as Error).message})`] };
    return { ok: false, problems: [`SQLite: ${(err as Error).message}`] };
  } finally {
    db?.close();
  }
}
