// `m4a backup`, `m4a restore`, `m4a export` and `m4a import FILE.jsonl`: the store code
// (store/sqlite/backup.ts, store/export-import/) behind the data directory's rules. A SQLite file
// that is written outside its daemon (restore, import) must have no daemon: the command takes the
// directory's lock, so none starts meanwhile, and refuses while one holds it.
import { createReadStream, createWriteStream, existsSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { finished } from 'node:stream/promises';
import { MailError } from '../wire/errors.js';
import { isPostgresSpec } from '../store/postgres/spec.js';
import { resolveConfig } from './config.js';
import { acquireLock, DataDirLocked, FILES } from './data-dir.js';

export interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
  /** Progress goes to a terminal only. */
  tty: boolean;
}

const stdio: Io = { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s), tty: !!process.stderr.isTTY };

export interface StoreFlags {
  dataDir?: string;
  store?: string;
  json?: boolean;
}

const redact = (spec: string): string => spec.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@');
const sqlitePath = (spec: string): string => resolve(spec.startsWith('sqlite:') ? spec.slice('sqlite:'.length) : spec);
const specOf = (o: StoreFlags): string => resolveConfig({ ...(o.dataDir ? { dataDir: o.dataDir } : {}), ...(o.store ? { store: o.store } : {}) }).store;

/** A bar on stderr, redrawn at most every 100 ms; nothing when stderr is not a terminal. */
export function progressBar(io: Io, label: string): { update: (done: number, total: number) => void; end: () => void } {
  let last = 0;
  let drawn = false;
  return {
    update(done, total) {
      if (!io.tty) return;
      const now = Date.now();
      if (now - last < 100 && done < total) return;
      last = now;
      const f = total > 0 ? Math.min(1, done / total) : 1;
      const w = 30;
      io.err(`\r${label} [${'#'.repeat(Math.round(f * w)).padEnd(w)}] ${String(Math.floor(f * 100)).padStart(3)}% ${done}/${total}`);
      drawn = true;
    },
    end() {
      if (drawn) io.err('\n');
    },
  };
}

/** Holds the lock of the data directory `path` lies in (when it is one) while fn runs. */
async function withoutDaemon<R>(path: string, what: string, fn: () => Promise<R> | R): Promise<R> {
  const dir = dirname(path);
  let release: (() => void) | null = null;
  if (existsSync(join(dir, FILES.hostId)) || existsSync(join(dir, FILES.lock))) {
    try {
      release = acquireLock(dir);
    } catch (err) {
      if (err instanceof DataDirLocked) throw new Refused(`${err.message}: stop it first (m4a daemon stop), then ${what} again`);
      throw err;
    }
  }
  try {
    return await fn();
  } finally {
    release?.();
  }
}

class Refused extends Error {}

