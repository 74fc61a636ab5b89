// The PostgreSQL store: several daemons (on several machines) share one database. Same results as
// the SQLite and memory stores (the conformance suite runs against all three); what sharing adds:
//
// Sequence. A seq is assigned when the append batch commits, not when it starts: the batch first
// locks the single `message_head` row (SELECT … FOR UPDATE), checks idempotency keys and ids, takes
// head+1 … head+n, inserts, moves the head and commits. The row lock is the serialisation point of
// every append of every daemon, held only for that last step (a handful of statements and the
// commit's fsync; group commit makes one batch carry every append of a turn). Consequences:
//   - seqs are dense and in commit order: a rolled-back batch rolls its head move back too;
//   - the committed seqs always form a prefix: a batch gets its seqs only after the previous
//     holder committed (PostgreSQL makes a commit visible before it releases the row lock), so no
//     reader, in any snapshot, can see seq 102 while 101 is still to come. page, messagesAfter,
//     headSeq and onCommit events therefore never expose a seq above a gap that may fill later,
//     and a cursor can never pass one. No watermark filtering is needed.
//   - an idempotency key checked under the lock is checked against every committed message, so the
//     same key sent to two daemons at once yields one 'created' and one 'duplicate' (or 'conflict').
//
// Wake-ups. A batch sends NOTIFY on the schema's channel with the new head (ids only, never
// bodies; notifications of one transaction merge, which is fine for a head). Each store LISTENs
// (postgres.js keeps a dedicated connection, reconnects with backoff and LISTENs again) and runs a
// catch-up query `seq > caughtUp` on each notification and after every (re)LISTEN, since
// notifications sent while disconnected are lost; a slow poll of the head is the last safety net.
// Events are emitted strictly in seq order, each seq once: a local batch whose head was already
// caught up is announced at once (no round trip); otherwise the catch-up announces it in order.
// This keeps the engine's wake-batch argument (an event for seq s comes after every event < s).
//
// Liveness across hosts. A daemon attaches its host id (attachHost): a row in `hosts` refreshed
// every few seconds with an expiry on the database clock. Sessions of another host whose expiry
// has passed read as ended at that expiry (nothing is written: they come back live when their
// host does). Sessions of this daemon's own host are judged by the daemon itself, as before.
//
// Failure. Every operation has a statement timeout and a connect timeout, so while the database is
// down operations reject (the engine answers store_unavailable) instead of hanging; the pool
// reconnects by itself (client.ts: the client, with a crash on server-side close fixed). A send
// resolves only once its batch committed. When the connection dies under a batch, the store looks
// up whether it committed (then it answers normally) or not (then it runs it once more); only when
// that cannot be told does the send reject, and the client retries with its idempotency key.
// A read whose connection was killed runs once more.
import type postgresNs from 'postgres';
import { postgres } from './client.js';
import {
  ackKeyFor,
  keyOfAccount,
  keyOfRoom,
  readKeys,
  type AccountRecord,
  type AckItem,
  type AckResult,
  type AppendOutcome,
  type CommitEvent,
  type Declared,
  type MailKey,
  type NameRecord,
  type NewAccount,
  type NewMessage,
  type NewSession,
  type PagedMessage,
  type PageQuery,
  type ReaderScope,
  type RecordRow,
  type RecordSweep,
  type Removal,
  type RoomOptions,
  type RoomRecord,
  type SessionRecord,
  type Store,
  type StoredMessage,
} from '../types.js';
import { CommitListeners } from '../commit-listeners.js';
import {
  accountParams,
  messageParams,
  newSessionParams,
  toAccount,
  toMessage,
  toName,
  toPaged,
  toSession,
  type AccountRow,
  type MessageRow,
  type NameRow,
  type PagedRow,
  type SessionOutRow,
} from '../sqlite/rows.js';
import { prefixUpperBound } from '../sqlite/sqlite-store.js';
import { bootId as readBootId } from './host-identity.js';
import { LOCKS, LOCK_NAMESPACE, migrate } from './migrations.js';
import { forgetAccount, purgeAccountMail, purgeRoomMail, sweepOwned } from './purge.js';
import { parsePostgresSpec, redact } from './spec.js';

type Sql = postgresNs.Sql;
type Tx = postgresNs.TransactionSql;
type Q = postgresNs.ISql;

export interface PostgresStoreOptions {
  /** postgres://… with an optional ?schema= (see spec.ts). */
  spec: string;
  /** Pool size (default 10; LISTEN takes one more connection). */
  max?: number;
  /** Seconds to wait for a connection to open (default 5). */
  connectTimeoutSec?: number;
  /** Server-side cap on any statement, ms (default 15 000). */
  statementTimeoutMs?: number;
  /** Safety poll of the head for missed wake-ups, ms (default 2 000). */
  pollMs?: number;
  /** Shows in pg_stat_activity (default `m4a:<schema>`). */
  applicationName?: string;
  /** Tests only: runs inside an append batch after its seqs are taken, before it commits. */
  beforeCommit?: (firstSeq: number, lastSeq: number) => Promise<void>;
}

export interface HostOptions {
  bootId?: string | null;
  /** How long the host counts as alive after each refresh (default 60 s). */
  ttlMs?: number;
  /** How often the refresh runs (default ttl / 4). */
  everyMs?: number;
}

export interface PostgresStoreStats {
  appendBatches: number;
  appends: number;
  catchUps: number;
  notifications: number;
  listens: number;
}

interface AppendInput {
  m: NewMessage;
  since: number;
}

