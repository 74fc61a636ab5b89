// The locks the PostgreSQL store's transactions take, and in which order. Every transaction that
// takes more than one takes them in this order (head, registry, member or names; for leases:
// lease account, lease holder, lease space), so no two wait on each other in a cycle.
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

// Lease locks are keyed by a 64-bit hash of their name (the one-key form, a key space apart from the
// two-int locks above): two names sharing a key would only take turns, never deadlock or mix up.
const leaseKey = (tx: Q, name: string) => tx`hashtextextended(${name}, ${LOCK_NAMESPACE})`;

/** A claim: the holder's account (shared: removing the account waits for claims in flight, then
 *  ends what they made), the holder (its session, or the account without one: the count of its live
 *  leases is exact), then the space (the conflict check is exact). One statement, in that order. */
export function leaseClaimLocks(tx: Q, account: string, session: string | null, space: string) {
  return tx`SELECT pg_advisory_xact_lock_shared(${leaseKey(tx, `lease-account:${account}`)}),
    pg_advisory_xact_lock(${leaseKey(tx, `lease-holder:${account}\n${session ?? ''}`)}),
    pg_advisory_xact_lock(${leaseKey(tx, `lease-space:${space}`)})`;
}

/** A renew takes only the space's lock: it must see every claim of the space that committed. */
export function leaseSpaceLock(tx: Q, space: string) {
  return tx`SELECT pg_advisory_xact_lock(${leaseKey(tx, `lease-space:${space}`)})`;
}

/** Removing (or creating) an account ends its leases after the claims in flight committed. */
export function leaseAccountLock(tx: Q, account: string) {
  return tx`SELECT pg_advisory_xact_lock(${leaseKey(tx, `lease-account:${account}`)})`;
}
