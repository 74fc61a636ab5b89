// `m4a import FILE.jsonl`: the lines of an export into a store, ids and seqs kept. One transaction
// for the whole file: a bad line (named by its number) leaves the target exactly as it was, and a
// second run adds nothing (every row is keyed; present rows stay as the target has them).
import type { Readable } from 'node:stream';
import { MailError } from '../../wire/errors.js';
import { openDatabase } from '../sqlite/open-db.js';
import { isPostgresSpec } from '../postgres/spec.js';
import { BY_TYPE, FORMAT, FORMAT_VERSION, NO_SECRET, SECRET_COLUMN, type Header, type Row, type TableSpec } from './tables.js';
import type { ImportTarget } from './sides.js';
import { sqliteTarget } from './sqlite-side.js';

export interface ImportOptions {
  /** Called after each chunk of the file with the bytes read so far. */
  onProgress?: (bytes: number) => void;
}

export interface ImportReport {
  source: Pick<Header, 'store' | 'migration' | 'head_seq' | 'exported_at' | 'with_secrets'>;
  /** Per type: lines read, and rows this run added (the others were there already). */
  counts: Record<string, { lines: number; added: number }>;
  /** Accounts that came without a secret digest: unusable until `m4a admin account rotate`. */
  accountsWithoutSecret: number;
  headSeq: number;
}

const bad = (line: number, reason: string, message: string): MailError =>
  new MailError('malformed', `line ${line}: ${message}; nothing was imported`, { field: 'line', reason, line });

/** PostgreSQL takes at most 65,535 parameters a statement. */
const chunkFor = (target: ImportTarget, columns: number): number => (target.store === 'postgres' ? Math.max(1, Math.min(2000, Math.floor(60_000 / columns))) : 2000);

export async function importStore(input: Readable, spec: string, o: ImportOptions = {}): Promise<ImportReport> {
  if (isPostgresSpec(spec)) {
    const { openPostgresStore } = await import('../postgres/postgres-store.js');
    const { postgresTarget } = await import('./postgres-side.js');
    const store = await openPostgresStore({ spec, max: 2 });
    try {
      return await run(input, await postgresTarget(store.sql, store.channel), o);
    } finally {
      await store.close();
    }
  }
  const path = spec.startsWith('sqlite:') ? spec.slice('sqlite:'.length) : spec;
  const db = openDatabase(path, 5000, 'FULL'); // a missing file becomes an empty mailbox
  try {
    return await run(input, sqliteTarget(db), o);
  } finally {
    db.close();
  }
}

