// The stream door's contract (docs/protocol.md, "The stream door"): JSON lines over the data
// directory's Unix socket. Its bounds, and the schemas of the frames and of the ops only it has.
import { z } from 'zod';
import { LIMITS } from './limits.js';

export const STREAM_LIMITS = {
  /** A request line may hold the largest HTTP body and its frame around it. */
  maxLineBytes: LIMITS.requestBodyBytes + 65_536,
  /** Requests of one connection running at once; past it the door stops reading (back-pressure). */
  maxInFlight: 64,
  /** Unsent output of one connection past which the door stops reading it, and pushing to it. */
  maxQueuedBytes: 4 * 1_048_576,
  /** Connections that have not said hello yet (the oldest is closed past it). Only this OS user
   *  can connect (the socket is 0600), so this bounds a runaway program, not a stranger: as high as
   *  HTTP's per-peer bound, so a burst of legitimate connections (1,250 sessions at once in the
   *  waiters benchmark) is not cut before it can say hello. */
  maxUnauthenticated: 4_096,
  /** A connection without a successful hello by then is closed. */
  helloTimeoutMs: 5_000,
  /** A string request id. */
  idChars: 64,
  /** `client` in hello. */
  clientChars: 64,
  /** The bearer secret in hello. */
  tokenChars: 512,
  /** Messages in one pushed `mail` event (an inbox page). */
  eventMessages: LIMITS.inboxLimitDefault,
} as const;

/** A request id: an integer 0..2^53-1 or a string of 1..64 characters. */
export const StreamId = z.union([z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), z.string().min(1).max(STREAM_LIMITS.idChars)]);
export type StreamId = z.infer<typeof StreamId>;

/** Client -> server. `input` is the HTTP route's body (absent: `{}`); `agent_session` is what the
 *  x-m4a-agent-session header carries. */
export const StreamRequest = z.strictObject({
  id: StreamId,
  op: z.string().min(1).max(64),
  input: z.unknown().optional(),
  agent_session: z.string().optional(),
});
export type StreamRequest = z.infer<typeof StreamRequest>;

export const HelloRequest = z.strictObject({
  token: z.string().min(1).max(STREAM_LIMITS.tokenChars),
  client: z.string().max(STREAM_LIMITS.clientChars).optional(),
});

export const HelloResponse = z.object({
  account: z.string(),
  session: z.string().nullable(),
  version: z.string(),
  max_in_flight: z.number(),
  max_line_bytes: z.number(),
});
export type HelloResponse = z.infer<typeof HelloResponse>;

export const CancelRequest = z.strictObject({ id: StreamId });

export const UnsubscribeRequest = z.strictObject({});

export const SubscribeRequest = z.strictObject({ after: z.string().max(64).optional().describe('a cursor (default: the current head)') });

/** Server -> client, unasked: mail this session may read, committed after the previous cursor. */
export interface MailEventFrame {
  event: 'mail';
  cursor: string;
  messages: unknown[];
  more?: true;
}
