// Field schemas with byte limits. A limit failure is a custom issue carrying {m4a:'too_large'}
// so that toMailError can name it too_large {field, limit, actual} rather than malformed.
import { z } from 'zod';
import { LIMITS } from './limits.js';
import { isWellFormed, selectorProblem, unsafeChar, utf8Bytes } from './text.js';
import { parseCompactAddress, type Address } from './address.js';

type Ctx = z.core.$RefinementCtx<string>;

function tooLarge(ctx: Ctx, limit: number, actual: number): void {
  ctx.addIssue({ code: 'custom', message: `over the limit of ${limit} bytes`, params: { m4a: 'too_large', limit, actual } });
}

function checkText(s: string, ctx: Ctx, limit: number, kind: 'line' | 'body'): void {
  if (!isWellFormed(s)) ctx.addIssue({ code: 'custom', message: 'not valid Unicode text (lone surrogate)' });
  const n = utf8Bytes(s);
  if (n > limit) return tooLarge(ctx, limit, n);
  const bad = unsafeChar(s, kind);
  if (bad) ctx.addIssue({ code: 'custom', message: bad.reason, params: { code_point: bad.codePoint } });
}

/** Single-line text (subjects, labels, display names, declared fields, notes, URLs, arguments):
 *  no control characters, line or paragraph separators, bidi controls or invisible characters. */
export const text = (limit: number) => z.string().superRefine((s, ctx) => checkText(s, ctx, limit, 'line'));

export const Subject = text(LIMITS.subjectBytes).describe(`one line, at most ${LIMITS.subjectBytes} bytes`);

export const Body = z
  .string()
  .superRefine((s, ctx) => checkText(s, ctx, LIMITS.bodyBytes, 'body'))
  .describe(`at most ${LIMITS.bodyBytes / 1024} KiB`);

export const Selector = z
  .string()
  .superRefine((s, ctx) => {
    const n = utf8Bytes(s);
    if (n > LIMITS.selectorBytes) return tooLarge(ctx, LIMITS.selectorBytes, n);
    const p = selectorProblem(s);
    if (p) ctx.addIssue({ code: 'custom', message: p });
  })
  .describe(`[A-Za-z0-9._@+-], at most ${LIMITS.selectorBytes} bytes`);

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

export const MessageId = z
  .string()
  .regex(/^m-[0-9a-z]{1,64}$/, 'not a message id')
  .describe('message id, m-…');

/** A send without `to` is most often a model that meant to reply: say how. */
function missingTo(iss: { input?: unknown }): string | undefined {
  return iss.input === undefined ? "required; to reply, use m4a_mail_reply or set to to the message's from" : undefined;
}

/** How an address is written, said once for every schema that takes one. */
const ADDRESS_RULE = 'codex (account), codex/web-ui or codex/@alias (session), #room, team:NAME, leader:NAME, email:ADDR: any address you were shown';

const TaggedAddress = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('direct'), participant: Selector }),
  z.strictObject({ kind: z.literal('session'), participant: Selector, session: Selector }),
  z.strictObject({ kind: z.literal('room'), room: Selector }),
  z.strictObject({ kind: z.literal('team'), team: Selector }),
  z.strictObject({ kind: z.literal('leader'), team: Selector }),
  z.strictObject({ kind: z.literal('email'), email: z.string() }),
]);

/** An address in either form; always parsed to the tagged form. Each part of the compact form
 *  (account, session, room) is a selector of at most 128 bytes: longer is too_large, never unknown. */
export const AddressInput = z
  .union([z.string(), TaggedAddress], { error: missingTo })
  .transform((v, ctx): Address => {
    if (typeof v !== 'string' && v.kind !== 'email') return v;
    const r = parseCompactAddress(typeof v === 'string' ? v : `email:${v.email}`);
    if (r.ok) return r.address;
    if (r.tooLarge) ctx.addIssue({ code: 'custom', message: r.reason, params: { m4a: 'too_large', limit: r.tooLarge.limit, actual: r.tooLarge.actual } });
    else ctx.addIssue({ code: 'custom', message: r.reason });
    return z.NEVER;
  })
  .describe(`${ADDRESS_RULE}, or the tagged JSON form; each part at most ${LIMITS.selectorBytes} bytes`);

/** An address as a plain string (the MCP tools' form): the same rule, stated once. */
export const AddressString = z
  .string({ error: missingTo })
  .transform((v, ctx): Address => {
    const r = parseCompactAddress(v);
    if (r.ok) return r.address;
    if (r.tooLarge) ctx.addIssue({ code: 'custom', message: r.reason, params: { m4a: 'too_large', limit: r.tooLarge.limit, actual: r.tooLarge.actual } });
    else ctx.addIssue({ code: 'custom', message: r.reason });
    return z.NEVER;
  })
  .describe(ADDRESS_RULE);
