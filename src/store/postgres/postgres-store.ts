// The PostgreSQL store: several daemons (on several machines) share one database. Same results as
// the SQLite and memory stores (the conformance suite runs against all three); what sharing adds
// lives in its own file:
//   append-batch.ts    group commit under the head lock: seqs dense, in commit order, a gap-free prefix
//   commit-feed.ts     every daemon's commits announced in seq order (LISTEN/NOTIFY, catch-up, poll)
//   host-heartbeat.ts  hosts publish that they are alive, so a dead host's sessions end
//   with-retry.ts      a read whose connection was killed runs again (for up to 1 s)
//   registry.ts, sessions.ts, mail.ts, tasks.ts, leases.ts, teams.ts   the operations themselves, with locks.ts and purge.ts
//
// Failure. Every operation has a statement timeout and a connect timeout, so while the database is
// down operations reject (the engine answers store_unavailable) instead of hanging; the pool
// reconnects by itself (client.ts: the client, with a crash on server-side close fixed).
import { postgres } from './client.js';
import type {
  AckItem,
  AppendOutcome,
  ApprovalRecord,
  CommitEvent,
  Declared,
  LeaseEndReason,
  LeaseQuery,
  LeaseRecord,
  MailKey,
  MailPruneQuery,
  NewAccount,
  NewLease,
  NewMessage,
  NewSession,
  PageQuery,
  PoolQuery,
  ReaderFactsQuery,
  ReaderScope,
  SearchQuery,
  RecordRow,
  RecordSweep,
  RoomOptions,
  Store,
  StoreMethod,
  TaskQuery,
  TaskRecord,
  TeamChange,
} from '../types.js';
import type { TeamCapability } from '../../wire/teams.js';
import type { ContactPolicy } from '../../wire/contacts.js';
import { STORE_READS } from '../types.js';
import { AppendBatch } from './append-batch.js';
import { CommitFeed } from './commit-feed.js';
import { HostHeartbeat, type HostOptions } from './host-heartbeat.js';
import { PgLeases } from './leases.js';
import { PgMail } from './mail.js';
import { pgSearch } from './search.js';
import { pgTallies } from './tallies.js';
import { migrate } from './migrations.js';
import type { Sql } from './pg-sql.js';
import { PgRegistry } from './registry.js';
import { pruneMail, pruneRecords } from './retention.js';
import { PgSessions } from './sessions.js';
import { PgTasks } from './tasks.js';
import { PgTeams } from './teams.js';
import { parsePostgresSpec, redact } from './spec.js';
import { withRetry } from './with-retry.js';

export type { HostOptions } from './host-heartbeat.js';

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

export interface PostgresStoreStats {
  appendBatches: number;
  appends: number;
  catchUps: number;
  /** Commits of other daemons announced from a keyed notification, without a catch-up query. */
  keyedAnnounces: number;
  notifications: number;
  listens: number;
  lastCatchUpLagMs: number;
  maxCatchUpLagMs: number;
}

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
    await store.start();
    return store;
  } catch (err) {
    await sql.end({ timeout: 1 }).catch(() => undefined);
    if (err instanceof Error) err.message = `${err.message} (store ${redact(opts.spec)})`;
    throw err;
  }
}

