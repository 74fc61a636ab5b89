// `m4a import interagentmail` and `m4a import agent-mail`: the shapes on the wire, one for both.
// The CLI reads the other mailbox (InterAgentMail's JSON files, MCP Agent Mail's SQLite), makes
// the accounts, rooms and teams through the ordinary admin operations, and sends the mail and the
// timers here in requests of at most MAIL_IMPORT_LIMITS items, already in our terms: one copy per
// recipient (as a team send stores it), names as our account selectors. The daemon writes them
// with ids derived from the source's own, so every request is idempotent.
import { z } from 'zod';
import { Body, Selector, Subject, text } from './fields.js';
import { LIMITS } from './limits.js';
import { MAIL_IMPORT_LIMITS } from './import-limits.js';

export { MAIL_IMPORT_LIMITS } from './import-limits.js';

/** Which other mailbox the data came from: part of every id, so two sources never meet. */
export const MAIL_IMPORT_SOURCES = ['interagentmail', 'agent-mail'] as const;
export type MailImportSource = (typeof MAIL_IMPORT_SOURCES)[number];

const sourceId = text(MAIL_IMPORT_LIMITS.idBytes);
const ms = z.number().int().min(0).max(8.64e15);

/** One copy of a source message: the source's id and the recipient whose copy it is. */
export const CopyRef = z.strictObject({
  id: sourceId.describe("the source's message id"),
  to: Selector.describe('the recipient account of that copy'),
});

export const ImportedCopy = z.strictObject({
  id: sourceId.describe("the source's message id (the same in every recipient's copy)"),
  from: Selector.describe('the sending account (made by the CLI before)'),
  to: Selector.describe('the recipient account: this copy lands in its mailbox'),
  subject: Subject,
  body: Body,
  priority: z.enum(['normal', 'urgent']),
  created_at: ms.describe('when the source stored it, ms since the epoch'),
  thread: CopyRef.nullable().describe("the copy of the thread's first message (null: this copy starts its thread)"),
  reply_to: CopyRef.nullable().describe('the copy of the message this one answers'),
  acked_at: ms.nullable().describe('handled in the source (archived, acknowledged): acknowledged here at that time'),
  /** A short note of where it came from, kept as the message's correlation. */
  origin: text(LIMITS.correlationBytes),
});

export const ImportedTimer = z.strictObject({
  id: sourceId.describe("the source's timer id"),
  account: Selector.describe('whom it reminds'),
  due: ms.describe('when it falls due, ms since the epoch (past: it fires at once)'),
  note: text(LIMITS.subjectBytes),
  created_at: ms,
  team: Selector.optional().describe('a team reminder: the team'),
  set_by: Selector.optional().describe('a team reminder: the leader who set it'),
});

/** A post of a chat channel (InterAgentMail's chats/): one message in a room, each its own thread. */
export const ImportedPost = z.strictObject({
  id: sourceId.describe('the post in the source: unique within it (InterAgentMail has no post ids: the CLI derives one)'),
  room: Selector.describe('the room it lands in (made by the CLI before)'),
  from: Selector.describe('the account that posted it'),
  subject: Subject,
  body: Body,
  created_at: ms.describe('when it was posted, ms since the epoch'),
  acked_by: z
    .array(z.strictObject({ account: Selector, at: ms }))
    .max(MAIL_IMPORT_LIMITS.seenBy)
    .describe('who had seen it in the source, and when: acknowledged for them at that time'),
  origin: text(LIMITS.correlationBytes),
});

export const ImportMailRequest = z.strictObject({
  messages: z.array(ImportedCopy).max(MAIL_IMPORT_LIMITS.messages).describe('oldest first: a thread root or a parent before its replies'),
  timers: z.array(ImportedTimer).max(MAIL_IMPORT_LIMITS.timers),
  posts: z.array(ImportedPost).max(MAIL_IMPORT_LIMITS.messages).optional().describe('room posts of chat channels, oldest first'),
});

export const ImportMailResponse = z.object({
  messages_created: z.number().int(),
  messages_existing: z.number().int().describe('imported by an earlier run: left as they are'),
  acknowledged: z.number().int().describe('copies acknowledged by this run'),
  timers_created: z.number().int(),
  timers_existing: z.number().int().describe('imported by an earlier run (pending or fired since): not made again'),
  posts_created: z.number().int().describe('room posts stored by this run (their acknowledgements are counted in acknowledged)'),
  posts_existing: z.number().int().describe('room posts imported by an earlier run'),
});

export type CopyRef = z.output<typeof CopyRef>;
export type ImportedCopy = z.output<typeof ImportedCopy>;
export type ImportedTimer = z.output<typeof ImportedTimer>;
export type ImportedPost = z.output<typeof ImportedPost>;
export type ImportMailRequest = z.output<typeof ImportMailRequest>;
export type ImportMailResponse = z.infer<typeof ImportMailResponse>;
