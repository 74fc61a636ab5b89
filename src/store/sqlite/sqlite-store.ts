// The SQLite store: one process, one connection, WAL. Every write goes through the writer
// (writer.ts), which resolves only once the commit is durable: our own fsync of the log, off the
// event loop. Reads are synchronous better-sqlite3 calls behind async methods; mail reads stop at
// the durable head. Appends are grouped per event-loop turn into one transaction (group-commit.ts).
import type Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  ackKeyFor,
  keyOfAccount,
  keyOfRoom,
  type AccountRecord,
  type MailPruneQuery,
  type MailPruneResult,
  type AckItem,
  type AckResult,
  type AppendOutcome,
  type ApprovalRecord,
  type StoreTallies,
  type CommitEvent,
  type Declared,
  type LeaseEndReason,
  type LeaseQuery,
  type LeaseRecord,
  type NewLease,
  type PoolQuery,
  type NameRecord,
  type NewAccount,
  type NewMessage,
  type NewSession,
  type LineageJoin,
  type PagedMessage,
  type PageQuery,
  type ReaderFacts,
  type ReaderFactsQuery,
  type ReaderScope,
  type SearchPage,
  type SearchQuery,
  type RecordRow,
  type RecordSweep,
  type Removal,
  type RoomOptions,
  type RoomRecord,
  type SessionRecord,
  type Store,
  type MailKey,
  type StoredMessage,
  type TaskQuery,
  type TaskRecord,
  type TeamChange,
  type TeamChangeRecord,
  type ContactRecord,
} from '../types.js';
import { prepareTallies } from './tallies.js';
import type { TeamCapability } from '../../wire/teams.js';
import type { ContactPolicy } from '../../wire/contacts.js';
import { CommitListeners } from '../commit-listeners.js';
import { countUnread, floorStep, pageLowerBound, scopeKeys, tallyAcks } from '../reading-rules.js';
import type { GroupCommit } from './group-commit.js';
import type { FsyncFn } from './durable-sync.js';
import type { CheckpointOptions, CheckpointStats } from './checkpointer.js';
import { SqliteWriter, type SyncMode } from './writer.js';
import { isCorruptionError, openDatabase, storeCorrupt } from './open-db.js';
import { PageStatements } from './page-query.js';
import { SqliteSearch } from './search.js';
import { BatchReads } from './batch-reads.js';
import { accountParams, messageParams, newSessionParams, toAccount, toMessage, toName, toSession } from './rows.js';
import { prepareStatements, type RecordDbRow, type Statements } from './statements.js';
import { prefixUpperBound } from './prefix.js';
import { forgetAccount, preparePurge, purgeAccountMail, purgeAccountTasks, purgeRoomMail, sweepOwned, type PurgeStatements } from './purge.js';
import { prepareRetention, pruneMailIn, pruneRecordsIn, type RetentionStatements } from './retention.js';
import { prepareTaskStatements, SqliteTasks } from './tasks.js';
import { prepareLeaseStatements, SqliteLeases } from './leases.js';
import { prepareTeamStatements, SqliteTeams } from './teams.js';
import { joinLineageIn, prepareLineageJoin, type LineageStatements } from './lineage-join.js';

export interface SqliteStoreOptions {
  /** A file path, or ':memory:' (unit tests only: nothing survives close). */
  path: string;
  busyTimeoutMs?: number;
  /** 'barrier' (default): our fsync off the event loop; 'full': SQLite's synchronous=FULL (writer.ts). */
  sync?: SyncMode;
  /** The fsync the barrier calls (tests observe it). */
  fsync?: FsyncFn;
  /** When the checkpoint thread starts and how often it looks (checkpointer.ts). */
  checkpoint?: CheckpointOptions;
}

export interface SqliteStoreStats extends CheckpointStats {
  /** Write transactions committed (an append batch counts once). */
  commits: number;
  /** Append batches committed, and the appends they carried. */
  appendBatches: number;
  appends: number;
}