interface Pending {
  input: AppendInput;
  resolve: (o: AppendOutcome) => void;
  reject: (err: unknown) => void;
}

type RoomRow = { name: string; created_at: number; everyone: number; is_open: number };

interface BatchResult {
  outcomes: (AppendOutcome | Error)[];
  prevHead: number;
  head: number;
}

/** A PostgreSQL array literal of strings or numbers, to be cast (`::text[]`, `::bigint[]`). */
export function pgArray(values: readonly (string | number)[]): string {
  return `{${values.map((v) => (typeof v === 'number' ? String(v) : `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`)).join(',')}}`;
}

/** The connection went away (terminated backend, reset, closed): the statement's fate is unknown. */
function isConnectionLoss(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return (
    code.startsWith('CONNECTION_') ||
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    code.startsWith('08') || // connection exception
    code === '57P01' || // admin_shutdown (pg_terminate_backend)
    code === '57P02' || // crash_shutdown
    code === '57P03' // cannot_connect_now
  );
}

/** The database clock in ms: heartbeats and expiries never depend on the daemons' clocks agreeing. */
const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;
const CATCH_UP_PAGE = 1000;

/** Opens the store: connects, migrates under the advisory lock, starts listening. */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const { url, schema } = parsePostgresSpec(opts.spec);
  const applicationName = (opts.applicationName ?? `m4a:${schema ?? 'public'}`).slice(0, 63);
  const connection: Record<string, string> = {
    application_name: applicationName,
    statement_timeout: String(opts.statementTimeoutMs ?? 15_000),
    // A transaction left open by a crashed client must not hold the head lock for ever.
    idle_in_transaction_session_timeout: '60000',
  };
  if (schema !== null) connection.search_path = `"${schema}"`;
  const sql = postgres(url, {
    max: opts.max ?? 10,
    connect_timeout: opts.connectTimeoutSec ?? 5,
    idle_timeout: 60,
    // Reconnect quickly, capped at 1 s (the default grows to 20 s after a few failed attempts):
    // the LISTEN connection is the wake-up path, and a daemon should be back soon after the database.
    backoff: (retries: number) => (0.5 + Math.random() / 2) * Math.min(0.05 * 2 ** retries, 1),
    onnotice: () => undefined,
    // No type lookup on each new connection: only built-in types cross this store (arrays go as
    // literals, pgArray). The lookup also rejects unhandled when a connection is killed during it.
    fetch_types: false,
    connection,
    types: {
      // bigint columns (seq, times, counters) as plain numbers: every value stays below 2^53.
      int8: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
    },
  }) as unknown as Sql;
  try {
    await migrate(sql, schema);
    const store = new PostgresStore(sql, schema, opts.pollMs ?? 2000, opts.beforeCommit);
    retryReadsOnce(store);
    await store.start();
    return store;
  } catch (err) {
    await sql.end({ timeout: 1 }).catch(() => undefined);
    if (err instanceof Error) err.message = `${err.message} (store ${redact(opts.spec)})`;
    throw err;
  }
}

interface RecordDbRow {
  kind: string;
  id: string;
  value: string;
  updated_at: string | number;
}

const toRecord = (r: RecordDbRow): RecordRow => ({ kind: r.kind, id: r.id, value: r.value, updatedAt: Number(r.updated_at) });

/** Reads that only SELECT: safe to run again when their connection was lost under them. */
const READS = [
  'getMeta', 'getAccount', 'findAccountByDigest', 'listAccounts', 'getRoom', 'listRooms', 'roomsOf', 'getListener',
  'getSession', 'findSessionsByPrefix', 'lineageSessions', 'resolveName', 'namesOf', 'listNames', 'listSessions',
  'findByProviderSession', 'getMessage', 'getThread', 'headSeq', 'messagesAfter', 'page', 'unread', 'ackedAt',
  'getRecord', 'listRecords',
] as const satisfies readonly (keyof Store)[];

/** A read whose connection was killed (pg_terminate_backend, failover) runs once more on a new
 *  one, so a single lost connection does not surface as store_unavailable. */
