// People in the browser: the operator's routes that create human accounts and manage their
// passwords and logins, and the browser door's own request shapes (/web/api/*).
import { z } from 'zod';
import { LIMITS } from './limits.js';
import { Selector, text } from './fields.js';
import { isWellFormed, utf8Bytes } from './text.js';
import { AccountOut } from './admin.js';
import { MessageOut } from './ops.js';
import { TeamShowResponse } from './teams.js';

export const PASSWORD_MIN_CHARS = 8;
export const PASSWORD_MAX_BYTES = 1024;

/** Any well-formed string up to `limit` bytes. Not `text()`: a password is never shown, so the
 *  line rules (no bidi marks, invisible or control characters) would only keep out a person whose
 *  password has one. */
const secret = (limit: number) =>
  z.string().superRefine((s, ctx) => {
    if (!isWellFormed(s)) ctx.addIssue({ code: 'custom', message: 'not valid Unicode text (lone surrogate)' });
    const n = utf8Bytes(s);
    if (n > limit) ctx.addIssue({ code: 'custom', message: `over the limit of ${limit} bytes`, params: { m4a: 'too_large', limit, actual: n } });
  });

export const Password = secret(PASSWORD_MAX_BYTES)
  .refine((s) => [...s].length >= PASSWORD_MIN_CHARS, { message: `at least ${PASSWORD_MIN_CHARS} characters` })
  .describe(`${PASSWORD_MIN_CHARS} characters to ${PASSWORD_MAX_BYTES} bytes; hashed with argon2id, never stored`);

export const UserCreateRequest = z.strictObject({
  id: Selector,
  display_name: text(LIMITS.labelBytes).optional().describe('shown beside the address (default: the id)'),
  password: Password,
  operator: z.boolean().optional().describe('the person may also manage accounts, rooms and listeners in the browser'),
});
export const UserPasswordRequest = z.strictObject({ id: Selector, password: Password });
export const UserIdRequest = z.strictObject({ id: Selector });

export const UserCreateResponse = z.object({ account: AccountOut });
export const UserRevokeResponse = z.object({ revoked: z.number().int().describe('browser logins ended') });

/** POST /web/api/login: the only browser request without a login. */
export const LoginRequest = z.strictObject({ account: Selector, password: secret(PASSWORD_MAX_BYTES) });
export const LoginResponse = z.object({
  account: z.string(),
  label: z.string(),
  operator: z.boolean(),
  csrf: z.string().describe('send as X-M4A-CSRF on every later request of this login'),
});

/** The operator's overview shows each team with this many of its latest changes. */
export const WEB_TEAM_CHANGES = 5;

export const WebMeResponse = z.object({
  account: z.string(),
  label: z.string(),
  operator: z.boolean(),
  unread: z.number().int(),
  teams: z.array(z.string()).describe('the teams the person is a member of: compose offers team:NAME and leader:NAME'),
});
export const WebInboxRequest = z.strictObject({ after: z.string().max(64).nullable().optional(), wait_secs: z.number().finite().min(0).optional() });
export const WebInboxResponse = z.object({
  messages: z.array(MessageOut),
  next_cursor: z.string().nullable(),
  unread: z.number().int(),
  truncated: z.boolean().optional().describe('the walk to the newest mail stopped early'),
});
export const WebOverviewResponse = z.object({
  accounts: z.array(AccountOut),
  rooms: z.array(z.object({ name: z.string(), everyone: z.boolean(), open: z.boolean(), members: z.array(z.string()) })),
  teams: z.array(TeamShowResponse).describe(`every team with its leaders, grants and latest ${WEB_TEAM_CHANGES} changes, newest first`),
  listeners: z.record(z.string(), z.string()),
  wake: z.array(z.unknown()),
});

export type WebMeResponse = z.infer<typeof WebMeResponse>;
export type WebInboxResponse = z.infer<typeof WebInboxResponse>;
export type WebOverviewResponse = z.infer<typeof WebOverviewResponse>;
export type UserCreateRequest = z.output<typeof UserCreateRequest>;
export type UserPasswordRequest = z.output<typeof UserPasswordRequest>;
export type LoginRequest = z.output<typeof LoginRequest>;
export type LoginResponse = z.infer<typeof LoginResponse>;
