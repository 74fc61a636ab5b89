// Picks a store from a spec string: 'memory', 'sqlite:<path>', or a bare path ending in .db.
// Async so a store that must connect first (PostgreSQL) fits the same call.
import { createMemoryStore } from './memory/memory-store.js';
import { openSqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './types.js';

export { createMemoryStore } from './memory/memory-store.js';
export { openSqliteStore, SqliteStore, type SqliteStoreOptions, type SqliteStoreStats } from './sqlite/sqlite-store.js';

export async function openStore(spec: string): Promise<Store> {
  if (spec === 'memory') return createMemoryStore();
  if (spec.startsWith('sqlite:')) {
    const path = spec.slice('sqlite:'.length);
    if (path === '') throw new Error(`store spec '${spec}' names no file`);
    return openSqliteStore({ path });
  }
  if (spec.endsWith('.db')) return openSqliteStore({ path: spec });
  throw new Error(`unknown store spec '${spec}': use 'memory', 'sqlite:/path/file.db' or a path ending in .db`);
}
