// The store speaks the domain. Every operation is atomic and async, so SQLite (one process) and
// PostgreSQL (many daemons) fit behind the same interface. No SQL or handle crosses it.
// Stores report outcomes (a tagged result or null); the engine owns the named errors.
import type { TaskState } from '../wire/tasks.js';
import type { TeamCapability } from '../wire/teams.js';
import type { ContactPolicy } from '../wire/contacts.js';
import type { SearchTerm } from '../wire/search.js';

export type AccountKind = 'agent' | 'human' | 'service';
/** Who wrote a message: an account's kind, or `external` for e-mail from outside (the SMTP door). */
export type SenderKind = AccountKind | 'external';

export interface Permissions {
  send: boolean;
  read: boolean;
  urgent: boolean;
  operator: boolean;
}

export interface AccountRecord {
  id: string;
  kind: AccountKind;
  label: string;
  permissions: Permissions;
  bindProvider: string | null;
  /** Hex SHA-256 of the bearer secret; the secret itself is never stored. */
  secretDigest: string;
  createdAt: number;
  /** The store's head seq when this account was created (set by the store). A message from this id
   *  at or below it was sent by a removed account of the same name, not by this one. */
  bornSeq: number;
  /** Who may write to it (engine/contacts.ts): 'open' until set. */
  contactPolicy: ContactPolicy;
}

/** What addAccount takes: the store sets bornSeq; the policy starts 'open' unless given. */
export type NewAccount = Omit<AccountRecord, 'bornSeq' | 'contactPolicy'> & { contactPolicy?: ContactPolicy };

export interface Corroborated {
  provider?: string | undefined;
  providerSessionId?: string | undefined;
  model?: string | undefined;
  cwd?: string | undefined;
}

export interface Declared {
  workingOn?: string | undefined;
  role?: string | undefined;
  parent?: string | undefined;
}

export interface SessionRecord {
  account: string;
  /** `s-` + 64 hex; one OS process (per account presented). */
  id: string;
  /** The first session of a chain of successors; mail to any of them is kept under this id. */
  lineage: string;
  hostId: string;
  pid: number;
  startTime: number;
  exe: string;
  uid: number;
  corroborated: Corroborated;
  declared: Declared;
  createdAt: number;
  lastSeen: number;
  endedAt: number | null;
  successor: string | null;
  /** The lineage's slug: a friendly name unique within the account (from the cwd's basename). */
  slug: string | null;
}

export type NewSession = Omit<SessionRecord, 'lineage' | 'declared' | 'endedAt' | 'successor' | 'lastSeen' | 'slug'> & {
  /** An ended session of the same account and provider session this one succeeds, if any. */
  predecessor: string | null;
  /** The wanted slug for a new lineage; the store makes it unique within the account by adding
   *  -2, -3 … A session joining its predecessor's lineage keeps that lineage's slug instead. */
  slugBase: string | null;
};

/** Why joinLineage left a session in a lineage of its own: `unknown` (no such session or
 *  predecessor), `taken` (the predecessor has a successor, or is the session), `not_alone` (the
 *  session is not the only session of the lineage it started), or something already addressed to
 *  that lineage: `mail` (messages, acks or counts under its key), `alias`, `task`, `lease`,
 *  `record` (one the engine names). */
export type LineageRefusal = 'unknown' | 'taken' | 'not_alone' | 'mail' | 'alias' | 'task' | 'lease' | 'record';

export type LineageJoin = { joined: SessionRecord } | { refused: LineageRefusal };

/** A friendly name of a lineage: its slug or one of its aliases. One namespace per account. */
export interface NameRecord {
  account: string;
  name: string;
  lineage: string;
  kind: 'slug' | 'alias';
}

export type Priority = 'normal' | 'urgent';

export interface Ref {
  kind: string;
  locator: string;
  digest?: string | undefined;
}

/** Wake keys: which mailboxes a message lands in and which a reader watches.
 *  `a:<account>` direct mail, `s:<account>/<lineage>` session mail, `r:<room>` room mail. */
export type MailKey = string;

export const keyOfAccount = (account: string): MailKey => `a:${account}`;
export const keyOfLineage = (account: string, lineage: string): MailKey => `s:${account}/${lineage}`;
export const keyOfRoom = (room: string): MailKey => `r:${room}`;
/** `e:<address>`: mail sent to an e-mail address (the relay worker sends it; nobody reads it here). */
export const keyOfEmail = (address: string): MailKey => `e:${address}`;
export const isEmailKey = (key: MailKey): boolean => key.startsWith('e:');

