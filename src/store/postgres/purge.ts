// Deleting the mail of a removed (or newly created) account or room, inside the caller's
// transaction (the SQLite store's purge.ts, in PostgreSQL): the messages, every ack of them, ack
// floors, counters, and the sweep's records. The caller holds the head lock, so no append batch
// commits mail under these keys meanwhile.
import { keyOfAccount, keyOfRoom, lineageKeyPrefix, type RecordSweep } from '../types.js';
import { prefixUpperBound } from '../sqlite/prefix.js';
import { pgArray, type Tx } from './pg-sql.js';

async function deleteByMessage(tx: Tx, ids: string[], sweep: RecordSweep | undefined): Promise<void> {
  const kinds = sweep?.byMessage ?? [];
  if (kinds.length === 0 || ids.length === 0) return;
  // '}' follows '|': each message's records are one range of the (kind, id) key.
  await tx`DELETE FROM records AS r USING unnest(${pgArray(ids)}::text[]) AS g(id)
    WHERE r.kind = ANY(${pgArray(kinds)}::text[])
      AND r.id >= (g.id || '|') COLLATE "C" AND r.id < (g.id || '}') COLLATE "C"`;
}

export async function sweepOwned(tx: Tx, sweep: RecordSweep | undefined): Promise<void> {
  for (const o of sweep?.owned ?? []) {
    if ('id' in o) {
      await tx`DELETE FROM records WHERE kind = ${o.kind} AND id = ${o.id}`;
      continue;
    }
    const upper = prefixUpperBound(o.prefix);
    if (upper === null) await tx`DELETE FROM records WHERE kind = ${o.kind} AND id >= ${o.prefix}`;
    else await tx`DELETE FROM records WHERE kind = ${o.kind} AND id >= ${o.prefix} AND id < ${upper}`;
  }
}

/** Direct and session mail of the account, and everything acknowledged under its ack keys (its
 *  acks of room mail too). Returns how many messages went. */
export async function purgeAccountMail(tx: Tx, account: string, sweep?: RecordSweep): Promise<number> {
  const direct = keyOfAccount(account);
  const lo = lineageKeyPrefix(account);
  const hi = prefixUpperBound(lo) as string;
  const ids = (await tx<{ id: string }[]>`SELECT id FROM messages WHERE to_key = ${direct} OR (to_key >= ${lo} AND to_key < ${hi})`).map((r) => r.id);
  await deleteByMessage(tx, ids, sweep);
  if (ids.length > 0) await tx`DELETE FROM messages WHERE to_key = ${direct} OR (to_key >= ${lo} AND to_key < ${hi})`;
  await tx`DELETE FROM acks WHERE ack_key = ${direct} OR (ack_key >= ${lo} AND ack_key < ${hi})`;
  await tx`DELETE FROM ack_floors WHERE ack_key = ${direct} OR (ack_key >= ${lo} AND ack_key < ${hi})`;
  await tx`DELETE FROM mailbox_counts WHERE to_key = ${direct} OR (to_key >= ${lo} AND to_key < ${hi})`;
  return ids.length;
}

/** The account's retry handles and its receipts of mail that stays. */
export async function forgetAccount(tx: Tx, account: string, sweep?: RecordSweep): Promise<void> {
  await tx`UPDATE messages SET idempotency_key = NULL WHERE from_account = ${account} AND idempotency_key IS NOT NULL`;
  const kinds = sweep?.byRecipient ?? [];
  if (kinds.length > 0) {
    await tx`DELETE FROM records WHERE kind = ANY(${pgArray(kinds)}::text[]) AND strpos(id, '|') > 0
      AND (split_part(id, '|', 2) = ${account} OR left(split_part(id, '|', 2), ${account.length + 1}) = ${`${account}/`})`;
  }
  await sweepOwned(tx, sweep);
}

/** The room's mail and every account's acks of it. Returns how many messages went. */
export async function purgeRoomMail(tx: Tx, room: string, sweep?: RecordSweep): Promise<number> {
  const key = keyOfRoom(room);
  const ids = (await tx<{ id: string }[]>`SELECT id FROM messages WHERE to_key = ${key}`).map((r) => r.id);
  await deleteByMessage(tx, ids, sweep);
  if (ids.length > 0) await tx`DELETE FROM messages WHERE to_key = ${key}`;
  // Room mail is acknowledged under each reader's account key (acks_by_to_key per account).
  await tx`DELETE FROM acks AS a USING accounts AS x WHERE a.ack_key = ('a:' || x.id) COLLATE "C" AND a.to_key = ${key}`;
  await tx`DELETE FROM ack_floors WHERE to_key = ${key}`;
  await tx`DELETE FROM mailbox_counts WHERE to_key = ${key}`;
  return ids.length;
}
