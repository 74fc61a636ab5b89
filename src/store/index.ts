// Picks a store from a spec string: 'memory', 'sqlite:<path>', a bare path ending in .db, or
// 'postgres://…' / 'postgresql://…' (a database several daemons share; see docs/scaling.md).
// Async so a store that must connect first (PostgreSQL) fits the same call.
import { createMemoryStore } from './memory/memory-store.js';
import { openSqliteStore, type SqliteStoreOptions } from './sqlite/sqlite-store.js';
import { CHECKPOINT_DEFAULTS } from './sqlite/checkpointer.js';
import { isPostgresSpec } from './postgres/spec.js';
import type { Store } from './types.js';
import type { FsyncFn as SqliteFsync } from './sqlite/durable-sync.js';

export { createMemoryStore } from './memory/memory-store.js';
export { openSqliteStore, SqliteStore, type SqliteStoreOptions, type SqliteStoreStats } from './sqlite/sqlite-store.js';
export { isPostgresSpec, parsePostgresSpec } from './postgres/spec.js';
export type { SqliteFsync };
export { checkSqliteIntegrity, type IntegrityReport } from './sqlite/integrity.js';
export { machineHostId, bootId } from './postgres/host-identity.js';
export type { PostgresStore, PostgresStoreOptions, HostOptions } from './postgres/postgres-store.js';

export interface OpenStoreOptions {
  /** The daemon's host id: a shared store publishes it as alive (see PostgresStore.attachHost). */
  hostId?: string;
  /** The fsync of the SQLite store's durability barrier (tests observe it). */
  sqliteFsync?: SqliteFsync;
}

/** M4A_SQLITE_SYNC=full selects SQLite's own sync on the event loop; =barrier-inline our barrier
 *  with SQLite's checkpoints inside COMMIT (sqlite/checkpointer.ts). For the benchmark's comparisons. */
function sqliteSync(env: NodeJS.ProcessEnv = process.env): Pick<SqliteStoreOptions, 'sync' | 'checkpoint'> {
  if (env.M4A_SQLITE_SYNC === 'full') return { sync: 'full' };
  if (env.M4A_SQLITE_SYNC === 'barrier-inline') return { sync: 'barrier', checkpoint: { ...CHECKPOINT_DEFAULTS, afterCommits: Number.MAX_SAFE_INTEGER } };
  return { sync: 'barrier' };
}

export async function openStore(spec: string, opts: OpenStoreOptions = {}): Promise<Store> {
  if (spec === 'memory') return createMemoryStore();
  if (spec.startsWith('sqlite:')) {
    const path = spec.slice('sqlite:'.length);
    if (path === '') throw new Error(`store spec '${spec}' names no file`);
    return openSqliteStore({ path, ...sqliteSync(), ...(opts.sqliteFsync ? { fsync: opts.sqliteFsync } : {}) });
  }
  if (isPostgresSpec(spec)) {
    // Loaded only when asked for: a SQLite daemon never loads the PostgreSQL client.
    const { openPostgresStore } = await import('./postgres/postgres-store.js');
    const store = await openPostgresStore({ spec });
    if (opts.hostId !== undefined) {
      try {
        await store.attachHost(opts.hostId);
      } catch (err) {
        await store.close().catch(() => undefined);
        throw err;
      }
    }
    return store;
  }
  if (spec.endsWith('.db')) return openSqliteStore({ path: spec, ...sqliteSync(), ...(opts.sqliteFsync ? { fsync: opts.sqliteFsync } : {}) });
  throw new Error(
    `unknown store spec '${spec.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@')}': use 'memory', 'sqlite:/path/file.db', a path ending in .db or 'postgres://user@host/db'`,
  );
}
