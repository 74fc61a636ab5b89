// Leases: an exclusive or shared claim on a named resource, held by one session (or an account
// without one), with a time to live that a renew extends. Leases live in spaces and conflict only
// within one: `path:<root>` (file reservations, globs relative to a repository root) and
// `task:<id>` (a pooled task, claimed through the hook pool.ts registers). The epoch is the
// fencing token: renew and release must name the current one (docs/leases.md).
import { posix } from 'node:path';
import { MailError } from '../wire/errors.js';
import {
  LEASE_LIMITS,
  type LeaseCheckRequest,
  type LeaseCheckResponse,
  type LeaseClaimRequest,
  type LeaseListRequest,
  type LeaseListResponse,
  type LeaseOut,
} from '../wire/leases.js';
import type { LeaseReleaseRequest, LeaseRenewRequest } from '../wire/leases.js';
import type { ReserveClaimRequest } from '../wire/lease-tool.js';
import type { LeaseMode, LeaseRecord, SessionRecord, Store } from '../store/types.js';
import type { Clock } from './clock.js';
import type { Logger } from './log.js';
import { iso } from './present.js';
import { checkGlob, checkPath, globMatches, globPrefix, globsOverlap } from './glob-overlap.js';
import { LeaseEnds, type LeaseEndListener } from './lease-ends.js';
import { callerAddress, type Caller } from './mail-engine.js';

export interface LeaseDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  newId(): string;
  printAll(compacts: Iterable<string>): Promise<Map<string, string>>;
  isLive(s: SessionRecord): boolean;
}

/** What a claim takes: a resource of a space, and which live leases of the space it conflicts
 *  with (pure: decided from the other lease alone). */
export interface LeaseTake {
  space: string;
  resource: string;
  mode: LeaseMode;
  ttlSecs: number;
  reason: string | null;
  /** Which claim of a pooled task this is; 1 otherwise. */
  attempt: number;
  conflicts(other: LeaseRecord): boolean;
}

/** Claims of `t-…` resources: the pool registers it (until then they are not supported). */
export type TaskClaimHook = (c: Caller, req: LeaseClaimRequest) => Promise<LeaseOut>;

const LIST_DEFAULT = 100;
/** Live leases one list or check reads (a space's leases are read once, then filtered here). */
const SCAN = 10_000;
/** Holders a lease_conflict names. */
const HOLDERS_SHOWN = 20;

const lost = (id: string): MailError => new MailError('lease_lost', `lease ${id} is not yours or no longer live: it expired, was released or changed hands`, { lease_id: id });