function retryReadsOnce(store: PostgresStore): void {
  for (const name of READS) {
    const original = (store[name] as (...a: unknown[]) => Promise<unknown>).bind(store);
    Object.defineProperty(store, name, {
      value: async (...args: unknown[]) => {
        try {
          return await original(...args);
        } catch (err) {
          if (!isConnectionLoss(err)) throw err;
          return original(...args);
        }
      },
      writable: true,
      configurable: true,
    });
  }
}

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  /** The NOTIFY channel: one per schema, so schemas sharing a database do not wake each other. */
  readonly channel: string;
  private readonly commits = new CommitListeners();
  private readonly counts: PostgresStoreStats = { appendBatches: 0, appends: 0, catchUps: 0, notifications: 0, listens: 0 };
  private queue: Pending[] = [];
  private flushing = false;
  private scheduled = false;
  private batchDone: Promise<void> = Promise.resolve();
  /** Every seq ≤ caughtUp has been announced (or was committed before this store opened). */
  private caughtUp = 0;
  private catchUpRunning = false;
  private catchUpAgain = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private host: { id: string; bootId: string | null; ttlMs: number } | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private closed = false;

  constructor(
    readonly sql: Sql,
    readonly schema: string | null,
    private readonly pollMs: number,
    private readonly beforeCommit?: (firstSeq: number, lastSeq: number) => Promise<void>,
  ) {
    this.channel = `m4a_commit.${schema ?? 'public'}`;
  }

  /** @internal Reads the head, then listens; each (re)LISTEN catches up from the head. */
  async start(): Promise<void> {
    this.caughtUp = await this.headSeq();
    const meta = await this.sql.listen(
      this.channel,
      (payload) => {
        this.counts.notifications++;
        if (Number(payload) > this.caughtUp) this.requestCatchUp();
      },
      () => {
        this.counts.listens++;
        this.requestCatchUp();
      },
    );
    this.unlisten = () => meta.unlisten();
    this.pollTimer = setInterval(() => void this.poll(), this.pollMs);
    this.pollTimer.unref();
  }

  stats(): PostgresStoreStats {
    return { ...this.counts };
  }

  /** Waits for queued appends, stops the heartbeat and the listener, closes the pool. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    while (this.queue.length > 0 || this.flushing) {
      if (!this.flushing) void this.flush();
      await this.batchDone;
    }
    await this.unlisten?.().catch(() => undefined);
    await this.sql.end({ timeout: 5 });
  }

  // ---- hosts

  /**
   * Publishes this daemon's host as alive (now and every `everyMs`) so that other daemons see its
   * sessions as live; sessions of this host are excluded from expiry in this store's answers.
   * (An optional Store method: only shared stores need it.)
   */
  async attachHost(hostId: string, o: HostOptions = {}): Promise<void> {
    const ttlMs = o.ttlMs ?? 60_000;
    this.host = { id: hostId, bootId: o.bootId ?? readBootId(), ttlMs };
    if (this.heartbeat) clearInterval(this.heartbeat);
    await this.beat();
    this.heartbeat = setInterval(() => void this.beat().catch(() => undefined), o.everyMs ?? Math.max(50, Math.floor(ttlMs / 4)));
    this.heartbeat.unref();
  }

  /** Stops refreshing the host (its sessions then expire for the other daemons after the ttl). */
  detachHost(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  private async beat(): Promise<void> {
    const h = this.host;
    if (!h || this.closed) return;
    await this.sql.unsafe(
      `INSERT INTO hosts (host_id, boot_id, started_at, last_seen, expires_at)
       VALUES ($1, $2, ${NOW_MS}, ${NOW_MS}, ${NOW_MS} + $3::bigint)
       ON CONFLICT (host_id) DO UPDATE SET
         started_at = CASE WHEN hosts.boot_id IS DISTINCT FROM excluded.boot_id THEN excluded.started_at ELSE hosts.started_at END,
         boot_id = excluded.boot_id, last_seen = excluded.last_seen, expires_at = excluded.expires_at`,
      [h.id, h.bootId, h.ttlMs],
    );
  }

  // ---- meta

  async getMeta(key: string): Promise<string | null> {
    const [r] = await this.sql<{ value: string }[]>`SELECT value FROM meta WHERE key = ${key}`;
    return r?.value ?? null;
  }

  async initMeta(key: string, value: string): Promise<string> {
    await this.sql`INSERT INTO meta (key, value) VALUES (${key}, ${value}) ON CONFLICT (key) DO NOTHING`;
    const [r] = await this.sql<{ value: string }[]>`SELECT value FROM meta WHERE key = ${key}`;
    return (r as { value: string }).value;
  }

  // ---- accounts

  /** Registry changes (accounts, rooms, memberships) are rare: one lock keeps "everyone" rooms exact. */
  private lockRegistry(tx: Q) {
    return tx`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int, ${LOCKS.registry}::int)`;
  }

  /** Creating or removing a participant takes the head lock before the registry lock (the order
   *  migrate-store takes them): no append batch commits meanwhile, so born_seq is exact and no mail
   *  lands under the keys being emptied. */
  private async lockHead(tx: Q): Promise<number> {
    const [h] = await tx<{ seq: number }[]>`SELECT seq FROM message_head WHERE one = 1 FOR UPDATE`;
    await this.lockRegistry(tx);
    return (h as { seq: number }).seq;
  }

  async addAccount(rec: NewAccount, sweep?: RecordSweep): Promise<'ok' | 'exists'> {
    return this.sql.begin(async (tx) => {
      const head = await this.lockHead(tx);
      const p = accountParams(rec, head);
      const ins = await tx`INSERT INTO accounts ${tx(p)} ON CONFLICT (id) DO NOTHING RETURNING id`;
      if (ins.length === 0) return 'exists' as const;
      await forgetAccount(tx, rec.id, sweep);
      await purgeAccountMail(tx, rec.id, sweep);
      for (const r of await tx<{ name: string }[]>`SELECT name FROM rooms WHERE everyone = 1 ORDER BY name`) {
        await this.join(tx, r.name, rec.id);
      }
      return 'ok' as const;
    });
  }

  async getAccount(id: string): Promise<AccountRecord | null> {
    const [r] = await this.sql<AccountRow[]>`SELECT * FROM accounts WHERE id = ${id}`;
    return r ? toAccount(r) : null;
  }

  async findAccountByDigest(digest: string): Promise<AccountRecord | null> {
    const [r] = await this.sql<AccountRow[]>`SELECT * FROM accounts WHERE secret_digest = ${digest} LIMIT 1`;
    return r ? toAccount(r) : null;
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return (await this.sql<AccountRow[]>`SELECT * FROM accounts ORDER BY id`).map(toAccount);
  }

  async setAccountSecret(id: string, digest: string): Promise<boolean> {
    return (await this.sql`UPDATE accounts SET secret_digest = ${digest} WHERE id = ${id}`).count > 0;
  }

  async removeAccount(id: string, sweep?: RecordSweep): Promise<Removal | null> {
    return this.sql.begin(async (tx) => {
      await this.lockHead(tx);
      if ((await tx`DELETE FROM accounts WHERE id = ${id}`).count === 0) return null;
      await tx`DELETE FROM members WHERE account = ${id}`;
      await tx`DELETE FROM listeners WHERE account = ${id}`;
      await tx`DELETE FROM sessions WHERE account = ${id}`;
      await tx`DELETE FROM names WHERE account = ${id}`;
      await forgetAccount(tx, id, sweep);
      return { messages: await purgeAccountMail(tx, id, sweep) };
    });
  }

  // ---- rooms

  async addRoom(name: string, at: number, opts: RoomOptions = {}): Promise<'ok' | 'exists'> {
    const everyone = opts.everyone ?? false;
    return this.sql.begin(async (tx) => {
      await this.lockHead(tx);
      const ins = await tx`INSERT INTO rooms (name, created_at, everyone, is_open) VALUES (${name}, ${at}, ${everyone ? 1 : 0}, ${opts.open ? 1 : 0})
        ON CONFLICT (name) DO NOTHING RETURNING name`;
      if (ins.length === 0) return 'exists' as const;
      await purgeRoomMail(tx, name);
      if (everyone) for (const a of await tx<{ id: string }[]>`SELECT id FROM accounts ORDER BY id`) await this.join(tx, name, a.id);
      return 'ok' as const;
    });
  }

  async removeRoom(name: string, sweep?: RecordSweep): Promise<Removal | null> {
    return this.sql.begin(async (tx) => {
      await this.lockHead(tx);
      if ((await tx`DELETE FROM rooms WHERE name = ${name}`).count === 0) return null;
      await tx`DELETE FROM members WHERE room = ${name}`;
      await sweepOwned(tx, sweep);
      return { messages: await purgeRoomMail(tx, name, sweep) };
    });
  }

  async setRoomOpen(name: string, open: boolean): Promise<boolean> {
    return (await this.sql`UPDATE rooms SET is_open = ${open ? 1 : 0} WHERE name = ${name}`).count > 0;
  }

  async getRoom(name: string): Promise<RoomRecord | null> {
    const [r] = await this.sql<RoomRow[]>`SELECT name, created_at, everyone, is_open FROM rooms WHERE name = ${name}`;
    if (!r) return null;
    const members = (await this.sql<{ account: string }[]>`SELECT account FROM members WHERE room = ${name} ORDER BY account`).map((m) => m.account);
    return { name: r.name, members, everyone: r.everyone === 1, open: r.is_open === 1, createdAt: r.created_at };
  }

  async listRooms(): Promise<RoomRecord[]> {
    const rooms = new Map<string, RoomRecord>();
    for (const r of await this.sql<RoomRow[]>`SELECT name, created_at, everyone, is_open FROM rooms ORDER BY name`) {
      rooms.set(r.name, { name: r.name, members: [], everyone: r.everyone === 1, open: r.is_open === 1, createdAt: r.created_at });
    }
    for (const m of await this.sql<{ room: string; account: string }[]>`SELECT room, account FROM members ORDER BY room, account`) {
      rooms.get(m.room)?.members.push(m.account);
    }
    return [...rooms.values()];
  }

  async roomsOf(account: string): Promise<string[]> {
    return (await this.sql<{ room: string }[]>`SELECT room FROM members WHERE account = ${account} ORDER BY room`).map((r) => r.room);
  }

  async addMember(room: string, account: string): Promise<'ok' | 'exists' | 'no_room' | 'no_account'> {
    return this.sql.begin(async (tx) => {
      await this.lockRegistry(tx);
      if ((await tx`SELECT 1 FROM rooms WHERE name = ${room}`).length === 0) return 'no_room' as const;
      if ((await tx`SELECT 1 FROM accounts WHERE id = ${account}`).length === 0) return 'no_account' as const;
      return (await this.join(tx, room, account)) ? ('ok' as const) : ('exists' as const);
    });
  }

  /** The lock an ack of room mail shares and a join takes alone: a join counts every ack made
   *  before it, and every ack made after it bumps the new member row. */
  private memberLock(tx: Q, room: string, account: string, shared: boolean) {
    const key = `member:${room}\n${account}`;
    return shared
      ? tx`SELECT pg_advisory_xact_lock_shared(${LOCK_NAMESPACE}::int, hashtext(${key}))`
      : tx`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int, hashtext(${key}))`;
  }

  private async join(tx: Tx, room: string, account: string): Promise<boolean> {
    if ((await tx`SELECT 1 FROM members WHERE room = ${room} AND account = ${account}`).length > 0) return false;
    await this.memberLock(tx, room, account, false);
    // A rejoining member keeps the acks it made before: count them once, here.
    const [c] = await tx<{ n: number }[]>`SELECT count(*) AS n FROM acks WHERE ack_key = ${keyOfAccount(account)} AND to_key = ${keyOfRoom(room)}`;
    await tx`INSERT INTO members (room, account, acked) VALUES (${room}, ${account}, ${c?.n ?? 0})`;
    return true;
  }

  async removeMember(room: string, account: string): Promise<boolean> {
    return this.sql.begin(async (tx) => {
      await this.lockRegistry(tx);
      return (await tx`DELETE FROM members WHERE room = ${room} AND account = ${account}`).count > 0;
    });
  }

  // ---- listeners

  async setListener(account: string, url: string): Promise<boolean> {
    const r = await this.sql`INSERT INTO listeners (account, url) SELECT id, ${url} FROM accounts WHERE id = ${account}
      ON CONFLICT (account) DO UPDATE SET url = excluded.url RETURNING account`;
    return r.length > 0;
  }

  async removeListener(account: string): Promise<boolean> {
    return (await this.sql`DELETE FROM listeners WHERE account = ${account}`).count > 0;
  }

  async getListener(account: string): Promise<string | null> {
    const [r] = await this.sql<{ url: string }[]>`SELECT url FROM listeners WHERE account = ${account}`;
    return r?.url ?? null;
  }

  // ---- records

  async putRecord(r: RecordRow): Promise<void> {
    await this.sql`INSERT INTO records (kind, id, value, updated_at) VALUES (${r.kind}, ${r.id}, ${r.value}, ${r.updatedAt})
      ON CONFLICT (kind, id) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;
  }

  async insertRecords(rows: RecordRow[]): Promise<string[]> {
    if (rows.length === 0) return [];
    return this.sql.begin(async (tx) => {
      const out: string[] = [];
      for (const r of rows) {
        const ins = await tx`INSERT INTO records (kind, id, value, updated_at) VALUES (${r.kind}, ${r.id}, ${r.value}, ${r.updatedAt})
          ON CONFLICT (kind, id) DO NOTHING RETURNING id`;
        if (ins.length > 0) out.push(r.id);
      }
      return out;
    });
  }

  async getRecord(kind: string, id: string): Promise<RecordRow | null> {
    const [r] = await this.sql<RecordDbRow[]>`SELECT kind, id, value, updated_at FROM records WHERE kind = ${kind} AND id = ${id}`;
    return r ? toRecord(r) : null;
  }

  async listRecords(kind: string, idPrefix: string, limit: number): Promise<RecordRow[]> {
    if (limit <= 0) return [];
    const upper = prefixUpperBound(idPrefix);
    const rows =
      upper === null
        ? await this.sql<RecordDbRow[]>`SELECT kind, id, value, updated_at FROM records WHERE kind = ${kind} AND id >= ${idPrefix} ORDER BY id LIMIT ${limit}`
        : await this.sql<RecordDbRow[]>`SELECT kind, id, value, updated_at FROM records WHERE kind = ${kind} AND id >= ${idPrefix} AND id < ${upper} ORDER BY id LIMIT ${limit}`;
    return rows.map(toRecord);
  }

  async deleteRecord(kind: string, id: string): Promise<boolean> {
    return (await this.sql`DELETE FROM records WHERE kind = ${kind} AND id = ${id}`).count > 0;
  }

  // ---- sessions

  /** Sessions with their lineage's slug and, for a host whose heartbeat expired, its expiry as
   *  the end (this daemon's own host excepted: it judges its sessions itself). */
  private sessions(q: Q) {
    return q`SELECT s.account, s.id, s.lineage, s.host_id, s.pid, s.start_time, s.exe, s.uid, s.c_provider,
        s.c_provider_session_id, s.c_model, s.c_cwd, s.d_working_on, s.d_role, s.d_parent, s.created_at, s.last_seen,
        COALESCE(s.ended_at, CASE WHEN h.host_id <> ${this.host?.id ?? ''} AND h.expires_at < ${q.unsafe(NOW_MS)}
          THEN h.expires_at END) AS ended_at,
        s.successor, n.name AS slug
      FROM sessions AS s
      LEFT JOIN names AS n ON n.account = s.account AND n.lineage = s.lineage AND n.kind = 'slug'
      LEFT JOIN hosts AS h ON h.host_id = s.host_id`;
  }

  /** Name changes of one account (slugs and aliases) take turns: one namespace, no races. */
  private lockNames(tx: Q, account: string) {
    return tx`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int, hashtext(${`names:${account}`}))`;
  }

  async registerSession(s: NewSession): Promise<SessionRecord> {
    return this.sql.begin(async (tx) => {
      await this.lockNames(tx, s.account);
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
      await this.lockNames(tx, account);
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
    return r.count > 0 ? this.getSession(account, id) : null;
  }

  /** Deletes sessions ended before `before` (a dead host's sessions by their host's expiry), and
   *  the names of every lineage this leaves without a session. */
  async pruneSessions(before: number): Promise<number> {
    return this.sql.begin(async (tx) => {
      const gone = await tx<{ account: string; lineage: string }[]>`DELETE FROM sessions AS s
        WHERE s.ended_at < ${before}
           OR (s.ended_at IS NULL AND s.host_id <> ${this.host?.id ?? ''} AND EXISTS (
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

  // ---- messages: appends (group commit under the head lock)

  appendMessage(m: NewMessage, idempotentSince: number): Promise<AppendOutcome> {
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    return new Promise<AppendOutcome>((resolve, reject) => {
      this.queue.push({ input: { m, since: idempotentSince }, resolve, reject });
      if (!this.flushing && !this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  /** One batch at a time per store: everything queued meanwhile forms the next batch. Calls in
   *  one batch get seqs in call order. */
  private async flush(): Promise<void> {
    this.scheduled = false;
    if (this.flushing || this.queue.length === 0) return;
    this.flushing = true;
    const batch = this.queue;
    this.queue = [];
    let done!: () => void;
    this.batchDone = new Promise<void>((r) => (done = r));
    try {
      let result: BatchResult;
      try {
        result = await this.runBatchSettled(batch.map((p) => p.input));
      } catch (err) {
        for (const p of batch) p.reject(err);
        return;
      }
      this.counts.appendBatches++;
      this.counts.appends += batch.length;
      batch.forEach((p, i) => {
        const o = result.outcomes[i] as AppendOutcome | Error;
        if (o instanceof Error) p.reject(o);
        else p.resolve(o);
      });
      this.announceLocal(result);
    } finally {
      this.flushing = false;
      done();
      if (this.queue.length > 0) void this.flush();
    }
  }

  /**
   * Runs the batch; when the connection is lost during it, finds out whether it committed (the
   * COMMIT may have landed before the connection died): committed → the batch's answers stand;
   * certainly not committed → runs it once more on a fresh connection. Only when that cannot be
   * told (the database is away) does the batch reject, and the client retries with its key.
   */
  private async runBatchSettled(inputs: AppendInput[]): Promise<BatchResult> {
    for (let attempt = 0; ; attempt++) {
      const computed: { result: BatchResult | null } = { result: null };
      try {
        return await this.runBatch(inputs, computed);
      } catch (err) {
        if (!isConnectionLoss(err) || attempt >= 1) throw err;
        const r = computed.result;
        const created = r ? r.outcomes.filter((o): o is Extract<AppendOutcome, { kind: 'created' }> => !(o instanceof Error) && o.kind === 'created') : [];
        if (r && created.length === 0) throw err; // nothing to write: a retry would answer the same
        let found: { id: string; seq: number }[];
        try {
          found = r ? await this.sql<{ id: string; seq: number }[]>`SELECT id, seq FROM messages WHERE id = ANY(${pgArray(created.map((c) => c.message.id))}::text[])` : [];
        } catch {
          throw err; // cannot tell: reject, the client's idempotent retry settles it
        }
        if (r && found.length === created.length && found.every((f) => created.some((c) => c.message.id === f.id && c.message.seq === f.seq))) {
          return r; // it committed; only the answer was lost
        }
        if (found.length > 0) throw err; // cannot happen (one transaction); refuse to guess
        // Not committed: run it again (a new transaction, on a new connection).
      }
    }
  }

  private async runBatch(inputs: AppendInput[], computed: { result: BatchResult | null }): Promise<BatchResult> {
    return this.sql.begin(async (tx) => {
      // The serialisation point: every append of every daemon takes this row lock, then sees every
      // committed message (READ COMMITTED: each statement below takes a fresh snapshot).
      const [h] = await tx<{ seq: number }[]>`SELECT seq FROM message_head WHERE one = 1 FOR UPDATE`;
      const prevHead = (h as { seq: number }).seq;
      const keyed = inputs.filter((i) => i.m.idempotencyKey !== null);
      const priors = new Map<string, MessageRow>();
      if (keyed.length > 0) {
        const rows = await tx<(MessageRow & { i: number })[]>`SELECT q.i::int AS i, m.*
          FROM unnest(${pgArray(keyed.map((k) => k.m.fromAccount))}::text[],
                      ${pgArray(keyed.map((k) => k.m.idempotencyKey as string))}::text[],
                      ${pgArray(keyed.map((k) => k.since))}::bigint[]) WITH ORDINALITY AS q(a, k, since, i)
          CROSS JOIN LATERAL (SELECT * FROM messages AS x
            WHERE x.from_account = q.a AND x.idempotency_key = q.k AND x.created_at >= q.since
            ORDER BY x.seq DESC LIMIT 1) AS m`;
        for (const r of rows) {
          const k = keyed[r.i - 1] as AppendInput;
          const { i: _i, ...row } = r;
          priors.set(`${k.m.fromAccount}\n${k.m.idempotencyKey}\n${k.since}`, row);
        }
      }
      const taken = new Set(
        (await tx<{ id: string }[]>`SELECT id FROM messages WHERE id = ANY(${pgArray(inputs.map((i) => i.m.id))}::text[])`).map((r) => r.id),
      );
      let head = prevHead;
      const outcomes: (AppendOutcome | Error)[] = [];
      const created: StoredMessage[] = [];
      for (const { m, since } of inputs) {
        if (m.idempotencyKey !== null) {
          // Later entries of the batch see earlier ones (which are newer than any stored prior).
          const inBatch = created.findLast((c) => c.fromAccount === m.fromAccount && c.idempotencyKey === m.idempotencyKey && c.createdAt >= since);
          const prior = inBatch ?? (priors.has(`${m.fromAccount}\n${m.idempotencyKey}\n${since}`) ? toMessage(priors.get(`${m.fromAccount}\n${m.idempotencyKey}\n${since}`) as MessageRow) : null);
          if (prior) {
            outcomes.push({ kind: prior.fingerprint === m.fingerprint ? 'duplicate' : 'conflict', message: { ...prior, refs: prior.refs.map((r) => ({ ...r })) } });
            continue;
          }
        }
        if (taken.has(m.id)) {
          outcomes.push(new Error(`message id ${m.id} already exists`));
          continue;
        }
        taken.add(m.id);
        const params = messageParams(m);
        const stored = toMessage({ ...params, seq: ++head });
        created.push(stored);
        outcomes.push({ kind: 'created', message: stored });
      }
      if (created.length > 0) {
        const rows = created.map((c) => ({ seq: c.seq, ...messageParams(c) }));
        const perKey = new Map<string, number>();
        for (const c of created) perKey.set(c.toKey, (perKey.get(c.toKey) ?? 0) + 1);
        const keys = [...perKey.keys()].sort();
        // Pipelined: one round trip for the writes; counters in key order (no deadlock with acks).
        await Promise.all([
          tx`INSERT INTO messages ${tx(rows)}`,
          tx`INSERT INTO mailbox_counts (to_key, total, unacked)
            SELECT k, n, n FROM unnest(${pgArray(keys)}::text[], ${pgArray(keys.map((k) => perKey.get(k) as number))}::bigint[]) AS x(k, n)
            ON CONFLICT (to_key) DO UPDATE SET total = mailbox_counts.total + excluded.total, unacked = mailbox_counts.unacked + excluded.unacked`,
          tx`UPDATE message_head SET seq = ${head} WHERE one = 1`,
          tx`SELECT pg_notify(${this.channel}, ${String(head)})`,
        ]);
        if (this.beforeCommit) await this.beforeCommit(prevHead + 1, head);
      }
      computed.result = { outcomes, prevHead, head };
      return computed.result;
    });
  }

  // ---- commit events, in seq order

  /** A local batch whose predecessor seqs are all announced is announced at once; otherwise a
   *  catch-up announces the other daemons' commits first, then this batch, in order. */
  private announceLocal(r: BatchResult): void {
    if (r.head === r.prevHead) return;
    if (r.prevHead !== this.caughtUp) return this.requestCatchUp();
    this.caughtUp = r.head;
    for (const o of r.outcomes) if (!(o instanceof Error) && o.kind === 'created') this.emit({ keys: [o.message.toKey], seq: o.message.seq });
  }

  private requestCatchUp(): void {
    if (this.closed) return;
    if (this.catchUpRunning) {
      this.catchUpAgain = true;
      return;
    }
    this.catchUpRunning = true;
    void (async () => {
      try {
        do {
          this.catchUpAgain = false;
          const from = this.caughtUp;
          const rows = await this.sql<{ seq: number; to_key: string }[]>`SELECT seq, to_key FROM messages WHERE seq > ${from} ORDER BY seq LIMIT ${CATCH_UP_PAGE}`;
          this.counts.catchUps++;
          for (const r of rows) {
            // A local batch announced while the query ran is not announced twice.
            if (r.seq <= this.caughtUp) continue;
            this.caughtUp = r.seq;
            this.emit({ keys: [r.to_key], seq: r.seq });
          }
          if (rows.length === CATCH_UP_PAGE) this.catchUpAgain = true;
        } while (this.catchUpAgain && !this.closed);
      } catch {
        // The database is away: the next (re)LISTEN or poll catches up.
      } finally {
        this.catchUpRunning = false;
      }
    })();
  }

  private async poll(): Promise<void> {
    try {
      if ((await this.headSeq()) > this.caughtUp) this.requestCatchUp();
    } catch {
      /* down: try again next time */
    }
  }

  onCommit(listener: (e: CommitEvent) => void): () => void {
    return this.commits.add(listener);
  }

  private emit(e: CommitEvent): void {
    this.commits.emit(e);
  }

  // ---- messages: reads

  async getMessage(id: string): Promise<StoredMessage | null> {
    const [r] = await this.sql<MessageRow[]>`SELECT * FROM messages WHERE id = ${id}`;
    return r ? toMessage(r) : null;
  }

  async getThread(threadId: string): Promise<StoredMessage[]> {
    return (await this.sql<MessageRow[]>`SELECT * FROM messages WHERE thread_id = ${threadId} ORDER BY seq`).map(toMessage);
  }

  /** The committed head: every seq up to it is committed and visible (see "Sequence" above). */
  async headSeq(): Promise<number> {
    const [r] = await this.sql<{ seq: number }[]>`SELECT seq FROM message_head WHERE one = 1`;
    return r?.seq ?? 0;
  }

  async messagesAfter(key: MailKey, after: number, limit: number): Promise<StoredMessage[]> {
    if (limit <= 0) return [];
    const rows = await this.sql<MessageRow[]>`SELECT * FROM messages WHERE to_key = ${key} AND seq > ${after} ORDER BY seq LIMIT ${limit}`;
    return rows.map(toMessage);
  }

  /** Like the SQLite page query: one index range scan per key, each stopping at `limit`, merged. */
  async page(scope: ReaderScope, q: PageQuery): Promise<PagedMessage[]> {
    if (q.limit <= 0) return [];
    const keys = [...new Set(readKeys(scope))];
    const params: (string | number)[] = [];
    const p = (v: string | number): string => {
      params.push(v);
      return `$${params.length}`;
    };
    const parts = keys.map((key) => {
      const ackKey = p(ackKeyFor(scope, key));
      const toKey = p(key);
      let lower = `${p(q.after ?? 0)}::bigint`;
      if (q.pendingOnly) {
        lower = `GREATEST(${lower}, COALESCE((SELECT f.floor FROM ack_floors AS f WHERE f.ack_key = ${ackKey} AND f.to_key = ${toKey}), 0))`;
      }
      return (
        `SELECT * FROM (SELECT m.seq, a.acked_at FROM messages AS m LEFT JOIN acks AS a ON a.ack_key = ${ackKey} AND a.seq = m.seq` +
        ` WHERE m.to_key = ${toKey} AND m.seq > ${lower}` +
        (q.threadId !== null ? ` AND m.thread_id = ${p(q.threadId)}` : '') +
        (q.pendingOnly ? ' AND a.seq IS NULL' : '') +
        ` ORDER BY m.seq LIMIT ${p(q.limit)}::bigint) AS k${params.length}`
      );
    });
    const text =
      `SELECT m.*, p.acked_at FROM (${parts.join(' UNION ALL ')} ORDER BY seq LIMIT ${p(q.limit)}::bigint) AS p` +
      ' JOIN messages AS m ON m.seq = p.seq ORDER BY p.seq';
    return (await this.sql.unsafe<PagedRow[]>(text, params, { prepare: true })).map(toPaged);
  }

  async ack(scope: ReaderScope, items: AckItem[], at: number): Promise<AckResult[]> {
    if (items.length === 0) return [];
    return this.sql.begin(async (tx) => {
      const results = new Array<AckResult>(items.length);
      // In (ack key, seq) order, so two acks of overlapping items never wait on each other in a cycle.
      const order = items
        .map((item, i) => ({ item, i, ackKey: ackKeyFor(scope, item.toKey) }))
        .sort((a, b) => (a.ackKey < b.ackKey ? -1 : a.ackKey > b.ackKey ? 1 : a.item.seq - b.item.seq));
      const counted = new Map<string, number>();
      const memberBumps = new Map<string, number>();
      const touched = new Map<string, [ackKey: string, toKey: string]>();
      for (const { item, i, ackKey } of order) {
        const ins = await tx<{ acked_at: number }[]>`INSERT INTO acks (ack_key, seq, to_key, acked_at)
          VALUES (${ackKey}, ${item.seq}, ${item.toKey}, ${at}) ON CONFLICT (ack_key, seq) DO NOTHING RETURNING acked_at`;
        if (ins.length === 0) {
          const [prior] = await tx<{ acked_at: number }[]>`SELECT acked_at FROM acks WHERE ack_key = ${ackKey} AND seq = ${item.seq}`;
          results[i] = { seq: item.seq, ackedAt: prior?.acked_at ?? at, fresh: false };
          continue;
        }
        if (ackKey === item.toKey) counted.set(item.toKey, (counted.get(item.toKey) ?? 0) + 1);
        else if (item.toKey.startsWith('r:')) memberBumps.set(item.toKey.slice(2), (memberBumps.get(item.toKey.slice(2)) ?? 0) + 1);
        touched.set(`${ackKey}\n${item.toKey}`, [ackKey, item.toKey]);
        results[i] = { seq: item.seq, ackedAt: at, fresh: true };
      }
      for (const key of [...counted.keys()].sort()) {
        await tx`UPDATE mailbox_counts SET unacked = unacked - ${counted.get(key) as number} WHERE to_key = ${key}`;
      }
      // A non-member's ack of room mail matches no membership row and changes no counter.
      for (const room of [...memberBumps.keys()].sort()) {
        await this.memberLock(tx, room, scope.account, true);
        await tx`UPDATE members SET acked = acked + ${memberBumps.get(room) as number} WHERE room = ${room} AND account = ${scope.account}`;
      }
      for (const [ackKey, toKey] of [...touched.values()].sort()) await this.advanceFloor(tx, ackKey, toKey);
      return results;
    });
  }

  /** Moves the ack floor past every consecutive acked message; amortised over the acks made. */
  private async advanceFloor(tx: Tx, ackKey: string, toKey: string): Promise<void> {
    const [f] = await tx<{ floor: number }[]>`SELECT floor FROM ack_floors WHERE ack_key = ${ackKey} AND to_key = ${toKey} FOR UPDATE`;
    const start = f?.floor ?? 0;
    let floor = start;
    for (;;) {
      const rows = await tx<{ seq: number; acked: boolean }[]>`SELECT m.seq, (a.seq IS NOT NULL) AS acked
        FROM messages AS m LEFT JOIN acks AS a ON a.ack_key = ${ackKey} AND a.seq = m.seq
        WHERE m.to_key = ${toKey} AND m.seq > ${floor} ORDER BY m.seq LIMIT 64`;
      const gap = rows.findIndex((r) => !r.acked);
      const upTo = gap < 0 ? rows.length : gap;
      if (upTo > 0) floor = (rows[upTo - 1] as { seq: number }).seq;
      if (gap >= 0 || rows.length === 0) break;
    }
    if (floor !== start) {
      await tx`INSERT INTO ack_floors (ack_key, to_key, floor) VALUES (${ackKey}, ${toKey}, ${floor})
        ON CONFLICT (ack_key, to_key) DO UPDATE SET floor = GREATEST(ack_floors.floor, excluded.floor)`;
    }
  }

  async unread(scope: ReaderScope): Promise<number> {
    const keys = [...new Set(readKeys(scope))];
    const rooms = keys.filter((k) => k.startsWith('r:'));
    const direct = keys.filter((k) => !k.startsWith('r:'));
    const [r] = await this.sql<{ n: number }[]>`SELECT
        COALESCE((SELECT sum(unacked) FROM mailbox_counts WHERE to_key = ANY(${pgArray(direct)}::text[])), 0)::bigint
      + COALESCE((SELECT sum(COALESCE(c.total, 0) - COALESCE(mb.acked, 0))
          FROM unnest(${pgArray(rooms)}::text[]) AS k(key)
          LEFT JOIN mailbox_counts AS c ON c.to_key = k.key
          LEFT JOIN members AS mb ON mb.room = substr(k.key, 3) AND mb.account = ${scope.account}), 0)::bigint AS n`;
    return r?.n ?? 0;
  }

  async ackedAt(scope: ReaderScope, items: AckItem[]): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    if (items.length === 0) return out;
    const rows = await this.sql<{ seq: number; acked_at: number }[]>`SELECT a.seq, a.acked_at
      FROM unnest(${pgArray(items.map((it) => ackKeyFor(scope, it.toKey)))}::text[], ${pgArray(items.map((it) => it.seq))}::bigint[]) AS x(k, s)
      JOIN acks AS a ON a.ack_key = x.k AND a.seq = x.s`;
    for (const r of rows) out.set(r.seq, r.acked_at);
    return out;
  }
}
