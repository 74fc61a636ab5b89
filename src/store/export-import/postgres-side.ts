// The PostgreSQL ends of export and import. An export reads one REPEATABLE READ snapshot through
// cursors; an import is one transaction that holds the append lock and the registry lock, so daemons
// running on the target neither interleave seqs with it nor see half of it, and a bad line leaves
// the database as it was. Daemons catch up on the imported mail when it commits (NOTIFY).
import { LOCKS, LOCK_NAMESPACE, MIGRATIONS } from '../postgres/migrations.js';
import { pgArray, type Sql } from '../postgres/pg-sql.js';
import { indexRows, WRITER_INDEXES } from '../postgres/search-docs.js';
import { notACopy, seqTaken } from './sqlite-side.js';
import { PRIVATE_COLUMNS, type Row, type TableSpec } from './tables.js';
import type { ExportSource, ImportTarget } from './sides.js';

const PAGE = 2000;
type Reserved = Awaited<ReturnType<Sql['reserve']>>;

/** The store's 15 s statement cap and 60 s idle cap are for requests: a whole table's read (sorted,
 *  or paced by a slow file) and the counters' recount run longer. For this transaction only. */
async function unbounded(q: Reserved): Promise<void> {
  await q`SET LOCAL statement_timeout = 0`;
  await q`SET LOCAL idle_in_transaction_session_timeout = 0`;
}

async function columnsOf(q: Reserved): Promise<Map<string, Set<string>>> {
  const rows = await q<{ table_name: string; column_name: string }[]>`SELECT table_name, column_name FROM information_schema.columns
    WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`;
  const out = new Map<string, Set<string>>();
  for (const r of rows) {
    let s = out.get(r.table_name);
    if (!s) out.set(r.table_name, (s = new Set()));
    s.add(r.column_name);
  }
  return out;
}

export async function postgresSource(sql: Sql): Promise<ExportSource> {
  const q = await sql.reserve();
  await q`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`;
  await unbounded(q);
  const cols = await columnsOf(q);
  const [head] = await q<{ seq: number }[]>`SELECT seq FROM message_head WHERE one = 1`;
  const [count] = await q<{ n: number }[]>`SELECT count(*)::bigint AS n FROM messages`;
  const [mig] = await q<{ v: number }[]>`SELECT max(version) AS v FROM m4a_migrations`;
  return {
    store: 'postgres',
    migration: mig?.v ?? 0,
    headSeq: head?.seq ?? 0,
    messages: count?.n ?? 0,
    async *rows(t: TableSpec): AsyncGenerator<Row[]> {
      const list = [...(cols.get(t.table) ?? [])].filter((c) => !PRIVATE_COLUMNS[t.table]?.includes(c)).map((c) => `"${c}"`);
      const order = t.order === '' ? 'reg' : t.order;
      for await (const rows of q.unsafe<Row[]>(`SELECT ${list.join(', ')} FROM "${t.table}" ORDER BY ${order}`).cursor(PAGE)) yield rows;
    },
    close: async () => {
      try {
        await q`COMMIT`;
      } finally {
        q.release();
      }
    },
  };
}

export async function postgresTarget(sql: Sql, channel: string): Promise<ImportTarget> {
  const q = await sql.reserve();
  await q`BEGIN`;
  let open = true;
  try {
    await unbounded(q);
    await q.unsafe(WRITER_INDEXES);
    const [h] = await q<{ seq: number }[]>`SELECT seq FROM message_head WHERE one = 1 FOR UPDATE`;
    await q`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int, ${LOCKS.registry}::int)`;
    const cols = await columnsOf(q);
    const headBefore = h?.seq ?? 0;
    return {
      store: 'postgres',
      migration: MIGRATIONS.length,
      headBefore,
      columns: (table) => cols.get(table) ?? new Set(),
      async insert(t, rows, lines, columns) {
        const conflict = t.higher
          ? `ON CONFLICT (${t.key.join(', ')}) DO UPDATE SET "${t.higher}" = excluded."${t.higher}" WHERE excluded."${t.higher}" > "${t.table}"."${t.higher}"`
          : 'ON CONFLICT DO NOTHING';
        if (t.table !== 'messages') return (await q`INSERT INTO ${q(t.table)} ${q(rows as Record<string, string | number | null>[], columns)} ${q.unsafe(conflict)}`).count;
        const added = await q<{ seq: number }[]>`INSERT INTO messages ${q(rows as Record<string, string | number | null>[], columns)} ON CONFLICT DO NOTHING RETURNING seq`;
        const fresh = new Set(added.map((r) => Number(r.seq)));
        await indexRows(
          q,
          rows.filter((r) => fresh.has(r.seq as number)).map((r) => ({ seq: r.seq as number, subject: (r.subject as string | null) ?? '', body: (r.body as string | null) ?? '' })),
        );
        const lineOf = (seq: number): number => lines[rows.findIndex((r) => r.seq === seq)] ?? 0;
        for (const r of added) if (r.seq <= headBefore) throw seqTaken(lineOf(r.seq), r.seq);
        const rest = rows.filter((r) => !fresh.has(r.seq as number));
        if (rest.length) {
          // Already there: each must stand under the same id at the same seq.
          const same = await q<{ seq: number }[]>`SELECT m.seq FROM messages AS m
            JOIN unnest(${pgArray(rest.map((x) => x.id as string))}::text[], ${pgArray(rest.map((x) => x.seq as number))}::bigint[]) AS x(id, seq)
              ON m.id = x.id AND m.seq = x.seq`;
          const ok = new Set(same.map((r) => r.seq));
          const bad = rest.find((r) => !ok.has(r.seq as number));
          if (bad) {
            const [other] = await q<{ seq: number }[]>`SELECT seq FROM messages WHERE id = ${bad.id as string}`;
            throw notACopy(lineOf(bad.seq as number), bad.seq as number, other?.seq ?? null);
          }
        }
        return added.length;
      },
      async finish(sourceHead) {
        await q`INSERT INTO mailbox_counts (to_key, total, unacked)
          SELECT m.to_key, count(*), count(*) - count(a.seq) FROM messages AS m
          LEFT JOIN acks AS a ON a.ack_key = m.to_key AND a.seq = m.seq GROUP BY m.to_key
          ON CONFLICT (to_key) DO UPDATE SET total = excluded.total, unacked = excluded.unacked`;
        await q`UPDATE members AS mb SET acked = (SELECT count(*) FROM acks AS a
          WHERE a.ack_key = 'a:' || mb.account AND a.to_key = 'r:' || mb.room)`;
        // Team change ids were kept: the sequence continues past them.
        await q`SELECT setval(x.s, x.m) FROM (SELECT pg_get_serial_sequence('team_changes', 'id')::regclass AS s, max(id) AS m FROM team_changes) AS x
          WHERE x.m IS NOT NULL AND x.m > COALESCE(pg_sequence_last_value(x.s), 0)`;
        const [r] = await q<{ seq: number }[]>`UPDATE message_head SET seq = GREATEST(seq, ${sourceHead}, COALESCE((SELECT max(seq) FROM messages), 0))
          WHERE one = 1 RETURNING seq`;
        const head = r?.seq ?? 0;
        await q`SELECT pg_notify(${channel}, ${String(head)})`;
        await q`COMMIT`;
        open = false;
        q.release();
        return head;
      },
      async abort() {
        if (!open) return;
        open = false;
        try {
          await q`ROLLBACK`;
        } finally {
          q.release();
        }
      },
    };
  } catch (err) {
    await q`ROLLBACK`.catch(() => undefined);
    q.release();
    throw err;
  }
}
