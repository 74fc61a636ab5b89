// Sessions and the names of their lineages (slugs and aliases) in the PostgreSQL store. A session
// of another host whose heartbeat expired reads as ended at that expiry (host-heartbeat.ts).
import { EXTENSION_PROVIDERS } from '../../wire/capabilities.js';
import { keyOfLineage, type Declared, type LineageJoin, type NameRecord, type NewSession, type RecordSweep, type SessionRecord } from '../types.js';
import { newSessionParams, toName, toSession, type NameRow, type SessionOutRow } from '../sqlite/rows.js';
import { prefixUpperBound } from '../sqlite/prefix.js';
import { lockHead, lockNames } from './locks.js';
import { NOW_MS, pgArray, type Q, type Sql, type Tx } from './pg-sql.js';
import { withRetry } from './with-retry.js';

export class PgSessions {
  /** @param hostId this daemon's host (its sessions are judged by the daemon, never expired here) */
  constructor(
    private readonly sql: Sql,
    private readonly hostId: () => string,
  ) {}

  /** Sessions with their lineage's slug and, for a host whose heartbeat expired, its expiry as
   *  the end (this daemon's own host excepted: it judges its sessions itself). */
  private sessions(q: Q) {
    return q`SELECT s.account, s.id, s.lineage, s.host_id, s.pid, s.start_time, s.exe, s.uid, s.c_provider,
        s.c_provider_session_id, s.c_model, s.c_cwd, s.d_working_on, s.d_role, s.d_parent, s.created_at, s.last_seen,
        COALESCE(s.ended_at, CASE WHEN h.host_id <> ${this.hostId()} AND h.expires_at < ${q.unsafe(NOW_MS)}
          THEN h.expires_at END) AS ended_at,
        s.successor, n.name AS slug
      FROM sessions AS s
      LEFT JOIN names AS n ON n.account = s.account AND n.lineage = s.lineage AND n.kind = 'slug'
      LEFT JOIN hosts AS h ON h.host_id = s.host_id`;
  }

  async registerSession(s: NewSession): Promise<SessionRecord> {
    return this.sql.begin(async (tx) => {
      await lockNames(tx, s.account);
      const [existing] = await tx<SessionOutRow[]>`${this.sessions(tx)} WHERE s.account = ${s.account} AND s.id = ${s.id}`;
      if (existing) return toSession(existing);
      let lineage = s.id;
      let joined = false;
      if (s.predecessor !== null) {
        const [pred] = await tx<{ lineage: string }[]>`SELECT lineage FROM sessions
          WHERE account = ${s.account} AND id = ${s.predecessor} AND successor IS NULL FOR UPDATE`;
        // Only the first successor inherits; a second one starts its own lineage.
        if (pred) {
          await tx`UPDATE sessions SET successor = ${s.id}, ended_at = COALESCE(ended_at, ${s.createdAt})
            WHERE account = ${s.account} AND id = ${s.predecessor}`;
          lineage = pred.lineage;
          joined = true;
        }
      }
      const row = newSessionParams(s, lineage);
      await tx`INSERT INTO sessions ${tx(row)}`;
      const [sl] = await tx<{ name: string }[]>`SELECT name FROM names WHERE account = ${s.account} AND lineage = ${lineage} AND kind = 'slug'`;
      let slug = sl?.name ?? null;
      if (slug === null && !joined && s.slugBase !== null) slug = await this.allocateSlug(tx, s.account, lineage, s.slugBase);
      const [out] = await tx<SessionOutRow[]>`${this.sessions(tx)} WHERE s.account = ${s.account} AND s.id = ${s.id}`;
      return toSession({ ...(out as SessionOutRow), slug });
    });
  }

  private async allocateSlug(tx: Tx, account: string, lineage: string, base: string): Promise<string> {
    let name = base;
    if ((await tx`SELECT 1 FROM names WHERE account = ${account} AND name = ${base}`).length > 0) {
      // Every `base-…` name of the account in one range of the key ('.' follows '-').
      const rows = await tx<{ name: string }[]>`SELECT name FROM names WHERE account = ${account} AND name >= ${`${base}-`} AND name < ${`${base}.`}`;
      const taken = new Set(rows.map((r) => r.name));
      let n = 2;
      while (taken.has(`${base}-${n}`)) n++;
      name = `${base}-${n}`;
    }
    await tx`INSERT INTO names (account, name, lineage, kind) VALUES (${account}, ${name}, ${lineage}, 'slug')`;
    return name;
  }

  async getSession(account: string, id: string): Promise<SessionRecord | null> {
    const [r] = await this.sql<SessionOutRow[]>`${this.sessions(this.sql)} WHERE s.account = ${account} AND s.id = ${id}`;
    return r ? toSession(r) : null;
  }

