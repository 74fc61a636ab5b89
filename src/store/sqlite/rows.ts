// Row shapes as better-sqlite3 returns them, and their mapping to and from domain records.
import type {
  AccountKind,
  AccountRecord,
  Corroborated,
  NewAccount,
  Declared,
  MessageTask,
  MessageVia,
  NameRecord,
  NewMessage,
  NewSession,
  PagedMessage,
  Priority,
  Ref,
  SessionRecord,
  StoredMessage,
} from '../types.js';
import type { ContactPolicy } from '../../wire/contacts.js';

export interface AccountRow {
  id: string;
  kind: string;
  label: string;
  perm_send: number;
  perm_read: number;
  perm_urgent: number;
  perm_operator: number;
  bind_provider: string | null;
  secret_digest: string;
  created_at: number;
  born_seq: number;
  contact_policy: string;
}

export function toAccount(r: AccountRow): AccountRecord {
  return {
    id: r.id,
    kind: r.kind as AccountKind,
    label: r.label,
    permissions: {
      send: r.perm_send === 1,
      read: r.perm_read === 1,
      urgent: r.perm_urgent === 1,
      operator: r.perm_operator === 1,
    },
    bindProvider: r.bind_provider,
    secretDigest: r.secret_digest,
    createdAt: r.created_at,
    bornSeq: r.born_seq,
    contactPolicy: r.contact_policy as ContactPolicy,
  };
}

export function accountParams(a: NewAccount, bornSeq: number): AccountRow {
  return {
    id: a.id,
    kind: a.kind,
    label: a.label,
    perm_send: a.permissions.send ? 1 : 0,
    perm_read: a.permissions.read ? 1 : 0,
    perm_urgent: a.permissions.urgent ? 1 : 0,
    perm_operator: a.permissions.operator ? 1 : 0,
    bind_provider: a.bindProvider,
    secret_digest: a.secretDigest,
    created_at: a.createdAt,
    born_seq: bornSeq,
    contact_policy: a.contactPolicy ?? 'open',
  };
}

export interface SessionRow {
  account: string;
  id: string;
  lineage: string;
  host_id: string;
  pid: number;
  start_time: number;
  exe: string;
  uid: number;
  c_provider: string | null;
  c_provider_session_id: string | null;
  c_model: string | null;
  c_cwd: string | null;
  d_working_on: string | null;
  d_role: string | null;
  d_parent: string | null;
  created_at: number;
  last_seen: number;
  ended_at: number | null;
  successor: string | null;
}

/** A session row as the session queries return it: with its lineage's slug (from names). */
export type SessionOutRow = SessionRow & { slug: string | null };

export function toSession(r: SessionOutRow): SessionRecord {
  const corroborated: Corroborated = {};
  if (r.c_provider !== null) corroborated.provider = r.c_provider;
  if (r.c_provider_session_id !== null) corroborated.providerSessionId = r.c_provider_session_id;
  if (r.c_model !== null) corroborated.model = r.c_model;
  if (r.c_cwd !== null) corroborated.cwd = r.c_cwd;
  const declared: Declared = {};
  if (r.d_working_on !== null) declared.workingOn = r.d_working_on;
  if (r.d_role !== null) declared.role = r.d_role;
  if (r.d_parent !== null) declared.parent = r.d_parent;
  return {
    account: r.account,
    id: r.id,
    lineage: r.lineage,
    hostId: r.host_id,
    pid: r.pid,
    startTime: r.start_time,
    exe: r.exe,
    uid: r.uid,
    corroborated,
    declared,
    createdAt: r.created_at,
    lastSeen: r.last_seen,
    endedAt: r.ended_at,
    successor: r.successor,
    slug: r.slug,
  };
}

export interface NameRow {
  account: string;
  name: string;
  lineage: string;
  kind: string;
}

export function toName(r: NameRow): NameRecord {
  return { account: r.account, name: r.name, lineage: r.lineage, kind: r.kind as NameRecord['kind'] };
}

export function newSessionParams(s: NewSession, lineage: string): SessionRow {
  return {
    account: s.account,
    id: s.id,
    lineage,
    host_id: s.hostId,
    pid: s.pid,
    start_time: s.startTime,
    exe: s.exe,
    uid: s.uid,
    c_provider: s.corroborated.provider ?? null,
    c_provider_session_id: s.corroborated.providerSessionId ?? null,
    c_model: s.corroborated.model ?? null,
    c_cwd: s.corroborated.cwd ?? null,
    d_working_on: null,
    d_role: null,
    d_parent: null,
    created_at: s.createdAt,
    last_seen: s.createdAt,
    ended_at: null,
    successor: null,
  };
}

