// wait_for (docs/email.md): wait for the next message into the caller's scope that matches every
// filter given, with the one-time codes and links read from it (engine/mail-extract.ts).
import { z } from 'zod';
import { MessageOut } from './ops.js';

/** timeout_secs is required: how long a wait parks is the caller's to say (the CLI's --timeout
 *  defaults to 60), so no request parks for a bound it did not choose. */
export const WAIT_FOR_LIMITS = { timeoutSecsMax: 600, filterChars: 256 } as const;

const MAX = WAIT_FOR_LIMITS.filterChars;
/** Over its bound is too_large (validate.ts reads the params), like every other length limit. */
const filter = z
  .string()
  .superRefine((s, ctx) => {
    if (s.length > MAX) ctx.addIssue({ code: 'custom', message: `at most ${MAX} characters`, params: { m4a: 'too_large', limit: MAX, actual: s.length } });
  })
  .optional();
const timeoutSecs = z.number().finite().min(0).max(WAIT_FOR_LIMITS.timeoutSecsMax);

export const WaitForRequest = z.strictObject({
  from: filter.describe(`the sender as printed, or its account; ≤ ${MAX} characters`),
  subject_contains: filter.describe(`any case; ≤ ${MAX} characters`),
  body_contains: filter.describe(`any case; ≤ ${MAX} characters`),
  timeout_secs: timeoutSecs.describe('how long to wait'),
});

export const WaitForResponse = z.object({
  message: MessageOut.nullable().describe('null: timed out'),
  codes: z.array(z.string()).describe('one-time codes'),
  links: z.array(z.string()).describe('verification links first'),
});

export type WaitForRequest = z.output<typeof WaitForRequest>;
export type WaitForResponse = z.infer<typeof WaitForResponse>;
