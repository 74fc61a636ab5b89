// Leases: an exclusive or shared claim on a named resource, held by one session (or an account
// without one), with a time to live that a renew extends. Leases live in spaces and conflict only
// within one: `path:<root>` (file reservations, globs relative to a repository root) and
// `task:<id>` (a pooled task, claimed through the hook pool.ts registers). The epoch is the
// fencing token: renew and release must name the current one (docs/leases.md).
import { posix } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
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
import { checkPath, compiledGlob, compiledOverlap, globPrefix, globProblem } from './glob-overlap.js';
import { globMatcher, matchPrepared, preparePath } from './glob-match.js';
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
/** Live leases one read of a space takes: more than LEASE_LIMITS.perSpace, so a check, a claim or
 *  a list of one root sees every live lease of it, even one claims racing past the cap added. A
 *  list across roots reads at most this many. */
const SCAN = 10_000;
/** A check or a claim gives the event loop back after this much matching work (a few ms), or
 *  this many paths: one request cannot hold the daemon for the others. */
const SLICE_STEPS = 250_000;
const SLICE_PATHS = 256;
/** Overlap work a claim may do inside the store's transaction, for leases claimed after its
 *  walks ran (claims racing it): past it such a lease counts as a conflict, so a burst of
 *  costly claims cannot hold the transaction; a retry decides it outside. */
const LATE_STEPS = 100_000;
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
   *  the space's live leases (all of them: the space is capped), each glob compiled once and each
   *  path split once; a path is tested only against globs whose fixed start it has. The loop is
   *  given back every SLICE_PATHS paths or SLICE_STEPS of work, and past LEASE_LIMITS.checkSteps
   *  the check is refused (too_large): the guard then warns and lets the commit go on. */
  async check(c: Caller, req: LeaseCheckRequest): Promise<LeaseCheckResponse> {
    const root = normaliseRoot(req.root);
    req.paths.forEach((p, i) => {
      const problem = checkPath(p);
      if (problem) throw new MailError('malformed', `paths.${i}: ${problem}`, { field: `paths.${i}`, reason: problem });
    });
    const others = (await this.d.store.listLeases({ space: `path:${root}`, now: this.d.clock.now(), limit: SCAN })).filter((l) => l.mode === 'exclusive' && !this.isOwn(c, l));
    if (others.length === 0) return { conflicts: [] };
    // Every path a glob matches starts with its prefix: most paths are ruled out by one startsWith.
    const globs = others.map((l) => ({ l, start: globPrefix(l.resource), m: globMatcher(l.resource) }));
    const hits: { path: string; lease: LeaseRecord }[] = [];
    const work = { steps: 0 };
    const limit = LEASE_LIMITS.checkSteps;
    let given = 0;
    for (const [i, path] of req.paths.entries()) {
      if (i % SLICE_PATHS === SLICE_PATHS - 1) {
        given = work.steps;
        await nextTurn();
      }
      const p = preparePath(path)!; // checkPath refused empty segments
      work.steps += path.length;
      // One holder per path is enough to refuse a commit (the oldest lease: the store's order).
      for (const g of globs) {
        work.steps++;
        const hit = path.startsWith(g.start) && matchPrepared(g.m, p, work);
        if (work.steps > limit)
          throw new MailError(
            'too_large',
            `paths: matching them against the ${globs.length} reservations of ${root} is over the work one check may do (${limit} steps): ask about fewer paths at a time`,
            {
              field: 'paths',
              limit,
              actual: work.steps,
            },
          );
        if (work.steps - given >= SLICE_STEPS) {
          given = work.steps;
          await nextTurn();
        }
        if (hit) {
          hits.push({ path, lease: g.l });
          break;
        }
      }
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
    const problem = globProblem(glob);
    if (!problem) return;
    if (problem.over) throw new MailError('too_large', `${field}: ${problem.reason}`, { field, limit: problem.over.limit, actual: problem.over.actual });
    throw new MailError('malformed', `${field}: not a glob: ${problem.reason}`, { field, reason: problem.reason, ...(problem.codePoint ? { code_point: problem.codePoint } : {}) });
  }

  /** A file reservation: the caps of the space and the account, then the claim, its overlaps
   *  with the space's live leases decided beforehand (see below). */
  private async claimPath(c: Caller, glob: string, root: string, mode: LeaseMode, ttlSecs: number | undefined, reason: string | undefined, field: string): Promise<LeaseRecord> {
    this.checkGlob(glob, field);
    const space = `path:${root}`;
    // The store counts the session's leases exactly, in its transaction. The root's and the
    // account's caps are counted here, from reads before it: best-effort under races (claims
    // in flight together may pass a cap together, by as many as race), which the read of a
    // space leaves room for (SCAN is far above perSpace).
    const now = this.d.clock.now();
    const live = await this.d.store.listLeases({ space, now, limit: SCAN });
    this.capped(live.length, LEASE_LIMITS.perSpace, `${root} has`);
    const held = await this.d.store.listLeases({ spacePrefix: 'path:', holderAccount: c.account.id, now, limit: LEASE_LIMITS.perAccount });
    this.capped(held.length, LEASE_LIMITS.perAccount, "your account's sessions hold");
    // Overlap is decided here, giving the event loop back between leases, not in the store's
    // transaction (which would hold every other write for the walks); the transaction looks
    // the answers up by lease id.
    const mine = compiledGlob(glob);
    const decided = new Map<string, boolean>();
    const work = { steps: 0, limit: LEASE_LIMITS.claimSteps };
    let given = 0;
    for (const o of live) {
      if (mode === 'shared' && o.mode === 'shared') continue;
      const overlap = compiledOverlap(mine, compiledGlob(o.resource), work);
      if (overlap === undefined)
        throw new MailError(
          'too_large',
          `${field}: comparing it with the ${live.length} reservations of ${root} is over the work one claim may do (${work.limit} steps): claim a simpler glob`,
          {
            field,
            limit: work.limit,
            actual: work.steps,
          },
        );
      decided.set(o.id, overlap);
      if (work.steps - given >= SLICE_STEPS) {
        given = work.steps;
        await nextTurn();
      }
    }
    const late = { steps: 0, limit: LATE_STEPS };
    const conflicts = (o: LeaseRecord): boolean => {
      if (mode === 'shared' && o.mode === 'shared') return false;
      return decided.get(o.id) ?? compiledOverlap(mine, compiledGlob(o.resource), late) ?? true;
    };
    return await this.take(c, {
      space,
      resource: glob,
      mode,
      ttlSecs: ttlSecs ?? LEASE_LIMITS.ttlDefaultSecs,
      reason: reason ?? null,
      attempt: 1,
      conflicts,
    });
  }

  /** too_many_leases when `count` live file reservations reach `limit`. */
  private capped(count: number, limit: number, who: string): void {
    if (count >= limit) throw new MailError('too_many_leases', `${who} ${limit} live file reservations, the most allowed: release some first`, { limit });
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