export interface NewMessage {
  id: string;
  threadId: string;
  fromAccount: string;
  fromSession: string | null;
  fromKind: SenderKind;
  /** The compact address the message is delivered to (after any redirect). */
  toAddress: string;
  toKey: MailKey;
  subject: string;
  body: string;
  replyTo: string | null;
  correlation: string | null;
  refs: Ref[];
  priority: Priority;
  createdAt: number;
  idempotencyKey: string | null;
  /** Digest of the fields an idempotent retry must repeat exactly. */
  fingerprint: string | null;
  /** A task's message: which task, the state it entered and the task's version then. Absent (or
   *  null) for every other message. */
  task?: MessageTask | null;
  /** Written through a relay by a person's delegate (the relay link sets it, never a sender's
   *  field). Absent (or null) for every other message. */
  via?: MessageVia | null;
}

export interface MessageVia {
  relay: string;
  delegate: string;
}

/** The structured part of a task's change message (kept as JSON text in SQL stores). */
export interface MessageTask {
  task_id: string;
  state: TaskState;
  version: number;
}

export interface StoredMessage extends NewMessage {
  /** Store-assigned, strictly increasing in commit order; cursors are built from it. */
  seq: number;
  /** Every store gives a message back without the key when it has no task (never null or an
   *  undefined value), so a read compares equal to what the engine appended for ordinary mail. */
  task?: MessageTask;
  via?: MessageVia;
}

/** One transition of a task: the state it entered, when, by whom (a compact address), and why. */
export interface TaskHistoryEntry {
  state: TaskState;
  at: number;
  by: string;
  note?: string;
}

export interface TaskResultRecord {
  summary?: string;
  /** Any JSON value (at most 64 KiB as text). */
  data?: unknown;
  refs?: Ref[];
}

/** A task: it lives in the thread `threadId`, whose first message handed it to the assignee. */
export interface TaskRecord {
  id: string;
  threadId: string;
  /** The requester: its account, its session (null for a caller without one) and its compact address. */
  fromAccount: string;
  fromSession: string | null;
  fromAddress: string;
  /** The assignee: an account, or one session lineage of it (`toLineage`), and its compact address. */
  toAccount: string;
  toLineage: string | null;
  toAddress: string;
  title: string;
  instructions: string | null;
  refs: Ref[];
  parentTaskId: string | null;
  state: TaskState;
  history: TaskHistoryEntry[];
  result: TaskResultRecord | null;
  createdAt: number;
  updatedAt: number;
  /** 1 when created; +1 on every change. */
  version: number;
  /** The seq of the latest message in the task's thread that changed it: lists are ordered by it. */
  lastSeq: number;
  /** The requester's idempotency key (per fromAccount, like mail's). */
  idempotencyKey: string | null;
  /** A pooled task (one addressed to a room, taken by one member at a time under a lease); absent
   *  or null for a task with a named assignee. While nobody holds it, toAccount is '' and toAddress
   *  the room (`#room`). */
  pool?: TaskPool | null;
  /** Why a failed task failed when the mailbox failed it (`lease_exhausted`); else absent or null. */
  failReason?: string | null;
}

/** A pooled task's claim state (engine/pool.ts). */
export interface TaskPool {
  room: string;
  /** How many times it was claimed (0 before the first claim). */
  attempt: number;
  /** After this many claims that ended without the task ending, it fails (`lease_exhausted`). */
  maxAttempts: number;
  /** Backoff before a returned task is offered again: this, doubled per return, capped; null: none. */
  retryDelaySecs: number | null;
  /** Not offered before this time (ms); null: now. */
  availableAt: number | null;
  /** The lease of its current holder and that lease's epoch (the fencing token an update carries). */
  leaseId: string | null;
  leaseEpoch: number | null;
}

export type TaskCreateOutcome = { kind: 'created'; task: TaskRecord } | { kind: 'duplicate'; task: TaskRecord };

export interface TaskQuery {
  account: string;
  /** assigned: toAccount is the account; requested: fromAccount is. */
  role: 'assigned' | 'requested';
  state: TaskState | null;
  /** Only tasks with lastSeq < before (the cursor), newest change first. */
  before: number | null;
  limit: number;
  /** Only tasks the mailbox failed for this reason (the dead-letter list: `lease_exhausted`). */
  failReason?: string | null;
}

/** The tasks of a room's pool (role and account play no part). */
export interface PoolQuery {
  room: string;
  /** Only unclaimed tasks (state submitted) offered by `now` (availableAt null or ≤ now), oldest
   *  created first (id breaking ties): what `task/claim {pool}` takes. */
  offeredAt?: number;
  /** Otherwise every task of the pool, newest change first, lastSeq < before. */
  before?: number | null;
  limit: number;
}

// ---- leases (engine/leases.ts): an exclusive or shared claim on a named resource, held by one
// session, with a time to live a heartbeat extends

export type LeaseMode = 'exclusive' | 'shared';
export type LeaseEndReason = 'released' | 'expired' | 'session_ended' | 'account_removed';

