// Leases in the SQLite store (migration 8). A claim counts the holder's live leases, reads the live
// leases of its space for the engine's predicate, takes the next epoch and inserts, in one
// IMMEDIATE transaction; claims made in the same event-loop turn share it (group commit), each
// seeing the ones before it, so a burst of claimants on one resource pays one fsync and one wins.
import type Database from 'better-sqlite3';
import type { LeaseClaimOutcome, LeaseEndReason, LeaseMode, LeaseQuery, LeaseRecord, NewLease } from '../types.js';
import type { GroupCommit } from './group-commit.js';
import { prefixUpperBound } from './prefix.js';
import type { Stmt } from './statements.js';
import type { SqliteWriter } from './writer.js';

export interface LeaseRow {
  id: string;
  space: string;
  resource: string;
  mode: string;
  holder_account: string;
  holder_session: string | null;
  holder_lineage: string | null;
  holder_address: string;
  reason: string | null;
  created_at: number;
  expires_at: number;
  epoch: number;
  attempt: number;
  ended_at: number | null;
  end_reason: string | null;
  settled: number;
}

export function toLease(r: LeaseRow): LeaseRecord {
  return {
    id: r.id,
    space: r.space,
    resource: r.resource,
    mode: r.mode as LeaseMode,
    holderAccount: r.holder_account,
    holderSession: r.holder_session,
    holderLineage: r.holder_lineage,
    holderAddress: r.holder_address,
    reason: r.reason,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    epoch: r.epoch,
    attempt: r.attempt,
    endedAt: r.ended_at,
    endReason: r.end_reason as LeaseEndReason | null,
    settled: r.settled === 1,
  };
}

/** The row a new lease is stored as (both SQL stores). */
export function newLeaseRow(l: NewLease, epoch: number): LeaseRow {
  return {
    id: l.id,
    space: l.space,
    resource: l.resource,
    mode: l.mode,
    holder_account: l.holderAccount,
    holder_session: l.holderSession,
    holder_lineage: l.holderLineage,
    holder_address: l.holderAddress,
    reason: l.reason,
    created_at: l.createdAt,
    expires_at: l.expiresAt,
    epoch,
    attempt: l.attempt,
    ended_at: null,
    end_reason: null,
    settled: 0,
  };
}

/** Not ended and not expired at @now (or ?). */
const LIVE = 'ended_at IS NULL AND expires_at > ?';

export type LeaseStatements = ReturnType<typeof prepareLeaseStatements>;

export function prepareLeaseStatements(db: Database.Database) {
  const p = <R = unknown>(sql: string): Stmt<R> => db.prepare<unknown[], R>(sql);
  return {
    // `holder_session IS ?` matches a null session too (a holder without one counts by account).
    countHeld: p<{ n: number }>(`SELECT count(*) AS n FROM leases WHERE holder_account = ? AND holder_session IS ? AND ${LIVE}`),
    liveOfSpace: p<LeaseRow>(`SELECT * FROM leases WHERE space = ? AND ${LIVE} ORDER BY created_at, id`),
    nextEpoch: p<{ epoch: number }>(
      `INSERT INTO lease_epochs (space, resource, epoch) VALUES (?, ?, 1)
       ON CONFLICT (space, resource) DO UPDATE SET epoch = epoch + 1 RETURNING epoch`,
    ),
    insert: p(
      `INSERT INTO leases (id, space, resource, mode, holder_account, holder_session, holder_lineage, holder_address,
         reason, created_at, expires_at, epoch, attempt)
       VALUES (@id, @space, @resource, @mode, @holder_account, @holder_session, @holder_lineage, @holder_address,
         @reason, @created_at, @expires_at, @epoch, @attempt)`,
    ),
    get: p<LeaseRow>('SELECT * FROM leases WHERE id = ?'),
    renew: p<LeaseRow>(`UPDATE leases SET expires_at = ? WHERE id = ? AND epoch = ? AND ${LIVE} RETURNING *`),
    end: p<LeaseRow>(`UPDATE leases SET ended_at = ?, end_reason = ?, settled = 0 WHERE id = ? AND epoch = ? AND ${LIVE} RETURNING *`),
    expire: p<LeaseRow>(
      `UPDATE leases SET ended_at = @now, end_reason = 'expired', settled = 0 WHERE id IN (
         SELECT id FROM leases WHERE ended_at IS NULL AND expires_at <= @now ORDER BY expires_at, id LIMIT @limit) RETURNING *`,
    ),
    endSession: p<LeaseRow>(
      `UPDATE leases SET ended_at = @now, end_reason = 'session_ended', settled = 0
       WHERE holder_account = @account AND holder_session = @session AND ended_at IS NULL AND expires_at > @now RETURNING *`,
    ),
    endAccount: p(`UPDATE leases SET ended_at = ?, end_reason = 'account_removed', settled = 0 WHERE holder_account = ? AND ended_at IS NULL`),
    unsettled: p<LeaseRow>('SELECT * FROM leases WHERE ended_at IS NOT NULL AND settled = 0 ORDER BY ended_at, id LIMIT ?'),
    settle: p('UPDATE leases SET settled = 1 WHERE id = ? AND ended_at IS NOT NULL'),
    prune: p('DELETE FROM leases WHERE settled = 1 AND ended_at < ?'),
  };
}

