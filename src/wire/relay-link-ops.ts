// The operator's connect.* operations (`m4a connect …`, local operator only): where this daemon's
// relay link dials, as which node, and which human mailboxes it offers. The node token goes in
// once and never comes back: every answer says `token: "set"`.
import { z } from 'zod';
import { Selector, text } from './fields.js';
import { LIMITS } from './limits.js';
import { RELAY_LIMITS, RelayNodeId } from './relay-link.js';

/** A node token as the relay's `m4a relay node add` printed it. */
const NodeToken = z
  .string()
  .min(16)
  .max(512)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
  .describe('the node token (never answered back)');
const Mailboxes = z
  .array(Selector)
  .min(1)
  .superRefine((a, ctx) => {
    const limit = RELAY_LIMITS.mailboxes;
    if (a.length > limit) ctx.addIssue({ code: 'custom', message: `over the limit of ${limit} mailboxes`, params: { m4a: 'too_large', limit, actual: a.length } });
  })
  .describe(`human accounts the relay may act as (at most ${RELAY_LIMITS.mailboxes})`);
const ServerUrl = text(LIMITS.urlBytes).describe('wss://host[:port] of the relay (ws:// only to a loopback host)');
const CaFile = text(4096).describe("an absolute path to a PEM file of the CA that signed the relay's certificate");

export const ConnectConfigureRequest = z.strictObject({
  server_url: ServerUrl,
  node_id: RelayNodeId,
  node_token: NodeToken,
  human_mailboxes: Mailboxes,
  ca_file: CaFile.optional(),
});
/** The same fields, each optional: what is not given stays. `ca_file: null` drops the CA file. */
export const ConnectUpdateRequest = z.strictObject({
  server_url: ServerUrl.optional(),
  node_id: RelayNodeId.optional(),
  node_token: NodeToken.optional(),
  human_mailboxes: Mailboxes.optional(),
  ca_file: CaFile.nullable().optional(),
});
export const ConnectRemoveUserRequest = z.strictObject({ human_mailbox: Selector });

export const ConnectStatusResponse = z.object({
  configured: z.boolean(),
  enabled: z.boolean(),
  connected: z.boolean().describe('welcomed by the relay on a live connection'),
  since: z.string().nullable().describe('when the link last became connected, or (not connected) when it was lost'),
  last_error: z.string().nullable(),
  rtt_ms: z.number().nullable().describe('round-trip time of the last heartbeat'),
  server_url: z.string().nullable(),
  node_id: z.string().nullable(),
  human_mailboxes: z.array(z.string()),
  ca_file: z.string().nullable(),
  token: z.enum(['set', 'unset']),
});

export type ConnectConfigureInput = z.output<typeof ConnectConfigureRequest>;
export type ConnectUpdateInput = z.output<typeof ConnectUpdateRequest>;
export type ConnectStatus = z.infer<typeof ConnectStatusResponse>;
