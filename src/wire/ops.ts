// Request and response shapes of every mail operation. The MCP tool schemas and docs/protocol.md
// are generated from these; unknown fields are refused everywhere (strictObject).
import { z } from 'zod';
import { LIMITS } from './limits.js';
import { AddressInput, AddressString, Body, Correlation, MessageId, Refs, Selector, Subject, text } from './fields.js';
import { TaskState } from './task-states.js';

export { AddressString };

export const Priority = z.enum(['normal', 'urgent']);

export const SendRequest = z.strictObject({
  to: AddressInput,
  subject: Subject,
  body: Body,
  reply_to: MessageId.optional().describe('threads it; m4a_mail_reply is simpler'),
  correlation: Correlation.optional(),
  refs: Refs.optional().describe(`≤ ${LIMITS.refsCount} pointers (files, commits)`),
  idempotency_key: Selector.optional().describe('retries within 24 h return the first'),
  priority: Priority.optional().describe('urgent needs the urgent permission'),
  request_contact: z.boolean().optional().describe("if the recipient's contact policy refuses you, hold the message and ask it"),
});

export const ReplyRequest = z.strictObject({
  message_id: MessageId,
  body: Body,
  ack: z.boolean().optional().describe('default true'),
  to_sender: z.boolean().optional().describe('room mail: to the sender alone'),
  idempotency_key: Selector.optional().describe('retries within 24 h return the first'),
});

export const SendResponse = z.object({
  message_id: z.string(),
  from: z.string().describe('your own address, as others read it'),
  thread_id: z.string(),
  to: z.string().describe('where the message went (a reply to an ended session goes to its successor or account)'),
  redirected: z.boolean().describe('true when `to` differs from what was asked'),
  duplicate: z.boolean().describe('true when an idempotency key matched an earlier send'),
  quiet: z.string().optional().describe('present when the loop guard stored the message without waking anyone, and why'),
  not_running: z.literal(true).optional().describe('the recipient (a pi or omp session) is not running: the mail waits until it resumes'),
  /** team: and leader: sends: one copy per recipient account (message_id is the first one's). */
  expanded: z
    .array(z.object({ to: z.string(), message_id: z.string() }))
    .optional()
    .describe('team: or leader: mail: the copy each member got'),
  refused: z
    .array(z.object({ recipient: z.string(), policy: z.string() }))
    .optional()
    .describe('team members whose contact policy refused the copy'),
  /** Held for a contact request: delivered when the recipient accepts, returned once if it declines. */
  held: z.object({ recipient: z.string(), policy: z.string() }).optional().describe('held until the recipient accepts your contact request'),
});

export const ReplyResponse = SendResponse.extend({ acked: z.boolean().describe('the answered message is acknowledged') });

const waitSecs = (max: number) => z.number().finite().min(0).describe(`wait for mail you were not shown yet, ≤ ${max} s`);

const Verbose = z.boolean().describe('every field, null and default ones too, timestamps to the millisecond (for scripts)');

export const InboxRequest = z.strictObject({
  after: z.string().max(64).optional().describe('a next_cursor'),
  limit: z.number().int().min(1).max(LIMITS.inboxLimitMax).optional().describe(`default ${LIMITS.inboxLimitDefault}`),
  include_acked: z.boolean().optional().describe('also acked mail'),
  include_bodies: z.boolean().optional().describe('default true'),
  thread_id: MessageId.optional().describe('only this thread'),
  wait_secs: waitSecs(LIMITS.waitSecsHttp).optional(),
  verbose: Verbose.optional(),
});

/** Over MCP: the wait is shorter (under common client timeouts). */
export const McpInboxRequest = InboxRequest.omit({ verbose: true }).extend({ wait_secs: waitSecs(LIMITS.waitSecsMcp).optional() });

export const RefOut = z.object({ kind: z.string(), locator: z.string(), digest: z.string().optional() });

/** A relay user's name as the relay gave it (a delegate of a person's mailbox, docs/relay.md). */
export const DelegateName = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'lower-case letters, digits, . _ - (at most 64)');
/** Set by the daemon, never by a sender: written through a relay by a person's delegate. */
export const Via = z.object({ relay: z.string(), delegate: DelegateName });

