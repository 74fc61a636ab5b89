// What `m4a guard check` asks the daemon, and how: no single path may spoil the question for the
// others. A path the request schema would refuse is left out before asking (the schema's own
// rule, not a copy of it); the rest go in batches under the daemon's count and body limits. A
// batch the daemon refuses leaves only that batch unchecked: a refusal naming one path is asked
// again without it, once, and one refused as too much is asked again in halves.
import { MailError } from '../wire/errors.js';
import { LEASE_LIMITS, LeaseCheckRequest, type LeaseCheckResponse } from '../wire/leases.js';
import { LIMITS } from '../wire/limits.js';
import { utf8Bytes } from '../wire/text.js';

/** Body bytes one check may take: well under the daemon's request cap (LIMITS.requestBodyBytes). */
export const BATCH_BYTES = Math.min(900 * 1024, LIMITS.requestBodyBytes - 64 * 1024);

const PATH = LeaseCheckRequest.shape.paths.element;

/** Splits paths into those the daemon's schema accepts and those it refuses (with its reason). */
export function askable(paths: string[]): { asked: string[]; leftOut: { path: string; reason: string }[] } {
  const asked: string[] = [];
  const leftOut: { path: string; reason: string }[] = [];
  for (const path of paths) {
    const r = PATH.safeParse(path);
    if (r.success) asked.push(path);
    else leftOut.push({ path, reason: r.error.issues[0]?.message ?? 'refused' });
  }
  return { asked, leftOut };
}

/** Consecutive batches of at most `maxPaths` paths whose request body (as the client writes it,
 *  JSON.stringify) stays within `maxBytes`. One path always fits: paths and root are capped far
 *  below it. */
export function batches(root: string, paths: string[], maxPaths: number = LEASE_LIMITS.checkPaths, maxBytes: number = BATCH_BYTES): string[][] {
  const base = utf8Bytes(JSON.stringify({ root, paths: [] }));
  const out: string[][] = [];
  let cur: string[] = [];
  let bytes = base;
  for (const p of paths) {
    const cost = utf8Bytes(JSON.stringify(p)); // and a comma after the first
    if (cur.length > 0 && (cur.length >= maxPaths || bytes + 1 + cost > maxBytes)) {
      out.push(cur);
      cur = [];
      bytes = base;
    }
    bytes += cost + (cur.length > 0 ? 1 : 0);
    cur.push(p);
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

export type Conflicts = LeaseCheckResponse['conflicts'];

export interface Asked {
  conflicts: Conflicts;
  /** Paths sent and answered. */
  checked: number;
  /** Paths in batches the daemon refused or never answered (and paths a refusal named). */
  unchecked: number;
  /** The first failure, for the warning. */
  failure?: unknown;
}

/** A refusal about this request's content: another batch may well be answered. Anything else
 *  (no answer, a timeout, bad credentials) would meet the next batch too, so asking stops. */
const aboutRequest = (err: unknown): err is MailError => err instanceof MailError && (err.code === 'malformed' || err.code === 'too_large');

/** The index of the path a refusal names (`paths.N`), if it is one of `batch`. */
function namedPath(err: unknown, batch: string[]): number | null {
  if (!aboutRequest(err)) return null;
  const m = /^paths\.(\d+)$/.exec(typeof err.details.field === 'string' ? err.details.field : '');
  const i = m ? Number(m[1]) : -1;
  return i >= 0 && i < batch.length ? i : null;
}

/** How often a batch refused as too much work (too_large, no path named) is halved and asked
 *  again: at most 2^3 pieces of it. */
export const MAX_SPLITS = 3;

interface Batch {
  paths: string[];
  splits: number;
  retried: boolean;
}

/** Asks about every path, batch by batch, and gathers every conflict any batch found. */
export async function askAll(check: (req: LeaseCheckRequest) => Promise<LeaseCheckResponse>, root: string, paths: string[]): Promise<Asked> {
  const out: Asked = { conflicts: [], checked: 0, unchecked: 0 };
  const queue: Batch[] = batches(root, paths).map((p) => ({ paths: p, splits: 0, retried: false }));
  let stopped = false;
  for (let b = queue.shift(); b !== undefined; b = queue.shift()) {
    if (stopped) {
      out.unchecked += b.paths.length;
      continue;
    }
    try {
      out.conflicts.push(...(await check({ root, paths: b.paths })).conflicts);
      out.checked += b.paths.length;
    } catch (err) {
      const i = b.retried ? null : namedPath(err, b.paths);
      if (i !== null) {
        // The daemon refused one path by a rule of its own beyond the schema: that one is not
        // checked, the others are asked again without it (once: a second refusal stands).
        out.failure ??= err;
        out.unchecked += 1;
        const rest = b.paths.filter((_, j) => j !== i);
        if (rest.length > 0) queue.unshift({ ...b, paths: rest, retried: true });
        continue;
      }
      if (aboutRequest(err) && err.code === 'too_large' && b.splits < MAX_SPLITS && b.paths.length > 1) {
        // Too much for one request (the body, or the daemon's work budget): the halves may not be.
        const h = Math.ceil(b.paths.length / 2);
        queue.unshift({ ...b, paths: b.paths.slice(0, h), splits: b.splits + 1 }, { ...b, paths: b.paths.slice(h), splits: b.splits + 1 });
        continue;
      }
      out.failure ??= err;
      out.unchecked += b.paths.length;
      if (!aboutRequest(err)) stopped = true;
    }
  }
  return out;
}
