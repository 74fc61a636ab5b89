// The in-memory store: plain maps and arrays, for tests and throwaway daemons. It keeps the same
// counters as the SQLite store so every result (unread included) is identical; records are
// copied in and out so callers never share state with the store.
import { referencePage, searchKeys } from '../search-rules.js';
import { isExtensionProvider } from '../../wire/capabilities.js';
import {
  ackKeyFor,
  isKeyOfAccount,
  keyOfAccount,
  keyOfLineage,
  keyOfRoom,
  recordNamesRecipient,
  type AccountRecord,
  type AckItem,
  type AckResult,
  type AppendOutcome,
  type ApprovalRecord,
  type StoreTallies,
  type LeaseEndReason,
  type LeaseQuery,
  type LeaseRecord,
  type NewLease,
  type PoolQuery,
  type CommitEvent,
  type Corroborated,
  type Declared,
  type MailKey,
  type MailPruneQuery,
  type MailPruneResult,
  type MessageTask,
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
  type StoredMessage,
  type TaskQuery,
  type TaskRecord,
  type TeamChange,
  type TeamChangeRecord,
  type ContactRecord,
} from '../types.js';
import type { TeamCapability } from '../../wire/teams.js';
import type { ContactPolicy } from '../../wire/contacts.js';
import { CommitListeners } from '../commit-listeners.js';
import { binaryCompare } from './binary-compare.js';
import { MemoryLeases } from './memory-leases.js';
import { MemoryTasks } from './memory-tasks.js';
import { MemoryTeams } from './memory-teams.js';
import { countUnread, pageLowerBound, scopeKeys, tallyAcks } from '../reading-rules.js';
import { firstCandidates, mayDelete, targetKeys, TERMINAL, type PruneCandidate } from '../retention-rules.js';

interface Room {
  createdAt: number;
  everyone: boolean;
  open: boolean;
  /** account -> how many of the room's messages it has acknowledged. */
  members: Map<string, number>;
}

interface Ack {
  ackedAt: number;
  toKey: MailKey;
}

/** Only the fields that are set, as a store that keeps them in columns would give them back. */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

const copyAccount = (a: AccountRecord): AccountRecord => ({ ...a, permissions: { ...a.permissions } });
const copySession = (s: SessionRecord): SessionRecord => ({
  ...s,
  corroborated: { ...s.corroborated },
  declared: { ...s.declared },
});
const copyMessage = (m: StoredMessage): StoredMessage => ({
  ...m,
  refs: m.refs.map((r) => ({ ...r })),
  ...(m.task ? { task: { ...m.task } } : {}),
  ...(m.via ? { via: { ...m.via } } : {}),
});
const sessionKey = (account: string, id: string) => `${account}\n${id}`;
const lineageKey = (account: string, lineage: string) => `${account}\n${lineage}`;

const byName = (a: NameRecord, b: NameRecord): number => binaryCompare(a.account, b.account) || binaryCompare(a.name, b.name);