/** UPDATE … RETURNING gives rows in no promised order. */
const byExpiry = (a: LeaseRecord, b: LeaseRecord): number => a.expiresAt - b.expiresAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const bySpaceThenId = (a: LeaseRecord, b: LeaseRecord): number => (a.space < b.space ? -1 : a.space > b.space ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

interface ClaimInput {
  l: NewLease;
  o: { now: number; maxPerHolder: number; conflicts(other: LeaseRecord): boolean };
}

export class SqliteLeases {
  private readonly claims: GroupCommit<ClaimInput, LeaseClaimOutcome>;
  /** listLeases' statements by the filters it was given, prepared on first use. */
  private readonly lists = new Map<string, Stmt<LeaseRow>>();

  constructor(
    private readonly db: Database.Database,
    private readonly st: LeaseStatements,
    /** The store's writer: every write resolves once durable. */
    private readonly writer: SqliteWriter,
  ) {
    this.claims = writer.group(
      (inputs: ClaimInput[]) => inputs.map((i) => this.claimOne(i)),
      () => undefined,
      true,
    );
  }

  /** An IMMEDIATE write transaction (the write lock taken at BEGIN), resolved once durable. */
  private tx<R>(fn: () => R): Promise<R> {
    return this.writer.tx(fn, true);
  }

  claimLease(l: NewLease, o: ClaimInput['o']): Promise<LeaseClaimOutcome> {
    return this.claims.submit({ l, o });
  }

  private claimOne({ l, o }: ClaimInput): LeaseClaimOutcome {
    const held = (this.st.countHeld.get(l.holderAccount, l.holderSession, o.now) as { n: number }).n;
    if (held >= o.maxPerHolder) return { kind: 'too_many', held };
    const holders = this.st.liveOfSpace
      .all(l.space, o.now)
      .map(toLease)
      .filter((x) => o.conflicts({ ...x }));
    if (holders.length > 0) return { kind: 'conflict', holders };
    const epoch = (this.st.nextEpoch.get(l.space, l.resource) as { epoch: number }).epoch;
    const row = newLeaseRow(l, epoch);
    this.st.insert.run(row);
    return { kind: 'claimed', lease: toLease(row) };
  }

  async renewLease(id: string, epoch: number, expiresAt: number, now: number): Promise<LeaseRecord | null> {
    const r = await this.tx(() => this.st.renew.get(expiresAt, id, epoch, now));
    return r ? toLease(r) : null;
  }

  async endLease(id: string, epoch: number, reason: LeaseEndReason, now: number): Promise<LeaseRecord | null> {
    const r = await this.tx(() => this.st.end.get(now, reason, id, epoch, now));
    return r ? toLease(r) : null;
  }

  async expireLeases(now: number, limit: number): Promise<LeaseRecord[]> {
    if (limit <= 0) return []; // LIMIT -1 would mean "no limit" to SQLite
    return (await this.tx(() => this.st.expire.all({ now, limit }))).map(toLease).sort(byExpiry);
  }

  async endSessionLeases(account: string, session: string, now: number): Promise<LeaseRecord[]> {
    return (await this.tx(() => this.st.endSession.all({ now, account, session }))).map(toLease).sort(bySpaceThenId);
  }

  async getLease(id: string): Promise<LeaseRecord | null> {
    const r = this.st.get.get(id);
    return r ? toLease(r) : null;
  }

  async listLeases(q: LeaseQuery): Promise<LeaseRecord[]> {
    if (q.limit <= 0) return [];
    const where = ['ended_at IS NULL', 'expires_at > @now'];
    const params: Record<string, unknown> = { now: q.now, limit: q.limit };
    const add = (term: string, name: string, value: string | null | undefined) => {
      if (value === undefined || value === null) return;
      where.push(term);
      params[name] = value;
    };
    add('space = @space', 'space', q.space);
    add('space >= @lo', 'lo', q.spacePrefix);
    if (q.spacePrefix !== undefined) add('space < @hi', 'hi', prefixUpperBound(q.spacePrefix));
    add('holder_account = @account', 'account', q.holderAccount);
    add('holder_session = @session', 'session', q.holderSession);
    const sql = `SELECT * FROM leases WHERE ${where.join(' AND ')} ORDER BY space, id LIMIT @limit`;
    let stmt = this.lists.get(sql);
    if (!stmt) this.lists.set(sql, (stmt = this.db.prepare<unknown[], LeaseRow>(sql)));
    return stmt.all(params).map(toLease);
  }

  async unsettledLeases(limit: number): Promise<LeaseRecord[]> {
    if (limit <= 0) return [];
    return this.st.unsettled.all(limit).map(toLease);
  }

  async settleLease(id: string): Promise<void> {
    await this.tx(() => this.st.settle.run(id));
  }

  async pruneLeases(before: number): Promise<number> {
    return this.tx(() => this.st.prune.run(before).changes);
  }

  /** Inside the caller's transaction: the account is removed, or created under a name used before.
   *  Every lease of it not ended yet ends (account_removed) and waits to be settled, so a pooled
   *  task it held goes back. Neither call takes a time: the end is the wall clock's. */
  endAccountLeases(account: string): void {
    this.st.endAccount.run(Date.now(), account);
  }
}
