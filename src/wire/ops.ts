// Request and response shapes of every mail operation. The MCP tool schemas and docs/protocol.md
// are generated from these; unknown fields are refused everywhere (strictObject).
import { z } from 'zod';
import { LIMITS } from './limits.js';
import { AddressInput, Body, Correlation, MessageId, Refs, Selector, Subject, text } from './fields.js';

export const Priority = z.enum(['normal', 'urgent']);

export const SendRequest = z.strictObject({
  to: AddressInput,
  subject: Subject,
  body: Body,
  reply_to: MessageId.optional().describe('the message this answers; threads it'),
  correlation: Correlation.optional(),
  refs: Refs.optional().describe(`at most ${LIMITS.refsCount} {kind, locator, digest?}, stored and returned verbatim`),
  idempotency_key: Selector.optional().describe('a retry with the same key within 24 h returns the original message'),
  priority: Priority.optional().describe('normal (default) or urgent'),
});

export const SendResponse = z.object({
  message_id: z.string(),
  from: z.string().describe('your own session address'),
  thread_id: z.string(),
  to: z.string().describe('where the message went (a reply to an ended session goes to its successor or account)'),
  redirected: z.boolean().describe('true when `to` differs from what was asked'),
  duplicate: z.boolean().describe('true when an idempotency key matched an earlier send'),
  quiet: z.string().optional().describe('present when the loop guard stored the message without waking anyone, and why'),
});

const WaitSecs = z.number().finite().min(0).describe('park until mail arrives, at most 60 s (50 s over MCP); clamped, never refused');

export const InboxRequest = z.strictObject({
  after: z.string().max(64).optional().describe('opaque cursor from next_cursor'),
  limit: z.number().int().min(1).optional().describe(`default ${LIMITS.inboxLimitDefault}, at most ${LIMITS.inboxLimitMax}`),
  include_acked: z.boolean().optional(),
  include_bodies: z.boolean().optional().describe('default true'),
  thread_id: MessageId.optional(),
  wait_secs: WaitSecs.optional(),
});

export const RefOut = z.object({ kind: z.string(), locator: z.string(), digest: z.string().optional() });

export const MessageOut = z.object({
  id: z.string(),
  thread_id: z.string(),
  from: z.string(),
  from_kind: z.enum(['agent', 'human', 'service']).describe('human: written by a person in the browser'),
  to: z.string(),
  subject: z.string(),
  body: z.string().optional(),
  body_truncated: z.boolean().optional(),
  reply_to: z.string().optional(),
  correlation: z.string().optional(),
  refs: z.array(RefOut).optional(),
  priority: Priority,
  created_at: z.string(),
  acked_at: z.string().nullable().describe('when your scope acknowledged it, or null'),
});

export const InboxResponse = z.object({
  messages: z.array(MessageOut),
  next_cursor: z.string().nullable(),
  unread: z.number().int(),
});

export const AckRequest = z
  .strictObject({
    message_id: MessageId.optional(),
    message_ids: z.array(MessageId).min(1).optional(),
  })
  .superRefine((v, ctx) => {
    if ((v.message_id === undefined) === (v.message_ids === undefined))
      ctx.addIssue({ code: 'custom', message: 'give exactly one of message_id or message_ids', path: ['message_id'] });
    const n = v.message_ids?.length ?? 0;
    if (n > LIMITS.ackIdsMax)
      ctx.addIssue({ code: 'custom', path: ['message_ids'], message: 'too many ids', params: { m4a: 'too_large', limit: LIMITS.ackIdsMax, actual: n } });
  });

export const AckResponse = z.object({
  acked: z.array(z.object({ message_id: z.string(), acked_at: z.string() })),
  unread: z.number().int(),
});

export const GetRequest = z.strictObject({ message_id: MessageId, thread: z.boolean().optional() });
export const GetResponse = z.object({ message: MessageOut, thread: z.array(MessageOut).optional() });

export const EmptyRequest = z.strictObject({});
export const UnreadResponse = z.object({ unread: z.number().int() });

export const Card = z.object({
  attested: z.object({ pid: z.number(), start_time: z.number(), exe: z.string(), uid: z.number(), host: z.string() }).nullable(),
  corroborated: z.object({
    provider: z.string().optional(),
    provider_session_id: z.string().optional(),
    model: z.string().optional(),
    cwd: z.string().optional(),
  }),
  declared: z.object({ working_on: z.string().optional(), role: z.string().optional(), parent: z.string().optional() }),
});

const Names = {
  slug: z.string().nullable().describe('friendly name from the working directory: account/slug reaches this session'),
  aliases: z.array(z.string()).describe('names this session chose (status alias), each with its leading @: account/@name reaches it; they pass to a successor'),
};

export const WhoamiResponse = z.object({
  address: z.string(),
  account: z.string(),
  label: z.string(),
  kind: z.enum(['agent', 'human', 'service']),
  session: z.string().nullable(),
  ...Names,
  rooms: z.array(z.string()),
  card: Card,
});

export const StatusRequest = z.strictObject({
  working_on: text(LIMITS.declaredBytes).optional(),
  role: text(LIMITS.labelBytes).optional(),
  parent: text(LIMITS.labelBytes).optional().describe('the session address that spawned you'),
  alias: Selector.optional().describe('add a name others can write to as account/@name (the @ is added if left out; unique within your account; never shadows a slug)'),
  unalias: Selector.optional().describe('remove one of your aliases (with or without its @)'),
});
export const StatusResponse = z.object({ address: z.string(), ...Names, card: Card });

export const SessionOut = z.object({
  address: z.string(),
  ...Names,
  live: z.boolean(),
  last_seen: z.string(),
  ended_at: z.string().nullable(),
  successor: z.string().nullable(),
  card: Card,
});

export const DirectoryResponse = z.object({
  accounts: z.array(z.object({ id: z.string(), label: z.string(), kind: z.enum(['agent', 'human', 'service']), sessions: z.array(SessionOut) })),
  rooms: z.array(z.object({ name: z.string(), member: z.boolean() })),
});

export type SendRequest = z.output<typeof SendRequest>;
export type SendResponse = z.infer<typeof SendResponse>;
export type InboxRequest = z.output<typeof InboxRequest>;
export type InboxResponse = z.infer<typeof InboxResponse>;
export type MessageOut = z.infer<typeof MessageOut>;
export type AckRequest = z.output<typeof AckRequest>;
export type AckResponse = z.infer<typeof AckResponse>;
export type GetRequest = z.output<typeof GetRequest>;
export type GetResponse = z.infer<typeof GetResponse>;
export type UnreadResponse = z.infer<typeof UnreadResponse>;
export type Card = z.infer<typeof Card>;
export type WhoamiResponse = z.infer<typeof WhoamiResponse>;
export type StatusRequest = z.output<typeof StatusRequest>;
export type StatusResponse = z.infer<typeof StatusResponse>;
export type SessionOut = z.infer<typeof SessionOut>;
export type DirectoryResponse = z.infer<typeof DirectoryResponse>;
