// Every fixed statement, prepared once per connection. (The page query varies with the number
// of keys and lives in page-query.ts.)
import type Database from 'better-sqlite3';
import type { AccountRow, MessageRow, SessionRow } from './rows.js';

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
         bind_provider, secret_digest, created_at)
       VALUES (@id, @kind, @label, @perm_send, @perm_read, @perm_urgent, @perm_operator,
         @bind_provider, @secret_digest, @created_at)
       ON CONFLICT (id) DO NOTHING`,
    ),
    getAccount: p<AccountRow>('SELECT * FROM accounts WHERE id = ?'),
    findAccountByDigest: p<AccountRow>('SELECT * FROM accounts WHERE secret_digest = ? LIMIT 1'),
    listAccounts: p<AccountRow>('SELECT * FROM accounts ORDER BY id'),
    setAccountSecret: p('UPDATE accounts SET secret_digest = ? WHERE id = ?'),
    deleteAccount: p('DELETE FROM accounts WHERE id = ?'),
    deleteMembershipsOf: p('DELETE FROM members WHERE account = ?'),
    deleteSessionsOf: p('DELETE FROM sessions WHERE account = ?'),

    insertRoom: p('INSERT INTO rooms (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING'),
    deleteRoom: p('DELETE FROM rooms WHERE name = ?'),
    deleteMembersOfRoom: p('DELETE FROM members WHERE room = ?'),
    getRoom: p<{ name: string; created_at: number }>('SELECT name, created_at FROM rooms WHERE name = ?'),
    listRooms: p<{ name: string; created_at: number }>('SELECT name, created_at FROM rooms ORDER BY name'),
    membersOf: p<{ account: string }>('SELECT account FROM members WHERE room = ? ORDER BY account'),
    allMembers: p<{ room: string; account: string }>('SELECT room, account FROM members ORDER BY room, account'),
    roomsOf: p<{ room: string }>('SELECT room FROM members WHERE account = ? ORDER BY room'),
    memberExists: p<{ one: number }>('SELECT 1 AS one FROM members WHERE room = ? AND account = ?'),
    insertMember: p('INSERT INTO members (room, account, acked) VALUES (?, ?, ?)'),
    deleteMember: p('DELETE FROM members WHERE room = ? AND account = ?'),
    countAcksOfKey: p<{ n: number }>('SELECT COUNT(*) AS n FROM acks WHERE ack_key = ? AND to_key = ?'),
    bumpMemberAcked: p('UPDATE members SET acked = acked + 1 WHERE room = ? AND account = ?'),

    setListener: p('INSERT INTO listeners (account, url) VALUES (?, ?) ON CONFLICT (account) DO UPDATE SET url = excluded.url'),
    deleteListener: p('DELETE FROM listeners WHERE account = ?'),
    getListener: p<{ url: string }>('SELECT url FROM listeners WHERE account = ?'),

    getSession: p<SessionRow>('SELECT * FROM sessions WHERE account = ? AND id = ?'),
    insertSession: p(
      `INSERT INTO sessions (account, id, lineage, host_id, pid, start_time, exe, uid, c_provider,
         c_provider_session_id, c_model, c_cwd, d_working_on, d_role, d_parent, created_at, last_seen,
         ended_at, successor)
       VALUES (@account, @id, @lineage, @host_id, @pid, @start_time, @exe, @uid, @c_provider,
         @c_provider_session_id, @c_model, @c_cwd, @d_working_on, @d_role, @d_parent, @created_at,
         @last_seen, @ended_at, @successor)`,
    ),
    setSuccessor: p(
      'UPDATE sessions SET successor = ?, ended_at = COALESCE(ended_at, ?) WHERE account = ? AND id = ? AND successor IS NULL',
    ),
    listSessions: p<SessionRow>('SELECT * FROM sessions ORDER BY rowid'),
    findByProviderSession: p<SessionRow>(
      `SELECT * FROM sessions WHERE account = ? AND c_provider = ? AND c_provider_session_id = ?
       ORDER BY created_at DESC, rowid DESC`,
    ),
    touchSession: p('UPDATE sessions SET last_seen = MAX(last_seen, ?) WHERE account = ? AND id = ?'),
    endSession: p('UPDATE sessions SET ended_at = ? WHERE account = ? AND id = ? AND ended_at IS NULL'),
    setDeclared: p('UPDATE sessions SET d_working_on = ?, d_role = ?, d_parent = ? WHERE account = ? AND id = ?'),
    pruneSessions: p('DELETE FROM sessions WHERE ended_at < ?'),

    insertMessage: p(
      `INSERT INTO messages (id, thread_id, from_account, from_session, from_kind, to_address, to_key,
         subject, body, reply_to, correlation, refs, priority, created_at, idempotency_key, fingerprint)
       VALUES (@id, @thread_id, @from_account, @from_session, @from_kind, @to_address, @to_key,
         @subject, @body, @reply_to, @correlation, @refs, @priority, @created_at, @idempotency_key,
         @fingerprint)`,
    ),
    // Newest first: after a window expired, a key may have been reused.
    findIdempotent: p<MessageRow>(
      `SELECT * FROM messages WHERE from_account = ? AND idempotency_key = ? AND created_at >= ?
       ORDER BY seq DESC LIMIT 1`,
    ),
    getMessage: p<MessageRow>('SELECT * FROM messages WHERE id = ?'),
    getMessageBySeq: p<MessageRow>('SELECT * FROM messages WHERE seq = ?'),
    getThread: p<MessageRow>('SELECT * FROM messages WHERE thread_id = ? ORDER BY seq'),
    headSeq: p<{ seq: number | null }>('SELECT MAX(seq) AS seq FROM messages'),
    countDelivered: p(
      `INSERT INTO mailbox_counts (to_key, total, unacked) VALUES (?, 1, 1)
       ON CONFLICT (to_key) DO UPDATE SET total = total + 1, unacked = unacked + 1`,
    ),
    countAcked: p('UPDATE mailbox_counts SET unacked = unacked - 1 WHERE to_key = ?'),
    unackedOf: p<{ unacked: number }>('SELECT unacked FROM mailbox_counts WHERE to_key = ?'),
    roomUnread: p<{ n: number }>(
      `SELECT COALESCE((SELECT total FROM mailbox_counts WHERE to_key = ?), 0)
            - COALESCE((SELECT acked FROM members WHERE room = ? AND account = ?), 0) AS n`,
    ),

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
       WHERE m.to_key = ? AND m.seq > ? ORDER BY m.seq LIMIT 64`,
    ),
  };
}