export interface MessageRow {
  seq: number;
  id: string;
  thread_id: string;
  from_account: string;
  from_session: string | null;
  from_kind: string;
  to_address: string;
  to_key: string;
  subject: string;
  body: string;
  reply_to: string | null;
  correlation: string | null;
  refs: string;
  priority: string;
  created_at: number;
  idempotency_key: string | null;
  fingerprint: string | null;
  /** A task's change (MessageTask) as JSON text; null for every other message. */
  task: string | null;
  /** A delegate's mail through a relay (MessageVia) as JSON text; null for every other message. */
  via: string | null;
}

export type PagedRow = MessageRow & { acked_at: number | null };

export function toMessage(r: MessageRow): StoredMessage {
  const m: StoredMessage = {
    seq: r.seq,
    id: r.id,
    threadId: r.thread_id,
    fromAccount: r.from_account,
    fromSession: r.from_session,
    fromKind: r.from_kind as AccountKind,
    toAddress: r.to_address,
    toKey: r.to_key,
    subject: r.subject,
    body: r.body,
    replyTo: r.reply_to,
    correlation: r.correlation,
    refs: r.refs === '[]' ? [] : (JSON.parse(r.refs) as Ref[]),
    priority: r.priority as Priority,
    createdAt: r.created_at,
    idempotencyKey: r.idempotency_key,
    fingerprint: r.fingerprint,
  };
  // Set, not spread in: a spread of a conditional object costs an object per row.
  if (r.task !== null) m.task = JSON.parse(r.task) as MessageTask;
  if (r.via !== null) m.via = JSON.parse(r.via) as MessageVia;
  return m;
}

export function toPaged(r: PagedRow): PagedMessage {
  const m = toMessage(r) as PagedMessage;
  m.ackedAt = r.acked_at;
  return m;
}

/** The columns of a page row, in the order pagedFromValues reads them (the inbox query's select). */
export const PAGED_COLUMNS = [
  'seq',
  'id',
  'thread_id',
  'from_account',
  'from_session',
  'from_kind',
  'to_address',
  'to_key',
  'subject',
  'body',
  'reply_to',
  'correlation',
  'refs',
  'priority',
  'created_at',
  'idempotency_key',
  'fingerprint',
  'task',
  'acked_at',
  'via',
] as const;

type Value = string | number | null;

/** A page row read as an array of PAGED_COLUMNS' values (better-sqlite3's raw mode: no object with
 *  named keys is made per row, which costs more than the row's values), as toPaged maps it. */
export function pagedFromValues(v: readonly Value[]): PagedMessage {
  const refs = v[12] as string;
  const task = v[17] as string | null;
  const m: PagedMessage = {
    seq: v[0] as number,
    id: v[1] as string,
    threadId: v[2] as string,
    fromAccount: v[3] as string,
    fromSession: v[4] as string | null,
    fromKind: v[5] as AccountKind,
    toAddress: v[6] as string,
    toKey: v[7] as string,
    subject: v[8] as string,
    body: v[9] as string,
    replyTo: v[10] as string | null,
    correlation: v[11] as string | null,
    refs: refs === '[]' ? [] : (JSON.parse(refs) as Ref[]),
    priority: v[13] as Priority,
    createdAt: v[14] as number,
    idempotencyKey: v[15] as string | null,
    fingerprint: v[16] as string | null,
    ackedAt: v[18] as number | null,
  };
  if (task !== null) m.task = JSON.parse(task) as MessageTask;
  const via = v[19] as string | null;
  if (via !== null) m.via = JSON.parse(via) as MessageVia;
  return m;
}

export function messageParams(m: NewMessage): Omit<MessageRow, 'seq'> {
  return {
    id: m.id,
    thread_id: m.threadId,
    from_account: m.fromAccount,
    from_session: m.fromSession,
    from_kind: m.fromKind,
    to_address: m.toAddress,
    to_key: m.toKey,
    subject: m.subject,
    body: m.body,
    reply_to: m.replyTo,
    correlation: m.correlation,
    refs: JSON.stringify(m.refs),
    priority: m.priority,
    created_at: m.createdAt,
    idempotency_key: m.idempotencyKey,
    fingerprint: m.fingerprint,
    task: m.task ? JSON.stringify(m.task) : null,
    via: m.via ? JSON.stringify(m.via) : null,
  };
}
