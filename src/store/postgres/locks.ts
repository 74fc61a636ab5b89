// The locks the PostgreSQL store's transactions take, and in which order. Every transaction that
// takes more than one takes them in this order (head, registry, member or names), so no two wait
// on each other in a cycle.
import { LOCKS, LOCK_NAMESPACE } from './migrations.js';
import type { Q } from './pg-sql.js';

/** Registry changes (accounts, rooms, memberships) are rare: one lock keeps "everyone" rooms exact. */
export function lockRegistry(tx: Q) {
  return tx`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int, ${LOCKS.registry}::int)`;
}

/** Creating or removing a participant takes the head lock before the registry lock (the order
 *  migrate-store takes them): no append batch commits meanwhile, so born_seq is exact and no mail
 *  lands under the keys being emptied. Returns the head. */
export async function lockHead(tx: Q): Promise<number> {
  const [h] = await tx<{ seq: number }[]>`SELECT seq FROM message_head WHERE one = 1 FOR UPDATE`;
  await lockRegistry(tx);
  return (h as { seq: number }).seq;
}

/** The lock an ack of room mail shares and a join takes alone: a join counts every ack made
 *  before it, and every ack made after it bumps the new member row. */
export function memberLock(tx: Q, room: string, account: string, shared: boolean) {
  const key = `member:${room}\n${account}`;
  return shared ? tx`SELECT pg_advisory_xact_lock_shared(${LOCK_NAMESPACE}::int, hashtext(${key}))` : tx`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int, hashtext(${key}))`;
}

/** Name changes of one account (slugs and aliases) take turns: one namespace, no races. */
export function lockNames(tx: Q, account: string) {
  return tx`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int, hashtext(${`names:${account}`}))`;
}

/** Creations with one idempotency key of one requester take turns, so a retry sent to two daemons
 *  at once finds the first instead of making a second task. */
export function taskKeyLock(tx: Q, account: string, key: string) {
  return tx`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}::int, hashtext(${`task:${account}\n${key}`}))`;
}
