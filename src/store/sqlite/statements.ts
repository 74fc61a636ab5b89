// Every fixed statement, prepared once per connection. (The page query varies with the number
// of keys and lives in page-query.ts.)
import { EXTENSION_PROVIDERS } from '../../wire/capabilities.js';
import type Database from 'better-sqlite3';
import { FLOOR_STEP } from '../reading-rules.js';
import type { AccountRow, MessageRow, NameRow, SessionOutRow } from './rows.js';

/** Ended before @before, and for a resumable (pi, omp) session before @resumable too. */
const PRUNABLE = `ended_at < @before AND (c_provider IS NULL OR c_provider NOT IN (${EXTENSION_PROVIDERS.map((p) => `'${p}'`).join(', ')}) OR ended_at < @resumable)`;

/** Sessions with their lineage's slug; callers add WHERE / ORDER BY on `s`. */
const SESSIONS = `SELECT s.*, n.name AS slug FROM sessions AS s
  LEFT JOIN names AS n ON n.account = s.account AND n.lineage = s.lineage AND n.kind = 'slug'`;

interface RoomRow {
  name: string;
  created_at: number;
  everyone: number;
  is_open: number;
  team: number;
}

export interface RecordDbRow {
  kind: string;
  id: string;
  value: string;
  updated_at: number;
}

export type Statements = ReturnType<typeof prepareStatements>;

/** The part of a prepared statement the store uses, named here so declarations can be emitted. */
export interface Stmt<R> {
  run(...params: unknown[]): Database.RunResult;
  get(...params: unknown[]): R | undefined;
  all(...params: unknown[]): R[];
}