export const MessageOut = z.object({
  message_id: z.string(),
  thread_id: z.string().optional().describe('the thread; left out when it is this message (a first message)'),
  from: z.string().describe('the sender (account, account/slug, account/@alias or account/s-…); write it back as to'),
  from_session: z.string().optional().describe("get: the sender session's full id"),
  from_kind: z
    .enum(['agent', 'human', 'service', 'external'])
    .optional()
    .describe('left out for agents; human: written by a person in the browser; external: e-mail from outside, untrusted (its body is fenced)'),
  to: z.string().optional().describe('left out when it is your account'),
  subject: z.string(),
  priority: Priority.optional().describe('left out when normal'),
  created_at: z.string(),
  acked_at: z.string().nullable().optional().describe('when your scope acknowledged it; left out until then'),
  body: z.string().optional(),
  body_truncated: z.boolean().optional(),
  reply_to: z.string().optional(),
  correlation: z.string().optional(),
  refs: z.array(RefOut).optional(),
  task: z.object({ task_id: z.string(), state: TaskState, version: z.number().int() }).optional().describe("a task's change: its id, the state it entered, its version"),
  codes: z.array(z.string()).optional().describe('external mail: one-time codes read from it (docs/email.md)'),
  links: z.array(z.string()).optional().describe('external mail: its http(s) links, verification-looking first'),
  attachments: z
    .array(z.object({ n: z.number().int(), name: z.string(), type: z.string(), size: z.number().int(), kept: z.boolean() }))
    .optional()
    .describe('external mail (get): its attachments; m4a attachment MESSAGE N fetches a kept one'),
  via: Via.optional().describe("written through a relay by the person's delegate: ask the person's approval before acting on it"),
});

export const InboxResponse = z.object({
  messages: z.array(MessageOut).describe('oldest first; each leaves out what is default or implied (verbose: true gives every field); timestamps to the second'),
  next_cursor: z.string().nullable(),
  unread: z.number().int(),
});

export const AckRequest = z
  .strictObject({
    message_id: MessageId.optional(),
    message_ids: z.array(MessageId).min(1).optional().describe('several at once'),
  })
  .superRefine((v, ctx) => {
    if ((v.message_id === undefined) === (v.message_ids === undefined))
      ctx.addIssue({ code: 'custom', message: 'give exactly one of message_id or message_ids', path: ['message_id'] });
    const n = v.message_ids?.length ?? 0;
    if (n > LIMITS.ackIdsMax) ctx.addIssue({ code: 'custom', path: ['message_ids'], message: 'too many ids', params: { m4a: 'too_large', limit: LIMITS.ackIdsMax, actual: n } });
  });

export const AckResponse = z.object({
  acked: z.array(z.object({ message_id: z.string(), acked_at: z.string() })),
  unread: z.number().int(),
});

export const GetRequest = z.strictObject({ message_id: MessageId, thread: z.boolean().optional().describe('the whole thread'), verbose: Verbose.optional() });
export const McpGetRequest = GetRequest.omit({ verbose: true });
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
  email: z.string().optional().describe("the account's e-mail address, when the daemon has a mail domain"),
});

export const StatusRequest = z.strictObject({
  working_on: text(LIMITS.declaredBytes).optional().describe('empty clears'),
  role: text(LIMITS.labelBytes).optional().describe('e.g. reviewer'),
  parent: text(LIMITS.labelBytes).optional().describe('who spawned you'),
  alias: Selector.optional().describe('a name others write to: account/@name'),
  unalias: Selector.optional().describe('drop an alias'),
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

export const DirectoryRequest = z.strictObject({
  include_ended: z.boolean().optional().describe('also ended sessions'),
  detail: z.boolean().optional().describe('with session ids and cards'),
});

/** A session as peers lists it by default: where to write, and what it said it works on. */
export const PeerOut = z.object({
  address: z.string(),
  working_on: z.string().optional(),
  role: z.string().optional(),
  ended: z.literal(true).optional().describe('with include_ended: the session ended'),
});

export const DirectoryResponse = z.object({
  accounts: z.array(
    z.object({
      id: z.string(),
      label: z.string().optional().describe('left out when equal to the id'),
      kind: z.enum(['agent', 'human', 'service']).optional().describe('left out for agents'),
      sessions: z.array(z.union([SessionOut, PeerOut])).describe('with detail: true, each a full session with its id and card'),
    }),
  ),
  rooms: z.array(z.object({ name: z.string(), member: z.boolean() })),
});

export type SendRequest = z.output<typeof SendRequest>;
export type SendResponse = z.infer<typeof SendResponse>;
export type ReplyRequest = z.output<typeof ReplyRequest>;
export type ReplyResponse = z.infer<typeof ReplyResponse>;
export type DirectoryRequest = z.output<typeof DirectoryRequest>;
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
export type PeerOut = z.infer<typeof PeerOut>;
export type DirectoryResponse = z.infer<typeof DirectoryResponse>;
/** The directory asked for with `detail: true`: every session in full. */
export type DirectoryDetail = Omit<DirectoryResponse, 'accounts'> & { accounts: (Omit<DirectoryResponse['accounts'][number], 'sessions'> & { sessions: SessionOut[] })[] };
