// `m4a doctor --check-store`: the integrity of the store the daemon of this data directory uses.
import { checkSqliteIntegrity, isPostgresSpec } from '../store/index.js';
import { resolveConfig } from './config.js';

export interface StoreCheck {
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  todo?: string;
}

/** The store spec as `m4a serve` resolves it: --store, else M4A_STORE, else <data dir>/mail.db. */
export function checkStore(o: { dataDir: string; store?: string }, env: NodeJS.ProcessEnv = process.env): StoreCheck {
  const spec = resolveConfig({ dataDir: o.dataDir, ...(o.store ? { store: o.store } : {}) }, env).store;
  if (spec === 'memory') return { status: 'warn', detail: 'the memory store keeps nothing on disk to check' };
  if (isPostgresSpec(spec)) return { status: 'warn', detail: 'PostgreSQL checks its own pages: not checked here', todo: "use PostgreSQL's own tools (the amcheck extension)" };
  const path = spec.startsWith('sqlite:') ? spec.slice('sqlite:'.length) : spec;
  const r = checkSqliteIntegrity(path);
  if (r.ok) return { status: 'ok', detail: `SQLite integrity_check found no damage in ${path}` };
  return {
    status: 'fail',
    detail: `${path} is damaged: ${r.problems.join('; ')}`,
    todo:
      `stop the daemon (m4a daemon stop) and restore ${path} from a copy made by m4a backup (m4a restore COPY keeps the damaged file aside); ` +
      'until then requests that touch the damaged pages answer 503 store_unavailable',
  };
}
