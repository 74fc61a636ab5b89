// Pooled tasks: a task addressed to a room is offered to the room's members; a claim takes an
// exclusive lease on it (space `task:<id>`) and makes the claimant its assignee while the lease
// lives. Every update must carry the lease's epoch (the fencing token), so a holder whose lease
// ended cannot move the task. When a lease ends without the task ending (released, expired, the
// holder's process exited), the task goes back to the pool (submitted, offered again after the
// backoff) or, after max_attempts claims, fails `lease_exhausted` and its requester is told:
// never dropped. Each of these is mail in the task's thread, from the mailbox.
import { MailError } from '../wire/errors.js';
import { LEASE_LIMITS } from '../wire/leases.js';
import { parseCompactAddress } from '../wire/address.js';
import type * as T from '../wire/tasks.js';
import { TASK_LIMITS, isTerminal } from '../wire/tasks.js';
import type { LeaseRecord, Store, TaskPool, TaskRecord } from '../store/types.js';
import type { Clock } from './clock.js';
import { callerAddress, type Caller } from './mail-engine.js';
import { MAILBOX_ACCOUNT } from './timers.js';

/** What the pool needs from the task rules. */
export interface PoolDeps {
  store: Store;
  clock: Clock;
  newId(): string;
  /** Moves a task (row, then its message to `to`, then lastSeq), with `patch` applied to the row. */
  transition(c: Caller, t: TaskRecord, state: 'working' | 'submitted' | 'failed', note: string, to: string, patch: Partial<TaskRecord>): Promise<T.TaskOut>;
  present(t: TaskRecord): Promise<T.TaskOut>;
  /** The lease as answers show it. */
  presentLease(l: LeaseRecord): Promise<NonNullable<T.TaskClaimResponse['lease']>>;
}

/** The room of `#room` (or `room`), else null. */
export function roomOf(s: string): string | null {
  const r = parseCompactAddress(s.startsWith('#') ? s : `#${s}`);
  return r.ok && r.address.kind === 'room' ? r.address.room : null;
}

/** The delay before a task returned for the `attempt`-th time is offered again. */
export function retryDelayMs(pool: TaskPool): number {
  if (!pool.retryDelaySecs) return 0;
  return Math.min(LEASE_LIMITS.retryDelayMaxSecs, pool.retryDelaySecs * 2 ** Math.min(20, Math.max(0, pool.attempt - 1))) * 1000;
}

const CANDIDATES = 16;
/** A claim moves its task within milliseconds of taking the lease; a lease this old that its task
 *  does not name was left by a crash in between. */
const STRAY_AFTER_MS = 30_000;

export class PoolBook {
  constructor(private d: PoolDeps) {}

  /** Whether the caller's account is a member of the pool's room (who may see and claim it). */
  async member(c: Caller, room: string): Promise<boolean> {
    return (await this.d.store.roomsOf(c.account.id)).includes(room);
  }

  /** `task/claim`: the named task, or the oldest on offer in the pool. null: nothing on offer. */
  async claim(c: Caller, req: T.TaskClaimRequest): Promise<T.TaskClaimResponse> {
    const now = this.d.clock.now();
    let candidates: TaskRecord[];
    if (req.task_id) {
      const t = await this.d.store.getTask(req.task_id);
      if (!t) throw new MailError('unknown_task', `no task ${req.task_id}`, { task_id: req.task_id });
      if (!t.pool) throw new MailError('malformed', `task ${t.id} has an assignee: only a task for a room is claimed`, { field: 'task_id', reason: 'not a pooled task' });
      if (!(await this.member(c, t.pool.room)) || c.account.createdAt > t.createdAt)
        throw new MailError('not_task_party', `you are not a member of #${t.pool.room}`, { task_id: t.id });
      if (isTerminal(t.state)) throw new MailError('task_terminal', `task ${t.id} is ${t.state}: it never changes again`, { task_id: t.id, state: t.state });
      candidates = [t];
    } else {
      const room = roomOf(req.pool ?? '');
      if (!room) throw new MailError('malformed', 'pool: a room, #name', { field: 'pool', reason: 'not a room' });
      if (!(await this.member(c, room))) throw new MailError('permission_denied', `you are not a member of #${room}`, { need: 'member', room });
      candidates = await this.d.store.poolTasks({ room, offeredAt: now, limit: CANDIDATES });
    }
    for (const t of candidates) {
      // An account made after the task (a later one of a name) is no party of it: never its holder.
      if (c.account.createdAt > t.createdAt) continue;
      const got = await this.take(c, t, req, now, req.task_id !== undefined);
      if (got) return got;
    }
    return { task: null, lease: null };
  }