export interface LeaseRecord {
  /** `l-` and hex. */
  id: string;
  /** Leases conflict only within one space: `task:<task id>`, or `path:<repository root>`. */
  space: string;
  /** What is claimed within the space: the task id, or a glob relative to the root. */
  resource: string;
  mode: LeaseMode;
  holderAccount: string;
  /** The holding session (and its lineage); null for a caller without one: only its TTL ends it. */
  holderSession: string | null;
  holderLineage: string | null;
  /** The holder's compact address (`claude/s-…`). */
  holderAddress: string;
  reason: string | null;
  createdAt: number;
  expiresAt: number;
  /** The fencing token: one more than the previous claim of (space, resource), never reused. */
  epoch: number;
  /** For a pooled task, which claim of it this is (TaskPool.attempt); 1 otherwise. */
  attempt: number;
  endedAt: number | null;
  endReason: LeaseEndReason | null;
  /** The engine has acted on the end (a pooled task returned …). An ended lease not yet settled is
   *  acted on again after a crash; acting is idempotent. */
  settled: boolean;
}

export type NewLease = Omit<LeaseRecord, 'epoch' | 'endedAt' | 'endReason' | 'settled'>;

export type LeaseClaimOutcome =
  | { kind: 'claimed'; lease: LeaseRecord }
  /** Live leases of the space that conflict with the claim, oldest first. */
  | { kind: 'conflict'; holders: LeaseRecord[] }
  /** The holder holds `held` live leases already (≥ maxPerHolder). */
  | { kind: 'too_many'; held: number };

export interface LeaseQuery {
  /** Exactly this space, or every space starting with spacePrefix. */
  space?: string;
  spacePrefix?: string;
  holderAccount?: string;
  holderSession?: string;
  /** Live at this time: not ended and expiresAt > now. */
  now: number;
  limit: number;
}

/** What a store keeps of leases (every store implements it; see Store). A lease is live while it
 *  is not ended and its expiresAt is after now: an expired lease conflicts with nothing even
 *  before expireLeases ends it. */
export interface LeaseStore {
  /** In one transaction (serialised per space and per holder across daemons): too_many when the
   *  holder (its session, or its account when it has none) holds maxPerHolder live leases; conflict
   *  when a live lease of the space conflicts (`conflicts` is pure and decides it from the other
   *  lease alone); else the lease gets the next epoch of (space, resource) and is stored. */
  claimLease(l: NewLease, o: { now: number; maxPerHolder: number; conflicts(other: LeaseRecord): boolean }): Promise<LeaseClaimOutcome>;
  /** Sets expiresAt of a live lease whose epoch is `epoch`; null when it is not live or the epoch
   *  differs (it expired or changed hands). */
  renewLease(id: string, epoch: number, expiresAt: number, now: number): Promise<LeaseRecord | null>;
  /** Ends a live lease whose epoch is `epoch` (a release); null otherwise. */
  endLease(id: string, epoch: number, reason: LeaseEndReason, now: number): Promise<LeaseRecord | null>;
  /** Ends (reason expired) the leases not ended whose expiresAt ≤ now, at most `limit`, oldest
   *  expiry first; each exactly once even when several daemons call at the same time. */
  expireLeases(now: number, limit: number): Promise<LeaseRecord[]>;
  /** Ends (reason session_ended) the live leases of a session whose process exited. */
  endSessionLeases(account: string, session: string, now: number): Promise<LeaseRecord[]>;
  getLease(id: string): Promise<LeaseRecord | null>;
  /** Live leases matching the query, space then id order, at most limit. */
  listLeases(q: LeaseQuery): Promise<LeaseRecord[]>;
  /** Ended leases not settled yet, oldest end first. */
  unsettledLeases(limit: number): Promise<LeaseRecord[]>;
  settleLease(id: string): Promise<void>;
  /** Deletes ended, settled leases that ended before `before`; returns how many. */
  pruneLeases(before: number): Promise<number>;
  /** Tasks of a room's pool (see PoolQuery). */
  poolTasks(q: PoolQuery): Promise<TaskRecord[]>;
}

export type ApprovalState = 'pending' | 'approved' | 'rejected';

export interface ApprovalRecord {
  id: string;
  threadId: string;
  requesterAccount: string;
  requesterSession: string | null;
  requesterAddress: string;
  reviewerAccount: string;
  action: string;
  details: string | null;
  taskId: string | null;
  state: ApprovalState;
  reason: string | null;
  createdAt: number;
  expiresAt: number | null;
  decidedAt: number | null;
}

/** What a store keeps of tasks and approvals (every store implements it; see Store). */
export interface TaskStore {
  // ---- tasks and approvals (engine/tasks.ts): a task's changes are also mail in its thread

