// Moves a SQLite mailbox into PostgreSQL: every account (with its contact policy), room (a team's
// flag), membership (with its leadership and grants), team change (same ids), contact, listener,
// session, name, record, task (a pooled one with its pool columns), approval, message (same id,
// same seq, so cursors stay valid; with its task change), ack, ack floor, idempotency key (a column of its message) and
// lease epoch. Leases themselves stay behind: they are short-lived claims of sessions of the daemon
// stopped for the move. One read snapshot of the SQLite file, one PostgreSQL transaction holding the
// append lock (so running daemons neither interleave seqs nor see half of it). Running it again copies
// nothing twice: every row is keyed, existing rows are kept, and the unread counters are recomputed
// from the rows rather than added. A target whose messages disagree with the source (another
// message at a seq, or a message id at another seq) is refused and left unchanged.
import Database from 'better-sqlite3';
import type postgres from 'postgres';
import { MIGRATIONS as SQLITE_MIGRATIONS } from './sqlite/migrations.js';
import type { AccountRow, MessageRow, NameRow, SessionRow } from './sqlite/rows.js';
import type { ApprovalRow, TaskRow } from './sqlite/task-rows.js';
import { LOCKS, LOCK_NAMESPACE } from './postgres/migrations.js';
import { openPostgresStore } from './postgres/postgres-store.js';
import { pgArray } from './postgres/pg-sql.js';
import { indexRows, WRITER_INDEXES } from './postgres/search-docs.js';

export interface MigrateStoreCounts {
  /** Rows in the source. */
  source: number;
  /** Rows this run inserted (the others were already there). */
  copied: number;
}

export interface MigrateStoreReport {
  from: string;
  to: string;
  tables: Record<
    | 'meta'
    | 'accounts'
    | 'rooms'
    | 'members'
    | 'teamChanges'
    | 'contacts'
    | 'listeners'
    | 'sessions'
    | 'names'
    | 'messages'
    | 'acks'
    | 'ackFloors'
    | 'records'
    | 'tasks'
    | 'approvals'
    | 'leaseEpochs',
    MigrateStoreCounts
  >;
  /** The target's head seq afterwards. */
  headSeq: number;
}

const CHUNK = 500;

/** Copies the SQLite database at `sqlitePath` into the PostgreSQL store `postgresSpec`. */
export async function migrateSqliteToPostgres(sqlitePath: string, postgresSpec: string): Promise<MigrateStoreReport> {
  const db = new Database(sqlitePath, { readonly: true, fileMustExist: true });
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version !== SQLITE_MIGRATIONS.length) {
      throw new Error(
        `${sqlitePath} has schema version ${version}, this build expects ${SQLITE_MIGRATIONS.length}: start a daemon of this build on it once (it migrates), stop it, then run this again`,
      );
    }
    const store = await openPostgresStore({ spec: postgresSpec, max: 2 });
    try {
      db.exec('BEGIN'); // one read snapshot of the source for the whole copy
      try {
        return await copy(db, store.sql, sqlitePath, postgresSpec.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1***@'), store.channel);
      } finally {
        db.exec('COMMIT');
      }
    } finally {
      await store.close();
    }
  } finally {
    db.close();
  }
}

type Sql = postgres.Sql;
type Tx = postgres.TransactionSql;

