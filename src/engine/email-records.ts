// What e-mail keeps beside a message, as records (the store knows no e-mail): the headers that
// thread it, its attachments, the index from an RFC Message-ID to our message, the outbox. Ids that
// start `<message id>|` are deleted with their message (incarnation.ts, retention).
import { createHash } from 'node:crypto';
import type { Store } from '../store/types.js';

export const EMAIL_REC = {
  /** id: `<message id>|` → EmailMeta, for mail in through the SMTP door and out through the relay. */
  meta: 'email_meta',
  /** id: `<message id>|<n>` → StoredAttachment (n from 0, as listed in the meta). */
  attachment: 'email_attachment',
  /** id: sha256 hex of an RFC Message-ID → { id: our message id }: replies thread by it. */
  byMid: 'email_mid',
  /** The relay's outbox (email-out.ts, wake/email-relay.ts). */
  outbox: 'email_outbox',
  /** Sends counted against the hourly rate (email-out.ts). */
  rate: 'email_rate',
} as const;

/** The kinds deleted with each message (RecordSweep.byMessage). */
export const EMAIL_BY_MESSAGE = [EMAIL_REC.meta, EMAIL_REC.attachment, EMAIL_REC.outbox];

export interface AttachmentMeta {
  /** Its number in the message, from 0: `m4a attachment <message id> <n>`. */
  n: number;
  name: string;
  type: string;
  size: number;
  /** false: over the kept bytes (EmailOptions.keepAttachmentBytes); listed, not retrievable. */
  kept: boolean;
}

export interface EmailMeta {
  /** The RFC 5322 Message-ID, with its angle brackets; null when the mail had none. */
  message_id: string | null;
  in_reply_to: string | null;
  references: string[];
  /** Auto-Submitted (or Precedence bulk …): stored, wakes nobody, never answered by e-mail. */
  auto_submitted: boolean;
  /** The SMTP envelope's MAIL FROM (inbound), '' for a bounce. */
  envelope_from: string;
  attachments: AttachmentMeta[];
}

export interface StoredAttachment {
  name: string;
  type: string;
  size: number;
  /** The bytes, base64. */
  data: string;
}

export const metaId = (messageId: string): string => `${messageId}|`;
export const attachmentId = (messageId: string, n: number): string => `${messageId}|${n}`;
/** One mail to several accounts is one message each: their copies are indexed per account as
 *  well as (first writer) by the Message-ID alone, which mail that left from here is known by. */
const midDigest = (rfcMessageId: string, account?: string): string =>
  createHash('sha256')
    .update(account === undefined ? rfcMessageId.trim().toLowerCase() : `${account}\n${rfcMessageId.trim().toLowerCase()}`)
    .digest('hex');

export async function readMeta(store: Store, messageId: string): Promise<EmailMeta | null> {
  const row = await store.getRecord(EMAIL_REC.meta, metaId(messageId));
  return row ? (JSON.parse(row.value) as EmailMeta) : null;
}

/** The first writer wins: a Message-ID names the message it first arrived (or left) as. */
/** `account`: the copy of an incoming mail for that account (indexed under both keys). A row
 *  that names a message deleted since (removal, retention) is stale: the new message takes it. */
export async function rememberMessageId(store: Store, rfcMessageId: string, ourId: string, at: number, account?: string): Promise<void> {
  const row = (id: string) => ({ kind: EMAIL_REC.byMid, id, value: JSON.stringify({ id: ourId }), updatedAt: at });
  const rows = account === undefined ? [row(midDigest(rfcMessageId))] : [row(midDigest(rfcMessageId, account)), row(midDigest(rfcMessageId))];
  const inserted = new Set(await store.insertRecords(rows));
  for (const r of rows) if (!inserted.has(r.id) && (await target(store, r.id)) === null) await store.putRecord(r);
}

/** The message a row names, if it is still stored. */
async function target(store: Store, digest: string): Promise<string | null> {
  const row = await store.getRecord(EMAIL_REC.byMid, digest);
  if (!row) return null;
  const id = (JSON.parse(row.value) as { id: string }).id;
  return (await store.getMessage(id)) ? id : null;
}

/** The account's own copy of a mail it received, if still stored (its duplicates are this). */
export const ownCopy = (store: Store, rfcMessageId: string, account: string): Promise<string | null> => target(store, midDigest(rfcMessageId, account));

/** The account's own copy first (mail it received), then the message first known by the id;
 *  only messages still stored. */
export async function lookupMessageId(store: Store, rfcMessageId: string, account?: string): Promise<string | null> {
  return (account === undefined ? null : await ownCopy(store, rfcMessageId, account)) ?? (await target(store, midDigest(rfcMessageId)));
}
