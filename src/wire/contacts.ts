// Contact policies (who may write to an account) and quiet hours (when its wakes wait). See
// docs/teams.md. A refused send stores nothing (`contact_refused {recipient, policy}`); a send with
// request_contact instead holds the message and asks the recipient, who accepts or declines.
import { z } from 'zod';
import { Selector } from './fields.js';

/** open: anyone; contacts_only: its contacts, its teams' and rooms' members (not everyone-rooms),
 *  people; block_all: people only. People and the mailbox's reminders always get through. */
export const CONTACT_POLICIES = ['open', 'contacts_only', 'block_all'] as const;
export const ContactPolicy = z.enum(CONTACT_POLICIES);
export type ContactPolicy = z.infer<typeof ContactPolicy>;

/** Messages held for one (sender, recipient) contact request, at most. */
export const HELD_PER_REQUEST_MAX = 20;

const Account = Selector.describe('an account id');

export const ContactRequest = z.strictObject({ account: Account });
export const PolicySetRequest = z.strictObject({ policy: ContactPolicy });
export const AdminPolicySetRequest = z.strictObject({ account: Account, policy: ContactPolicy });
export const PolicyOut = z.object({ account: z.string(), policy: ContactPolicy });

export const ContactRequestOut = z.object({
  account: z.string().describe('the other party'),
  at: z.string(),
  held: z.number().int().describe('messages held until the request is answered'),
  state: z.enum(['pending', 'declined']),
});
export const ContactsListResponse = z.object({
  policy: ContactPolicy,
  contacts: z.array(z.object({ account: z.string(), added_at: z.string() })),
  /** Requests others made of this account (accept or decline them) and that it made of others. */
  incoming: z.array(ContactRequestOut),
  outgoing: z.array(ContactRequestOut),
});
export const ContactAddResponse = z.object({
  ok: z.literal(true),
  /** A pending request of that account was accepted with it: the held messages, delivered now. */
  delivered: z.array(z.string()),
});
export const ContactDeclineResponse = z.object({ ok: z.literal(true), returned: z.number().int().describe('held messages returned to their sender') });

// ---- quiet hours

/** dnd: every non-urgent wake waits; focus: only mail written to you alone wakes (room, team: and
 *  leader: mail waits); open: every wake as usual. Mail is stored and readable throughout. */
export const ATTENTION_MODES = ['dnd', 'focus', 'open'] as const;
export const AttentionMode = z.enum(ATTENTION_MODES);
export type AttentionMode = z.infer<typeof AttentionMode>;

/** How far ahead a quiet period may end. */
export const ATTENTION_MAX_SECS = 7 * 24 * 3600;

export const AttentionRequest = z.strictObject({
  mode: AttentionMode.optional().describe('absent: only read the current mode'),
  until: z.iso.datetime({ offset: true }).optional().describe('ISO time it ends (default: until set open)'),
  account: z.boolean().optional().describe('for the whole account, not only this session'),
});
export const AttentionOut = z.object({
  scope: z.string().describe('the account, or account/session it applies to'),
  mode: AttentionMode,
  until: z.string().nullable(),
  /** Wakes waiting for the quiet period to end. */
  held: z.number().int(),
});

export type ContactRequest = z.output<typeof ContactRequest>;
export type PolicySetRequest = z.output<typeof PolicySetRequest>;
export type AdminPolicySetRequest = z.output<typeof AdminPolicySetRequest>;
export type PolicyOut = z.infer<typeof PolicyOut>;
export type ContactRequestOut = z.infer<typeof ContactRequestOut>;
export type ContactsListResponse = z.infer<typeof ContactsListResponse>;
export type ContactAddResponse = z.infer<typeof ContactAddResponse>;
export type ContactDeclineResponse = z.infer<typeof ContactDeclineResponse>;
export type AttentionRequest = z.output<typeof AttentionRequest>;
export type AttentionOut = z.infer<typeof AttentionOut>;
