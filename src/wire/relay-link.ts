// The relay link: what a daemon (a "node") and a relay say over the one outbound WebSocket the
// daemon keeps to the relay (docs/relay.md). The node dials out, so nothing on its machine listens
// beyond loopback; the relay's browser users act through it as the node's configured human
// mailboxes, with the browser API's own operation names and bodies. Both sides parse every frame
// with these schemas and refuse what they do not name.
import { z } from 'zod';
import { Selector } from './fields.js';
import { DelegateName } from './ops.js';

/** The WebSocket path on the relay a node dials, and the subprotocol both sides name. */
export const RELAY_NODE_PATH = '/m4a/node';
export const RELAY_SUBPROTOCOL = 'm4a-relay.1';
/** The upgrade request names its node here; the token rides in `authorization: Bearer …`. */
export const RELAY_NODE_HEADER = 'x-m4a-node';

export const RELAY_LIMITS = {
  /** Largest frame either side takes (ws maxPayload): a page of inbox previews fits many times. */
  frameBytes: 1024 * 1024,
  /** Calls a relay has in flight to one node; the next browser request is refused rate_limited. */
  callsInFlight: 64,
  /** A call the node has not answered in this long fails on the relay (an inbox wait is ≤ 30 s). */
  callTimeoutMs: 45_000,
  /** Each side pings this often and drops a peer that answered none of the last two pings, so a
   *  half-open connection is found within 30 s. */
  heartbeatMs: 10_000,
  /** Human mailboxes one node may offer. */
  mailboxes: 16,
  /** Reconnect backoff: full jitter over min(cap, base · 2^attempt). */
  backoffBaseMs: 1000,
  backoffCapMs: 60_000,
  /** Node ids and relay user names. */
  nameBytes: 64,
} as const;

/** The browser API names (/web/api/NAME) a relay may forward: reading the inbox and threads,
 *  sending, replying, acknowledging, the directory, and who the mailbox is. Nothing else: no
 *  operator route, no wake setting, no task, search or reservation. */
export const RELAYED_WEB_CALLS = ['me', 'inbox', 'get', 'send', 'reply', 'ack', 'directory'] as const;
export type RelayedWebCall = (typeof RELAYED_WEB_CALLS)[number];
export const isRelayedWebCall = (name: string): name is RelayedWebCall => (RELAYED_WEB_CALLS as readonly string[]).includes(name);

const NodeId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, 'lower-case letters, digits, . _ - (at most 64)')
  .describe('a node id: lower-case letters, digits, . _ -');
export { NodeId as RelayNodeId };

const Cursor = z.string().max(256);
const CallId = z.string().min(1).max(64);

// ---- node → relay

export const NodeHello = z.strictObject({ t: z.literal('hello'), node: NodeId, mailboxes: z.array(Selector).max(RELAY_LIMITS.mailboxes), version: z.string().max(64) });
/** The answer to a call: the HTTP status the browser door would have given and its JSON body. */
export const NodeAnswer = z.strictObject({ t: z.literal('answer'), id: CallId, status: z.number().int().min(200).max(599), body: z.unknown() });
/** New mail committed for a mailbox (its newest cursor): the relay wakes the mailbox's parked live
 *  reads and acknowledges; the node sends the next only after that ack (one in flight a mailbox). */
export const NodeMail = z.strictObject({ t: z.literal('mail'), mailbox: Selector, cursor: Cursor });
export const NodeFrame = z.discriminatedUnion('t', [NodeHello, NodeAnswer, NodeMail]);

// ---- relay → node

/** The relay's first frame: the cursor it last acknowledged per mailbox (none after a restart),
 *  from which the node sends what committed while they were apart. */
export const RelayWelcome = z.strictObject({ t: z.literal('welcome'), cursors: z.record(z.string(), Cursor) });
/** A browser user's request, for one configured mailbox. `delegate` is the relay user's name when
 *  the user holds the mailbox as a delegate: the node stores it on what they write (`via`). */
export const RelayCall = z.strictObject({
  t: z.literal('call'),
  id: CallId,
  mailbox: Selector,
  name: z.string().max(64),
  body: z.unknown(),
  delegate: DelegateName.optional(),
});
/** The browser went away: a parked read ends at once. */
export const RelayCancel = z.strictObject({ t: z.literal('cancel'), id: CallId });
export const RelayAck = z.strictObject({ t: z.literal('ack'), mailbox: Selector, cursor: Cursor });
export const RelayFrame = z.discriminatedUnion('t', [RelayWelcome, RelayCall, RelayCancel, RelayAck]);

export type NodeFrame = z.infer<typeof NodeFrame>;
export type RelayFrame = z.infer<typeof RelayFrame>;
export type RelayCallFrame = z.infer<typeof RelayCall>;
