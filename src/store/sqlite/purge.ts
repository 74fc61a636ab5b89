// Deleting the mail of a removed (or newly created) account or room, inside the caller's
// transaction: the messages, every ack of them, ack floors, counters, and the sweep's records.
// A name used again is a new participant, so nothing under its keys may outlive the old one.
import type Database from 'better-sqlite3';
import { keyOfAccount, keyOfRoom, lineageKeyPrefix, type RecordSweep } from '../types.js';
import { prefixUpperBound } from './prefix.js';
import type { Stmt } from './statements.js';

export type PurgeStatements = ReturnType<typeof preparePurge>;

export function preparePurge(db: Database.Database) {
  const p = <R = unknown>(sql: string): Stmt<R> => db.prepare<unknown[], R>(sql);
  return {
    // One key, or one range of keys (every session key of an account).
    idsOfKey: p<{ id: string }>('SELECT id FROM messages WHERE to_key = ?'),
    idsOfKeys: p<{ id: string }>('SELECT id FROM messages WHERE to_key >= ? AND to_key < ?'),
    deleteKey: p('DELETE FROM messages WHERE to_key = ?'),
    deleteKeys: p('DELETE FROM messages WHERE to_key >= ? AND to_key < ?'),
    deleteAcksUnder: p('DELETE FROM acks WHERE ack_key = ?'),
    deleteAcksUnderRange: p('DELETE FROM acks WHERE ack_key >= ? AND ack_key < ?'),
    deleteAcksOf: p('DELETE FROM acks WHERE ack_key = ? AND to_key = ?'),
    deleteFloorsUnder: p('DELETE FROM ack_floors WHERE ack_key = ?'),
    deleteFloorsUnderRange: p('DELETE FROM ack_floors WHERE ack_key >= ? AND ack_key < ?'),
    deleteFloorsOf: p('DELETE FROM ack_floors WHERE to_key = ?'),
    deleteCount: p('DELETE FROM mailbox_counts WHERE to_key = ?'),
    deleteCounts: p('DELETE FROM mailbox_counts WHERE to_key >= ? AND to_key < ?'),
    accountIds: p<{ id: string }>('SELECT id FROM accounts'),
    forgetIdempotency: p('UPDATE messages SET idempotency_key = NULL WHERE from_account = ? AND idempotency_key IS NOT NULL'),
    deleteTasksTo: p('DELETE FROM tasks WHERE to_account = ?'),
    deleteApprovalsFor: p('DELETE FROM approvals WHERE reviewer_account = ?'),
    forgetTaskIdempotency: p('UPDATE tasks SET idempotency_key = NULL WHERE from_account = ? AND idempotency_key IS NOT NULL'),
    deleteRecord: p('DELETE FROM records WHERE kind = ? AND id = ?'),
    deleteRecordRange: p('DELETE FROM records WHERE kind = ? AND id >= ? AND id < ?'),
    deleteRecordOpen: p('DELETE FROM records WHERE kind = ? AND id >= ?'),
    // `<message id>|<recipient>[|…]` whose recipient is the account or one of its lineages.
    deleteByRecipient: p(
      `DELETE FROM records WHERE kind = @kind AND instr(id, '|') > 0 AND (
         substr(id, instr(id, '|') + 1) = @account
         OR substr(id, instr(id, '|') + 1, @n) IN (@account || '|', @account || '/'))`,
    ),
  };
}

/** The half-open key range of every key starting with `prefix`. */
function range(prefix: string): [string, string] {
  return [prefix, prefixUpperBound(prefix) as string];
}

function deleteByPrefix(st: PurgeStatements, kind: string, prefix: string): void {
  const upper = prefixUpperBound(prefix);
  if (upper === null) st.deleteRecordOpen.run(kind, prefix);
  else st.deleteRecordRange.run(kind, prefix, upper);
}

function sweepMessages(st: PurgeStatements, ids: string[], sweep: RecordSweep | undefined): void {
  for (const kind of sweep?.byMessage ?? []) for (const id of ids) deleteByPrefix(st, kind, `${id}|`);
}

export function sweepOwned(st: PurgeStatements, sweep: RecordSweep | undefined): void {
  for (const o of sweep?.owned ?? []) {
    if ('id' in o) st.deleteRecord.run(o.kind, o.id);
    else deleteByPrefix(st, o.kind, o.prefix);
  }
}

/** Direct and session mail of the account, and everything acknowledged under its ack keys (its
 *  acks of room mail too). Returns how many messages went. */
export function purgeAccountMail(st: PurgeStatements, account: string, sweep?: RecordSweep): number {
  const direct = keyOfAccount(account);
  const [lo, hi] = range(lineageKeyPrefix(account));
  const ids = [...st.idsOfKey.all(direct), ...st.idsOfKeys.all(lo, hi)].map((r) => r.id);
  sweepMessages(st, ids, sweep);
  st.deleteKey.run(direct);
  st.deleteKeys.run(lo, hi);
  st.deleteAcksUnder.run(direct);
  st.deleteAcksUnderRange.run(lo, hi);
  st.deleteFloorsUnder.run(direct);
  st.deleteFloorsUnderRange.run(lo, hi);
  st.deleteCount.run(direct);
  st.deleteCounts.run(lo, hi);
  return ids.length;
}

/** The account's retry handles and its receipts of mail that stays. */
export function forgetAccount(st: PurgeStatements, account: string, sweep?: RecordSweep): void {
  st.forgetIdempotency.run(account);
  for (const kind of sweep?.byRecipient ?? []) st.deleteByRecipient.run({ kind, account, n: account.length + 1 });
  sweepOwned(st, sweep);
}

/** The tasks assigned to the account and the approvals it was to review go; the tasks it asked
 *  for stay (they are their assignees', as mail it sent is its recipients'), without their retry
 *  handles, so a new account of the name is never answered with an old one's task. */
export function purgeAccountTasks(st: PurgeStatements, account: string): void {
  st.deleteTasksTo.run(account);
  st.deleteApprovalsFor.run(account);
  st.forgetTaskIdempotency.run(account);
}

/** The room's mail and every account's acks of it. Returns how many messages went. */
export function purgeRoomMail(st: PurgeStatements, room: string, sweep?: RecordSweep): number {
  const key = keyOfRoom(room);
  const ids = st.idsOfKey.all(key).map((r) => r.id);
  sweepMessages(st, ids, sweep);
  st.deleteKey.run(key);
  // Room mail is acknowledged under each reader's account key: one indexed delete per account
  // (acks under the keys of removed accounts went with them).
  for (const a of st.accountIds.all()) st.deleteAcksOf.run(keyOfAccount(a.id), key);
  st.deleteFloorsOf.run(key);
  st.deleteCount.run(key);
  return ids.length;
}
