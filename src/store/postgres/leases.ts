// Leases in the PostgreSQL store (migration 7). Several daemons claim, renew and expire at once, so:
//   claim   one transaction under advisory locks (locks.ts: account shared, holder, space): the
//           holder's count and the space's live leases it reads are exact until it commits; the
//           engine's `conflicts` predicate is applied here, in JS, to those rows
//   renew   under the space's lock, and refused when the space was claimed at or after the lease's
//           expiry: that claim saw it expired (a renew whose `now` was read earlier must not
//           revive it next to a new holder)
//   expire  one UPDATE of the rows it took FOR UPDATE SKIP LOCKED: two daemons never end the same
//           lease (the second skips the row, or re-checks it once the first committed), so each
//           expired lease is returned once
// An ended lease keeps its row, unsettled, until the engine settled it (unsettledLeases after a crash).
import type { LeaseClaimOutcome, LeaseEndReason, LeaseQuery, LeaseRecord, NewLease } from '../types.js';
import { prefixUpperBound } from '../sqlite/prefix.js';
// One row shape and mapping for both SQL stores (as sqlite/task-rows.ts for tasks).
import { newLeaseRow, toLease, type LeaseRow } from '../sqlite/leases.js';
import { leaseAccountLock, leaseClaimLocks, leaseSpaceLock } from './locks.js';
import { NOW_MS, type Sql, type Tx } from './pg-sql.js';