  async findSessionsByPrefix(account: string, prefix: string, limit: number): Promise<SessionRecord[]> {
    if (limit <= 0) return [];
    const upper = prefixUpperBound(prefix);
    const rows =
      upper === null
        ? await this.sql<SessionOutRow[]>`${this.sessions(this.sql)} WHERE s.account = ${account} AND s.id >= ${prefix} ORDER BY s.id LIMIT ${limit}`
        : await this.sql<SessionOutRow[]>`${this.sessions(this.sql)} WHERE s.account = ${account} AND s.id >= ${prefix} AND s.id < ${upper} ORDER BY s.id LIMIT ${limit}`;
    return rows.map(toSession);
  }

  async lineageSessions(account: string, lineage: string): Promise<SessionRecord[]> {
    const rows = await this.sql<SessionOutRow[]>`${this.sessions(this.sql)} WHERE s.account = ${account} AND s.lineage = ${lineage} ORDER BY s.created_at, s.reg`;
    return rows.map(toSession);
  }

  async addAlias(account: string, lineage: string, name: string): Promise<'ok' | 'taken'> {
    return this.sql.begin(async (tx) => {
      await lockNames(tx, account);
      const [held] = await tx<{ lineage: string }[]>`SELECT lineage FROM names WHERE account = ${account} AND name = ${name}`;
      if (held) return held.lineage === lineage ? ('ok' as const) : ('taken' as const);
      await tx`INSERT INTO names (account, name, lineage, kind) VALUES (${account}, ${name}, ${lineage}, 'alias')`;
      return 'ok' as const;
    });
  }

  async removeAlias(account: string, lineage: string, name: string): Promise<boolean> {
    const r = await this.sql`DELETE FROM names WHERE account = ${account} AND name = ${name} AND lineage = ${lineage} AND kind = 'alias'`;
    return r.count > 0;
  }

  async resolveName(account: string, name: string): Promise<NameRecord | null> {
    const [r] = await this.sql<NameRow[]>`SELECT account, name, lineage, kind FROM names WHERE account = ${account} AND name = ${name}`;
    return r ? toName(r) : null;
  }

  async namesOf(account: string): Promise<NameRecord[]> {
    return (await this.sql<NameRow[]>`SELECT account, name, lineage, kind FROM names WHERE account = ${account} ORDER BY name`).map(toName);
  }

  async listNames(): Promise<NameRecord[]> {
    return (await this.sql<NameRow[]>`SELECT account, name, lineage, kind FROM names ORDER BY account, name`).map(toName);
  }

  async listSessions(): Promise<SessionRecord[]> {
    return (await this.sql<SessionOutRow[]>`${this.sessions(this.sql)} ORDER BY s.reg`).map(toSession);
  }

  async findByProviderSession(account: string, provider: string, providerSessionId: string): Promise<SessionRecord[]> {
    const rows = await this.sql<SessionOutRow[]>`${this.sessions(this.sql)}
      WHERE s.account = ${account} AND s.c_provider = ${provider} AND s.c_provider_session_id = ${providerSessionId}
      ORDER BY s.created_at DESC, s.reg DESC`;
    return rows.map(toSession);
  }