  /** Inserts the task, unless the requester's account already made one with this idempotency key
   *  since `idempotentSince` (then that one, `duplicate`). */
  createTask(t: TaskRecord, idempotentSince: number): Promise<TaskCreateOutcome>;
  getTask(id: string): Promise<TaskRecord | null>;
  /** Replaces the task's changing fields (state, history, result, updatedAt, version, lastSeq, pool,
   *  failReason, and for a pooled task its holder: toAccount, toLineage, toAddress) only if its
   *  stored version is still `expectedVersion`: null when another change came first. An ordinary
   *  task's assignee never changes. */
  updateTask(t: TaskRecord, expectedVersion: number): Promise<TaskRecord | null>;
  listTasks(q: TaskQuery): Promise<TaskRecord[]>;
  /** Tasks whose parent is `parentId`, oldest first, at most `limit`. */
  taskChildren(parentId: string, limit: number): Promise<TaskRecord[]>;
  createApproval(a: ApprovalRecord): Promise<void>;
  getApproval(id: string): Promise<ApprovalRecord | null>;
  /** Records the decision only while the approval is pending: null when it was decided already. */
  decideApproval(id: string, state: 'approved' | 'rejected', reason: string, at: number): Promise<ApprovalRecord | null>;
}

export type AppendOutcome = { kind: 'created'; message: StoredMessage } | { kind: 'duplicate'; message: StoredMessage } | { kind: 'conflict'; message: StoredMessage };

/** What one reader (a session of an account) may read, and under which keys it acknowledges. */
export interface ReaderScope {
  account: string;
  /** keyOfLineage(account, lineage) of the reading session, or null for a caller without a session. */
  sessionKey: MailKey | null;
  rooms: string[];
}

export interface PageQuery {
  /** Only messages with seq > after. */
  after: number | null;
  /** Leave out messages acknowledged by the reader's scope. */
  pendingOnly: boolean;
  limit: number;
  threadId: string | null;
}

/** Tier 1 of a search: the whole query in the subject; tier 2: the other matches (search-rules.ts). */
export type SearchTier = 1 | 2;

/** A search (wire/search.ts): every term must match the subject or the body (a phrase within one of
 *  them), among the scope's keys narrowed by `to`; tier 1 then tier 2, each newest first, from
 *  (`tier`, below `beforeSeq`): a cursor. */
export interface SearchQuery {
  terms: SearchTerm[];
  /** An account: its direct and session keys; a room: its key. Never widens the scope. */
  to: { account: string } | { room: string } | null;
  fromAccount: string | null;
  threadId: string | null;
  /** created_at >= after, created_at < before (ms). */
  after: number | null;
  before: number | null;
  /** Where the page starts: in this tier (1: from the top), only seq < beforeSeq there. */
  tier: SearchTier;
  /** Only seq < beforeSeq (the cursor of the page before). */
  beforeSeq: number | null;
  limit: number;
  /** At most this many index matches (of the terms, any scope, seq < beforeSeq) are examined,
   *  newest first, before the scope and the filters: the work of one call is bounded. */
  window: number;
}

/** A page of a search: the scope's matches within the window, in rank order, at most q.limit (the
 *  first `subjectHits` of tier 1); and, when the window was full and fewer than q.limit were
 *  found, the tier and lowest seq examined (more may match below it). */
export interface SearchPage {
  messages: StoredMessage[];
  subjectHits: number;
  floor: { tier: SearchTier; seq: number } | null;
}

export interface PagedMessage extends StoredMessage {
  ackedAt: number | null;
}

export interface AckItem {
  seq: number;
  /** The key the message was delivered to. */
  toKey: MailKey;
}

/** One reader of a woken batch: its scope, and the messages whose ack times its answer needs. */
export interface ReaderFactsQuery {
  scope: ReaderScope;
  items: readonly AckItem[];
}

/** What unread and ackedAt answer for one reader. */
export interface ReaderFacts {
  unread: number;
  acked: ReadonlyMap<number, number>;
}

export interface AckResult {
  seq: number;
  ackedAt: number;
  /** False when an earlier ack stood and was returned unchanged. */
  fresh: boolean;
}

export interface RoomRecord {
  name: string;
  members: string[];
  /** Every account is a member, present and future (the operator's broadcast room). */
  everyone: boolean;
  /** Anyone may post, not only members (the engine's rule; members only by default). */
  open: boolean;
  createdAt: number;
  /** A team (engine/teams.ts): its members can be leaders. A plain room is never one. */
  team: boolean;
  /** The members marked leader, each with the capabilities granted to it (sorted), in account
   *  order; always [] for a plain room. A leader is always a member: removing the membership ends
   *  the leadership and its grants. */
  leaders: TeamLeader[];
}

export interface RoomOptions {
  everyone?: boolean;
  open?: boolean;
  /** Create it as a team (never with everyone). */
  team?: boolean;
}

export interface TeamLeader {
  account: string;
  grants: TeamCapability[];
}

export type TeamAction = 'create' | 'member.add' | 'member.remove' | 'leader.add' | 'leader.remove' | 'grant' | 'revoke';

