// Store.tallies in PostgreSQL: the messages from mailbox_counts (a row per key, kept in every
// append's and deletion's transaction), never count(*) over messages; tasks and approvals grouped
// by state. One statement, so the three are one snapshot.
import type { StoreTallies } from '../types.js';
import { talliesOf } from '../tallies.js';
import type { Sql } from './pg-sql.js';

export async function pgTallies(sql: Sql, now: number): Promise<StoreTallies> {
  const rows = await sql<{ what: string; state: string; n: string }[]>`
    SELECT 'messages' AS what, '' AS state, coalesce(sum(total), 0)::text AS n FROM mailbox_counts
    UNION ALL SELECT 'task', state, count(*)::text FROM tasks GROUP BY state
    UNION ALL SELECT 'approval', CASE WHEN state = 'pending' AND expires_at IS NOT NULL AND expires_at <= ${now} THEN 'expired' ELSE state END,
      count(*)::text FROM approvals GROUP BY 2`;
  const of = (what: string) => rows.filter((r) => r.what === what);
  return talliesOf(Number(of('messages')[0]?.n ?? 0), of('task'), of('approval'));
}