/** The repository root as a space names it: absolute, `.` and `..` resolved, no trailing `/`. */
export function normaliseRoot(root: string): string {
  if (!root.startsWith('/')) throw new MailError('malformed', 'root: an absolute path (the repository root)', { field: 'root', reason: 'not absolute' });
  const n = posix.normalize(root);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

export class LeaseBook {
  private ends: LeaseEnds;
  private taskClaim: TaskClaimHook | null = null;

  constructor(private d: LeaseDeps) {
    this.ends = new LeaseEnds({ store: d.store, clock: d.clock, log: d.log, isLive: (s) => d.isLive(s) });
  }

  // ---- the engine's lifecycle, and what the pool registers

  /** Settles the leases a crash left unsettled, then sweeps expiries every second. */
  start(): Promise<void> {
    return this.ends.start();
  }

  close(): Promise<void> {
    return this.ends.close();
  }

  /** One expiry sweep now (the timer calls it every second; tests after moving the clock). */
  tick(): Promise<void> {
    return this.ends.tick();
  }

  /** The session sweep found these sessions ended (and looks for holders gone otherwise). */
  async sessionsEnded(sessions: readonly { account: string; id: string }[]): Promise<void> {
    await this.ends.sessionsEnded(sessions);
    await this.ends.sweepHolders();
  }

  /** Called for every lease that ended (released, expired, its session or account gone). */
  onEnded(fn: LeaseEndListener): () => void {
    return this.ends.onEnded(fn);
  }

  registerTaskClaim(hook: TaskClaimHook): void {
    this.taskClaim = hook;
  }

  // ---- the operations

  async claim(c: Caller, req: LeaseClaimRequest): Promise<LeaseOut> {
    if (req.resource.startsWith('t-')) {
      if (!this.taskClaim) throw new MailError('not_supported', 'claims of pooled tasks are not supported yet', { field: 'resource' });
      return this.taskClaim(c, req);
    }
    if (!req.resource.startsWith('path:'))
      throw new MailError('malformed', 'resource: a task id t-… or path:<glob>', { field: 'resource', reason: 'neither a task id nor path:<glob>' });
    if (req.root === undefined) throw new MailError('malformed', 'root: path: leases name the repository root', { field: 'root', reason: 'required' });
    const l = await this.claimPath(c, req.resource.slice('path:'.length), normaliseRoot(req.root), req.mode ?? 'exclusive', req.ttl_secs, req.reason, 'resource');
    return this.presentOne(l);
  }

  /** Several globs of one root claimed together: on a conflict, what it took is released. */
  async claimPaths(c: Caller, req: ReserveClaimRequest): Promise<LeaseListResponse> {
    const root = normaliseRoot(req.root);
    const mode = req.mode ?? 'exclusive';
    req.paths.forEach((g, i) => this.checkGlob(g, `paths.${i}`));
    const taken: LeaseRecord[] = [];
    try {
      for (const [i, g] of req.paths.entries()) taken.push(await this.claimPath(c, g, root, mode, req.ttl_secs, req.reason, `paths.${i}`));
    } catch (err) {
      const now = this.d.clock.now();
      for (const l of taken) {
        const ended = await this.d.store.endLease(l.id, l.epoch, 'released', now);
        if (ended) await this.ends.settle([ended]);
      }
      throw err;
    }
    const names = await this.d.printAll(taken.map((l) => l.holderAddress));
    return { leases: taken.map((l) => this.present(l, names)) };
  }

  async renew(c: Caller, req: LeaseRenewRequest): Promise<LeaseOut> {
    await this.owned(c, req.lease_id);
    const now = this.d.clock.now();
    const l = await this.d.store.renewLease(req.lease_id, req.epoch, now + (req.ttl_secs ?? LEASE_LIMITS.ttlDefaultSecs) * 1000, now);
    if (!l) throw lost(req.lease_id);
    return this.presentOne(l);
  }

  async release(c: Caller, req: LeaseReleaseRequest): Promise<LeaseOut> {
    await this.owned(c, req.lease_id);
    const l = await this.d.store.endLease(req.lease_id, req.epoch, 'released', this.d.clock.now());
    if (!l) throw lost(req.lease_id);
    await this.ends.settle([l]);
    return this.presentOne(l);
  }

  /** Live leases: any account may see them (coordinating needs it), holders printed. */
  async list(_c: Caller, req: LeaseListRequest): Promise<LeaseListResponse> {
    const limit = req.limit ?? LIST_DEFAULT;
    const prefix = req.resource_prefix ?? '';
    const slash = req.holder?.indexOf('/') ?? -1;
    const holderAccount = req.holder === undefined ? undefined : slash < 0 ? req.holder : req.holder.slice(0, slash);
    const space =
      req.root !== undefined
        ? { space: `path:${normaliseRoot(req.root)}` }
        : prefix.startsWith('path:')
          ? { spacePrefix: 'path:' }
          : prefix.startsWith('t-')
            ? { spacePrefix: `task:${prefix}` }
            : {};
    // Exactly what the store can select needs no second look; anything else is filtered here.
    const exact = (prefix === '' || prefix === 'path:' || prefix.startsWith('t-')) && slash < 0;
    const rows = await this.d.store.listLeases({ ...space, ...(holderAccount !== undefined ? { holderAccount } : {}), now: this.d.clock.now(), limit: exact ? limit : SCAN });
    const names = await this.d.printAll(rows.map((l) => l.holderAddress));
    const out = rows
      .map((l) => this.present(l, names))
      .filter((o, i) => o.resource.startsWith(prefix) && (slash < 0 || o.holder === req.holder || sessionNamed(rows[i]!.holderAddress, req.holder!)));
    return { leases: out.slice(0, limit) };
  }

  /** The guard's question: which of these paths another session holds exclusively. One read of
   *  the space's live leases; a path is tested only against globs whose fixed start it has. */
  async check(c: Caller, req: LeaseCheckRequest): Promise<LeaseCheckResponse> {
    const root = normaliseRoot(req.root);
    req.paths.forEach((p, i) => {
      const problem = checkPath(p);
      if (problem) throw new MailError('malformed', `paths.${i}: ${problem}`, { field: `paths.${i}`, reason: problem });
    });
    const others = (await this.d.store.listLeases({ space: `path:${root}`, now: this.d.clock.now(), limit: SCAN })).filter((l) => l.mode === 'exclusive' && !this.isOwn(c, l));
    if (others.length === 0) return { conflicts: [] };
    // Every path a glob matches starts with its prefix: most paths are ruled out by one startsWith.
    const globs = others.map((l) => ({ l, start: globPrefix(l.resource) }));
    const hits: { path: string; lease: LeaseRecord }[] = [];
    for (const path of req.paths) {
      // One holder per path is enough to refuse a commit (the oldest lease: the store's order).
      const g = globs.find((x) => path.startsWith(x.start) && globMatches(x.l.resource, path));
      if (g) hits.push({ path, lease: g.l });
    }
    const names = await this.d.printAll(hits.map((h) => h.lease.holderAddress));
    return { conflicts: hits.map((h) => ({ path: h.path, lease: this.present(h.lease, names) })) };
  }

  // ---- for the pool (engine/pool.ts) and the operations above

  /** Claims a resource for the caller (its session, or its account without one); throws
   *  lease_conflict naming the holders, or too_many_leases. */
  async take(c: Caller, t: LeaseTake): Promise<LeaseRecord> {
    const now = this.d.clock.now();
    const r = await this.d.store.claimLease(
      {
        id: `l-${this.d.newId()}`,
        space: t.space,
        resource: t.resource,
        mode: t.mode,
        holderAccount: c.account.id,
        holderSession: c.session?.id ?? null,
        holderLineage: c.session?.lineage ?? null,
        holderAddress: callerAddress(c),
        reason: t.reason,
        createdAt: now,
        expiresAt: now + t.ttlSecs * 1000,
        attempt: t.attempt,
      },
      { now, maxPerHolder: LEASE_LIMITS.perHolder, conflicts: (o) => t.conflicts(o) },
    );
    if (r.kind === 'claimed') return r.lease;
    if (r.kind === 'too_many')
      throw new MailError('too_many_leases', `you hold ${r.held} live leases, the most one holder may: release some first`, { limit: LEASE_LIMITS.perHolder });
    const shown = r.holders.slice(0, HOLDERS_SHOWN);
    const names = await this.d.printAll(shown.map((l) => l.holderAddress));
    const holders = shown.map((l) => {
      const o = this.present(l, names);
      return { holder: o.holder, mode: o.mode, resource: o.resource, expires_at: o.expires_at, ...(o.reason !== undefined ? { reason: o.reason } : {}) };
    });
    const who = holders.map((h) => `${h.holder} (${h.mode} ${h.resource} until ${h.expires_at}${h.reason !== undefined ? `: ${h.reason}` : ''})`).join('; ');
    throw new MailError('lease_conflict', `${t.space.startsWith('path:') ? `path:${t.resource}` : t.resource} is held by ${who}`, { holders });
  }

  /** A lease as answers show it: the printed holder, `path:<glob>` and its root, ISO expiry. */
  present(l: LeaseRecord, printed?: Map<string, string>): LeaseOut {
    const path = l.space.startsWith('path:');
    return {
      lease_id: l.id,
      resource: path ? `path:${l.resource}` : l.resource,
      ...(path ? { root: l.space.slice('path:'.length) } : {}),
      holder: printed?.get(l.holderAddress) ?? l.holderAddress,
      mode: l.mode,
      ...(l.reason !== null ? { reason: l.reason } : {}),
      expires_at: iso(l.expiresAt),
      epoch: l.epoch,
      attempt: l.attempt,
    };
  }

  /** One lease with its holder printed. */
  async presentOne(l: LeaseRecord): Promise<LeaseOut> {
    return this.present(l, await this.d.printAll([l.holderAddress]));
  }

  /** The caller holds it: its session, or its account for a lease taken without a session. */
  isHolder(c: Caller, l: LeaseRecord): boolean {
    return l.holderAccount === c.account.id && (l.holderSession === null || l.holderSession === c.session?.id);
  }

  private checkGlob(glob: string, field: string): void {
    const bytes = Buffer.byteLength(glob, 'utf8');
    if (bytes > LEASE_LIMITS.globBytes)
      throw new MailError('too_large', `${field} is over its limit of ${LEASE_LIMITS.globBytes}`, { field, limit: LEASE_LIMITS.globBytes, actual: bytes });
    const problem = checkGlob(glob);
    if (problem) throw new MailError('malformed', `${field}: not a glob: ${problem}`, { field, reason: problem });
  }

  private claimPath(c: Caller, glob: string, root: string, mode: LeaseMode, ttlSecs: number | undefined, reason: string | undefined, field: string): Promise<LeaseRecord> {
    this.checkGlob(glob, field);
    return this.take(c, {
      space: `path:${root}`,
      resource: glob,
      mode,
      ttlSecs: ttlSecs ?? LEASE_LIMITS.ttlDefaultSecs,
      reason: reason ?? null,
      attempt: 1,
      conflicts: (o) => globsOverlap(glob, o.resource) && !(mode === 'shared' && o.mode === 'shared'),
    });
  }

  /** Renew and release: someone else's lease is as lost as an expired one (nothing is revealed). */
  private async owned(c: Caller, id: string): Promise<LeaseRecord> {
    const l = await this.d.store.getLease(id);
    if (!l || !this.isHolder(c, l)) throw lost(id);
    return l;
  }

  /** The caller's own reservations, which its commits may touch: its session's, or for a caller
   *  without a session its account's taken without one. */
  private isOwn(c: Caller, l: LeaseRecord): boolean {
    return l.holderAccount === c.account.id && l.holderSession === (c.session?.id ?? null);
  }
}

/** `account/s-<hex prefix>` names the session whose compact address it starts. */
function sessionNamed(compact: string, holder: string): boolean {
  return holder === compact || (/\/s-[0-9a-f]{8,}$/.test(holder) && compact.startsWith(holder));
}
