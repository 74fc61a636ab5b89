// Field schemas with byte limits. A limit failure is a custom issue carrying {m4a:'too_large'}
// so that toMailError can name it too_large {field, limit, actual} rather than malformed.
import { z } from 'zod';
import { LIMITS } from './limits.js';
import { hasControl, hasControlExceptNlTab, isWellFormed, selectorProblem, utf8Bytes } from './text.js';
import { parseCompactAddress, type Address } from './address.js';

type Ctx = z.core.$RefinementCtx<string>;

function tooLarge(ctx: Ctx, limit: number, actual: number): void {
  ctx.addIssue({ code: 'custom', message: `over the limit of ${limit} bytes`, params: { m4a: 'too_large', limit, actual } });
}

function checkText(s: string, ctx: Ctx, limit: number, control: (s: string) => boolean, controlMsg: string): void {
  if (!isWellFormed(s)) ctx.addIssue({ code: 'custom', message: 'not valid Unicode text (lone surrogate)' });
  const n = utf8Bytes(s);
  if (n > limit) tooLarge(ctx, limit, n);
  else if (control(s)) ctx.addIssue({ code: 'custom', message: controlMsg });
}

export const text = (limit: number) =>
  z.string().superRefine((s, ctx) => checkText(s, ctx, limit, hasControl, 'control characters are not allowed'));

export const Subject = text(LIMITS.subjectBytes).describe(`at most ${LIMITS.subjectBytes} bytes, no control characters`);

export const Body = z
  .string()
  .superRefine((s, ctx) => checkText(s, ctx, LIMITS.bodyBytes, hasControlExceptNlTab, 'only \\n and \\t are allowed among control characters'))
  .describe(`at most ${LIMITS.bodyBytes} bytes; \\n and \\t are the only control characters allowed`);

export const Selector = z
  .string()
  .superRefine((s, ctx) => {
    const n = utf8Bytes(s);
    if (n > LIMITS.selectorBytes) return tooLarge(ctx, LIMITS.selectorBytes, n);
    const p = selectorProblem(s);
    if (p) ctx.addIssue({ code: 'custom', message: p });
  })
  .describe('[A-Za-z0-9._@+-], at most 128 bytes, not starting with - or ., no ..');

export const Correlation = text(LIMITS.correlationBytes).describe('free string the mailbox never reads');

const HEX = /^[0-9a-f]*$/;
export const Ref = z.strictObject({
  kind: Selector,
  locator: text(LIMITS.refLocatorBytes),
  digest: z
    .string()
    .superRefine((s, ctx) => {
      if (s.length > LIMITS.refDigestBytes) return tooLarge(ctx, LIMITS.refDigestBytes, utf8Bytes(s));
      if (!HEX.test(s)) ctx.addIssue({ code: 'custom', message: 'lowercase hex only' });
    })
    .optional(),
});

export const Refs = z.array(Ref).superRefine((a, ctx) => {
  if (a.length > LIMITS.refsCount)
    ctx.addIssue({ code: 'custom', message: `at most ${LIMITS.refsCount} refs`, params: { m4a: 'too_large', limit: LIMITS.refsCount, actual: a.length } });
});

export const MessageId = z.string().regex(/^m-[0-9a-z]{1,64}$/, 'not a message id').describe('message id, m-…');

const TaggedAddress = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('direct'), participant: Selector }),
  z.strictObject({ kind: z.literal('session'), participant: Selector, session: Selector }),
  z.strictObject({ kind: z.literal('room'), room: Selector }),
]);

/** An address in either form; always parsed to the tagged form. */
export const AddressInput = z
  .union([z.string(), TaggedAddress])
  .transform((v, ctx): Address => {
    if (typeof v !== 'string') return v;
    if (utf8Bytes(v) > 2 * LIMITS.selectorBytes + 2) {
      ctx.addIssue({ code: 'custom', message: 'address too long', params: { m4a: 'too_large', limit: 2 * LIMITS.selectorBytes + 2, actual: utf8Bytes(v) } });
      return z.NEVER;
    }
    const r = parseCompactAddress(v);
    if (!r.ok) {
      ctx.addIssue({ code: 'custom', message: r.reason });
      return z.NEVER;
    }
    return r.address;
  })
  .describe('claude | claude/s-… | #room, or the tagged JSON form');