/** One recorded change of a team, written in the transaction of the change itself. */
export interface TeamChange {
  room: string;
  at: number;
  /** The account that made it: the operator, or a leader with team.manage_members. */
  by: string;
  action: TeamAction;
  account: string | null;
  capability: TeamCapability | null;
}

export interface TeamChangeRecord extends TeamChange {
  /** Store-assigned, increasing in the order changes were recorded. */
  id: number;
}

export interface ContactRecord {
  contact: string;
  addedAt: number;
}

/** The engine's records that belong to a participant being removed, deleted in the removal's
 *  transaction (the store knows no record kind; the engine names them). */
export interface RecordSweep {
  /** Records of `kind` with exactly this `id`, or whose id starts with `prefix`. */
  owned: ({ kind: string; id: string } | { kind: string; prefix: string })[];
  /** Kinds whose ids start `<message id>|`: deleted with each message the removal deletes. */
  byMessage: string[];
  /** Kinds whose ids are `<message id>|<recipient>[|…]`: those whose recipient is the removed
   *  account (`<account>` or `<account>/<lineage>`) are deleted, e.g. its receipts of room mail
   *  that stays. */
  byRecipient: string[];
}

/** What a removal deleted besides the registry rows. */
export interface Removal {
  /** Messages deleted: those delivered to the removed account (or room). */
  messages: number;
}

export interface CommitEvent {
  keys: MailKey[];
  seq: number;
}

/** A small durable document the engine keeps beside the mail: wake chains, wake attempts, receipts,
 *  timers, web logins … `kind` and `id` are the key; the value is the engine's JSON, opaque here.
 *  Ids sort byte-wise, so `listRecords(kind, prefix)` walks one owner's records in order. */
export interface RecordRow {
  kind: string;
  id: string;
  value: string;
  updatedAt: number;
}

/** What one retention pass deletes (Store.pruneMail): acknowledged mail of one account (its direct
 *  key and every session key of it) or of one room, older than a time (docs/operations.md). */
export interface MailPruneQuery {
  target: { account: string } | { room: string };
  /** Only messages created before this time (ms). */
  before: number;
  /** Only messages with seq > after: the `next` of the previous call (0 to start). */
  after: number;
  /** At most this many messages are looked at in one call (one short transaction). */
  limit: number;
  /** Record kinds whose ids start `<message id>|` (RecordSweep.byMessage): deleted with each message. */
  byMessage: string[];
}

export interface MailPruneResult {
  /** Messages deleted by this call, with their acks, counters and records. */
  deleted: number;
  /** The highest seq looked at (the next call's `after`); null: nothing is left to look at. */
  next: number | null;
}

/** What a support report counts (Store.tallies): no message is read. */
export interface StoreTallies {
  /** Messages stored now: the per-key totals the stores keep with every append and deletion. */
  messages: number;
  tasks: Record<TaskState, number>;
  /** expired: pending past its expiresAt (what approval get shows), never also pending. */
  approvals: Record<ApprovalState | 'expired', number>;
}

export interface Store extends TaskStore, LeaseStore {
  readonly kind: 'memory' | 'sqlite' | 'postgres';
  /** Whether several daemons may share this store (PostgreSQL): another daemon may then change it at
   *  any time (remove an account, claim a wake). false: one daemon holds it (the data directory's lock). */
  readonly shared: boolean;
  close(): Promise<void>;

  getMeta(key: string): Promise<string | null>;
  /** Sets the value only if absent; returns the value that stands. */
  initMeta(key: string, value: string): Promise<string>;

  /** Creates the account. A new account starts with an empty mailbox and nothing of a predecessor:
   *  what is still stored under its name (a send that raced the removal of an account of the same
   *  name, or what an earlier build kept on removal) is deleted in the same transaction, as
   *  removeAccount deletes it: the mail under its keys with its acks and counters, the idempotency
   *  keys of mail and tasks sent under the name, the tasks assigned to it and the approvals it was
   *  to review, and the records the sweep names. */
  addAccount(rec: NewAccount, sweep?: RecordSweep): Promise<'ok' | 'exists'>;
  getAccount(id: string): Promise<AccountRecord | null>;
  findAccountByDigest(digest: string): Promise<AccountRecord | null>;
  listAccounts(): Promise<AccountRecord[]>;
  setAccountSecret(id: string, digest: string): Promise<boolean>;
  /** Removes the account and everything of it, in one transaction: memberships (with any team
   *  leadership), contacts (its own and its place on others' lists), listener, sessions and names; the mail delivered to it (direct and session mail) with its acks, ack
   *  floors and counters; its acks of room mail; the idempotency keys of mail it sent (that mail
   *  stays: it is its recipients'); the tasks assigned to it and the approvals it was to review
   *  (the tasks it requested stay, their assignees', without their idempotency keys); and the
   *  records the sweep names. null: no such account. An account created again under the name is
   *  a new participant and inherits none of it. */
  removeAccount(id: string, sweep?: RecordSweep): Promise<Removal | null>;