/** Index of the first message with seq > after (messages are in seq order). */
function firstAfter(list: StoredMessage[], after: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((list[mid] as StoredMessage).seq <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function createMemoryStore(): Store {
  return new MemoryStore();
}

class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  readonly shared = false;
  private readonly meta = new Map<string, string>();
  private readonly accounts = new Map<string, AccountRecord>();
  private readonly rooms = new Map<string, Room>();
  private readonly listeners = new Map<string, string>();
  /** Insertion order is registration order, which lists and ties follow. */
  private readonly sessions = new Map<string, SessionRecord>();
  /** account -> name -> record: one namespace per account for slugs and aliases. */
  private readonly names = new Map<string, Map<string, NameRecord>>();
  /** lineageKey -> the lineage's slug. */
  private readonly slugs = new Map<string, string>();
  private readonly byId = new Map<string, StoredMessage>();
  private readonly byKey = new Map<MailKey, StoredMessage[]>();
  private readonly byThread = new Map<string, StoredMessage[]>();
  private readonly byIdempotency = new Map<string, StoredMessage[]>();
  /** ack key -> seq -> ack */
  private readonly acks = new Map<MailKey, Map<number, Ack>>();
  /** Per mailbox key: delivered, and not acked under the key itself (see sqlite migrations). */
  private readonly mailboxCounts = new Map<MailKey, { total: number; unacked: number }>();
  private readonly commits = new CommitListeners();
  /** kind -> id -> record */
  private readonly records = new Map<string, Map<string, RecordRow>>();
  private readonly tasks = new MemoryTasks();
  private readonly leases = new MemoryLeases();
  private readonly teams = new MemoryTeams();
  private seq = 0;

  async close(): Promise<void> {}

  async getMeta(key: string): Promise<string | null> {
    return this.meta.get(key) ?? null;
  }

  async initMeta(key: string, value: string): Promise<string> {
    if (!this.meta.has(key)) this.meta.set(key, value);
    return this.meta.get(key) as string;
  }

  async addAccount(rec: NewAccount, sweep?: RecordSweep): Promise<'ok' | 'exists'> {
    if (this.accounts.has(rec.id)) return 'exists';
    this.forget(rec.id, sweep);
    this.purgeMail((key) => isKeyOfAccount(key, rec.id), sweep);
    this.tasks.purgeAccount(rec.id);
    this.teams.forgetAccount(rec.id);
    // addAccount and removeAccount take no time: the end of a lease they end is the wall clock's.
    this.leases.endAccountLeases(rec.id, Date.now());
    this.accounts.set(rec.id, copyAccount({ ...rec, contactPolicy: rec.contactPolicy ?? 'open', bornSeq: this.seq }));
    for (const [name, room] of this.rooms) if (room.everyone) this.join(name, room, rec.id);
    return 'ok';
  }

  async getAccount(id: string): Promise<AccountRecord | null> {
    const a = this.accounts.get(id);
    return a ? copyAccount(a) : null;
  }

  async findAccountByDigest(digest: string): Promise<AccountRecord | null> {
    for (const a of this.accounts.values()) if (a.secretDigest === digest) return copyAccount(a);
    return null;
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return [...this.accounts.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map(copyAccount);
  }

  async setAccountSecret(id: string, digest: string): Promise<boolean> {
    const a = this.accounts.get(id);
    if (!a) return false;
    a.secretDigest = digest;
    return true;
  }

  async removeAccount(id: string, sweep?: RecordSweep): Promise<Removal | null> {
    if (!this.accounts.delete(id)) return null;
    for (const [name, room] of this.rooms) if (room.members.delete(id)) this.teams.memberRemoved(name, id);
    this.teams.forgetAccount(id);
    this.listeners.delete(id);
    for (const [k, s] of this.sessions) if (s.account === id) this.sessions.delete(k);
    for (const n of this.names.get(id)?.values() ?? []) if (n.kind === 'slug') this.slugs.delete(lineageKey(id, n.lineage));
    this.names.delete(id);
    this.forget(id, sweep);
    this.tasks.purgeAccount(id);
    this.leases.endAccountLeases(id, Date.now());
    return { messages: this.purgeMail((key) => isKeyOfAccount(key, id), sweep) };
  }

  /** The retry handles of mail sent under the name (a new account of it must not be answered with
   *  an old one's message), its receipts of mail that stays, and the records the sweep names. */
  private forget(id: string, sweep?: RecordSweep): void {
    for (const [k, list] of this.byIdempotency) {
      if (!k.startsWith(`${id}\n`)) continue;
      for (const m of list) m.idempotencyKey = null;
      this.byIdempotency.delete(k);
    }
    if (!sweep) return;
    for (const kind of sweep.byRecipient) {
      const m = this.records.get(kind);
      for (const rid of m?.keys() ?? []) if (recordNamesRecipient(rid, id)) m?.delete(rid);
    }
    this.sweepOwned(sweep);
  }

  private sweepOwned(sweep: RecordSweep): void {
    for (const o of sweep.owned) {
      const m = this.records.get(o.kind);
      if (!m) continue;
      if ('id' in o) m.delete(o.id);
      else for (const rid of m.keys()) if (rid.startsWith(o.prefix)) m.delete(rid);
    }
  }

  /** Deletes every message delivered to a key `which` picks, with its acks (under any ack key),
   *  floors and counters, and the sweep's records of those messages; returns how many. */
  private purgeMail(which: (key: MailKey) => boolean, sweep?: RecordSweep): number {
    const keys = [...this.byKey.keys()].filter(which);
    let n = 0;
    for (const key of keys) {
      for (const m of this.byKey.get(key) ?? []) {
        this.byId.delete(m.id);
        const thread = this.byThread.get(m.threadId)?.filter((x) => x !== m);
        if (thread?.length) this.byThread.set(m.threadId, thread);
        else this.byThread.delete(m.threadId);
        if (m.idempotencyKey !== null) {
          const k = `${m.fromAccount}\n${m.idempotencyKey}`;
          const rest = this.byIdempotency.get(k)?.filter((x) => x !== m);
          if (rest?.length) this.byIdempotency.set(k, rest);
          else this.byIdempotency.delete(k);
        }
        for (const kind of sweep?.byMessage ?? []) {
          const recs = this.records.get(kind);
          for (const rid of recs?.keys() ?? []) if (rid.startsWith(`${m.id}|`)) recs?.delete(rid);
        }
        n++;
      }
      this.byKey.delete(key);
      this.mailboxCounts.delete(key);
    }
    for (const [ackKey, acks] of this.acks) {
      if (which(ackKey)) this.acks.delete(ackKey);
      else for (const [seq, a] of acks) if (which(a.toKey)) acks.delete(seq);
    }
    return n;
  }

  async addRoom(name: string, at: number, opts: RoomOptions = {}): Promise<'ok' | 'exists'> {
    if (this.rooms.has(name)) return 'exists';
    this.purgeMail((key) => key === keyOfRoom(name));
    const everyone = opts.everyone ?? false;
    const room: Room = { createdAt: at, everyone, open: opts.open ?? false, members: new Map() };
    this.rooms.set(name, room);
    this.teams.roomCreated(name, opts.team ?? false);
    if (everyone) for (const account of this.accounts.keys()) this.join(name, room, account);
    return 'ok';
  }

  async removeRoom(name: string, sweep?: RecordSweep): Promise<Removal | null> {
    if (!this.rooms.delete(name)) return null;
    this.teams.roomRemoved(name);
    const gone = this.purgeMail((key) => key === keyOfRoom(name), sweep);
    if (sweep) this.sweepOwned(sweep);
    return { messages: gone };
  }

  async setRoomOpen(name: string, open: boolean): Promise<boolean> {
    const r = this.rooms.get(name);
    if (!r) return false;
    r.open = open;
    return true;
  }

  async getRoom(name: string): Promise<RoomRecord | null> {
    const r = this.rooms.get(name);
    if (!r) return null;
    const team = this.teams.isTeam(name);
    return { name, members: [...r.members.keys()].sort(), everyone: r.everyone, open: r.open, createdAt: r.createdAt, team, leaders: this.teams.leadersOf(name) };
  }

  async listRooms(): Promise<RoomRecord[]> {
    const names = [...this.rooms.keys()].sort();
    return Promise.all(names.map(async (n) => (await this.getRoom(n)) as RoomRecord));
  }

  async roomsOf(account: string): Promise<string[]> {
    return [...this.rooms]
      .filter(([, r]) => r.members.has(account))
      .map(([n]) => n)
      .sort();
  }

  async addMember(room: string, account: string, change?: TeamChange): Promise<'ok' | 'exists' | 'no_room' | 'no_account'> {
    const r = this.rooms.get(room);
    if (!r) return 'no_room';
    if (!this.accounts.has(account)) return 'no_account';
    if (!this.join(room, r, account)) return 'exists';
    if (change) this.teams.record(change);
    return 'ok';
  }

  /** Makes the account a member; false if it already is one. */
  private join(name: string, room: Room, account: string): boolean {
    if (room.members.has(account)) return false;
    // A rejoining member keeps the acks it made before.
    const roomKey = keyOfRoom(name);
    let acked = 0;
    for (const a of this.acks.get(keyOfAccount(account))?.values() ?? []) if (a.toKey === roomKey) acked++;
    room.members.set(account, acked);
    return true;
  }

  async removeMember(room: string, account: string, change?: TeamChange): Promise<boolean> {
    if (!this.rooms.get(room)?.members.delete(account)) return false;
    this.teams.memberRemoved(room, account);
    if (change) this.teams.record(change);
    return true;
  }

  // ---- teams and contacts (memory-teams.ts)

  async setLeader(room: string, account: string, leader: boolean, change: TeamChange): Promise<'ok' | 'unchanged' | 'no_room' | 'not_team' | 'not_member'> {
    const r = this.rooms.get(room);
    if (!r) return 'no_room';
    if (!this.teams.isTeam(room)) return 'not_team';
    if (!r.members.has(account)) return 'not_member';
    return this.teams.setLeader(room, account, leader, change);
  }

  async setGrant(
    room: string,
    account: string,
    capability: TeamCapability,
    granted: boolean,
    change: TeamChange,
  ): Promise<'ok' | 'unchanged' | 'no_room' | 'not_team' | 'not_leader'> {
    if (!this.rooms.has(room)) return 'no_room';
    return this.teams.setGrant(room, account, capability, granted, change);
  }

  async teamChanges(room: string, before: number | null, limit: number): Promise<TeamChangeRecord[]> {
    return this.teams.teamChanges(room, before, limit);
  }

  async setContactPolicy(account: string, policy: ContactPolicy): Promise<boolean> {
    const a = this.accounts.get(account);
    if (!a) return false;
    a.contactPolicy = policy;
    return true;
  }

  async addContact(account: string, contact: string, at: number): Promise<'ok' | 'exists' | 'no_account'> {
    if (!this.accounts.has(account) || !this.accounts.has(contact)) return 'no_account';
    return this.teams.addContact(account, contact, at);
  }

  async removeContact(account: string, contact: string): Promise<boolean> {
    return this.teams.removeContact(account, contact);
  }

  async listContacts(account: string): Promise<ContactRecord[]> {
    return this.teams.listContacts(account);
  }

  async hasContact(account: string, contact: string): Promise<boolean> {
    return this.teams.hasContact(account, contact);
  }

  async putRecord(r: RecordRow): Promise<void> {
    this.recordsOf(r.kind).set(r.id, { ...r });
  }

  async insertRecords(rows: RecordRow[]): Promise<string[]> {
    const out: string[] = [];
    for (const r of rows) {
      const m = this.recordsOf(r.kind);
      if (m.has(r.id)) continue;
      m.set(r.id, { ...r });
      out.push(r.id);
    }
    return out;
  }

  async getRecord(kind: string, id: string): Promise<RecordRow | null> {
    const r = this.records.get(kind)?.get(id);
    return r ? { ...r } : null;
  }

  async listRecords(kind: string, idPrefix: string, limit: number): Promise<RecordRow[]> {
    const m = this.records.get(kind);
    if (!m || limit <= 0) return [];
    // Code point order, as the SQL stores sort (BINARY / COLLATE "C").
    const ids = [...m.keys()].filter((id) => id.startsWith(idPrefix)).sort(binaryCompare);
    return ids.slice(0, limit).map((id) => ({ ...(m.get(id) as RecordRow) }));
  }

  async deleteRecord(kind: string, id: string): Promise<boolean> {
    return this.records.get(kind)?.delete(id) ?? false;
  }

  // ---- retention (the rules: retention-rules.ts)

  async pruneMail(q: MailPruneQuery): Promise<MailPruneResult> {
    const { exact, sessionPrefix } = targetKeys(q);
    const lists: PruneCandidate[][] = [];
    for (const [key, list] of this.byKey) {
      if (key !== exact && (sessionPrefix === null || !key.startsWith(sessionPrefix))) continue;
      const old = list.slice(firstAfter(list, q.after)).filter((m) => m.createdAt < q.before);
      lists.push(old.slice(0, q.limit).map((m) => ({ seq: m.seq, id: m.id, toKey: m.toKey, threadId: m.threadId })));
    }
    const { taken, next } = firstCandidates(lists, q.limit);
    const room = 'room' in q.target ? this.rooms.get(q.target.room) : undefined;
    const members = room ? [...room.members.keys()] : [];
    const heldThreads = this.tasks.heldThreads(TERMINAL);
    const acked = (k: MailKey, seq: number): boolean => this.acks.get(k)?.has(seq) ?? false;
    let deleted = 0;
    for (const c of taken) {
      if (!mayDelete(c, { heldThreads, members, acked })) continue;
      const m = this.byId.get(c.id) as StoredMessage;
      this.byId.delete(m.id);
      const drop = (map: Map<string, StoredMessage[]>, k: string): void => {
        const rest = map.get(k)?.filter((x) => x !== m);
        if (rest?.length) map.set(k, rest);
        else map.delete(k);
      };
      drop(this.byKey, m.toKey);
      drop(this.byThread, m.threadId);
      if (m.idempotencyKey !== null) drop(this.byIdempotency, `${m.fromAccount}\n${m.idempotencyKey}`);
      for (const kind of q.byMessage) {
        const recs = this.records.get(kind);
        for (const rid of recs?.keys() ?? []) if (rid.startsWith(`${m.id}|`)) recs?.delete(rid);
      }
      const count = this.mailboxCounts.get(m.toKey);
      if (count) count.total--;
      // Every account's ack of it; a member's acked count of the room goes down with its ack.
      for (const [ackKey, acks] of this.acks) {
        if (!acks.delete(m.seq) || !room) continue;
        const account = ackKey.slice(2);
        const n = room.members.get(account);
        if (ackKey.startsWith('a:') && n !== undefined) room.members.set(account, n - 1);
      }
      deleted++;
    }
    return { deleted, next };
  }

  async pruneRecords(kind: string, before: number, limit: number): Promise<number> {
    const m = this.records.get(kind);
    let n = 0;
    for (const [id, r] of m ?? []) {
      if (n >= limit) break;
      if (r.updatedAt < before && m?.delete(id)) n++;
    }
    return n;
  }

  private recordsOf(kind: string): Map<string, RecordRow> {
    let m = this.records.get(kind);
    if (!m) this.records.set(kind, (m = new Map<string, RecordRow>()));
    return m;
  }

  async setListener(account: string, url: string): Promise<boolean> {
    if (!this.accounts.has(account)) return false;
    this.listeners.set(account, url);
    return true;
  }

  async removeListener(account: string): Promise<boolean> {
    return this.listeners.delete(account);
  }

  async getListener(account: string): Promise<string | null> {
    return this.listeners.get(account) ?? null;
  }

  async listenersOf(accounts: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const a of accounts) {
      const url = this.listeners.get(a);
      if (url !== undefined) out.set(a, url);
    }
    return out;
  }

  async registerSession(s: NewSession): Promise<SessionRecord> {
    const existing = this.sessions.get(sessionKey(s.account, s.id));
    if (existing) return this.out(existing);
    let lineage = s.id;
    let joined = false;
    if (s.predecessor !== null) {
      const pred = this.sessions.get(sessionKey(s.account, s.predecessor));
      if (pred && pred.successor === null) {
        pred.successor = s.id;
        pred.endedAt ??= s.createdAt;
        lineage = pred.lineage;
        joined = true;
      }
    }
    // A joining session takes the lineage's slug (if it has one); only a new lineage gets a name.
    if (!joined && s.slugBase !== null && !this.slugs.has(lineageKey(s.account, lineage))) {
      this.allocateSlug(s.account, lineage, s.slugBase);
    }
    const rec: SessionRecord = {
      account: s.account,
      id: s.id,
      lineage,
      hostId: s.hostId,
      pid: s.pid,
      startTime: s.startTime,
      exe: s.exe,
      uid: s.uid,
      corroborated: defined<Corroborated>(s.corroborated),
      declared: {},
      createdAt: s.createdAt,
      lastSeen: s.createdAt,
      endedAt: null,
      successor: null,
      slug: null,
    };
    this.sessions.set(sessionKey(s.account, s.id), rec);
    return this.out(rec);
  }

  /** A copy of the record with its lineage's slug (kept once per lineage, not per session). */
  private out(s: SessionRecord): SessionRecord {
    const rec = copySession(s);
    rec.slug = this.slugs.get(lineageKey(s.account, s.lineage)) ?? null;
    return rec;
  }

  /** The first free of `base`, `base-2`, `base-3` … in the account's namespace, for the lineage. */
  private allocateSlug(account: string, lineage: string, base: string): void {
    let names = this.names.get(account);
    if (!names) this.names.set(account, (names = new Map<string, NameRecord>()));
    let name = base;
    for (let n = 2; names.has(name); n++) name = `${base}-${n}`;
    names.set(name, { account, name, lineage, kind: 'slug' });
    this.slugs.set(lineageKey(account, lineage), name);
  }

  async getSession(account: string, id: string): Promise<SessionRecord | null> {
    const s = this.sessions.get(sessionKey(account, id));
    return s ? this.out(s) : null;
  }

  async findSessionsByPrefix(account: string, prefix: string, limit: number): Promise<SessionRecord[]> {
    if (limit <= 0) return [];
    return [...this.sessions.values()]
      .filter((s) => s.account === account && s.id.startsWith(prefix))
      .sort((a, b) => binaryCompare(a.id, b.id))
      .slice(0, limit)
      .map((s) => this.out(s));
  }

  async lineageSessions(account: string, lineage: string): Promise<SessionRecord[]> {
    return [...this.sessions.values()]
      .filter((s) => s.account === account && s.lineage === lineage)
      .sort((a, b) => a.createdAt - b.createdAt) // stable: registration order breaks ties
      .map((s) => this.out(s));
  }

  async addAlias(account: string, lineage: string, name: string): Promise<'ok' | 'taken'> {
    let names = this.names.get(account);
    const held = names?.get(name);
    if (held) return held.lineage === lineage ? 'ok' : 'taken';
    if (!names) this.names.set(account, (names = new Map<string, NameRecord>()));
    names.set(name, { account, name, lineage, kind: 'alias' });
    return 'ok';
  }

  async removeAlias(account: string, lineage: string, name: string): Promise<boolean> {
    const names = this.names.get(account);
    const held = names?.get(name);
    if (!names || !held || held.kind !== 'alias' || held.lineage !== lineage) return false;
    names.delete(name);
    return true;
  }

  async resolveName(account: string, name: string): Promise<NameRecord | null> {
    const n = this.names.get(account)?.get(name);
    return n ? { ...n } : null;
  }

  async namesOf(account: string): Promise<NameRecord[]> {
    return [...(this.names.get(account)?.values() ?? [])].sort(byName).map((n) => ({ ...n }));
  }

  async listNames(): Promise<NameRecord[]> {
    const all: NameRecord[] = [];
    for (const names of this.names.values()) all.push(...names.values());
    return all.sort(byName).map((n) => ({ ...n }));
  }

  async listSessions(): Promise<SessionRecord[]> {
    return [...this.sessions.values()].map((s) => this.out(s));
  }

  async findByProviderSession(account: string, provider: string, providerSessionId: string): Promise<SessionRecord[]> {
    return [...this.sessions.values()]
      .filter((s) => s.account === account && s.corroborated.provider === provider && s.corroborated.providerSessionId === providerSessionId)
      .reverse() // newest registration first among equal createdAt (sort is stable)
      .sort((a, b) => b.createdAt - a.createdAt)
      .map((s) => this.out(s));
  }

  async touchSessions(seen: { account: string; id: string; at: number }[]): Promise<void> {
    for (const t of seen) {
      const s = this.sessions.get(sessionKey(t.account, t.id));
      if (s) s.lastSeen = Math.max(s.lastSeen, t.at);
    }
  }

  async endSession(account: string, id: string, at: number): Promise<void> {
    const s = this.sessions.get(sessionKey(account, id));
    if (s) s.endedAt ??= at;
  }

  async setDeclared(account: string, id: string, declared: Declared): Promise<SessionRecord | null> {
    const s = this.sessions.get(sessionKey(account, id));
    if (!s) return null;
    s.declared = defined<Declared>({ workingOn: declared.workingOn, role: declared.role, parent: declared.parent });
    return this.out(s);
  }

  async setProviderSessionId(account: string, id: string, providerSessionId: string): Promise<SessionRecord | null> {
    const s = this.sessions.get(sessionKey(account, id));
    if (!s) return null;
    s.corroborated = { ...s.corroborated, providerSessionId };
    return this.out(s);
  }

  async joinLineage(account: string, id: string, predecessor: string, at: number, records: RecordSweep['owned']): Promise<LineageJoin> {
    const s = this.sessions.get(sessionKey(account, id));
    const pred = this.sessions.get(sessionKey(account, predecessor));
    if (!s || !pred) return { refused: 'unknown' };
    if (pred.successor !== null || pred.lineage === s.lineage) return { refused: 'taken' };
    const own = s.lineage;
    if (own !== s.id || s.successor !== null || [...this.sessions.values()].some((o) => o !== s && o.account === account && o.lineage === own)) return { refused: 'not_alone' };
    const key = keyOfLineage(account, own);
    if (this.byKey.has(key) || this.mailboxCounts.has(key) || (this.acks.get(key)?.size ?? 0) > 0) return { refused: 'mail' };
    const names = this.names.get(account);
    if ([...(names?.values() ?? [])].some((n) => n.lineage === own && n.kind === 'alias')) return { refused: 'alias' };
    if (this.tasks.assignedToLineage(account, own)) return { refused: 'task' };
    if (this.leases.heldByLineage(account, own)) return { refused: 'lease' };
    const held = (r: RecordSweep['owned'][number]): boolean => {
      const m = this.records.get(r.kind);
      return 'id' in r ? (m?.has(r.id) ?? false) : [...(m?.keys() ?? [])].some((k) => k.startsWith(r.prefix));
    };
    if (records.some(held)) return { refused: 'record' };
    const slug = this.slugs.get(lineageKey(account, own));
    if (slug !== undefined) names?.delete(slug);
    this.slugs.delete(lineageKey(account, own));
    pred.successor = id;
    pred.endedAt ??= at;
    s.lineage = pred.lineage;
    return { joined: this.out(s) };
  }

  /** Also deletes the names of every lineage that this prune leaves without a session. */
  async pruneSessions(before: number, resumableBefore = before): Promise<number> {
    let n = 0;
    const touched = new Map<string, { account: string; lineage: string }>();
    for (const [k, s] of this.sessions) {
      if (s.endedAt !== null && s.endedAt < (isExtensionProvider(s.corroborated.provider) ? Math.min(before, resumableBefore) : before)) {
        this.sessions.delete(k);
        touched.set(lineageKey(s.account, s.lineage), { account: s.account, lineage: s.lineage });
        n++;
      }
    }
    for (const s of this.sessions.values()) touched.delete(lineageKey(s.account, s.lineage));
    for (const [key, { account, lineage }] of touched) {
      this.slugs.delete(key);
      const names = this.names.get(account);
      for (const [name, rec] of names ?? []) if (rec.lineage === lineage) names?.delete(name);
      if (names?.size === 0) this.names.delete(account);
    }
    return n;
  }

  async appendMessage(m: NewMessage, idempotentSince: number): Promise<AppendOutcome> {
    const idemKey = m.idempotencyKey === null ? null : `${m.fromAccount}\n${m.idempotencyKey}`;
    if (idemKey !== null) {
      const prior = (this.byIdempotency.get(idemKey) ?? []).findLast((p) => p.createdAt >= idempotentSince);
      if (prior) {
        return { kind: prior.fingerprint === m.fingerprint ? 'duplicate' : 'conflict', message: copyMessage(prior) };
      }
    }
    if (this.byId.has(m.id)) throw new Error(`message id ${m.id} already exists`);
    // Stored as a store with columns would give it back (refs and task through JSON; no task key
    // when there is none).
    const { task, via, ...rest } = m;
    const stored: StoredMessage = {
      ...rest,
      refs: JSON.parse(JSON.stringify(m.refs)) as StoredMessage['refs'],
      ...(task ? { task: JSON.parse(JSON.stringify(task)) as MessageTask } : {}),
      ...(via ? { via: { relay: via.relay, delegate: via.delegate } } : {}),
      seq: ++this.seq,
    };
    this.byId.set(stored.id, stored);
    push(this.byKey, stored.toKey, stored);
    push(this.byThread, stored.threadId, stored);
    if (idemKey !== null) push(this.byIdempotency, idemKey, stored);
    const c = this.mailboxCounts.get(stored.toKey);
    if (c) {
      c.total++;
      c.unacked++;
    } else this.mailboxCounts.set(stored.toKey, { total: 1, unacked: 1 });
    const event: CommitEvent = { keys: [stored.toKey], seq: stored.seq };
    queueMicrotask(() => this.emit(event));
    return { kind: 'created', message: copyMessage(stored) };
  }

  async getMessage(id: string): Promise<StoredMessage | null> {
    const m = this.byId.get(id);
    return m ? copyMessage(m) : null;
  }

  async getThread(threadId: string): Promise<StoredMessage[]> {
    return (this.byThread.get(threadId) ?? []).map(copyMessage);
  }

  async headSeq(): Promise<number> {
    return this.seq;
  }

  async externalCount(key: MailKey, limit: number): Promise<number> {
    let n = 0;
    for (const m of this.byKey.get(key) ?? []) if (m.fromKind === 'external' && ++n >= limit) break;
    return n;
  }

  async tallies(now: number): Promise<StoreTallies> {
    let messages = 0;
    for (const c of this.mailboxCounts.values()) messages += c.total;
    return { messages, ...this.tasks.tallies(now) };
  }

  async messagesAfter(key: MailKey, after: number, limit: number): Promise<StoredMessage[]> {
    const list = this.byKey.get(key) ?? [];
    // Ascending by seq: binary search for the first seq > after.
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((list[mid]?.seq ?? 0) <= after) lo = mid + 1;
      else hi = mid;
    }
    return list.slice(lo, lo + limit).map(copyMessage);
  }

  async page(scope: ReaderScope, q: PageQuery): Promise<PagedMessage[]> {
    if (q.limit <= 0) return [];
    const out: PagedMessage[] = [];
    for (const key of scopeKeys(scope)) {
      const acks = this.acks.get(ackKeyFor(scope, key));
      const list = this.byKey.get(key) ?? [];
      let taken = 0;
      // No ack floors here: a pending page skips the acknowledged messages one by one.
      for (let i = firstAfter(list, pageLowerBound(q, 0)); i < list.length && taken < q.limit; i++) {
        const m = list[i] as StoredMessage;
        if (q.threadId !== null && m.threadId !== q.threadId) continue;
        const ackedAt = acks?.get(m.seq)?.ackedAt ?? null;
        if (q.pendingOnly && ackedAt !== null) continue;
        out.push({ ...copyMessage(m), ackedAt });
        taken++;
      }
    }
    return out.sort((a, b) => a.seq - b.seq).slice(0, q.limit);
  }

  /** The reference search (search-rules.ts): every message tested in turn, ranked and cut to the
   *  window before the scope, as the index of SQLite and PostgreSQL is. Not for large mailboxes. */
  async search(scope: ReaderScope, q: SearchQuery): Promise<SearchPage> {
    const keys = searchKeys(scope, q.to);
    if (keys.length === 0 || q.limit <= 0) return { messages: [], subjectHits: 0, floor: null };
    const page = await referencePage(this.byId.values(), keys, q);
    return { ...page, messages: page.messages.map(copyMessage) };
  }

  async ack(scope: ReaderScope, items: AckItem[], at: number): Promise<AckResult[]> {
    const fresh: AckItem[] = [];
    const results = items.map((item): AckResult => {
      const ackKey = ackKeyFor(scope, item.toKey);
      let acks = this.acks.get(ackKey);
      if (!acks) this.acks.set(ackKey, (acks = new Map<number, Ack>()));
      const prior = acks.get(item.seq);
      if (prior) return { seq: item.seq, ackedAt: prior.ackedAt, fresh: false };
      // Deleted by retention since the caller looked it up (it was acknowledged): no ack of it.
      const list = this.byKey.get(item.toKey) ?? [];
      if (list[firstAfter(list, item.seq - 1)]?.seq !== item.seq) return { seq: item.seq, ackedAt: at, fresh: false };
      acks.set(item.seq, { ackedAt: at, toKey: item.toKey });
      fresh.push(item);
      return { seq: item.seq, ackedAt: at, fresh: true };
    });
    const t = tallyAcks(scope, fresh); // its floors: none kept here
    for (const [key, n] of t.mailboxes) {
      const c = this.mailboxCounts.get(key);
      if (c) c.unacked -= n;
    }
    // A non-member's ack of room mail matches no membership and changes no counter.
    for (const [room, n] of t.members) {
      const members = this.rooms.get(room)?.members;
      const acked = members?.get(scope.account);
      if (members && acked !== undefined) members.set(scope.account, acked + n);
    }
    return results;
  }

  async unread(scope: ReaderScope): Promise<number> {
    return countUnread(scope, {
      unacked: (key) => this.mailboxCounts.get(key)?.unacked ?? 0,
      total: (key) => this.mailboxCounts.get(key)?.total ?? 0,
      memberAcked: (room) => this.rooms.get(room)?.members.get(scope.account) ?? 0,
    });
  }

  async ackedAt(scope: ReaderScope, items: AckItem[]): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    for (const item of items) {
      const a = this.acks.get(ackKeyFor(scope, item.toKey))?.get(item.seq);
      if (a) out.set(item.seq, a.ackedAt);
    }
    return out;
  }

  async readerFacts(readers: readonly ReaderFactsQuery[]): Promise<ReaderFacts[]> {
    return Promise.all(readers.map(async (r) => ({ unread: await this.unread(r.scope), acked: await this.ackedAt(r.scope, [...r.items]) })));
  }

  // ---- tasks and approvals (memory-tasks.ts)

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

  // ---- leases (memory-leases.ts)

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

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
