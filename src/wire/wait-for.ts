// wait_for (docs/email.md): wait for the next message into the caller's scope that matches every
// filter given, with the one-time codes and links read from it (engine/mail-extract.ts).
import { z } from 'zod';
import { text } from './fields.js';
import { MessageOut } from './ops.js';

/** timeout_secs is required: how long a wait parks is the caller's to say (the CLI's --timeout
 *  defaults to 60), so no request parks for a bound it did not choose. */
export const WAIT_FOR_LIMITS = { timeoutSecsMax: 600, filterBytes: 256 } as const;

const MAX = WAIT_FOR_LIMITS.filterBytes;
/** One line of text like every other: over its bound too_large, a refused character named. */
const filter = text(MAX).optional();
const timeoutSecs = z.number().finite().min(0).max(WAIT_FOR_LIMITS.timeoutSecsMax);

export const WaitForRequest = z.strictObject({
  from: filter.describe(`the sender as printed, or its account; ≤ ${MAX} bytes`),
  subject_contains: filter.describe(`any case; ≤ ${MAX} bytes`),
  body_contains: filter.describe(`any case; ≤ ${MAX} bytes`),
  timeout_secs: timeoutSecs.describe('how long to wait'),
});

export const WaitForResponse = z.object({
  message: MessageOut.nullable().describe('null: timed out'),
  codes: z.array(z.string()).describe('one-time codes'),
  links: z.array(z.string()).describe('verification links first'),
});

export type WaitForRequest = z.output<typeof WaitForRequest>;
export type WaitForResponse = z.infer<typeof WaitForResponse>;
