// Delivery chains (`m4a wake set`), receipts and timers: the shapes on the wire.
// A chain runs programs and opens connections, so only the local operator sets one (never the web
// door, never another machine); the schemas below are what the daemon stores, after checking.
import { z } from 'zod';
import { LIMITS } from './limits.js';
import { Selector, text } from './fields.js';

const url = text(LIMITS.urlBytes);
const argvItem = text(1024);
/** Names (never values) of the daemon's environment variables a started program also gets; the
 *  rest of the daemon's environment stays out (see inherited-env.ts). */
const envNames = z.array(text(128)).max(32).optional().describe("names of daemon environment variables the program also gets (values stay in the daemon's environment)");

/** The agent's own hooks (Claude Code, Codex, Gemini CLI, Cursor): succeeds when the session is
 *  live; the mail surfaces at its next Stop / AfterAgent / stop hook (or at once in listen mode). */
export const HooksStep = z.strictObject({ kind: z.literal('hooks') });

/** A `codex app-server` that holds (or can resume) the session's thread. `listen` is where the
 *  daemon reaches it: ws://127.0.0.1:PORT, unix://PATH, or `spawn` (the daemon starts
 *  `codex app-server` itself over stdio with `argv`). */
export const CodexStep = z.strictObject({
  kind: z.literal('codex-app-server'),
  listen: url,
  argv: z.array(argvItem).min(1).max(32).optional().describe('for listen=spawn: the command (default ["codex","app-server"])'),
  token_file: text(LIMITS.urlBytes).optional().describe('capability token file for a ws:// listener (sent as Bearer)'),
  env: envNames,
});

/** A program run without a shell. Placeholders ({provider_session_id}, {session}, {account},
 *  {lineage}, {wake_text}) are replaced whole-argument by values the daemon controls; message ids
 *  and senders go in the environment, never on the command line. */
export const CommandStep = z.strictObject({
  kind: z.literal('command'),
  argv: z.array(argvItem).min(1).max(64),
  timeout_secs: z.number().int().min(1).max(3600).optional().describe('default 600'),
  cwd: text(4096).optional().describe("working directory; {cwd} = the session's attested cwd"),
  env: envNames,
});

/** A signed POST (HMAC-SHA256 over `t.body`, header `M4A-Signature: t=…,v1=…`), retried with
 *  backoff. Non-loopback URLs only with allow_remote. */
export const WebhookStep = z.strictObject({
  kind: z.literal('webhook'),
  url,
  allow_remote: z.boolean().optional(),
});

/** A remote A2A agent (JSON-RPC binding) that takes the account's tasks and mail: a task for the
 *  account is sent to it, its status and artifacts come back as the account's updates of the task;
 *  plain mail is answered by it (docs/wake.md, "The a2a step"). */
export const A2aStep = z.strictObject({
  kind: z.literal('a2a'),
  url: url.describe("the remote agent's card (https://host/.well-known/agent-card.json); loopback only unless allow_remote"),
  allow_remote: z.boolean().optional().describe('allow a non-loopback card and interface (https only; never link-local or metadata addresses)'),
  token_file: text(LIMITS.urlBytes)
    .optional()
    .describe("absolute path of a file holding the bearer secret the remote agent wants; read at each call, sent only to the card's origin, never stored here"),
});

/** An opencode server holding the session (`opencode serve --port N`, or the TUI with `--port N`):
 *  the wake text goes to the session with its `prompt_async` (docs/wake.md, "opencode"). */
export const OpencodeStep = z.strictObject({
  kind: z.literal('opencode'),
  url: url.describe("the opencode server's root, http://127.0.0.1:PORT; loopback only unless allow_remote (https only)"),
  allow_remote: z.boolean().optional(),
  password_file: text(LIMITS.urlBytes)
    .optional()
    .describe("absolute path of a file holding the server's OPENCODE_SERVER_PASSWORD (sent as Basic auth, user opencode); read at each call, never stored here"),
});

export const WakeStep = z.discriminatedUnion('kind', [HooksStep, CodexStep, CommandStep, WebhookStep, A2aStep, OpencodeStep]);

