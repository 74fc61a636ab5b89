// `m4a import omp-mail`: the shapes on the wire. The CLI reads omp-mail's files (agents.json and
// one <sessionId>.jsonl mailbox per session), checks them, and sends what it read in requests of
// at most IMPORT_LIMITS.messages messages; the daemon makes sessions, names and mail of them. Each
// request is idempotent, so a run cut short is finished by running it again.
import { z } from 'zod';
import { Body, Selector, Subject, text } from './fields.js';
import { AGENT_SESSION_ID } from './capabilities.js';

export { IMPORT_LIMITS } from './import-limits.js';
import { IMPORT_LIMITS } from './import-limits.js';

/** An omp conversation id, as the mail4agent extension reports it (so a resumed one finds it). */
export const OmpSessionId = z.string().regex(AGENT_SESSION_ID, 'not an omp session id').describe("the omp conversation's id (its mailbox file is <id>.jsonl)");

const name = text(IMPORT_LIMITS.nameBytes);

export const OmpSessionIn = z.strictObject({
  id: OmpSessionId,
  slug: name.optional().describe("omp-mail's slug: the lineage's slug where it is free (else -2, -3 …)"),
  aliases: z.array(name).max(IMPORT_LIMITS.aliases).optional().describe('kept as @aliases where mail4agent allows the name'),
  cwd: text(IMPORT_LIMITS.cwdBytes).optional().describe('the working directory omp-mail recorded'),
  last_seen: z.number().int().min(0).max(8.64e15).optional().describe('ms since the epoch'),
});

export const OmpMessageIn = z.strictObject({
  mailbox: OmpSessionId.describe('the session whose mailbox file holds the line'),
  id: name.describe("omp-mail's message id (a broadcast has the same id in every mailbox)"),
  from: name.describe('the sending omp session id'),
  subject: Subject,
  body: Body,
  ts: z.number().int().min(0).max(8.64e15).describe('when omp-mail stored it, ms since the epoch'),
  delivered: z.boolean().describe("at or below the session's omp-mail cursor: imported acknowledged"),
});

export const ImportOmpMailRequest = z.strictObject({
  account: Selector.describe('an agent account (the CLI creates it if missing)'),
  sessions: z.array(OmpSessionIn).max(IMPORT_LIMITS.sessions),
  messages: z.array(OmpMessageIn).max(IMPORT_LIMITS.messages).describe("each message's mailbox and known sender are among sessions"),
});

export const ImportedSession = z.object({
  omp_session: z.string(),
  session: z.string().describe('the full mail4agent session id'),
  address: z.string().describe('as mail prints it: account/slug, or account/s-…'),
  slug: z.string().nullable(),
  aliases: z.array(z.string()).describe("the lineage's aliases now"),
  aliases_refused: z.array(z.object({ alias: z.string(), reason: z.string() })).describe('omp-mail aliases mail4agent does not take (taken, or not a name here)'),
  created: z.boolean().describe('false: imported before, or known already from a resumed conversation'),
});

export const ImportOmpMailResponse = z.object({
  account: z.string(),
  sessions: z.array(ImportedSession),
  sessions_created: z.number().int(),
  messages_created: z.number().int(),
  messages_existing: z.number().int().describe('imported by an earlier run: left as they are'),
  acknowledged: z.number().int().describe('messages acknowledged by this run (delivered in omp-mail)'),
});

/** What `m4a import omp-mail --json` prints: the daemon's answers summed, and what the CLI changed
 *  to fit mail4agent's rules (a line it cut or whose invisible characters it made visible). */
export const ImportOmpMailResult = ImportOmpMailResponse.extend({
  dir: z.string(),
  account_created: z.boolean(),
  requests: z.number().int(),
  adjusted: z.array(z.object({ file: z.string(), line: z.number().int(), field: z.string(), change: z.string() })),
});

export type OmpSessionIn = z.output<typeof OmpSessionIn>;
export type OmpMessageIn = z.output<typeof OmpMessageIn>;
export type ImportOmpMailRequest = z.output<typeof ImportOmpMailRequest>;
export type ImportedSession = z.infer<typeof ImportedSession>;
export type ImportOmpMailResponse = z.infer<typeof ImportOmpMailResponse>;
export type ImportOmpMailResult = z.infer<typeof ImportOmpMailResult>;