  /** One claim attempt; null when another claimant came first (a pool claim tries the next). */
  private async take(c: Caller, t: TaskRecord, req: T.TaskClaimRequest, now: number, named: boolean, retried = false): Promise<T.TaskClaimResponse | null> {
    const pool = t.pool!;
    const offered = t.state === 'submitted' && (pool.availableAt === null || pool.availableAt <= now);
    if (!offered) {
      if (!named) return null;
      if (t.state === 'submitted')
        throw new MailError('invalid_transition', `task ${t.id} is offered again at ${new Date(pool.availableAt ?? now).toISOString()}`, { from: t.state, to: 'working' });
      const holder = pool.leaseId ? await this.d.store.getLease(pool.leaseId) : null;
      throw this.conflict(holder ? [holder] : []);
    }
    const ttl = req.ttl_secs ?? LEASE_LIMITS.ttlDefaultSecs;
    const outcome = await this.d.store.claimLease(
      {
        id: `l-${this.d.newId()}`,
        space: `task:${t.id}`,
        resource: t.id,
        mode: 'exclusive',
        holderAccount: c.account.id,
        holderSession: c.session?.id ?? null,
        holderLineage: c.session?.lineage ?? null,
        holderAddress: callerAddress(c),
        // Not the title: any account may list leases, only the room's members may read its tasks.
        reason: 'pooled task',
        createdAt: now,
        expiresAt: now + ttl * 1000,
        attempt: pool.attempt + 1,
      },
      { now, maxPerHolder: LEASE_LIMITS.perHolder, conflicts: () => true },
    );
    if (outcome.kind === 'too_many') throw new MailError('too_many_leases', `you hold ${outcome.held} leases, the most one session may`, { limit: LEASE_LIMITS.perHolder });
    if (outcome.kind === 'conflict') {
      // A lease no task names, older than any claim in flight (a daemon killed between taking the
      // lease and moving the task): nobody holds the task, so the stray lease goes, once.
      const strays = outcome.holders.filter((h) => h.id !== pool.leaseId && now - h.createdAt > STRAY_AFTER_MS);
      if (strays.length === outcome.holders.length && !retried) {
        for (const h of strays) if (await this.d.store.endLease(h.id, h.epoch, 'released', now)) await this.d.store.settleLease(h.id);
        return this.take(c, t, req, now, named, true);
      }
      if (named) throw this.conflict(outcome.holders);
      return null;
    }
    const lease = outcome.lease;
    const attempt = pool.attempt + 1;
    try {
      const task = await this.d.transition(c, t, 'working', `claimed (attempt ${attempt} of ${pool.maxAttempts})`, t.fromAddress, {
        toAccount: c.account.id,
        toLineage: c.session?.lineage ?? null,
        toAddress: callerAddress(c),
        pool: { ...pool, attempt, availableAt: null, leaseId: lease.id, leaseEpoch: lease.epoch },
      });
      return { task, lease: await this.d.presentLease(lease) };
    } catch (e) {
      // The task changed under the claim (canceled, claimed through a stale read): let the lease go.
      await this.d.store.endLease(lease.id, lease.epoch, 'released', this.d.clock.now());
      await this.d.store.settleLease(lease.id);
      if (!named && e instanceof MailError && e.code === 'invalid_transition') return null;
      throw e;
    }
  }

  private conflict(holders: LeaseRecord[]): MailError {
    return new MailError('lease_conflict', 'another session holds this task', {
      holders: holders.map((h) => ({ holder: h.holderAddress, mode: h.mode, resource: h.resource, expires_at: new Date(h.expiresAt).toISOString() })),
    });
  }

  /** An update or cancel of a pooled task by its holder must name the live lease's epoch. */
  async checkEpoch(t: TaskRecord, epoch: number | undefined): Promise<LeaseRecord> {
    const pool = t.pool!;
    const lease = pool.leaseId ? await this.d.store.getLease(pool.leaseId) : null;
    const live = lease !== null && lease.endedAt === null && lease.expiresAt > this.d.clock.now();
    if (!live || epoch === undefined || epoch !== pool.leaseEpoch || lease.epoch !== epoch)
      throw new MailError('lease_lost', epoch === undefined ? 'a claimed task is updated with its lease epoch' : 'your claim of this task expired or changed hands', {
        lease_id: pool.leaseId ?? '',
      });
    return lease;
  }