  /** With `everyone`, every account (present and future) is a member and stays one. Like an
   *  account, a new room starts empty (mail left under its key is deleted). */
  addRoom(name: string, at: number, opts?: RoomOptions): Promise<'ok' | 'exists'>;
  /** Removes the room with its memberships and its mail (every member's acks of it included), and
   *  the records the sweep names for its messages. null: no such room. */
  removeRoom(name: string, sweep?: RecordSweep): Promise<Removal | null>;
  /** Sets whether non-members may post; false when there is no such room. */
  setRoomOpen(name: string, open: boolean): Promise<boolean>;
  getRoom(name: string): Promise<RoomRecord | null>;
  listRooms(): Promise<RoomRecord[]>;
  roomsOf(account: string): Promise<string[]>;
  /** With `change`, the change is recorded (teamChanges) in the same transaction, only when the
   *  membership was added. */
  addMember(room: string, account: string, change?: TeamChange): Promise<'ok' | 'exists' | 'no_room' | 'no_account'>;
  /** Ends the membership and with it any leadership and grants of it; with `change`, records it in
   *  the same transaction, only when there was a membership. */
  removeMember(room: string, account: string, change?: TeamChange): Promise<boolean>;

  // ---- teams (engine/teams.ts): roles on a team's memberships

  /** Marks a member leader (or not); ending leadership revokes its grants. Records the change in
   *  the same transaction unless 'unchanged'. not_team: the room is a plain room. */
  setLeader(room: string, account: string, leader: boolean, change: TeamChange): Promise<'ok' | 'unchanged' | 'no_room' | 'not_team' | 'not_member'>;
  /** Grants (or revokes) a leader's capability, recording the change unless 'unchanged'. */
  setGrant(room: string, account: string, capability: TeamCapability, granted: boolean, change: TeamChange): Promise<'ok' | 'unchanged' | 'no_room' | 'not_team' | 'not_leader'>;
  /** The team's recorded changes, newest first, id < before (null: from the newest), at most limit.
   *  Removing the room deletes them. */
  teamChanges(room: string, before: number | null, limit: number): Promise<TeamChangeRecord[]>;

  // ---- contact policies (engine/contacts.ts)

  /** false: no such account. */
  setContactPolicy(account: string, policy: ContactPolicy): Promise<boolean>;
  /** Both must exist (no_account otherwise); removing either account removes the contact. */
  addContact(account: string, contact: string, at: number): Promise<'ok' | 'exists' | 'no_account'>;
  removeContact(account: string, contact: string): Promise<boolean>;
  /** The account's contacts, in contact order. */
  listContacts(account: string): Promise<ContactRecord[]>;
  hasContact(account: string, contact: string): Promise<boolean>;

  setListener(account: string, url: string): Promise<boolean>;
  removeListener(account: string): Promise<boolean>;
  getListener(account: string): Promise<string | null>;
  /** The listener URL of each of the accounts that has one (the doorbells of a room's members). */
  listenersOf(accounts: readonly string[]): Promise<Map<string, string>>;

  /** Registers a session, or returns the existing record unchanged (refreshing nothing). With a
   *  predecessor that has no successor yet, the new session joins its lineage atomically. */
  registerSession(s: NewSession): Promise<SessionRecord>;
  getSession(account: string, id: string): Promise<SessionRecord | null>;
  /** Sessions of the account whose id starts with `prefix`, at most `limit`. */
  findSessionsByPrefix(account: string, prefix: string, limit: number): Promise<SessionRecord[]>;
  /** Every session of a lineage, oldest first. */
  lineageSessions(account: string, lineage: string): Promise<SessionRecord[]>;
  /** Gives the lineage an alias. 'taken' when the name (slug or alias) belongs to another lineage
   *  of the account; the same lineage asking again is 'ok'. */
  addAlias(account: string, lineage: string, name: string): Promise<'ok' | 'taken'>;
  removeAlias(account: string, lineage: string, name: string): Promise<boolean>;
  resolveName(account: string, name: string): Promise<NameRecord | null>;
  /** Every name of the account (for the directory and for "did you mean" candidates). */
  namesOf(account: string): Promise<NameRecord[]>;
  listNames(): Promise<NameRecord[]>;
  listSessions(): Promise<SessionRecord[]>;
  /** Sessions of an account with this provider session id, newest first. */
  findByProviderSession(account: string, provider: string, providerSessionId: string): Promise<SessionRecord[]>;
  touchSessions(seen: { account: string; id: string; at: number }[]): Promise<void>;
  endSession(account: string, id: string, at: number): Promise<void>;
  setDeclared(account: string, id: string, declared: Declared): Promise<SessionRecord | null>;
  /** The agent's own conversation id, as a pi or omp session reports it after switching
   *  conversations within its process (null when there is no such session). */
  setProviderSessionId(account: string, id: string, providerSessionId: string): Promise<SessionRecord | null>;
  /** Makes session `id` the successor of `predecessor` (same account) in one transaction, as
   *  registerSession does at first contact: the predecessor gets `id` as its successor (and an end,
   *  `at`, if it had none) and the session takes its lineage, so mail kept under that lineage is
   *  the session's. Only while nothing hangs off the lineage the session started: it is that
   *  lineage's only session, and no mail, alias, task, lease or record of `records` (the engine's,
   *  which the store does not know) is there yet; its slug is dropped. Else nothing changes. */
  joinLineage(account: string, id: string, predecessor: string, at: number, records: RecordSweep['owned']): Promise<LineageJoin>;
  /** Deletes sessions ended before `before`; returns how many. Mail is never deleted. */
  /** Deletes sessions that ended before `before`; a pi or omp session (EXTENSION_PROVIDERS), whose
   *  conversation can resume and find its waiting mail, only once it ended before `resumableBefore`. */
  pruneSessions(before: number, resumableBefore?: number): Promise<number>;