export function prepareStatements(db: Database.Database) {
  const p = <R = unknown>(sql: string): Stmt<R> => db.prepare<unknown[], R>(sql);
  return {
    getMeta: p<{ value: string }>('SELECT value FROM meta WHERE key = ?'),
    initMeta: p('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING'),

    insertAccount: p(
      `INSERT INTO accounts (id, kind, label, perm_send, perm_read, perm_urgent, perm_operator,
         bind_provider, secret_digest, created_at, born_seq, contact_policy)
       VALUES (@id, @kind, @label, @perm_send, @perm_read, @perm_urgent, @perm_operator,
         @bind_provider, @secret_digest, @created_at, @born_seq, @contact_policy)
       ON CONFLICT (id) DO NOTHING`,
    ),
    getAccount: p<AccountRow>('SELECT * FROM accounts WHERE id = ?'),
    findAccountByDigest: p<AccountRow>('SELECT * FROM accounts WHERE secret_digest = ? LIMIT 1'),
    listAccounts: p<AccountRow>('SELECT * FROM accounts ORDER BY id'),
    setAccountSecret: p('UPDATE accounts SET secret_digest = ? WHERE id = ?'),
    deleteAccount: p('DELETE FROM accounts WHERE id = ?'),
    deleteMembershipsOf: p('DELETE FROM members WHERE account = ?'),
    deleteSessionsOf: p('DELETE FROM sessions WHERE account = ?'),
    deleteNamesOf: p('DELETE FROM names WHERE account = ?'),

    insertRoom: p('INSERT INTO rooms (name, created_at, everyone, is_open, team) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING'),
    setRoomOpen: p('UPDATE rooms SET is_open = ? WHERE name = ?'),
    deleteRoom: p('DELETE FROM rooms WHERE name = ?'),
    deleteMembersOfRoom: p('DELETE FROM members WHERE room = ?'),
    getRoom: p<RoomRow>('SELECT name, created_at, everyone, is_open, team FROM rooms WHERE name = ?'),
    listRooms: p<RoomRow>('SELECT name, created_at, everyone, is_open, team FROM rooms ORDER BY name'),
    everyoneRooms: p<{ name: string }>('SELECT name FROM rooms WHERE everyone = 1 ORDER BY name'),
    membersOf: p<{ account: string }>('SELECT account FROM members WHERE room = ? ORDER BY account'),
    allMembers: p<{ room: string; account: string }>('SELECT room, account FROM members ORDER BY room, account'),
    roomsOf: p<{ room: string }>('SELECT room FROM members WHERE account = ? ORDER BY room'),
    memberExists: p<{ one: number }>('SELECT 1 AS one FROM members WHERE room = ? AND account = ?'),
    insertMember: p('INSERT INTO members (room, account, acked) VALUES (?, ?, ?)'),
    deleteMember: p('DELETE FROM members WHERE room = ? AND account = ?'),
    countAcksOfKey: p<{ n: number }>('SELECT COUNT(*) AS n FROM acks WHERE ack_key = ? AND to_key = ?'),
    bumpMemberAcked: p('UPDATE members SET acked = acked + ? WHERE room = ? AND account = ?'),
    memberAcked: p<{ acked: number }>('SELECT acked FROM members WHERE room = ? AND account = ?'),

    setListener: p('INSERT INTO listeners (account, url) VALUES (?, ?) ON CONFLICT (account) DO UPDATE SET url = excluded.url'),
    deleteListener: p('DELETE FROM listeners WHERE account = ?'),
    getListener: p<{ url: string }>('SELECT url FROM listeners WHERE account = ?'),
    putRecord: p(
      'INSERT INTO records (kind, id, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, id) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
    ),
    insertRecord: p('INSERT INTO records (kind, id, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, id) DO NOTHING'),
    getRecord: p<RecordDbRow>('SELECT kind, id, value, updated_at FROM records WHERE kind = ? AND id = ?'),
    recordsByPrefix: p<RecordDbRow>('SELECT kind, id, value, updated_at FROM records WHERE kind = ? AND id >= ? AND id < ? ORDER BY id LIMIT ?'),
    recordsOpen: p<RecordDbRow>('SELECT kind, id, value, updated_at FROM records WHERE kind = ? AND id >= ? ORDER BY id LIMIT ?'),
    deleteRecord: p('DELETE FROM records WHERE kind = ? AND id = ?'),

    getSession: p<SessionOutRow>(`${SESSIONS} WHERE s.account = ? AND s.id = ?`),
    // Prefix search: one range of the (account, id) primary key; the open form has no upper bound.
    sessionsByPrefix: p<SessionOutRow>(`${SESSIONS} WHERE s.account = ? AND s.id >= ? AND s.id < ? ORDER BY s.id LIMIT ?`),
    sessionsByPrefixOpen: p<SessionOutRow>(`${SESSIONS} WHERE s.account = ? AND s.id >= ? ORDER BY s.id LIMIT ?`),
    lineageSessions: p<SessionOutRow>(`${SESSIONS} WHERE s.account = ? AND s.lineage = ? ORDER BY s.created_at, s.rowid`),
    lineageHasSession: p<{ one: number }>('SELECT 1 AS one FROM sessions WHERE account = ? AND lineage = ? LIMIT 1'),
    insertSession: p(
      `INSERT INTO sessions (account, id, lineage, host_id, pid, start_time, exe, uid, c_provider,
         c_provider_session_id, c_model, c_cwd, d_working_on, d_role, d_parent, created_at, last_seen,
         ended_at, successor)
       VALUES (@account, @id, @lineage, @host_id, @pid, @start_time, @exe, @uid, @c_provider,
         @c_provider_session_id, @c_model, @c_cwd, @d_working_on, @d_role, @d_parent, @created_at,
         @last_seen, @ended_at, @successor)`,
    ),
    setSuccessor: p('UPDATE sessions SET successor = ?, ended_at = COALESCE(ended_at, ?) WHERE account = ? AND id = ? AND successor IS NULL'),
    listSessions: p<SessionOutRow>(`${SESSIONS} ORDER BY s.rowid`),
    findByProviderSession: p<SessionOutRow>(
      `${SESSIONS} WHERE s.account = ? AND s.c_provider = ? AND s.c_provider_session_id = ?
       ORDER BY s.created_at DESC, s.rowid DESC`,
    ),
    touchSession: p('UPDATE sessions SET last_seen = MAX(last_seen, ?) WHERE account = ? AND id = ?'),
    endSession: p('UPDATE sessions SET ended_at = ? WHERE account = ? AND id = ? AND ended_at IS NULL'),
    setDeclared: p('UPDATE sessions SET d_working_on = ?, d_role = ?, d_parent = ? WHERE account = ? AND id = ?'),
    setProviderSessionId: p('UPDATE sessions SET c_provider_session_id = ? WHERE account = ? AND id = ?'),
    // Not DISTINCT: that would walk sessions_by_lineage whole instead of the ended range.
    prunedLineages: p<{ account: string; lineage: string }>(`SELECT account, lineage FROM sessions WHERE ${PRUNABLE}`),
    pruneSessions: p(`DELETE FROM sessions WHERE ${PRUNABLE}`),

    getName: p<NameRow>('SELECT account, name, lineage, kind FROM names WHERE account = ? AND name = ?'),
    insertName: p('INSERT INTO names (account, name, lineage, kind) VALUES (?, ?, ?, ?)'),
    slugOfLineage: p<{ name: string }>("SELECT name FROM names WHERE account = ? AND lineage = ? AND kind = 'slug'"),
    /** Names of the account in [from, to): the taken `base-N` of a slug base. */
    namesInRange: p<{ name: string }>('SELECT name FROM names WHERE account = ? AND name >= ? AND name < ?'),
    deleteAlias: p("DELETE FROM names WHERE account = ? AND name = ? AND lineage = ? AND kind = 'alias'"),
    deleteNamesOfLineage: p('DELETE FROM names WHERE account = ? AND lineage = ?'),
    namesOf: p<NameRow>('SELECT account, name, lineage, kind FROM names WHERE account = ? ORDER BY name'),
    listNames: p<NameRow>('SELECT account, name, lineage, kind FROM names ORDER BY account, name'),

    insertMessage: p(
      `INSERT INTO messages (id, thread_id, from_account, from_session, from_kind, to_address, to_key,
         subject, body, reply_to, correlation, refs, priority, created_at, idempotency_key, fingerprint, task, via)
       VALUES (@id, @thread_id, @from_account, @from_session, @from_kind, @to_address, @to_key,
         @subject, @body, @reply_to, @correlation, @refs, @priority, @created_at, @idempotency_key,
         @fingerprint, @task, @via)`,
    ),
    // Newest first: after a window expired, a key may have been reused.
    findIdempotent: p<MessageRow>(
      `SELECT * FROM messages WHERE from_account = ? AND idempotency_key = ? AND created_at >= ?
       ORDER BY seq DESC LIMIT 1`,
    ),
    getMessage: p<MessageRow>('SELECT * FROM messages WHERE id = ?'),
    getMessageBySeq: p<MessageRow>('SELECT * FROM messages WHERE seq = ?'),
    getThread: p<MessageRow>('SELECT * FROM messages WHERE thread_id = ? ORDER BY seq'),
    // The high-water mark, not MAX(seq): the newest messages may have been deleted with their
    // account or room, and a seq is never handed out twice (AUTOINCREMENT keeps it here).
    headSeq: p<{ seq: number | null }>("SELECT seq FROM sqlite_sequence WHERE name = 'messages'"),
    // (to_key, after, ceiling: the durable head, limit)
    messagesAfter: p<MessageRow>('SELECT * FROM messages WHERE to_key = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?'),
    countDelivered: p(
      `INSERT INTO mailbox_counts (to_key, total, unacked) VALUES (?, 1, 1)
       ON CONFLICT (to_key) DO UPDATE SET total = total + 1, unacked = unacked + 1`,
    ),
    countAcked: p('UPDATE mailbox_counts SET unacked = unacked - ? WHERE to_key = ?'),
    countsOf: p<{ total: number; unacked: number }>('SELECT total, unacked FROM mailbox_counts WHERE to_key = ?'),

    getAck: p<{ acked_at: number }>('SELECT acked_at FROM acks WHERE ack_key = ? AND seq = ?'),
    insertAck: p('INSERT INTO acks (ack_key, seq, to_key, acked_at) VALUES (?, ?, ?, ?)'),
    getFloor: p<{ floor: number }>('SELECT floor FROM ack_floors WHERE ack_key = ? AND to_key = ?'),
    setFloor: p(
      `INSERT INTO ack_floors (ack_key, to_key, floor) VALUES (?, ?, ?)
       ON CONFLICT (ack_key, to_key) DO UPDATE SET floor = excluded.floor`,
    ),
    // The next messages of a key above the floor, each with whether the ack key acked it.
    nextAboveFloor: p<{ seq: number; acked: number }>(
      `SELECT m.seq AS seq, (a.seq IS NOT NULL) AS acked
       FROM messages AS m INDEXED BY messages_by_key
       LEFT JOIN acks AS a ON a.ack_key = ? AND a.seq = m.seq
       WHERE m.to_key = ? AND m.seq > ? ORDER BY m.seq LIMIT ${FLOOR_STEP}`,
    ),
  };
}