  async touchSessions(seen: { account: string; id: string; at: number }[]): Promise<void> {
    if (seen.length === 0) return;
    // Sorted, so two daemons touching overlapping sets lock rows in the same order.
    const sorted = [...seen].sort((a, b) => (a.account < b.account ? -1 : a.account > b.account ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    await this.sql`UPDATE sessions AS s SET last_seen = GREATEST(s.last_seen, t.at)
      FROM (SELECT * FROM unnest(${pgArray(sorted.map((t) => t.account))}::text[],
                                 ${pgArray(sorted.map((t) => t.id))}::text[],
                                 ${pgArray(sorted.map((t) => t.at))}::bigint[]) AS x(account, id, at)) AS t
      WHERE s.account = t.account AND s.id = t.id`;
  }

  async endSession(account: string, id: string, at: number): Promise<void> {
    await this.sql`UPDATE sessions SET ended_at = ${at} WHERE account = ${account} AND id = ${id} AND ended_at IS NULL`;
  }

  async setDeclared(account: string, id: string, d: Declared): Promise<SessionRecord | null> {
    const r = await this.sql`UPDATE sessions SET d_working_on = ${d.workingOn ?? null}, d_role = ${d.role ?? null}, d_parent = ${d.parent ?? null}
      WHERE account = ${account} AND id = ${id}`;
    // The update stands: reading it back may run again on a lost connection, as any read.
    return r.count > 0 ? withRetry(() => this.getSession(account, id)) : null;
  }

  async setProviderSessionId(account: string, id: string, providerSessionId: string): Promise<SessionRecord | null> {
    const r = await this.sql`UPDATE sessions SET c_provider_session_id = ${providerSessionId} WHERE account = ${account} AND id = ${id}`;
    return r.count > 0 ? withRetry(() => this.getSession(account, id)) : null;
  }

  /** Under the head lock (lockHead: no mail lands under the lineage's key meanwhile) and the
   *  account's names lock (which registerSession takes before it links a predecessor). */
  async joinLineage(account: string, id: string, predecessor: string, at: number, records: RecordSweep['owned']): Promise<LineageJoin> {
    return this.sql.begin(async (tx): Promise<LineageJoin> => {
      await lockHead(tx);
      await lockNames(tx, account);
      type Row = { id: string; lineage: string; successor: string | null };
      const [s] = await tx<Row[]>`SELECT id, lineage, successor FROM sessions WHERE account = ${account} AND id = ${id} FOR UPDATE`;
      const [pred] = await tx<Row[]>`SELECT id, lineage, successor FROM sessions WHERE account = ${account} AND id = ${predecessor} FOR UPDATE`;
      if (!s || !pred) return { refused: 'unknown' };
      if (pred.successor !== null || pred.lineage === s.lineage) return { refused: 'taken' };
      const own = s.lineage;
      const others = await tx`SELECT 1 FROM sessions WHERE account = ${account} AND lineage = ${own} AND id <> ${id} LIMIT 1`;
      if (own !== s.id || s.successor !== null || others.length > 0) return { refused: 'not_alone' };
      const key = keyOfLineage(account, own);
      const [mail] = await tx<{ any: boolean }[]>`SELECT EXISTS (SELECT 1 FROM messages WHERE to_key = ${key})
        OR EXISTS (SELECT 1 FROM mailbox_counts WHERE to_key = ${key})
        OR EXISTS (SELECT 1 FROM acks WHERE ack_key = ${key})
        OR EXISTS (SELECT 1 FROM ack_floors WHERE ack_key = ${key}) AS any`;
      if (mail?.any) return { refused: 'mail' };
      if ((await tx`SELECT 1 FROM names WHERE account = ${account} AND lineage = ${own} AND kind = 'alias' LIMIT 1`).length > 0) return { refused: 'alias' };
      if ((await tx`SELECT 1 FROM tasks WHERE to_account = ${account} AND to_lineage = ${own} LIMIT 1`).length > 0) return { refused: 'task' };
      if ((await tx`SELECT 1 FROM leases WHERE holder_account = ${account} AND holder_lineage = ${own} LIMIT 1`).length > 0) return { refused: 'lease' };
      for (const r of records) {
        const upper = 'id' in r ? null : prefixUpperBound(r.prefix);
        const hit =
          'id' in r
            ? await tx`SELECT 1 FROM records WHERE kind = ${r.kind} AND id = ${r.id}`
            : upper === null
              ? await tx`SELECT 1 FROM records WHERE kind = ${r.kind} AND id >= ${r.prefix} LIMIT 1`
              : await tx`SELECT 1 FROM records WHERE kind = ${r.kind} AND id >= ${r.prefix} AND id < ${upper} LIMIT 1`;
        if (hit.length > 0) return { refused: 'record' };
      }
      await tx`DELETE FROM names WHERE account = ${account} AND lineage = ${own} AND kind = 'slug'`;
      await tx`UPDATE sessions SET successor = ${id}, ended_at = COALESCE(ended_at, ${at}) WHERE account = ${account} AND id = ${predecessor}`;
      await tx`UPDATE sessions SET lineage = ${pred.lineage} WHERE account = ${account} AND id = ${id}`;
      const [out] = await tx<SessionOutRow[]>`${this.sessions(tx)} WHERE s.account = ${account} AND s.id = ${id}`;
      return { joined: toSession(out as SessionOutRow) };
    });
  }

  /** Deletes sessions ended before `before` (a dead host's sessions by their host's expiry), and
   *  the names of every lineage this leaves without a session. */
  async pruneSessions(before: number, resumableBefore = before): Promise<number> {
    return this.sql.begin(async (tx) => {
      const gone = await tx<{ account: string; lineage: string }[]>`DELETE FROM sessions AS s
        WHERE (s.ended_at < ${before} AND (s.c_provider IS NULL OR s.c_provider NOT IN ${tx([...EXTENSION_PROVIDERS])} OR s.ended_at < ${resumableBefore}))
           OR (s.ended_at IS NULL AND s.host_id <> ${this.hostId()} AND EXISTS (
                SELECT 1 FROM hosts AS h WHERE h.host_id = s.host_id AND h.expires_at < ${before} AND h.expires_at < ${tx.unsafe(NOW_MS)}))
        RETURNING s.account, s.lineage`;
      const lineages = new Map<string, [string, string]>();
      for (const l of gone) lineages.set(`${l.account}\n${l.lineage}`, [l.account, l.lineage]);
      for (const [account, lineage] of lineages.values()) {
        const left = await tx`SELECT 1 FROM sessions WHERE account = ${account} AND lineage = ${lineage} LIMIT 1`;
        if (left.length === 0) await tx`DELETE FROM names WHERE account = ${account} AND lineage = ${lineage}`;
      }
      return gone.length;
    });
  }
}