/** The reads of STORE_METHODS: safe to run again when their connection was lost under them. */
const RETRIED: ReadonlySet<string> = new Set(STORE_READS);

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly shared = true;
  private readonly feed: CommitFeed;
  private readonly appends: AppendBatch;
  private readonly heartbeat: HostHeartbeat;
  private readonly registry: PgRegistry;
  private readonly people: PgSessions;
  private readonly mail: PgMail;
  private readonly tasks: PgTasks;
  private readonly leases: PgLeases;
  private readonly teams: PgTeams;
  private closed = false;

  constructor(
    readonly sql: Sql,
    readonly schema: string | null,
    pollMs: number,
    beforeCommit?: (firstSeq: number, lastSeq: number) => Promise<void>,
  ) {
    this.feed = new CommitFeed(sql, `m4a_commit.${schema ?? 'public'}`, () => this.headSeq(), pollMs);
    this.appends = new AppendBatch(sql, this.feed.channel, (r) => this.feed.announceLocal(r), beforeCommit);
    this.heartbeat = new HostHeartbeat(sql);
    this.registry = new PgRegistry(sql);
    this.people = new PgSessions(sql, () => this.heartbeat.hostId);
    this.mail = new PgMail(sql);
    this.tasks = new PgTasks(sql);
    this.leases = new PgLeases(sql);
    this.teams = new PgTeams(sql);
  }

  /** The NOTIFY channel: one per schema, so schemas sharing a database do not wake each other. */
  get channel(): string {
    return this.feed.channel;
  }

  /** @internal Reads the head, then listens (commit-feed.ts). */
  start(): Promise<void> {
    return this.feed.start();
  }

  stats(): PostgresStoreStats {
    return { ...this.appends.stats(), ...this.feed.stats() };
  }

  /** Waits for queued appends, stops the heartbeat and the listener, closes the pool. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.feed.stop();
    this.heartbeat.stop();
    await this.appends.drain();
    await this.feed.close();
    await this.sql.end({ timeout: 5 });
  }

  /**
   * Publishes this daemon's host as alive (now and every `everyMs`) so that other daemons see its
   * sessions as live; sessions of this host are excluded from expiry in this store's answers.
   * (An optional Store method: only shared stores need it.)
   */
  attachHost(hostId: string, o: HostOptions = {}): Promise<void> {
    return this.heartbeat.attach(hostId, o);
  }

  /** Stops refreshing the host (its sessions then expire for the other daemons after the ttl). */
  detachHost(): void {
    this.heartbeat.detach();
  }

  /** One operation: a read (STORE_METHODS) runs again when its connection was lost (withRetry);
   *  a write runs as it is (an append batch settles a lost connection itself, append-batch.ts). */
  private op<R>(name: StoreMethod, run: () => Promise<R>): Promise<R> {
    return RETRIED.has(name) ? withRetry(run) : run();
  }

  onCommit(listener: (e: CommitEvent) => void): () => void {
    return this.feed.onCommit(listener);
  }

  appendMessage(m: NewMessage, idempotentSince: number): Promise<AppendOutcome> {
    if (this.closed) return Promise.reject(new Error('the store is closed'));
    return this.op('appendMessage', () => this.appends.submit(m, idempotentSince));
  }

  // ---- registry.ts: meta, accounts, rooms, members, listeners, records

  getMeta(key: string) {
    return this.op('getMeta', () => this.registry.getMeta(key));
  }
  initMeta(key: string, value: string) {
    return this.op('initMeta', () => this.registry.initMeta(key, value));
  }
  addAccount(rec: NewAccount, sweep?: RecordSweep) {
    return this.op('addAccount', () => this.registry.addAccount(rec, sweep));
  }
  getAccount(id: string) {
    return this.op('getAccount', () => this.registry.getAccount(id));
  }
  findAccountByDigest(digest: string) {
    return this.op('findAccountByDigest', () => this.registry.findAccountByDigest(digest));
  }
  listAccounts() {
    return this.op('listAccounts', () => this.registry.listAccounts());
  }
  setAccountSecret(id: string, digest: string) {
    return this.op('setAccountSecret', () => this.registry.setAccountSecret(id, digest));
  }
  removeAccount(id: string, sweep?: RecordSweep) {
    return this.op('removeAccount', () => this.registry.removeAccount(id, sweep));
  }
  addRoom(name: string, at: number, opts?: RoomOptions) {
    return this.op('addRoom', () => this.registry.addRoom(name, at, opts));
  }
  removeRoom(name: string, sweep?: RecordSweep) {
    return this.op('removeRoom', () => this.registry.removeRoom(name, sweep));
  }
  setRoomOpen(name: string, open: boolean) {
    return this.op('setRoomOpen', () => this.registry.setRoomOpen(name, open));
  }
  getRoom(name: string) {
    return this.op('getRoom', () => this.registry.getRoom(name));
  }
  listRooms() {
    return this.op('listRooms', () => this.registry.listRooms());
  }
  roomsOf(account: string) {
    return this.op('roomsOf', () => this.registry.roomsOf(account));
  }
  addMember(room: string, account: string, change?: TeamChange) {
    return this.op('addMember', () => this.registry.addMember(room, account, change));
  }
  removeMember(room: string, account: string, change?: TeamChange) {
    return this.op('removeMember', () => this.registry.removeMember(room, account, change));
  }

  // ---- teams.ts: team roles and contact lists

  setLeader(room: string, account: string, leader: boolean, change: TeamChange) {
    return this.op('setLeader', () => this.teams.setLeader(room, account, leader, change));
  }
  setGrant(room: string, account: string, capability: TeamCapability, granted: boolean, change: TeamChange) {
    return this.op('setGrant', () => this.teams.setGrant(room, account, capability, granted, change));
  }
  teamChanges(room: string, before: number | null, limit: number) {
    return this.op('teamChanges', () => this.teams.teamChanges(room, before, limit));
  }
  setContactPolicy(account: string, policy: ContactPolicy) {
    return this.op('setContactPolicy', () => this.teams.setContactPolicy(account, policy));
  }
  addContact(account: string, contact: string, at: number) {
    return this.op('addContact', () => this.teams.addContact(account, contact, at));
  }
  removeContact(account: string, contact: string) {
    return this.op('removeContact', () => this.teams.removeContact(account, contact));
  }
  listContacts(account: string) {
    return this.op('listContacts', () => this.teams.listContacts(account));
  }
  hasContact(account: string, contact: string) {
    return this.op('hasContact', () => this.teams.hasContact(account, contact));
  }
  setListener(account: string, url: string) {
    return this.op('setListener', () => this.registry.setListener(account, url));
  }
  removeListener(account: string) {
    return this.op('removeListener', () => this.registry.removeListener(account));
  }
  getListener(account: string) {
    return this.op('getListener', () => this.registry.getListener(account));
  }
  listenersOf(accounts: readonly string[]) {
    return this.op('listenersOf', () => this.registry.listenersOf(accounts));
  }
  putRecord(row: RecordRow) {
    return this.op('putRecord', () => this.registry.putRecord(row));
  }
  insertRecords(rows: RecordRow[]) {
    return this.op('insertRecords', () => this.registry.insertRecords(rows));
  }
  getRecord(kind: string, id: string) {
    return this.op('getRecord', () => this.registry.getRecord(kind, id));
  }
  listRecords(kind: string, idPrefix: string, limit: number) {
    return this.op('listRecords', () => this.registry.listRecords(kind, idPrefix, limit));
  }
  deleteRecord(kind: string, id: string) {
    return this.op('deleteRecord', () => this.registry.deleteRecord(kind, id));
  }
  pruneMail(q: MailPruneQuery) {
    return this.op('pruneMail', () => pruneMail(this.sql, q));
  }
  pruneRecords(kind: string, before: number, limit: number) {
    return this.op('pruneRecords', () => pruneRecords(this.sql, kind, before, limit));
  }

  // ---- sessions.ts: sessions and names

  registerSession(s: NewSession) {
    return this.op('registerSession', () => this.people.registerSession(s));
  }
  getSession(account: string, id: string) {
    return this.op('getSession', () => this.people.getSession(account, id));
  }
  findSessionsByPrefix(account: string, prefix: string, limit: number) {
    return this.op('findSessionsByPrefix', () => this.people.findSessionsByPrefix(account, prefix, limit));
  }
  lineageSessions(account: string, lineage: string) {
    return this.op('lineageSessions', () => this.people.lineageSessions(account, lineage));
  }
  addAlias(account: string, lineage: string, name: string) {
    return this.op('addAlias', () => this.people.addAlias(account, lineage, name));
  }
  removeAlias(account: string, lineage: string, name: string) {
    return this.op('removeAlias', () => this.people.removeAlias(account, lineage, name));
  }
  resolveName(account: string, name: string) {
    return this.op('resolveName', () => this.people.resolveName(account, name));
  }
  namesOf(account: string) {
    return this.op('namesOf', () => this.people.namesOf(account));
  }
  listNames() {
    return this.op('listNames', () => this.people.listNames());
  }
  listSessions() {
    return this.op('listSessions', () => this.people.listSessions());
  }
  findByProviderSession(account: string, provider: string, providerSessionId: string) {
    return this.op('findByProviderSession', () => this.people.findByProviderSession(account, provider, providerSessionId));
  }
  touchSessions(seen: { account: string; id: string; at: number }[]) {
    return this.op('touchSessions', () => this.people.touchSessions(seen));
  }
  endSession(account: string, id: string, at: number) {
    return this.op('endSession', () => this.people.endSession(account, id, at));
  }
  setDeclared(account: string, id: string, declared: Declared) {
    return this.op('setDeclared', () => this.people.setDeclared(account, id, declared));
  }
  setProviderSessionId(account: string, id: string, providerSessionId: string) {
    return this.op('setProviderSessionId', () => this.people.setProviderSessionId(account, id, providerSessionId));
  }
  joinLineage(account: string, id: string, predecessor: string, at: number, records: RecordSweep['owned']) {
    return this.op('joinLineage', () => this.people.joinLineage(account, id, predecessor, at, records));
  }
  pruneSessions(before: number, resumableBefore?: number) {
    return this.op('pruneSessions', () => this.people.pruneSessions(before, resumableBefore));
  }

  // ---- mail.ts: reading and acknowledging

  getMessage(id: string) {
    return this.op('getMessage', () => this.mail.getMessage(id));
  }
  getThread(threadId: string) {
    return this.op('getThread', () => this.mail.getThread(threadId));
  }
  headSeq() {
    return this.op('headSeq', () => this.mail.headSeq());
  }
  tallies(now: number) {
    return this.op('tallies', () => pgTallies(this.sql, now));
  }
  externalCount(key: MailKey, limit: number) {
    return this.op('externalCount', () => this.mail.externalCount(key, limit));
  }
  messagesAfter(key: MailKey, after: number, limit: number) {
    return this.op('messagesAfter', () => this.mail.messagesAfter(key, after, limit));
  }
  page(scope: ReaderScope, q: PageQuery) {
    return this.op('page', () => this.mail.page(scope, q));
  }
  search(scope: ReaderScope, q: SearchQuery) {
    return this.op('search', () => pgSearch(this.sql, scope, q));
  }
  ack(scope: ReaderScope, items: AckItem[], at: number) {
    return this.op('ack', () => this.mail.ack(scope, items, at));
  }
  unread(scope: ReaderScope) {
    return this.op('unread', () => this.mail.unread(scope));
  }
  ackedAt(scope: ReaderScope, items: AckItem[]) {
    return this.op('ackedAt', () => this.mail.ackedAt(scope, items));
  }
  readerFacts(readers: readonly ReaderFactsQuery[]) {
    return this.op('readerFacts', () => this.mail.readerFacts(readers));
  }

  // ---- tasks.ts: tasks and approvals

  createTask(t: TaskRecord, idempotentSince: number) {
    return this.op('createTask', () => this.tasks.createTask(t, idempotentSince));
  }
  getTask(id: string) {
    return this.op('getTask', () => this.tasks.getTask(id));
  }
  updateTask(t: TaskRecord, expectedVersion: number) {
    return this.op('updateTask', () => this.tasks.updateTask(t, expectedVersion));
  }
  listTasks(q: TaskQuery) {
    return this.op('listTasks', () => this.tasks.listTasks(q));
  }
  taskChildren(parentId: string, limit: number) {
    return this.op('taskChildren', () => this.tasks.taskChildren(parentId, limit));
  }
  createApproval(a: ApprovalRecord) {
    return this.op('createApproval', () => this.tasks.createApproval(a));
  }
  getApproval(id: string) {
    return this.op('getApproval', () => this.tasks.getApproval(id));
  }
  decideApproval(id: string, state: 'approved' | 'rejected', reason: string, at: number) {
    return this.op('decideApproval', () => this.tasks.decideApproval(id, state, reason, at));
  }

  // ---- leases.ts: leases; tasks.ts: a room's pool

  claimLease(l: NewLease, o: { now: number; maxPerHolder: number; conflicts(other: LeaseRecord): boolean }) {
    return this.op('claimLease', () => this.leases.claimLease(l, o));
  }
  renewLease(id: string, epoch: number, expiresAt: number, now: number) {
    return this.op('renewLease', () => this.leases.renewLease(id, epoch, expiresAt, now));
  }
  endLease(id: string, epoch: number, reason: LeaseEndReason, now: number) {
    return this.op('endLease', () => this.leases.endLease(id, epoch, reason, now));
  }
  expireLeases(now: number, limit: number) {
    return this.op('expireLeases', () => this.leases.expireLeases(now, limit));
  }
  endSessionLeases(account: string, session: string, now: number) {
    return this.op('endSessionLeases', () => this.leases.endSessionLeases(account, session, now));
  }
  getLease(id: string) {
    return this.op('getLease', () => this.leases.getLease(id));
  }
  listLeases(q: LeaseQuery) {
    return this.op('listLeases', () => this.leases.listLeases(q));
  }
  unsettledLeases(limit: number) {
    return this.op('unsettledLeases', () => this.leases.unsettledLeases(limit));
  }
  settleLease(id: string) {
    return this.op('settleLease', () => this.leases.settleLease(id));
  }
  pruneLeases(before: number) {
    return this.op('pruneLeases', () => this.leases.pruneLeases(before));
  }
  poolTasks(q: PoolQuery) {
    return this.op('poolTasks', () => this.tasks.poolTasks(q));
  }
}
