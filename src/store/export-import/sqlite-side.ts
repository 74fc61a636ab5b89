// The SQLite ends of export and import: direct SQL, one read snapshot for an export, one write
// transaction for an import (so a bad line leaves the file as it was).
import type Database from 'better-sqlite3';
import { MailError } from '../../wire/errors.js';
import { MIGRATIONS } from '../sqlite/migrations.js';
import { PRIVATE_COLUMNS, TABLES, type Row, type TableSpec } from './tables.js';
import type { ExportSource, ImportTarget } from './sides.js';

const PAGE = 2000;

export function sqliteSource(db: Database.Database): ExportSource {
  db.exec('BEGIN'); // one read snapshot for the whole file
  const one = <R>(q: string): R | undefined => db.prepare<[], R>(q).get();
  return {
    store: 'sqlite',
    migration: db.pragma('user_version', { simple: true }) as number,
    headSeq: one<{ seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'messages'")?.seq ?? 0,
    messages: one<{ n: number }>('SELECT count(*) AS n FROM messages')?.n ?? 0,
    async *rows(t: TableSpec): AsyncGenerator<Row[]> {
      const cols = columnsOf(db, t.table).filter((c) => !PRIVATE_COLUMNS[t.table]?.includes(c));
      const list = cols.map((c) => `"${c}"`).join(', ');
      if (t.table === 'messages') {
        // Keyset pages: nothing of a large mailbox is held beyond one page.
        const page = db.prepare<[number, number], Row>(`SELECT ${list} FROM messages WHERE seq > ? ORDER BY seq LIMIT ?`);
        for (let after = 0; ;) {
          const rows = page.all(after, PAGE);
          if (rows.length === 0) return;
          after = rows[rows.length - 1]!.seq as number;
          yield rows;
        }
      }
      const order = t.order === '' ? 'rowid' : t.order;
      let batch: Row[] = [];
      for (const r of db.prepare<[], Row>(`SELECT ${list} FROM "${t.table}" ORDER BY ${order}`).iterate()) {
        batch.push(r);
        if (batch.length >= PAGE) {
          yield batch;
          batch = [];
        }
      }
      if (batch.length) yield batch;
    },
    close: async () => {
      db.exec('COMMIT');
    },
  };
}

function columnsOf(db: Database.Database, table: string): string[] {
  return (db.prepare(`PRAGMA table_info("${table}")`).all() as { name: string }[]).map((c) => c.name);
}

/** The import's target: `db` is open and migrated; everything happens in one transaction. */
export function sqliteTarget(db: Database.Database): ImportTarget {
  db.exec('BEGIN IMMEDIATE');
  // The search index is filled once at the end, not message by message from its trigger (2.5x
  // faster at 1,000,000): the trigger is dropped inside this transaction and made again as it was,
  // so nothing outside it ever sees the store without it.
  const trigger = (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'messages_fts_insert'").get() as { sql: string } | undefined)?.sql;
  if (trigger) db.exec('DROP TRIGGER messages_fts_insert');
  const headBefore = (db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").get() as { seq: number } | undefined)?.seq ?? 0;
  const statements = new Map<string, Database.Statement>();
  const cols = new Map(TABLES.map((t) => [t.table, new Set(columnsOf(db, t.table))]));
  const seqOf = db.prepare<[string], { seq: number }>('SELECT seq FROM messages WHERE id = ?');
  const idAt = db.prepare<[number], { id: string }>('SELECT id FROM messages WHERE seq = ?');
  const insertFor = (t: TableSpec, keys: readonly string[]): Database.Statement => {
    const sig = `${t.table}|${keys.join(',')}`;
    let s = statements.get(sig);
    if (!s) {
      const names = keys.map((k) => `"${k}"`).join(', ');
      const conflict = t.higher
        ? `ON CONFLICT (${t.key.join(', ')}) DO UPDATE SET "${t.higher}" = excluded."${t.higher}" WHERE excluded."${t.higher}" > "${t.table}"."${t.higher}"`
        : 'ON CONFLICT DO NOTHING';
      s = db.prepare(`INSERT INTO "${t.table}" (${names}) VALUES (${keys.map((k) => `@${k}`).join(', ')}) ${conflict}`);
      statements.set(sig, s);
    }
    return s;
  };
  return {
    store: 'sqlite',
    migration: MIGRATIONS.length,
    headBefore,
    columns: (table) => cols.get(table) ?? new Set(),
    async insert(t, rows, lines, columns) {
      let added = 0;
      const s = insertFor(t, columns);
      rows.forEach((r, i) => {
        const n = s.run(r).changes;
        added += n;
        if (t.table !== 'messages') return;
        const line = lines[i] ?? 0;
        if (n === 1) {
          if ((r.seq as number) <= headBefore) throw seqTaken(line, r.seq as number);
        } else if (idAt.get(r.seq as number)?.id !== r.id) {
          throw notACopy(line, r.seq as number, seqOf.get(r.id as string)?.seq ?? null);
        }
      });
      return added;
    },
    async finish(sourceHead) {
      if (trigger) {
        // Every message this run added is above the head it found (a lower one was refused).
        db.prepare('INSERT INTO messages_fts(rowid, subject, body) SELECT seq, subject, body FROM messages WHERE seq > ?').run(headBefore);
        db.exec(trigger);
      }
      db.exec(`INSERT INTO mailbox_counts (to_key, total, unacked)
        SELECT m.to_key, count(*), count(*) - count(a.seq) FROM messages AS m
        LEFT JOIN acks AS a ON a.ack_key = m.to_key AND a.seq = m.seq GROUP BY m.to_key
        ON CONFLICT (to_key) DO UPDATE SET total = excluded.total, unacked = excluded.unacked`);
      db.exec(`UPDATE members SET acked = (SELECT count(*) FROM acks AS a WHERE a.ack_key = 'a:' || members.account AND a.to_key = 'r:' || members.room)`);
      // A seq is never handed out twice: the source's high-water mark carries over.
      const max = (db.prepare('SELECT COALESCE(max(seq), 0) AS m FROM messages').get() as { m: number }).m;
      const head = Math.max(headBefore, sourceHead, max);
      const n = db.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = 'messages'").run(head).changes;
      if (n === 0 && head > 0) db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('messages', ?)").run(head);
      db.exec('COMMIT');
      return head;
    },
    async abort() {
      if (db.inTransaction) db.exec('ROLLBACK');
    },
  };
}

export function seqTaken(line: number, seq: number): MailError {
  return new MailError(
    'malformed',
    `line ${line}: message seq ${seq} is at or below the target's head, which already handed it out (readers' cursors may be past it): import into an empty store or a copy of this source; nothing was imported`,
    { field: 'line', reason: 'seq_taken', line, seq },
  );
}

export function notACopy(line: number, seq: number, seqOfId: number | null): MailError {
  return new MailError(
    'malformed',
    `line ${line}: the target holds another message at seq ${seq}${seqOfId !== null ? ` (and this id at seq ${seqOfId})` : ''}: it is not a copy of this source; nothing was imported`,
    { field: 'line', reason: 'not_a_copy', line, seq },
  );
}