  /** Appends a message atomically, honouring the idempotency key of (fromAccount, key) for
   *  messages created at or after `idempotentSince`. Resolves only once durable. */
  appendMessage(m: NewMessage, idempotentSince: number): Promise<AppendOutcome>;
  getMessage(id: string): Promise<StoredMessage | null>;
  getThread(threadId: string): Promise<StoredMessage[]>;
  /** Readable messages for the scope, oldest first, with the scope's ack time. */
  page(scope: ReaderScope, q: PageQuery): Promise<PagedMessage[]>;
  /** Messages of the scope matching the search among the first q.window index matches, tier 1
   *  then tier 2, each newest first, at most q.limit (SearchPage, search-rules.ts rankedPage). */
  search(scope: ReaderScope, q: SearchQuery): Promise<SearchPage>;
  /** Acknowledge for the scope; idempotent: a second ack returns the first unchanged. */
  ack(scope: ReaderScope, items: AckItem[], at: number): Promise<AckResult[]>;
  /** Readable, unacknowledged mail for the scope, from counters (same cost at any size). */
  unread(scope: ReaderScope): Promise<number>;
  /** The ack time of each seq in the scope (for get). */
  ackedAt(scope: ReaderScope, items: AckItem[]): Promise<Map<number, number>>;
  /** unread and ackedAt of many readers at once, in their order (a room's members woken by one
   *  commit): the same answers, in a few statements or one round trip whatever their number. */
  readerFacts(readers: readonly ReaderFactsQuery[]): Promise<ReaderFacts[]>;
  headSeq(): Promise<number>;
  /** Messages stored (the mailbox totals summed, not a scan: a deleted message or a seq gap is not
   *  counted), tasks and approvals by state (an approval pending past its expiry at `now`: expired). */
  tallies(now: number): Promise<StoreTallies>;
  /** Mail from outside (fromKind 'external', the SMTP door) stored under the key, counted up to
   *  `limit` (the door's cap per account): one partial index, whatever else the key holds. */
  externalCount(key: MailKey, limit: number): Promise<number>;
  /** Messages delivered to one key with seq > after, oldest first, at most limit (woken waits). */
  messagesAfter(key: MailKey, after: number, limit: number): Promise<StoredMessage[]>;

  /** Creates or replaces the record. */
  putRecord(row: RecordRow): Promise<void>;
  /** Inserts each record whose (kind, id) is absent, in one transaction; returns the ids inserted
   *  (a record that exists is left unchanged: the first writer wins, e.g. a claim or "first seen"). */
  insertRecords(rows: RecordRow[]): Promise<string[]>;
  getRecord(kind: string, id: string): Promise<RecordRow | null>;
  /** Records of a kind whose id starts with `idPrefix` (all when empty), id order, at most `limit`. */
  listRecords(kind: string, idPrefix: string, limit: number): Promise<RecordRow[]>;
  /** True when this call removed it (so exactly one of several racing deleters wins). */
  deleteRecord(kind: string, id: string): Promise<boolean>;

  /** Retention: looks at the messages of the target with seq > after created before `before`, in
   *  seq order, at most `limit`, and deletes those that are acknowledged and held by no open work:
   *  direct and session mail acknowledged under its own key; room mail acknowledged by every
   *  current member (none: kept); never a message of a thread whose task is not terminal or whose
   *  approval is pending. Their acks (every account's), the key's total and each member's acked
   *  count go down alike, so every unread count stays as it was; ack floors stay valid (a deleted
   *  seq is simply absent) and no seq is reused. One transaction per call. */
  pruneMail(q: MailPruneQuery): Promise<MailPruneResult>;
  /** Deletes at most `limit` records of `kind` last written before `before`; returns how many. */
  pruneRecords(kind: string, before: number, limit: number): Promise<number>;

  /** Called after every commit that adds mail (in this process or, for shared stores, any daemon). */
  onCommit(listener: (e: CommitEvent) => void): () => void;
}