async function run(input: Readable, target: ImportTarget, o: ImportOptions): Promise<ImportReport> {
  let header: Header | null = null;
  const counts: ImportReport['counts'] = {};
  let noSecret = 0;
  let pending: { spec: TableSpec; columns: string[]; rows: Row[]; lines: number[]; max: number } | null = null;
  // One chunk's insert runs while the next chunk is parsed (PostgreSQL works on one core, this
  // process on the other); at most one is in flight, so memory stays at two chunks.
  let inflight: Promise<void> | null = null;
  const settle = async (): Promise<void> => {
    const i = inflight;
    inflight = null;
    await i;
  };
  const flush = async (): Promise<void> => {
    if (!pending) return;
    const p = pending;
    pending = null;
    await settle();
    const c = (counts[p.spec.type] ??= { lines: 0, added: 0 });
    inflight = target.insert(p.spec, p.rows, p.lines, p.columns).then((n) => {
      c.added += n;
    });
    inflight.catch(() => undefined); // observed by the next settle
  };
  const take = async (text: string, line: number): Promise<void> => {
    if (text.trim() === '') return;
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (err) {
      throw bad(line, 'not_json', `not JSON (${(err as Error).message})`);
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad(line, 'not_object', 'not a JSON object');
    const row = v as Row;
    if (header === null) {
      header = checkHeader(row, line, target);
      return;
    }
    const spec = typeof row.type === 'string' ? BY_TYPE.get(row.type) : undefined;
    if (!spec) throw bad(line, 'unknown_type', `unknown type ${JSON.stringify(row.type)}`);
    // The row keeps its `type` (deleting a property slows every later read of the object); the
    // columns are named beside it.
    const cols = target.columns(spec.table);
    const columns: string[] = [];
    for (const k in row) {
      if (k === 'type') continue;
      const x = row[k];
      if (!cols.has(k)) throw bad(line, 'unknown_column', `${spec.type} has no column ${JSON.stringify(k)} in this build's ${target.store} store`);
      if (x !== null && typeof x !== 'string' && typeof x !== 'number') throw bad(line, 'bad_value', `${spec.type}.${k} is neither a string, a number nor null`);
      columns.push(k);
    }
    for (const k of spec.key) if (row[k] === undefined || row[k] === null) throw bad(line, 'missing_key', `${spec.type} lacks its key ${k}`);
    if (spec.table === 'accounts' && row[SECRET_COLUMN] === undefined) {
      row[SECRET_COLUMN] = NO_SECRET;
      columns.push(SECRET_COLUMN);
      noSecret++;
    }
    if (spec.table === 'members') {
      row.acked = 0; // recomputed from the acks at the end
      if (!columns.includes('acked')) columns.push('acked');
    }
    (counts[spec.type] ??= { lines: 0, added: 0 }).lines++;
    if (pending && (pending.spec !== spec || !sameColumns(pending.columns, columns))) await flush();
    pending ??= { spec, columns, rows: [], lines: [], max: chunkFor(target, columns.length) };
    pending.rows.push(row);
    pending.lines.push(line);
    if (pending.rows.length >= pending.max) await flush();
  };
  try {
    let line = 0;
    let rest = '';
    let bytes = 0;
    // Chunk by chunk, each handled before the next is read: memory stays flat at any file size.
    for await (const chunk of input as AsyncIterable<Buffer | string>) {
      bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
      const text = rest + (typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
      let start = 0;
      for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
        await take(text.slice(start, nl), ++line);
        start = nl + 1;
      }
      rest = text.slice(start);
      o.onProgress?.(bytes);
    }
    if (rest !== '') await take(rest, ++line);
    if (header === null) throw bad(Math.max(line, 1), 'no_header', 'the file is empty: no header line');
    await flush();
    await settle();
    const h = header as Header;
    const headSeq = await target.finish(h.head_seq);
    return {
      source: { store: h.store, migration: h.migration, head_seq: h.head_seq, exported_at: h.exported_at, with_secrets: h.with_secrets },
      counts,
      accountsWithoutSecret: noSecret,
      headSeq,
    };
  } catch (err) {
    // An insert still in flight holds earlier lines than the parse that failed: its error first.
    let first: unknown = err;
    await settle().catch((earlier: unknown) => {
      first = earlier;
    });
    await target.abort();
    throw first;
  }
}

const sameColumns = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((c, i) => c === b[i]);

function checkHeader(row: Row, line: number, target: ImportTarget): Header {
  if (row.type !== 'header' || row.format !== FORMAT) throw bad(line, 'no_header', `the first line is not a ${FORMAT} header: not a file of m4a export`);
  if (typeof row.version !== 'number' || row.version > FORMAT_VERSION)
    throw bad(line, 'newer_format', `format version ${String(row.version)} is newer than this build's ${FORMAT_VERSION}: import it with a newer m4a`);
  if (row.store === target.store && typeof row.migration === 'number' && row.migration > target.migration)
    throw bad(line, 'newer_schema', `written by a build with ${row.migration} ${target.store} migrations, this one has ${target.migration}: import it with a newer m4a`);
  if (typeof row.head_seq !== 'number') throw bad(line, 'no_header', 'the header lacks head_seq');
  return row as unknown as Header;
}