  /** After the task ended by its holder's update or its requester's cancel: the lease goes. */
  async ended(t: TaskRecord): Promise<void> {
    const pool = t.pool;
    if (!pool?.leaseId || pool.leaseEpoch === null) return;
    if (await this.d.store.endLease(pool.leaseId, pool.leaseEpoch, 'released', this.d.clock.now())) await this.d.store.settleLease(pool.leaseId);
  }

  /** A lease ended (released, expired, its session's process exited, its account removed): its
   *  task goes back to the pool, or fails after max_attempts. Idempotent: a task no longer held by
   *  this lease is left alone, so recovery after a crash may call it again. */
  async leaseEnded(l: LeaseRecord): Promise<void> {
    if (!l.space.startsWith('task:')) return;
    const t = await this.d.store.getTask(l.resource);
    if (!t?.pool || t.pool.leaseId !== l.id || isTerminal(t.state)) return;
    const mailbox = await this.mailboxCaller();
    const why =
      l.endReason === 'session_ended'
        ? 'its holder’s process ended'
        : l.endReason === 'expired'
          ? 'the claim expired'
          : l.endReason === 'account_removed'
            ? 'its holder was removed'
            : 'released';
    const pool = t.pool;
    const unheld = { toAccount: '', toLineage: null, toAddress: `#${pool.room}` };
    if (t.history.length >= TASK_LIMITS.historyMax) {
      await this.d.transition(mailbox, t, 'failed', `its history is full (${TASK_LIMITS.historyMax} changes): it cannot go back to the pool`, t.fromAddress, {
        ...unheld,
        pool: { ...pool, leaseId: null, leaseEpoch: null },
      });
      return;
    }
    if (pool.attempt >= pool.maxAttempts) {
      await this.d.transition(mailbox, t, 'failed', `lease_exhausted: claimed ${pool.attempt} times without finishing (last: ${why})`, t.fromAddress, {
        ...unheld,
        failReason: 'lease_exhausted',
        pool: { ...pool, leaseId: null, leaseEpoch: null },
      });
      return;
    }
    const delay = retryDelayMs(pool);
    const note = `back in the pool: ${why} (attempt ${pool.attempt} of ${pool.maxAttempts})${delay ? `; offered again in ${Math.round(delay / 1000)} s` : ''}`;
    await this.d.transition(mailbox, t, 'submitted', note, `#${pool.room}`, {
      ...unheld,
      pool: { ...pool, leaseId: null, leaseEpoch: null, availableAt: delay ? this.d.clock.now() + delay : null },
    });
  }

  /** Live claims no task needs any more, as a crash can leave them: a claim of a task that ended
   *  (killed between the end and the lease's end), or one its task does not name, past the time a
   *  claim takes to move its task. Each ends (released), freeing its holder's count at once
   *  rather than at its TTL. Run with the session sweep (every 30 s). */
  async reconcile(): Promise<number> {
    const now = this.d.clock.now();
    let ended = 0;
    for (const l of await this.d.store.listLeases({ spacePrefix: 'task:', now, limit: 10_000 })) {
      const t = await this.d.store.getTask(l.resource);
      const needed = t?.pool?.leaseId === l.id ? !isTerminal(t.state) : now - l.createdAt <= STRAY_AFTER_MS;
      if (needed) continue;
      if (await this.d.store.endLease(l.id, l.epoch, 'released', now)) {
        await this.d.store.settleLease(l.id);
        ended++;
      }
    }
    return ended;
  }

  /** Before an account is removed (which deletes the tasks assigned to it), or when it leaves
   *  `room`: the pooled tasks it holds (of that room) go back to their pools, so they outlive
   *  their holder's membership. */
  async releaseHeldBy(account: string, room?: string): Promise<void> {
    const now = this.d.clock.now();
    const held = await this.d.store.listLeases({ spacePrefix: 'task:', holderAccount: account, now, limit: 10_000 });
    for (const l of held) {
      if (room !== undefined && (await this.d.store.getTask(l.resource))?.pool?.room !== room) continue;
      const ended = await this.d.store.endLease(l.id, l.epoch, 'account_removed', now);
      if (!ended) continue;
      await this.leaseEnded(ended);
      await this.d.store.settleLease(ended.id);
    }
  }

  /** The mailbox posts the pool's notices into the room it serves (it is no member of it). */
  private async mailboxCaller(): Promise<Caller> {
    const account = await this.d.store.getAccount(MAILBOX_ACCOUNT);
    if (!account) throw new MailError('unknown_participant', 'the mailbox account is missing', { participant: MAILBOX_ACCOUNT });
    return { account: { ...account, permissions: { ...account.permissions, operator: true } }, session: null };
  }
}