/** Ended leases in the order they are listed when several end at once. */
const byExpiry = (a: LeaseRecord, b: LeaseRecord) => a.expiresAt - b.expiresAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const byCreation = (a: LeaseRecord, b: LeaseRecord) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export class PgLeases {
  constructor(private readonly sql: Sql) {}

  async claimLease(l: NewLease, o: { now: number; maxPerHolder: number; conflicts(other: LeaseRecord): boolean }): Promise<LeaseClaimOutcome> {
    return this.sql.begin(async (tx): Promise<LeaseClaimOutcome> => {
      await leaseClaimLocks(tx, l.holderAccount, l.holderSession, l.space);
      const session = l.holderSession === null ? tx`holder_session IS NULL` : tx`holder_session = ${l.holderSession}`;
      const [c] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM leases
        WHERE holder_account = ${l.holderAccount} AND ${session} AND ended_at IS NULL AND expires_at > ${o.now}`;
      const held = c?.n ?? 0;
      if (held >= o.maxPerHolder) return { kind: 'too_many', held };
      const live = await tx<LeaseRow[]>`SELECT * FROM leases WHERE space = ${l.space} AND ended_at IS NULL AND expires_at > ${o.now}`;
      const holders = live.map(toLease).filter((other) => o.conflicts(other));
      if (holders.length > 0) return { kind: 'conflict', holders: holders.sort(byCreation) };
      const [e] = await tx<{ epoch: number }[]>`INSERT INTO lease_epochs (space, resource, epoch) VALUES (${l.space}, ${l.resource}, 1)
        ON CONFLICT (space, resource) DO UPDATE SET epoch = lease_epochs.epoch + 1 RETURNING epoch`;
      const row = newLeaseRow(l, (e as { epoch: number }).epoch);
      await tx`INSERT INTO leases ${tx(row)}`;
      return { kind: 'claimed', lease: toLease(row) };
    });
  }

  async renewLease(id: string, epoch: number, expiresAt: number, now: number): Promise<LeaseRecord | null> {
    return this.sql.begin(async (tx) => {
      const [cur] = await tx<{ space: string }[]>`SELECT space FROM leases WHERE id = ${id} AND epoch = ${epoch} AND ended_at IS NULL`;
      if (!cur) return null;
      await leaseSpaceLock(tx, cur.space);
      const [r] = await tx<LeaseRow[]>`UPDATE leases SET expires_at = ${expiresAt}
        WHERE id = ${id} AND epoch = ${epoch} AND ended_at IS NULL AND expires_at > ${now}
          AND NOT EXISTS (SELECT 1 FROM leases AS o WHERE o.space = leases.space AND o.created_at >= leases.expires_at AND o.id <> leases.id)
        RETURNING *`;
      return r ? toLease(r) : null;
    });
  }

  async endLease(id: string, epoch: number, reason: LeaseEndReason, now: number): Promise<LeaseRecord | null> {
    const [r] = await this.sql<LeaseRow[]>`UPDATE leases SET ended_at = ${now}, end_reason = ${reason}
      WHERE id = ${id} AND epoch = ${epoch} AND ended_at IS NULL AND expires_at > ${now} RETURNING *`;
    return r ? toLease(r) : null;
  }

  async expireLeases(now: number, limit: number): Promise<LeaseRecord[]> {
    if (limit <= 0) return [];
    // The rows are picked once, in a materialised CTE: as `id IN (SELECT … LIMIT … SKIP LOCKED)` the
    // planner may rescan the subquery per row (a nested-loop semi join) and end far more than limit.
    const rows = await this.sql<LeaseRow[]>`WITH due AS MATERIALIZED (SELECT id FROM leases WHERE ended_at IS NULL AND expires_at <= ${now}
        ORDER BY expires_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      UPDATE leases SET ended_at = ${now}, end_reason = 'expired' FROM due
      WHERE leases.id = due.id AND leases.ended_at IS NULL RETURNING leases.*`;
    return rows.map(toLease).sort(byExpiry);
  }

  async endSessionLeases(account: string, session: string, now: number): Promise<LeaseRecord[]> {
    const rows = await this.sql<LeaseRow[]>`UPDATE leases SET ended_at = ${now}, end_reason = 'session_ended'
      WHERE holder_account = ${account} AND holder_session = ${session} AND ended_at IS NULL AND expires_at > ${now} RETURNING *`;
    return rows.map(toLease).sort(byCreation);
  }

  async getLease(id: string): Promise<LeaseRecord | null> {
    const [r] = await this.sql<LeaseRow[]>`SELECT * FROM leases WHERE id = ${id}`;
    return r ? toLease(r) : null;
  }

  async listLeases(q: LeaseQuery): Promise<LeaseRecord[]> {
    if (q.limit <= 0) return [];
    const s = this.sql;
    const upper = q.spacePrefix === undefined ? null : prefixUpperBound(q.spacePrefix);
    const space =
      q.space !== undefined
        ? s`AND space = ${q.space}`
        : q.spacePrefix === undefined || q.spacePrefix === ''
          ? s``
          : upper === null
            ? s`AND space >= ${q.spacePrefix}`
            : s`AND space >= ${q.spacePrefix} AND space < ${upper}`;
    const account = q.holderAccount === undefined ? s`` : s`AND holder_account = ${q.holderAccount}`;
    const session = q.holderSession === undefined ? s`` : s`AND holder_session = ${q.holderSession}`;
    const rows = await s<LeaseRow[]>`SELECT * FROM leases WHERE ended_at IS NULL AND expires_at > ${q.now} ${space} ${account} ${session}
      ORDER BY space, id LIMIT ${q.limit}`;
    return rows.map(toLease);
  }

  async unsettledLeases(limit: number): Promise<LeaseRecord[]> {
    if (limit <= 0) return [];
    const rows = await this.sql<LeaseRow[]>`SELECT * FROM leases WHERE ended_at IS NOT NULL AND settled = 0 ORDER BY ended_at, id LIMIT ${limit}`;
    return rows.map(toLease);
  }

  async settleLease(id: string): Promise<void> {
    await this.sql`UPDATE leases SET settled = 1 WHERE id = ${id} AND ended_at IS NOT NULL AND settled = 0`;
  }

  async pruneLeases(before: number): Promise<number> {
    return (await this.sql`DELETE FROM leases WHERE settled = 1 AND ended_at < ${before}`).count;
  }
}

/** An account removed, or created under a name used before (inside that transaction, after the
 *  head and registry locks): once the claims in flight committed, its leases end
 *  (account_removed, unsettled: the engine returns what they held). The store's call has no
 *  clock of its own, so they end at the database's. */
export async function endAccountLeases(tx: Tx, account: string): Promise<void> {
  await leaseAccountLock(tx, account);
  await tx`UPDATE leases SET ended_at = ${tx.unsafe(NOW_MS)}, end_reason = 'account_removed'
    WHERE holder_account = ${account} AND ended_at IS NULL`;
}
