// Retention (docs/operations.md "Retention"): per account or room, acknowledged mail older than a
// number of days is deleted; off (keep for ever) unless the operator sets it. The daemon's
// periodic run also prunes old wake records (attempts, claims, surfaced facts).
import { z } from 'zod';
import { Selector } from './fields.js';

/** At most a century: a longer setting is a typo, and off (null) says "for ever". */
export const RETENTION_DAYS_MAX = 36_500;
/** Wake records (attempts, claims, surfaced facts) are kept this many days unless the operator
 *  sets otherwise: `m4a receipts` explains a month of deliveries. */
export const RECORDS_DAYS_DEFAULT = 30;
/** A day at least (no wake of mail that new may be pruned mid-flight), ten years at most. */
export const RECORDS_DAYS_MIN = 1;
export const RECORDS_DAYS_MAX = 3_650;

export const RetentionSetRequest = z.strictObject({
  account: Selector.optional().describe('the account whose direct and session mail the setting covers (or room)'),
  room: Selector.optional().describe('the room whose mail the setting covers (or account)'),
  days: z
    .number()
    .int()
    .min(1)
    .max(RETENTION_DAYS_MAX)
    .nullable()
    .optional()
    .describe('with account or room: delete acknowledged mail older than this many days; null turns retention off'),
  records_days: z
    .number()
    .int()
    .min(RECORDS_DAYS_MIN)
    .max(RECORDS_DAYS_MAX)
    .optional()
    .describe(`prune wake attempts, claims and surfaced facts older than this many days (default ${RECORDS_DAYS_DEFAULT}); alone or with a setting`),
});

export const RetentionSettingOut = z.object({
  account: z.string().optional(),
  room: z.string().optional(),
  days: z.number(),
  set_at: z.string(),
});

export const RetentionSetResponse = z.object({
  account: z.string().optional(),
  room: z.string().optional(),
  days: z.number().nullable().optional(),
  records_days: z.number().optional(),
});

export const RetentionTargetCount = z.object({ account: z.string().optional(), room: z.string().optional(), deleted: z.number() });

/** One run's counts: what the metrics read too. */
export const RetentionRunOut = z.object({
  ran: z.boolean().describe('false: another daemon sharing the store was running it; nothing was done here'),
  by: z.enum(['schedule', 'operator']),
  started_at: z.string(),
  finished_at: z.string(),
  messages_deleted: z.number(),
  records_pruned: z.number(),
  targets: z.array(RetentionTargetCount).describe('each setting and the messages it deleted'),
  records: z.record(z.string(), z.number()).describe('wake records pruned, per kind'),
  records_days: z.number().optional().describe('the age in days past which this run pruned wake records'),
  errors: z.number().describe('settings whose pass failed (logged); tried again at the next run'),
});

export const RetentionListResponse = z.object({
  settings: z.array(RetentionSettingOut),
  records_days: z.number().describe('wake attempts, claims and surfaced facts older than this are pruned'),
  last_run: RetentionRunOut.nullable(),
});

export type RetentionSetRequest = z.output<typeof RetentionSetRequest>;
export type RetentionSettingOut = z.infer<typeof RetentionSettingOut>;
export type RetentionSetResponse = z.infer<typeof RetentionSetResponse>;
export type RetentionRunOut = z.infer<typeof RetentionRunOut>;
export type RetentionListResponse = z.infer<typeof RetentionListResponse>;
