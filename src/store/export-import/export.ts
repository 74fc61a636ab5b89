// `m4a export`: every row of a store as JSON lines (tables.ts), read from one snapshot and written
// with backpressure, so a mailbox of any size goes out in constant memory.
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { isPostgresSpec } from '../postgres/spec.js';
import { FORMAT, FORMAT_VERSION, SECRET_COLUMN, TABLES, type Header } from './tables.js';
import type { ExportSource } from './sides.js';
import { sqliteSource } from './sqlite-side.js';

export interface ExportOptions {
  withSecrets?: boolean;
  /** Called after each page of messages. */
  onProgress?: (messagesDone: number, messagesTotal: number) => void;
  now?: number;
}

export interface ExportReport {
  header: Header;
  /** Lines written per type. */
  counts: Record<string, number>;
}

/** Opens the store named by `spec` for reading (a SQLite file read-only, safe beside its daemon). */
export async function withSource<R>(spec: string, fn: (s: ExportSource) => Promise<R>): Promise<R> {
  if (isPostgresSpec(spec)) {
    const { openPostgresStore } = await import('../postgres/postgres-store.js');
    const { postgresSource } = await import('./postgres-side.js');
    const store = await openPostgresStore({ spec, max: 2 });
    try {
      const src = await postgresSource(store.sql);
      try {
        return await fn(src);
      } finally {
        await src.close();
      }
    } finally {
      await store.close();
    }
  }
  const path = spec.startsWith('sqlite:') ? spec.slice('sqlite:'.length) : spec;
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const src = sqliteSource(db);
    try {
      return await fn(src);
    } finally {
      await src.close();
    }
  } finally {
    db.close();
  }
}

export async function exportStore(spec: string, out: Writable, o: ExportOptions = {}): Promise<ExportReport> {
  return withSource(spec, async (src) => {
    const header: Header = {
      type: 'header',
      format: FORMAT,
      version: FORMAT_VERSION,
      store: src.store,
      migration: src.migration,
      head_seq: src.headSeq,
      exported_at: o.now ?? Date.now(),
      with_secrets: !!o.withSecrets,
    };
    const write = async (text: string): Promise<void> => {
      if (!out.write(text)) await once(out, 'drain');
    };
    await write(`${JSON.stringify(header)}\n`);
    const counts: Record<string, number> = {};
    let done = 0;
    for (const t of TABLES) {
      counts[t.type] = 0;
      for await (const rows of src.rows(t)) {
        let text = '';
        for (const r of rows) {
          if (t.table === 'accounts' && !o.withSecrets) delete r[SECRET_COLUMN];
          text += `${JSON.stringify({ type: t.type, ...r })}\n`;
        }
        counts[t.type]! += rows.length;
        await write(text);
        if (t.table === 'messages') {
          done += rows.length;
          o.onProgress?.(done, src.messages);
        }
      }
    }
    return { header, counts };
  });
}
