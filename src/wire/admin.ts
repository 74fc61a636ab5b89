// Operator registry shapes (/admin/*).
import { z } from 'zod';
import { LIMITS } from './limits.js';
import { Selector, text } from './fields.js';

export const AccountKind = z.enum(['agent', 'human', 'service']);
export const Permissions = z.strictObject({
  send: z.boolean(),
  read: z.boolean(),
  urgent: z.boolean(),
  operator: z.boolean(),
});

export const AccountAddRequest = z.strictObject({
  id: Selector,
  kind: AccountKind.optional(),
  label: text(LIMITS.labelBytes).optional(),
  permissions: Permissions.partial().strict().optional(),
  bind_provider: Selector.optional(),
});
export const AccountIdRequest = z.strictObject({ id: Selector });

export const AccountOut = z.object({
  id: z.string(),
  kind: AccountKind,
  label: z.string(),
  permissions: Permissions,
  bind_provider: z.string().nullable(),
  created_at: z.string(),
});
export const AccountSecretResponse = z.object({ account: AccountOut, secret: z.string().describe('shown once; stored only as a digest') });
export const AccountListResponse = z.object({ accounts: z.array(AccountOut) });

export const RoomRequest = z.strictObject({ name: Selector });
export const RoomAddRequest = z.strictObject({
  name: Selector,
  everyone: z.boolean().optional().describe('every account, present and future, is a member (broadcast)'),
  open: z.boolean().optional().describe('anyone may post, not only members (default: members only)'),
});
export const RoomSetRequest = z.strictObject({ name: Selector, open: z.boolean().describe('true: anyone may post; false: members only') });
export const MemberRequest = z.strictObject({ room: Selector, account: Selector });
export const RoomListResponse = z.object({ rooms: z.array(z.object({ name: z.string(), everyone: z.boolean(), open: z.boolean(), members: z.array(z.string()) })) });
export const RemovedResponse = z.object({ ok: z.literal(true), deleted_messages: z.number().int().describe('messages delivered to it, deleted with it') });

export const ListenerSetRequest = z.strictObject({ account: Selector, url: text(LIMITS.urlBytes) });
export const ListenerRemoveRequest = z.strictObject({ account: Selector });
export const DaemonStopRequest = z.strictObject({ when: z.enum(['now', 'idle']).optional().describe('now (default) or once idle') });
export const OkResponse = z.object({ ok: z.literal(true) });

export type AccountKind = z.infer<typeof AccountKind>;
export type Permissions = z.infer<typeof Permissions>;
export type AccountAddRequest = z.output<typeof AccountAddRequest>;
export type AccountOut = z.infer<typeof AccountOut>;
export type RoomListResponse = z.infer<typeof RoomListResponse>;
export type RemovedResponse = z.infer<typeof RemovedResponse>;