export const WakeSetRequest = z.strictObject({
  account: Selector,
  /** A session id, id prefix, slug or alias of the account: the chain applies to that lineage only. */
  session: Selector.optional(),
  steps: z.array(WakeStep).min(1).max(8),
  /** Wake this account for room mail too (default: only direct and session mail wakes). */
  rooms: z.boolean().optional(),
  debounce_ms: z.number().int().min(0).max(60_000).optional().describe('default 250'),
});
export const WakeTargetRequest = z.strictObject({ account: Selector, session: Selector.optional() });
export const WakeChainOut = z.object({
  account: z.string(),
  lineage: z.string().nullable(),
  steps: z.array(WakeStep),
  rooms: z.boolean(),
  debounce_ms: z.number(),
  updated_at: z.string(),
});
export const WakeSetResponse = z.object({
  chain: WakeChainOut,
  webhook_signing_key: z.string().optional().describe('the HMAC key of M4A-Signature: shown once, by the call that created it'),
});
export const WakeListResponse = z.object({ chains: z.array(WakeChainOut) });

export const WakeAttemptOut = z.object({
  event_id: z.string(),
  adapter: z.string(),
  at: z.string(),
  ok: z.boolean(),
  detail: z.string(),
});
/** Mail to an e-mail address: where it stands with the relay (docs/email.md "Sending mail"). */
export const EmailDeliveryOut = z.object({
  state: z.enum(['queued', 'sent', 'failed']).describe('queued: waiting for the relay; sent: accepted by the relay, which is not delivered; failed: given up'),
  attempts: z.number().int(),
  next_attempt_at: z.string().nullable().describe('queued: when the next attempt is due'),
  relay_response: z.string().nullable().describe("sent: the relay's answer line"),
  error: z.string().nullable().describe('queued: why the last attempt failed; failed: why it was given up'),
  at: z.string().nullable().describe('when it was sent or given up'),
  detail: z.string().describe('the state in one sentence'),
});

export const ReceiptOut = z.object({
  recipient: z.string().describe('account or account/lineage, or email:ADDRESS'),
  stored_at: z.string(),
  signalled: z.array(WakeAttemptOut),
  surfaced_at: z.string().nullable().describe('first returned by an inbox read of this recipient'),
  acked_at: z.string().nullable(),
  email: EmailDeliveryOut.optional().describe('mail to an e-mail address: its delivery state with the relay'),
});
export const ReceiptsRequest = z.strictObject({ message_id: text(LIMITS.selectorBytes + 80) });
export const ReceiptsResponse = z.object({ message_id: z.string(), receipts: z.array(ReceiptOut) });

export const TimerSetRequest = z.strictObject({
  in_secs: z
    .number()
    .int()
    .min(1)
    .max(366 * 24 * 3600)
    .describe('seconds from now'),
  note: text(LIMITS.subjectBytes).describe('what to remind of'),
  /** Who is reminded: the caller's session (default), or the whole account with `account: true`. */
  account: z.boolean().optional().describe('remind the account, not this session'),
});
export const TimerOut = z.object({ id: z.string(), to: z.string(), due_at: z.string(), note: z.string(), created_at: z.string() });
export const TimerIdRequest = z.strictObject({ id: text(64) });
export const TimerSnoozeRequest = z.strictObject({
  id: text(64),
  in_secs: z
    .number()
    .int()
    .min(1)
    .max(366 * 24 * 3600),
});
export const OkResponse = z.object({ ok: z.literal(true) });
export const TimerListResponse = z.object({ timers: z.array(TimerOut) });

export type WakeStep = z.infer<typeof WakeStep>;
export type CodexStep = z.infer<typeof CodexStep>;
export type CommandStep = z.infer<typeof CommandStep>;
export type WebhookStep = z.infer<typeof WebhookStep>;
export type A2aStep = z.infer<typeof A2aStep>;
export type OpencodeStep = z.infer<typeof OpencodeStep>;
export type WakeSetRequest = z.output<typeof WakeSetRequest>;
export type WakeChainOut = z.infer<typeof WakeChainOut>;
export type ReceiptOut = z.infer<typeof ReceiptOut>;
export type EmailDeliveryOut = z.infer<typeof EmailDeliveryOut>;
export type TimerOut = z.infer<typeof TimerOut>;
export type ReceiptsResponse = z.infer<typeof ReceiptsResponse>;
export type TimerSetRequest = z.output<typeof TimerSetRequest>;
export type WakeSetInput = z.input<typeof WakeSetRequest>;