/** The Store's methods (its data members, `kind` and `shared`, are not calls). */
export type StoreMethod = { [K in keyof Store]: Store[K] extends (...args: never[]) => unknown ? K : never }[keyof Store];

/** What each Store method does, declared once: a `read` only reads (safe to run again when its
 *  connection was lost under it: the PostgreSQL retry set); a `write` changes the store and must not
 *  be repeated blindly; `subscribe` registers a listener (synchronous, touches no data); `lifecycle`
 *  is close. A new Store method that is not classified here fails the typecheck. */
export const STORE_METHODS = {
  close: 'lifecycle',
  onCommit: 'subscribe',
  getMeta: 'read',
  initMeta: 'write',
  addAccount: 'write',
  getAccount: 'read',
  findAccountByDigest: 'read',
  listAccounts: 'read',
  setAccountSecret: 'write',
  removeAccount: 'write',
  addRoom: 'write',
  removeRoom: 'write',
  setRoomOpen: 'write',
  getRoom: 'read',
  listRooms: 'read',
  roomsOf: 'read',
  addMember: 'write',
  removeMember: 'write',
  setLeader: 'write',
  setGrant: 'write',
  teamChanges: 'read',
  setContactPolicy: 'write',
  addContact: 'write',
  removeContact: 'write',
  listContacts: 'read',
  hasContact: 'read',
  setListener: 'write',
  removeListener: 'write',
  getListener: 'read',
  listenersOf: 'read',
  registerSession: 'write',
  getSession: 'read',
  findSessionsByPrefix: 'read',
  lineageSessions: 'read',
  addAlias: 'write',
  removeAlias: 'write',
  resolveName: 'read',
  namesOf: 'read',
  listNames: 'read',
  listSessions: 'read',
  findByProviderSession: 'read',
  touchSessions: 'write',
  endSession: 'write',
  setDeclared: 'write',
  setProviderSessionId: 'write',
  joinLineage: 'write',
  pruneSessions: 'write',
  appendMessage: 'write',
  getMessage: 'read',
  getThread: 'read',
  page: 'read',
  ack: 'write',
  unread: 'read',
  ackedAt: 'read',
  readerFacts: 'read',
  headSeq: 'read',
  tallies: 'read',
  externalCount: 'read',
  messagesAfter: 'read',
  putRecord: 'write',
  insertRecords: 'write',
  getRecord: 'read',
  listRecords: 'read',
  deleteRecord: 'write',
  pruneMail: 'write',
  pruneRecords: 'write',
  createTask: 'write',
  getTask: 'read',
  updateTask: 'write',
  listTasks: 'read',
  taskChildren: 'read',
  createApproval: 'write',
  getApproval: 'read',
  decideApproval: 'write',
  claimLease: 'write',
  renewLease: 'write',
  endLease: 'write',
  expireLeases: 'write',
  endSessionLeases: 'write',
  getLease: 'read',
  listLeases: 'read',
  unsettledLeases: 'read',
  settleLease: 'write',
  pruneLeases: 'write',
  poolTasks: 'read',
  search: 'read',
} as const satisfies Record<StoreMethod, 'read' | 'write' | 'subscribe' | 'lifecycle'>;

/** The Store methods that only read. */
export const STORE_READS: readonly StoreMethod[] = (Object.keys(STORE_METHODS) as StoreMethod[]).filter((m) => STORE_METHODS[m] === 'read');

/** The key a reader acknowledges a message under: session mail per session lineage, everything
 *  else (direct and room mail) once for the whole account, like a shared queue. */
export function ackKeyFor(scope: ReaderScope, toKey: MailKey): MailKey {
  return toKey.startsWith('s:') ? toKey : keyOfAccount(scope.account);
}

/** The prefix of every session mail key of an account (`s:<account>/`). */
export const lineageKeyPrefix = (account: string): string => `s:${account}/`;

/** Whether a mail key is one the account owns: its direct key or one of its session keys. */
export const isKeyOfAccount = (key: MailKey, account: string): boolean => key === keyOfAccount(account) || key.startsWith(lineageKeyPrefix(account));

/** Whether a record id `<message id>|<recipient>[|…]` names the account (or one of its lineages) as
 *  its recipient (RecordSweep.byRecipient). Ids and selectors never contain '|' or '/' otherwise. */
export function recordNamesRecipient(id: string, account: string): boolean {
  const bar = id.indexOf('|');
  if (bar < 0) return false;
  const rest = id.slice(bar + 1);
  return rest === account || rest.startsWith(`${account}|`) || rest.startsWith(`${account}/`);
}

/** Every key a scope reads. */
export function readKeys(scope: ReaderScope): MailKey[] {
  const keys = [keyOfAccount(scope.account), ...scope.rooms.map(keyOfRoom)];
  if (scope.sessionKey) keys.push(scope.sessionKey);
  return keys;
}