async function guarded(io: Io, what: string, json: boolean | undefined, fn: () => Promise<unknown>, text: (r: never) => string): Promise<number> {
  try {
    const r = await fn();
    io.out(json ? `${JSON.stringify(r)}\n` : `${text(r as never)}\n`);
    return 0;
  } catch (err) {
    if (json && err instanceof MailError) io.err(`${JSON.stringify(err.toBody())}\n`);
    else io.err(`m4a: ${what}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

export async function runBackup(o: StoreFlags & { out: string }, io: Io = stdio): Promise<number> {
  const spec = specOf(o);
  if (isPostgresSpec(spec) || spec === 'memory') {
    io.err(`m4a: backup copies a SQLite mailbox; ${spec === 'memory' ? 'the memory store keeps nothing' : `for ${redact(spec)} use pg_dump (docs/operations.md, Backups)`}\n`);
    return 2;
  }
  const out = resolve(o.out);
  if (existsSync(out)) {
    io.err(`m4a: ${out} exists: backup never overwrites a file; name a new one\n`);
    return 1;
  }
  const { backupSqlite } = await import('../store/sqlite/backup.js');
  return guarded(
    io,
    'backup failed',
    o.json,
    () => backupSqlite(sqlitePath(spec), out),
    (r: Awaited<ReturnType<typeof backupSqlite>>) =>
      `backed up ${sqlitePath(spec)} to ${r.path}: ${r.messages} messages up to seq ${r.headSeq}, ${r.bytes} bytes, schema ${r.migration}, integrity ok`,
  );
}

export async function runRestore(o: StoreFlags & { file: string }, io: Io = stdio): Promise<number> {
  const spec = specOf(o);
  if (isPostgresSpec(spec) || spec === 'memory') {
    io.err(
      `m4a: restore puts a SQLite backup in place; ${spec === 'memory' ? 'the memory store keeps nothing' : `for ${redact(spec)} use pg_restore (docs/operations.md, Backups)`}\n`,
    );
    return 2;
  }
  const file = resolve(o.file);
  const target = sqlitePath(spec);
  if (file === target) {
    io.err(`m4a: ${file} is the mailbox itself\n`);
    return 2;
  }
  const { restoreSqlite } = await import('../store/sqlite/backup.js');
  return guarded(
    io,
    'restore refused, nothing changed',
    o.json,
    () => withoutDaemon(target, 'restore', () => restoreSqlite(file, target)),
    (r: ReturnType<typeof restoreSqlite>) =>
      `restored ${file} as ${r.path}: ${r.messages} messages up to seq ${r.headSeq}, schema ${r.migration}` +
      (r.keptAs ? `\nthe replaced mailbox is kept as ${r.keptAs}` : '') +
      '\nstart the daemon: m4a daemon start',
  );
}

export async function runExport(o: StoreFlags & { out: string; withSecrets?: boolean }, io: Io = stdio): Promise<number> {
  const spec = specOf(o);
  if (spec === 'memory') {
    io.err('m4a: the memory store keeps nothing to export\n');
    return 2;
  }
  const out = resolve(o.out);
  if (existsSync(out)) {
    io.err(`m4a: ${out} exists: export never overwrites a file; name a new one\n`);
    return 1;
  }
  if (o.withSecrets) io.err(`m4a: warning: ${out} holds every account's secret digest (mode 0600); keep it as safe as the mailbox\n`);
  if (!isPostgresSpec(spec) && !existsSync(sqlitePath(spec))) {
    io.err(`m4a: no mailbox at ${sqlitePath(spec)}\n`);
    return 1;
  }
  const { exportStore } = await import('../store/export-import/export.js');
  const bar = progressBar(io, 'export');
  return guarded(
    io,
    'export failed',
    o.json,
    async () => {
      const file = createWriteStream(out, { flags: 'wx', mode: o.withSecrets ? 0o600 : 0o644 });
      try {
        const r = await exportStore(isPostgresSpec(spec) ? spec : sqlitePath(spec), file, { withSecrets: !!o.withSecrets, onProgress: bar.update });
        file.end();
        await finished(file);
        return { out, ...r };
      } catch (err) {
        file.destroy();
        rmSync(out, { force: true }); // no half file left to be taken for an export
        throw err;
      } finally {
        bar.end();
      }
    },
    (r: { out: string; counts: Record<string, number>; header: { head_seq: number } }) =>
      `exported ${redact(spec)} to ${r.out} (head seq ${r.header.head_seq}${o.withSecrets ? ', with secret digests' : ''}):\n` +
      Object.entries(r.counts)
        .map(([k, n]) => `  ${k.padEnd(12)} ${String(n).padStart(9)}`)
        .join('\n'),
  );
}

export async function runImportJsonl(o: StoreFlags & { file: string }, io: Io = stdio): Promise<number> {
  const spec = specOf(o);
  if (spec === 'memory') {
    io.err('m4a: import into the memory store keeps nothing; name a SQLite file or a PostgreSQL URL with --store\n');
    return 2;
  }
  const file = resolve(o.file);
  if (!existsSync(file)) {
    io.err(`m4a: no file ${file}\n`);
    return 1;
  }
  const { importStore } = await import('../store/export-import/import.js');
  const total = statSync(file).size;
  const bar = progressBar(io, 'import');
  const go = (): Promise<unknown> =>
    importStore(createReadStream(file, { highWaterMark: 256 * 1024 }), isPostgresSpec(spec) ? spec : sqlitePath(spec), { onProgress: (b) => bar.update(b, total) }).finally(() =>
      bar.end(),
    );
  // PostgreSQL: daemons may run (the import holds the append lock and they catch up at commit).
  return guarded(
    io,
    'import failed',
    o.json,
    () => (isPostgresSpec(spec) ? go() : withoutDaemon(sqlitePath(spec), 'import', go)),
    (r: Awaited<ReturnType<typeof importStore>>) =>
      [
        `imported ${file} into ${redact(spec)} (head seq ${r.headSeq}):`,
        ...Object.entries(r.counts).map(([k, c]) => `  ${k.padEnd(12)} ${String(c.added).padStart(9)} added ${String(c.lines - c.added).padStart(9)} already there`),
        ...(r.accountsWithoutSecret
          ? [`${r.accountsWithoutSecret} accounts came without a secret (exported without --with-secrets): they sign in once given a new one, m4a admin account rotate <id>`]
          : []),
      ].join('\n'),
  );
}