async function copy(db: Database.Database, sql: Sql, from: string, to: string, channel: string): Promise<MigrateStoreReport> {
  const all = <R>(q: string, ...params: unknown[]): R[] => db.prepare<unknown[], R>(q).all(...params);
  return sql.begin(async (tx) => {
    // The append lock and the registry lock: daemons running on the target wait for this copy.
    await tx`SELECT seq FROM message_head WHERE one = 1 FOR UPDATE`;
    await tx`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int, ${LOCKS.registry}::int)`;
    await tx.unsafe(WRITER_INDEXES);

    const insert = async (table: string, rows: Record<string, unknown>[], conflict = 'ON CONFLICT DO NOTHING'): Promise<number> => {
      let n = 0;
      for (let i = 0; i < rows.length; i += CHUNK) {
        const part = rows.slice(i, i + CHUNK);
        const r = await tx`INSERT INTO ${tx(table)} ${tx(part)} ${tx.unsafe(conflict)}`;
        n += r.count;
      }
      return n;
    };
    const tables = {} as MigrateStoreReport['tables'];
    const run = async (name: keyof MigrateStoreReport['tables'], table: string, rows: Record<string, unknown>[], conflict?: string) => {
      tables[name] = { source: rows.length, copied: await insert(table, rows, conflict) };
    };

    await run('meta', 'meta', all('SELECT key, value FROM meta ORDER BY key'));
    await run('accounts', 'accounts', all<AccountRow>('SELECT * FROM accounts ORDER BY id') as unknown as Record<string, unknown>[]);
    await run('rooms', 'rooms', all('SELECT name, created_at, everyone, is_open, team FROM rooms ORDER BY name'));
    // acked is recomputed below from the acks (the same number the counter holds).
    await run('members', 'members', all('SELECT room, account, 0 AS acked, leader, grants FROM members ORDER BY room, account'));
    // Same ids, so the order and a `before` cursor stay; the target's sequence then starts past them.
    await run('teamChanges', 'team_changes', all('SELECT id, room, at, by_account, action, account, capability FROM team_changes ORDER BY id'));
    await tx`SELECT setval(x.s, x.m) FROM (SELECT pg_get_serial_sequence('team_changes', 'id')::regclass AS s, max(id) AS m FROM team_changes) AS x
      WHERE x.m IS NOT NULL AND x.m > COALESCE(pg_sequence_last_value(x.s), 0)`;
    await run('contacts', 'contacts', all('SELECT account, contact, added_at FROM contacts ORDER BY account, contact'));
    await run('listeners', 'listeners', all('SELECT account, url FROM listeners ORDER BY account'));
    // Registration order is the rowid order; the target numbers them in that order.
    await run('sessions', 'sessions', all<SessionRow>('SELECT * FROM sessions ORDER BY rowid') as unknown as Record<string, unknown>[]);
    await run('names', 'names', all<NameRow>('SELECT account, name, lineage, kind FROM names ORDER BY account, name') as unknown as Record<string, unknown>[]);

    // Messages in seq order, page by page (a mailbox may be large).
    const msgs: MigrateStoreCounts = { source: 0, copied: 0 };
    const page = db.prepare<[number, number], MessageRow>('SELECT * FROM messages WHERE seq > ? ORDER BY seq LIMIT ?');
    for (let after = 0; ;) {
      const rows = page.all(after, CHUNK);
      if (rows.length === 0) break;
      after = (rows[rows.length - 1] as MessageRow).seq;
      msgs.source += rows.length;
      const r = await tx<{ seq: number }[]>`INSERT INTO messages ${tx(rows as unknown as Record<string, unknown>[])} ON CONFLICT DO NOTHING RETURNING seq`;
      const fresh = new Set(r.map((x) => Number(x.seq)));
      await indexRows(
        tx,
        rows.filter((x) => fresh.has(x.seq)),
      );
      msgs.copied += r.count;
      await checkSame(tx, rows);
    }
    tables.messages = msgs;
    await run('acks', 'acks', all('SELECT ack_key, seq, to_key, acked_at FROM acks ORDER BY ack_key, seq'));
    await run(
      'ackFloors',
      'ack_floors',
      all('SELECT ack_key, to_key, floor FROM ack_floors ORDER BY ack_key, to_key'),
      // A higher floor from the source is taken (both are true lower bounds of the same acks).
      'ON CONFLICT (ack_key, to_key) DO UPDATE SET floor = excluded.floor WHERE excluded.floor > ack_floors.floor',
    );

    // Wake chains, attempts, timers, web logins …: kept as they are (a record present in both stays).
    await run('records', 'records', all('SELECT kind, id, value, updated_at FROM records ORDER BY kind, id'));
    // Tasks (every column: a pooled task's pool_* and fail_reason too) and approvals by id, as they
    // are (a row present in both stays as the target has it).
    await run('tasks', 'tasks', all<TaskRow>('SELECT * FROM tasks ORDER BY id') as unknown as Record<string, unknown>[]);
    await run('approvals', 'approvals', all<ApprovalRow>('SELECT * FROM approvals ORDER BY id') as unknown as Record<string, unknown>[]);
    // Not the leases (short-lived claims, held by sessions of the daemon stopped for this move), but
    // their epochs: a task row keeps the epoch of its last claim, and a fencing token handed out
    // again after the move would let that stale holder write. The higher epoch stands.
    await run(
      'leaseEpochs',
      'lease_epochs',
      all('SELECT space, resource, epoch FROM lease_epochs ORDER BY space, resource'),
      'ON CONFLICT (space, resource) DO UPDATE SET epoch = excluded.epoch WHERE excluded.epoch > lease_epochs.epoch',
    );

    // Counters from the rows themselves: right however often this runs.
    await tx`INSERT INTO mailbox_counts (to_key, total, unacked)
      SELECT m.to_key, count(*), count(*) - count(a.seq) FROM messages AS m
      LEFT JOIN acks AS a ON a.ack_key = m.to_key AND a.seq = m.seq GROUP BY m.to_key
      ON CONFLICT (to_key) DO UPDATE SET total = excluded.total, unacked = excluded.unacked`;
    await tx`UPDATE members AS mb SET acked = (SELECT count(*) FROM acks AS a
      WHERE a.ack_key = 'a:' || mb.account AND a.to_key = 'r:' || mb.room)`;
    // The source's high-water seq: messages of removed accounts and rooms are deleted, and a seq is
    // never handed out twice (accounts' born_seq counts on it).
    const sourceHead = all<{ seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'messages'")[0]?.seq ?? 0;
    const [h] = await tx<{ seq: number }[]>`UPDATE message_head SET seq = GREATEST(seq, ${sourceHead}, COALESCE((SELECT max(seq) FROM messages), 0))
      WHERE one = 1 RETURNING seq`;
    const headSeq = h?.seq ?? 0;
    // Running daemons catch up on what arrived (delivered at commit).
    await tx`SELECT pg_notify(${channel}, ${String(headSeq)})`;
    return { from, to, tables, headSeq };
  });
}

/** Every source message must stand in the target under the same id at the same seq. */
async function checkSame(tx: Tx, rows: MessageRow[]): Promise<void> {
  const [r] = await tx<{ n: number }[]>`SELECT count(*) AS n FROM messages AS m
    JOIN unnest(${pgArray(rows.map((x) => x.id))}::text[], ${pgArray(rows.map((x) => x.seq))}::bigint[]) AS x(id, seq)
      ON m.id = x.id AND m.seq = x.seq`;
  if ((r?.n ?? 0) !== rows.length) {
    const first = rows[0] as MessageRow;
    const last = rows[rows.length - 1] as MessageRow;
    throw new Error(`the target already holds other messages at seqs ${first.seq}..${last.seq} (or these ids at other seqs): it is not a copy of this source; nothing was changed`);
  }
}
