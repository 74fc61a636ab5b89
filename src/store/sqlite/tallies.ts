// Store.tallies in SQLite: the messages from mailbox_counts (a row per key, kept in every append's
// and deletion's transaction), so the answer costs the same at a million messages; tasks and
// approvals grouped by state (tables of work, far smaller than the mail).
import type Database from 'better-sqlite3';
import type { StoreTallies } from '../types.js';
import { talliesOf } from '../tallies.js';

type Counted = { state: string; n: number };

export function prepareTallies(db: Database.Database): (now: number) => StoreTallies {
  const messages = db.prepare<[], { n: number }>('SELECT coalesce(sum(total), 0) AS n FROM mailbox_counts');
  const tasks = db.prepare<[], Counted>('SELECT state, count(*) AS n FROM tasks GROUP BY state');
  const approvals = db.prepare<[number], Counted>(
    // Expired as the engine shows it: pending past its expiry.
    "SELECT CASE WHEN state = 'pending' AND expires_at IS NOT NULL AND expires_at <= ? THEN 'expired' ELSE state END AS state, count(*) AS n FROM approvals GROUP BY 1",
  );
  return (now) => talliesOf(messages.get()?.n ?? 0, tasks.all(), approvals.all(now));
}
