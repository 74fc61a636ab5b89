// Leases: an exclusive or shared claim on a named resource (a pooled task, or files of a
// repository as a glob), held by one session, with a time to live that a renew extends and an
// expiry that hands it back. The epoch is the fencing token: it grows every time the resource is
// claimed, so a holder whose lease expired cannot act with it (docs/leases.md).
import { z } from 'zod';
import { text } from './fields.js';
import { utf8Bytes } from './text.js';

export const LEASE_LIMITS = {
  ttlDefaultSecs: 15 * 60,
  ttlMinSecs: 10,
  ttlMaxSecs: 8 * 3600,
  /** Live leases one session (or one account without a session) holds. */
  perHolder: 64,
  /** Live file reservations one account holds across all its sessions and roots. */
  perAccount: 256,
  /** Live file reservations of one root: a check or list of the root reads every one of them. */
  perSpace: 1024,
  reasonBytes: 512,
  /** A glob, as written after `path:`. */
  globBytes: 1024,
  /** `/`-separated segments of a glob, and its wildcards (`*`, `**`, `?`, `[…]`): what a match
   *  costs grows with them. */
  globSegments: 32,
  globWildcards: 16,
  rootBytes: 4096,
  listMax: 500,
  /** Paths one guard check asks about. */
  checkPaths: 10_000,
  pathBytes: 4096,
  /** Work one check may do (a path screened against a reservation, a character or segment
   *  compared), and one claim (states of the walks that decide overlap with the root's live
   *  leases): past it the request is refused too_large, field `paths` or `resource`. */
  checkSteps: 50_000_000,
  claimSteps: 20_000_000,
  /** Pooled tasks: claims before a task fails with lease_exhausted, and the backoff's cap. */
  maxAttemptsDefault: 3,
  maxAttemptsMax: 100,
  retryDelayMaxSecs: 3600,
} as const;

export const LeaseId = z
  .string()
  .regex(/^l-[0-9a-z]{1,64}$/, 'not a lease id')
  .describe('lease id, l-…');

export const TtlSecs = z
  .number()
  .int()
  .min(LEASE_LIMITS.ttlMinSecs)
  .max(LEASE_LIMITS.ttlMaxSecs)
  .describe(`seconds, ${LEASE_LIMITS.ttlMinSecs} to ${LEASE_LIMITS.ttlMaxSecs}; default ${LEASE_LIMITS.ttlDefaultSecs}`);

export const LeaseMode = z.enum(['exclusive', 'shared']);

/** `t-…` (a pooled task) or `path:<glob>` (files under `root`). The limit is in UTF-8 bytes of
 *  the glob (of the whole resource otherwise), as the engine counts them: one too_large. */
export const LeaseResource = z
  .string()
  .min(1)
  .superRefine((s, ctx) => {
    const n = utf8Bytes(s.startsWith('path:') ? s.slice('path:'.length) : s);
    const limit = LEASE_LIMITS.globBytes;
    if (n > limit) ctx.addIssue({ code: 'custom', message: `over the limit of ${limit} bytes`, params: { m4a: 'too_large', limit, actual: n } });
  })
  .describe(
    `a task id t-…, or path:<glob> relative to root (at most ${LEASE_LIMITS.globBytes} bytes, ${LEASE_LIMITS.globSegments} segments, ${LEASE_LIMITS.globWildcards} wildcards)`,
  );

const Root = text(LEASE_LIMITS.rootBytes).describe('path: leases: the repository root (absolute)');

export const LeaseClaimRequest = z.strictObject({
  resource: LeaseResource,
  root: Root.optional(),
  mode: LeaseMode.optional().describe('default exclusive'),
  ttl_secs: TtlSecs.optional(),
  reason: text(LEASE_LIMITS.reasonBytes).optional(),
});

export const LeaseRenewRequest = z.strictObject({ lease_id: LeaseId, epoch: z.number().int().min(1), ttl_secs: TtlSecs.optional() });
export const LeaseReleaseRequest = z.strictObject({ lease_id: LeaseId, epoch: z.number().int().min(1) });

export const LeaseListRequest = z.strictObject({
  resource_prefix: z
    .string()
    .max(LEASE_LIMITS.globBytes + 5)
    .optional()
    .describe('e.g. path:src/ or t-'),
  root: Root.optional(),
  holder: z.string().max(512).optional().describe('an address: an account, or one session of it'),
  limit: z.number().int().min(1).max(LEASE_LIMITS.listMax).optional(),
});

/** The guard's question: which of these paths (relative to root) another live session holds
 *  exclusively. */
export const LeaseCheckRequest = z.strictObject({
  root: Root,
  paths: z.array(text(LEASE_LIMITS.pathBytes)).max(LEASE_LIMITS.checkPaths),
});

export const LeaseOut = z.object({
  lease_id: z.string(),
  resource: z.string(),
  root: z.string().optional(),
  holder: z.string(),
  mode: LeaseMode,
  reason: z.string().optional(),
  expires_at: z.string(),
  epoch: z.number().int(),
  attempt: z.number().int(),
});

export const LeaseListResponse = z.object({ leases: z.array(LeaseOut) });
export const LeaseCheckResponse = z.object({
  conflicts: z.array(z.object({ path: z.string(), lease: LeaseOut })),
});

/** What lease_conflict lists: who holds the resource and until when. */
export const LeaseHolderOut = z.object({ holder: z.string(), mode: LeaseMode, resource: z.string(), expires_at: z.string(), reason: z.string().optional() });

export type LeaseClaimRequest = z.output<typeof LeaseClaimRequest>;
export type LeaseRenewRequest = z.output<typeof LeaseRenewRequest>;
export type LeaseReleaseRequest = z.output<typeof LeaseReleaseRequest>;
export type LeaseListRequest = z.output<typeof LeaseListRequest>;
export type LeaseCheckRequest = z.output<typeof LeaseCheckRequest>;
export type LeaseOut = z.infer<typeof LeaseOut>;
export type LeaseListResponse = z.infer<typeof LeaseListResponse>;
export type LeaseCheckResponse = z.infer<typeof LeaseCheckResponse>;
export type LeaseHolderOut = z.infer<typeof LeaseHolderOut>;