interface AppendInput {
  m: NewMessage;
  since: number;
}

export { prefixUpperBound };

const toRecord = (r: RecordDbRow): RecordRow => ({ kind: r.kind, id: r.id, value: r.value, updatedAt: r.updated_at });

export function openSqliteStore(opts: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(opts);
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly shared = false;
  private readonly db: Database.Database;
  private readonly st: Statements;
  private readonly pages: PageStatements;
  private readonly tasks: SqliteTasks;
  /** Prepared on first use (support reports are rare). */
  private talliesOf: ((now: number) => StoreTallies) | undefined;
  private externalCounter: Database.Statement<[MailKey, number], { n: number }> | undefined;
  private readonly leases: SqliteLeases;
  private readonly searcher: SqliteSearch;
  private readonly teams: SqliteTeams;
  private readonly writer: SqliteWriter;
  private readonly appends: GroupCommit<AppendInput, AppendOutcome>;
  private readonly commits = new CommitListeners();
  private readonly counts = { appendBatches: 0, appends: 0 };
  private closed = false;
  private purgeSt: PurgeStatements | null = null;
  private batchSt: BatchReads | null = null;
  private retentionSt: RetentionStatements | null = null;
  private lineageSt: LineageStatements | null = null;

  constructor(opts: SqliteStoreOptions) {
    if (opts.path !== ':memory:') mkdirSync(dirname(opts.path), { recursive: true, mode: 0o700 });
    const mode = opts.sync ?? 'barrier';
    this.db = openDatabase(opts.path, opts.busyTimeoutMs ?? 5000, mode === 'barrier' ? 'NORMAL' : 'FULL');
    try {
      this.st = prepareStatements(this.db);
      this.writer = new SqliteWriter(this.db, opts.path, mode, () => this.head(), opts.fsync, opts.checkpoint);
      this.tasks = new SqliteTasks(prepareTaskStatements(this.db), (fn) => this.writer.tx(fn));
      this.leases = new SqliteLeases(this.db, prepareLeaseStatements(this.db), this.writer);
      this.searcher = new SqliteSearch(this.db);
      this.teams = new SqliteTeams(prepareTeamStatements(this.db), (fn) => this.writer.tx(fn));
    } catch (err) {
      this.db.close();
      throw isCorruptionError(err) ? storeCorrupt(opts.path, `is damaged (SQLite: ${(err as Error).message})`) : err;
    }
    this.pages = new PageStatements(this.db);
    this.appends = this.writer.group(
      (inputs: AppendInput[]) => {
        const out = inputs.map((i) => this.appendOne(i));
        this.counts.appendBatches++;
        this.counts.appends += inputs.length;
        return out;
      },
      // After the barrier: a woken reader never sees mail a power loss could take back.
      (outs: AppendOutcome[]) => {
        for (const o of outs) if (o.kind === 'created') this.emit({ keys: [o.message.toKey], seq: o.message.seq });
      },
    );
  }

  stats(): SqliteStoreStats {
    return { commits: this.writer.commits, ...this.counts, ...this.writer.checkpointStats() };
  }

  /** Flushes queued appends and claims, waits until they are durable, then closes the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.writer.close();
    this.db.close();
    await this.writer.closeFiles();
  }

  /** Runs fn in a write transaction; resolves once the commit is durable (writer.ts). */
  private tx<R>(fn: () => R): Promise<R> {
    return this.writer.tx(fn);
  }

  // ---- meta

  async getMeta(key: string): Promise<string | null> {
    return this.st.getMeta.get(key)?.value ?? null;
  }

  async initMeta(key: string, value: string): Promise<string> {
    return this.tx(() => {
      this.st.initMeta.run(key, value);
      return (this.st.getMeta.get(key) as { value: string }).value;
    });
  }

  // ---- accounts

  /** Statements of removals, prepared on first use (removals are rare). */
  private get purge(): PurgeStatements {
    return (this.purgeSt ??= preparePurge(this.db));
  }

  private head(): number {
    return this.st.headSeq.get()?.seq ?? 0;
  }

  async addAccount(rec: NewAccount, sweep?: RecordSweep): Promise<'ok' | 'exists'> {
    return this.tx(() => {
      if (this.st.insertAccount.run(accountParams(rec, this.head())).changes === 0) return 'exists';
      forgetAccount(this.purge, rec.id, sweep);
      purgeAccountMail(this.purge, rec.id, sweep);
      purgeAccountTasks(this.purge, rec.id);
      this.teams.forgetAccountIn(rec.id);
      this.leases.endAccountLeases(rec.id);
      for (const r of this.st.everyoneRooms.all()) this.join(r.name, rec.id);
      return 'ok';
    });
  }

  async getAccount(id: string): Promise<AccountRecord | null> {
    const r = this.st.getAccount.get(id);
    return r ? toAccount(r) : null;
  }

  async findAccountByDigest(digest: string): Promise<AccountRecord | null> {
    const r = this.st.findAccountByDigest.get(digest);
    return r ? toAccount(r) : null;
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return this.st.listAccounts.all().map(toAccount);
  }

  async setAccountSecret(id: string, digest: string): Promise<boolean> {
    return this.tx(() => this.st.setAccountSecret.run(digest, id).changes > 0);
  }

  async removeAccount(id: string, sweep?: RecordSweep): Promise<Removal | null> {
    return this.tx(() => {
      if (this.st.deleteAccount.run(id).changes === 0) return null;
      this.st.deleteMembershipsOf.run(id);
      this.st.deleteListener.run(id);
      this.st.deleteSessionsOf.run(id);
      this.st.deleteNamesOf.run(id);
      forgetAccount(this.purge, id, sweep);
      purgeAccountTasks(this.purge, id);
      this.teams.forgetAccountIn(id);
      this.leases.endAccountLeases(id);
      return { messages: purgeAccountMail(this.purge, id, sweep) };
    });
  }

  // ---- rooms

  async addRoom(name: string, at: number, opts: RoomOptions = {}): Promise<'ok' | 'exists'> {
    const everyone = opts.everyone ?? false;
    return this.tx(() => {
      if (this.st.insertRoom.run(name, at, everyone ? 1 : 0, opts.open ? 1 : 0, opts.team ? 1 : 0).changes === 0) return 'exists';
      purgeRoomMail(this.purge, name);
      this.teams.forgetRoomIn(name);
      if (everyone) for (const a of this.st.listAccounts.all()) this.join(name, a.id);
      return 'ok';
    });
  }

  async removeRoom(name: string, sweep?: RecordSweep): Promise<Removal | null> {
    return this.tx(() => {
      if (this.st.deleteRoom.run(name).changes === 0) return null;
      this.st.deleteMembersOfRoom.run(name);
      this.teams.forgetRoomIn(name);
      sweepOwned(this.purge, sweep);
      return { messages: purgeRoomMail(this.purge, name, sweep) };
    });
  }

  async setRoomOpen(name: string, open: boolean): Promise<boolean> {
    return this.tx(() => this.st.setRoomOpen.run(open ? 1 : 0, name).changes > 0);
  }

  async getRoom(name: string): Promise<RoomRecord | null> {
    const r = this.st.getRoom.get(name);
    if (!r) return null;
    const members = this.st.membersOf.all(name).map((m) => m.account);
    const team = r.team === 1;
    return { name: r.name, members, everyone: r.everyone === 1, open: r.is_open === 1, createdAt: r.created_at, team, leaders: team ? this.teams.leadersOf(name) : [] };
  }

  async listRooms(): Promise<RoomRecord[]> {
    const rooms = new Map<string, RoomRecord>();
    const leaders = this.teams.allLeaders();
    for (const r of this.st.listRooms.all()) {
      const team = r.team === 1;
      const room = { name: r.name, members: [], everyone: r.everyone === 1, open: r.is_open === 1, createdAt: r.created_at, team };
      rooms.set(r.name, { ...room, leaders: team ? (leaders.get(r.name) ?? []) : [] });
    }
    for (const m of this.st.allMembers.all()) rooms.get(m.room)?.members.push(m.account);
    return [...rooms.values()];
  }

  async roomsOf(account: string): Promise<string[]> {
    return this.st.roomsOf.all(account).map((r) => r.room);
  }

  async addMember(room: string, account: string, change?: TeamChange): Promise<'ok' | 'exists' | 'no_room' | 'no_account'> {
    return this.tx(() => {
      if (!this.st.getRoom.get(room)) return 'no_room';
      if (!this.st.getAccount.get(account)) return 'no_account';
      if (!this.join(room, account)) return 'exists';
      if (change) this.teams.recordIn(change);
      return 'ok';
    });
  }

  /** Makes the account a member (inside the caller's transaction); false if it already is one. */
  private join(room: string, account: string): boolean {
    if (this.st.memberExists.get(room, account)) return false;
    // A rejoining member keeps the acks it made before: count them once, here.
    const acked = (this.st.countAcksOfKey.get(keyOfAccount(account), keyOfRoom(room)) as { n: number }).n;
    this.st.insertMember.run(room, account, acked);
    return true;
  }

  /** The row carries the leadership and grants, so they end with it. */
  async removeMember(room: string, account: string, change?: TeamChange): Promise<boolean> {
    return this.tx(() => {
      if (this.st.deleteMember.run(room, account).changes === 0) return false;
      if (change) this.teams.recordIn(change);
      return true;
    });
  }

  // ---- teams and contacts (teams.ts)

  setLeader(room: string, account: string, leader: boolean, change: TeamChange): Promise<'ok' | 'unchanged' | 'no_room' | 'not_team' | 'not_member'> {
    return this.teams.setLeader(room, account, leader, change);
  }

  setGrant(room: string, account: string, capability: TeamCapability, granted: boolean, change: TeamChange): Promise<'ok' | 'unchanged' | 'no_room' | 'not_team' | 'not_leader'> {
    return this.teams.setGrant(room, account, capability, granted, change);
  }

  teamChanges(room: string, before: number | null, limit: number): Promise<TeamChangeRecord[]> {
    return this.teams.teamChanges(room, before, limit);
  }

  setContactPolicy(account: string, policy: ContactPolicy): Promise<boolean> {
    return this.teams.setContactPolicy(account, policy);
  }

  addContact(account: string, contact: string, at: number): Promise<'ok' | 'exists' | 'no_account'> {
    return this.teams.addContact(account, contact, at);
  }

  removeContact(account: string, contact: string): Promise<boolean> {
    return this.teams.removeContact(account, contact);
  }

  listContacts(account: string): Promise<ContactRecord[]> {
    return this.teams.listContacts(account);
  }

  hasContact(account: string, contact: string): Promise<boolean> {
    return this.teams.hasContact(account, contact);
  }

  // ---- records

  async putRecord(r: RecordRow): Promise<void> {
    await this.tx(() => this.st.putRecord.run(r.kind, r.id, r.value, r.updatedAt));
  }

  async insertRecords(rows: RecordRow[]): Promise<string[]> {
    if (rows.length === 0) return [];
    return this.tx(() => rows.filter((r) => this.st.insertRecord.run(r.kind, r.id, r.value, r.updatedAt).changes > 0).map((r) => r.id));
  }

  async getRecord(kind: string, id: string): Promise<RecordRow | null> {
    const r = this.st.getRecord.get(kind, id);
    return r ? toRecord(r) : null;
  }

  async listRecords(kind: string, idPrefix: string, limit: number): Promise<RecordRow[]> {
    if (limit <= 0) return [];
    const upper = prefixUpperBound(idPrefix);
    const rows = upper === null ? this.st.recordsOpen.all(kind, idPrefix, limit) : this.st.recordsByPrefix.all(kind, idPrefix, upper, limit);
    return rows.map(toRecord);
  }

  async deleteRecord(kind: string, id: string): Promise<boolean> {
    return this.tx(() => this.st.deleteRecord.run(kind, id).changes > 0);
  }

  // ---- retention (retention.ts): statements prepared on first use

  private get retention(): RetentionStatements {
    return (this.retentionSt ??= prepareRetention(this.db));
  }

  async pruneMail(q: MailPruneQuery): Promise<MailPruneResult> {
    return this.tx(() => pruneMailIn(this.retention, q));
  }

  async pruneRecords(kind: string, before: number, limit: number): Promise<number> {
    return this.tx(() => pruneRecordsIn(this.retention, kind, before, limit));
  }

  // ---- listeners

  async setListener(account: string, url: string): Promise<boolean> {
    return this.tx(() => {
      if (!this.st.getAccount.get(account)) return false;
      this.st.setListener.run(account, url);
      return true;
    });
  }

  async removeListener(account: string): Promise<boolean> {
    return this.tx(() => this.st.deleteListener.run(account).changes > 0);
  }

  async getListener(account: string): Promise<string | null> {
    return this.st.getListener.get(account)?.url ?? null;
  }

  async listenersOf(accounts: readonly string[]): Promise<Map<string, string>> {
    return this.batch.listenersOf(accounts);
  }

  /** Reads for many readers at once (batch-reads.ts), prepared on first use. */
  private get batch(): BatchReads {
    return (this.batchSt ??= new BatchReads(this.db));
  }

  // ---- sessions

  async registerSession(s: NewSession): Promise<SessionRecord> {
    return this.tx(() => {
      const existing = this.st.getSession.get(s.account, s.id);
      if (existing) return toSession(existing);
      let lineage = s.id;
      let joined = false;
      if (s.predecessor !== null) {
        const pred = this.st.getSession.get(s.account, s.predecessor);
        // Only the first successor inherits; a second one starts its own lineage.
        if (pred && pred.successor === null) {
          this.st.setSuccessor.run(s.id, s.createdAt, s.account, pred.id);
          lineage = pred.lineage;
          joined = true;
        }
      }
      const row = newSessionParams(s, lineage);
      this.st.insertSession.run(row);
      // A joining session takes the lineage's slug (if it has one); only a new lineage gets a name.
      let slug = this.st.slugOfLineage.get(s.account, lineage)?.name ?? null;
      if (slug === null && !joined && s.slugBase !== null) slug = this.allocateSlug(s.account, lineage, s.slugBase);
      return toSession({ ...row, slug });
    });
  }

  /** The first free of `base`, `base-2`, `base-3` … in the account's namespace, taken for the
   *  lineage (inside the caller's transaction, so two registrations never get the same one). */
  private allocateSlug(account: string, lineage: string, base: string): string {
    let name = base;
    if (this.st.getName.get(account, base)) {
      // Every `base-…` name of the account in one range of the key ('.' follows '-').
      const taken = new Set(this.st.namesInRange.all(account, `${base}-`, `${base}.`).map((r) => r.name));
      let n = 2;
      while (taken.has(`${base}-${n}`)) n++;
      name = `${base}-${n}`;
    }
    this.st.insertName.run(account, name, lineage, 'slug');
    return name;
  }

  async getSession(account: string, id: string): Promise<SessionRecord | null> {
    const r = this.st.getSession.get(account, id);
    return r ? toSession(r) : null;
  }

  async findSessionsByPrefix(account: string, prefix: string, limit: number): Promise<SessionRecord[]> {
    if (limit <= 0) return []; // LIMIT -1 would mean "no limit" to SQLite
    const upper = prefixUpperBound(prefix);
    const rows = upper === null ? this.st.sessionsByPrefixOpen.all(account, prefix, limit) : this.st.sessionsByPrefix.all(account, prefix, upper, limit);
    return rows.map(toSession);
  }

  async lineageSessions(account: string, lineage: string): Promise<SessionRecord[]> {
    return this.st.lineageSessions.all(account, lineage).map(toSession);
  }

  async addAlias(account: string, lineage: string, name: string): Promise<'ok' | 'taken'> {
    return this.tx(() => {
      const held = this.st.getName.get(account, name);
      if (held) return held.lineage === lineage ? 'ok' : 'taken';
      this.st.insertName.run(account, name, lineage, 'alias');
      return 'ok';
    });
  }

  async removeAlias(account: string, lineage: string, name: string): Promise<boolean> {
    return this.tx(() => this.st.deleteAlias.run(account, name, lineage).changes > 0);
  }

  async resolveName(account: string, name: string): Promise<NameRecord | null> {
    const r = this.st.getName.get(account, name);
    return r ? toName(r) : null;
  }

  async namesOf(account: string): Promise<NameRecord[]> {
    return this.st.namesOf.all(account).map(toName);
  }

  async listNames(): Promise<NameRecord[]> {
    return this.st.listNames.all().map(toName);
  }

  async listSessions(): Promise<SessionRecord[]> {
    return this.st.listSessions.all().map(toSession);
  }

  async findByProviderSession(account: string, provider: string, providerSessionId: string): Promise<SessionRecord[]> {
    return this.st.findByProviderSession.all(account, provider, providerSessionId).map(toSession);
  }

  async touchSessions(seen: { account: string; id: string; at: number }[]): Promise<void> {
    if (seen.length === 0) return;
    await this.tx(() => {
      for (const s of seen) this.st.touchSession.run(s.at, s.account, s.id);
    });
  }

  async endSession(account: string, id: string, at: number): Promise<void> {
    await this.tx(() => this.st.endSession.run(at, account, id));
  }

  async setDeclared(account: string, id: string, d: Declared): Promise<SessionRecord | null> {
    return this.tx(() => {
      const r = this.st.setDeclared.run(d.workingOn ?? null, d.role ?? null, d.parent ?? null, account, id);
      if (r.changes === 0) return null;
      const row = this.st.getSession.get(account, id);
      return row ? toSession(row) : null;
    });
  }

  async setProviderSessionId(account: string, id: string, providerSessionId: string): Promise<SessionRecord | null> {
    return this.tx(() => {
      if (this.st.setProviderSessionId.run(providerSessionId, account, id).changes === 0) return null;
      const row = this.st.getSession.get(account, id);
      return row ? toSession(row) : null;
    });
  }

  async joinLineage(account: string, id: string, predecessor: string, at: number, records: RecordSweep['owned']): Promise<LineageJoin> {
    const st = (this.lineageSt ??= prepareLineageJoin(this.db));
    return this.tx(() => joinLineageIn(st, account, id, predecessor, at, records));
  }

  /** Also deletes the names of every lineage that this prune leaves without a session. */
  async pruneSessions(before: number, resumableBefore = before): Promise<number> {
    return this.tx(() => {
      const lineages = new Map<string, [account: string, lineage: string]>();
      const cutoffs = { before, resumable: resumableBefore };
      for (const l of this.st.prunedLineages.all(cutoffs)) lineages.set(`${l.account}\n${l.lineage}`, [l.account, l.lineage]);
      const pruned = this.st.pruneSessions.run(cutoffs).changes;
      for (const [account, lineage] of lineages.values()) {
        if (!this.st.lineageHasSession.get(account, lineage)) this.st.deleteNamesOfLineage.run(account, lineage);
      }
      return pruned;
    });
  }

  // ---- messages

  appendMessage(m: NewMessage, idempotentSince: number): Promise<AppendOutcome> {
    return this.appends.submit({ m, since: idempotentSince });
  }

  /** One append inside the batch transaction; later entries see earlier ones. */
  private appendOne({ m, since }: AppendInput): AppendOutcome {
    if (m.idempotencyKey !== null) {
      const prior = this.st.findIdempotent.get(m.fromAccount, m.idempotencyKey, since);
      if (prior) {
        return { kind: prior.fingerprint === m.fingerprint ? 'duplicate' : 'conflict', message: toMessage(prior) };
      }
    }
    const params = messageParams(m);
    const seq = Number(this.st.insertMessage.run(params).lastInsertRowid);
    this.st.countDelivered.run(m.toKey);
    return { kind: 'created', message: toMessage({ ...params, seq }) };
  }

  async getMessage(id: string): Promise<StoredMessage | null> {
    const r = this.st.getMessage.get(id);
    return r ? toMessage(r) : null;
  }

  async getThread(threadId: string): Promise<StoredMessage[]> {
    return this.st.getThread.all(threadId).map(toMessage);
  }

  /** Mail reads stop at the durable head (writer.ts): no seq a power loss could hand out again. */
  async search(scope: ReaderScope, q: SearchQuery): Promise<SearchPage> {
    return await this.searcher.run(scope, q, this.writer.readHead());
  }

  async headSeq(): Promise<number> {
    return Math.min(this.head(), this.writer.readHead());
  }

  async tallies(now: number): Promise<StoreTallies> {
    return (this.talliesOf ??= prepareTallies(this.db))(now);
  }

  async externalCount(key: MailKey, limit: number): Promise<number> {
    return (this.externalCounter ??= this.db.prepare<[MailKey, number], { n: number }>(
      "SELECT count(*) AS n FROM (SELECT 1 FROM messages WHERE to_key = ? AND from_kind = 'external' LIMIT ?)",
    )).get(key, limit)!.n;
  }

  async messagesAfter(key: MailKey, after: number, limit: number): Promise<StoredMessage[]> {
    return this.st.messagesAfter.all(key, after, this.writer.readHead(), limit).map(toMessage);
  }

  async page(scope: ReaderScope, q: PageQuery): Promise<PagedMessage[]> {
    if (q.limit <= 0) return []; // LIMIT -1 would mean "no limit" to SQLite
    const keys = scopeKeys(scope);
    const params: unknown[] = [];
    const ceiling = this.writer.readHead();
    for (const key of keys) {
      const ackKey = ackKeyFor(scope, key);
      const floor = q.pendingOnly ? (this.st.getFloor.get(ackKey, key)?.floor ?? 0) : 0;
      params.push(ackKey, key, pageLowerBound(q, floor), ceiling);
      if (q.threadId !== null) params.push(q.threadId);
      params.push(q.limit);
    }
    params.push(q.limit);
    return this.pages.rows({ keys: keys.length, pendingOnly: q.pendingOnly, thread: q.threadId !== null }, params);
  }

  async ack(scope: ReaderScope, items: AckItem[], at: number): Promise<AckResult[]> {
    if (items.length === 0) return [];
    return this.tx(() => {
      const results: AckResult[] = [];
      const fresh: AckItem[] = [];
      for (const item of items) {
        const ackKey = ackKeyFor(scope, item.toKey);
        const prior = this.st.getAck.get(ackKey, item.seq);
        if (prior) {
          results.push({ seq: item.seq, ackedAt: prior.acked_at, fresh: false });
          continue;
        }
        // Deleted by retention since the caller looked it up (it was acknowledged): no ack row for
        // a message that is not there, and no counter moves.
        if (!this.retention.exists.get(item.seq)) {
          results.push({ seq: item.seq, ackedAt: at, fresh: false });
          continue;
        }
        this.st.insertAck.run(ackKey, item.seq, item.toKey, at);
        fresh.push(item);
        results.push({ seq: item.seq, ackedAt: at, fresh: true });
      }
      const t = tallyAcks(scope, fresh);
      for (const [key, n] of t.mailboxes) this.st.countAcked.run(n, key);
      // A non-member's ack of room mail matches no membership row and changes no counter.
      for (const [room, n] of t.members) this.st.bumpMemberAcked.run(n, room, scope.account);
      for (const [ackKey, toKey] of t.floors) this.advanceFloor(ackKey, toKey);
      return results;
    });
  }

  /** Moves the ack floor past every consecutive acked message (floorStep). */
  private advanceFloor(ackKey: string, toKey: string): void {
    const start = this.st.getFloor.get(ackKey, toKey)?.floor ?? 0;
    let floor = start;
    for (let done = false; !done;) {
      const rows = this.st.nextAboveFloor.all(ackKey, toKey, floor).map((r) => ({ seq: r.seq, acked: r.acked === 1 }));
      ({ floor, done } = floorStep(floor, rows));
    }
    if (floor !== start) this.st.setFloor.run(ackKey, toKey, floor);
  }

  async unread(scope: ReaderScope): Promise<number> {
    return countUnread(scope, {
      unacked: (key) => this.st.countsOf.get(key)?.unacked ?? 0,
      total: (key) => this.st.countsOf.get(key)?.total ?? 0,
      memberAcked: (room) => this.st.memberAcked.get(room, scope.account)?.acked ?? 0,
    });
  }

  async readerFacts(readers: readonly ReaderFactsQuery[]): Promise<ReaderFacts[]> {
    return this.batch.readerFacts(readers);
  }

  async ackedAt(scope: ReaderScope, items: AckItem[]): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    for (const item of items) {
      const r = this.st.getAck.get(ackKeyFor(scope, item.toKey), item.seq);
      if (r) out.set(item.seq, r.acked_at);
    }
    return out;
  }

  // ---- tasks and approvals (tasks.ts)

  createTask(t: TaskRecord, idempotentSince: number) {
    return this.tasks.createTask(t, idempotentSince);
  }
  getTask(id: string) {
    return this.tasks.getTask(id);
  }
  updateTask(t: TaskRecord, expectedVersion: number) {
    return this.tasks.updateTask(t, expectedVersion);
  }
  listTasks(q: TaskQuery) {
    return this.tasks.listTasks(q);
  }
  taskChildren(parentId: string, limit: number) {
    return this.tasks.taskChildren(parentId, limit);
  }
  createApproval(a: ApprovalRecord) {
    return this.tasks.createApproval(a);
  }
  getApproval(id: string) {
    return this.tasks.getApproval(id);
  }
  decideApproval(id: string, state: 'approved' | 'rejected', reason: string, at: number) {
    return this.tasks.decideApproval(id, state, reason, at);
  }

  poolTasks(q: PoolQuery) {
    return this.tasks.poolTasks(q);
  }

  // ---- leases (leases.ts)

  claimLease(l: NewLease, o: { now: number; maxPerHolder: number; conflicts(other: LeaseRecord): boolean }) {
    return this.leases.claimLease(l, o);
  }
  renewLease(id: string, epoch: number, expiresAt: number, now: number) {
    return this.leases.renewLease(id, epoch, expiresAt, now);
  }
  endLease(id: string, epoch: number, reason: LeaseEndReason, now: number) {
    return this.leases.endLease(id, epoch, reason, now);
  }
  expireLeases(now: number, limit: number) {
    return this.leases.expireLeases(now, limit);
  }
  endSessionLeases(account: string, session: string, now: number) {
    return this.leases.endSessionLeases(account, session, now);
  }
  getLease(id: string) {
    return this.leases.getLease(id);
  }
  listLeases(q: LeaseQuery) {
    return this.leases.listLeases(q);
  }
  unsettledLeases(limit: number) {
    return this.leases.unsettledLeases(limit);
  }
  settleLease(id: string) {
    return this.leases.settleLease(id);
  }
  pruneLeases(before: number) {
    return this.leases.pruneLeases(before);
  }

  onCommit(listener: (e: CommitEvent) => void): () => void {
    return this.commits.add(listener);
  }

  private emit(e: CommitEvent): void {
    this.commits.emit(e);
  }
}
