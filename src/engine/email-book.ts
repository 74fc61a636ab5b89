// Real e-mail (issue #19, docs/email.md): an account's address `<account>@<domain>`, mail from
// outside stored as mail from `email:<sender>` with fromKind 'external' (the SMTP door hands it
// here parsed), its attachments and threading headers kept as records (email-records.ts), and
// mail to `email:` addresses handed to the relay's outbox (email-out.ts). The door decides nothing
// about accounts: which local part is whose, the cap and what is stored are decided here.
import { createHash } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import { normalEmail } from '../wire/address.js';
import { LIMITS } from '../wire/limits.js';
import { clipUtf8, neutralise, utf8Bytes } from '../wire/text.js';
import type * as W from '../wire/ops.js';
import { keyOfAccount, readKeys, type NewMessage, type RecordRow, type Store, type StoredMessage } from '../store/types.js';
import type { Clock, Ids } from './clock.js';
import type { Logger } from './log.js';
import { need, type Caller } from './mail-engine.js';
import { EMAIL_PREFIX, type MailPost } from './mail-post.js';
import { unfenceable } from './email-fence.js';
import { EmailOut } from './email-out.js';
import {
  EMAIL_REC,
  attachmentId,
  lookupMessageId,
  metaId,
  ownCopy,
  readMeta,
  rememberMessageId,
  type AttachmentMeta,
  type EmailMeta,
  type StoredAttachment,
} from './email-records.js';

export interface EmailOptions {
  /** `--mail-domain`: every account's address is `<account>@<domain>`. */
  domain: string;
  /** Local parts the operator maps to accounts (`--mail-alias support=claude`), any case. */
  aliases?: Record<string, string>;
  /** Mail from outside stored per account at most (default 5,000): more is external_cap_reached. */
  externalCap?: number;
  /** Attachment bytes kept per message (default 10 MiB); the rest are listed, not kept. */
  keepAttachmentBytes?: number;
  /** Sends to e-mail addresses per account per hour (default 20; email-out.ts). */
  sendPerHour?: number;
  /** A relay is configured (`--smtp-relay`): without it, mail to `email:` is email_unavailable. */
  outbound?: boolean;
}

export const EMAIL_DEFAULTS = { externalCap: 5_000, keepAttachmentBytes: 10 * 1024 * 1024, sendPerHour: 20 } as const;

/** One mail from outside as the SMTP door parsed it. */
export interface InboundMail {
  /** The account recipient() answered for the RCPT address. */
  account: string;
  /** The sender: the From header's address, else the envelope's; normalised here. */
  from: string;
  /** MAIL FROM ('' for a bounce). */
  envelopeFrom: string;
  subject: string;
  /** Plain text (the door converts HTML when there is no text part). */
  text: string;
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  /** Auto-Submitted other than "no", Precedence bulk/junk/list/auto_reply, X-Autoreply … */
  autoSubmitted: boolean;
  attachments: { name: string; type: string; content: Uint8Array }[];
}

export interface EmailDeps {
  store: Store;
  clock: Clock;
  ids: Ids;
  log: Logger;
  post: MailPost;
  options: EmailOptions | undefined;
}

/** The mail's subject as one safe line: invisible and control characters made visible, runs of
 *  white space one space, within the subject limit. */
function subjectLine(s: string): string {
  const line = unfenceable(neutralise(s.replace(/\s+/g, ' ').trim()));
  return clipUtf8(line || '(no subject)', LIMITS.subjectBytes);
}

/** The text as a body: line ends as \n, characters a body refuses made visible, cut to the limit
 *  with a note that says so (the whole mail is not kept; its attachments are, up to their cap). */
function bodyText(s: string): string {
  const text = unfenceable(neutralise(s.replace(/\r\n?/g, '\n'), true)).trim();
  if (utf8Bytes(text) <= LIMITS.bodyBytes) return text;
  const note = `\n…[the mail's text was ${utf8Bytes(text)} bytes; the first ${LIMITS.bodyBytes / 1024} KiB are kept]`;
  return clipUtf8(text, LIMITS.bodyBytes - utf8Bytes(note)) + note;
}

/** A header value kept for threading: one line, at most 998 bytes (RFC 5322's line). */
const headerValue = (s: string | null): string | null => (s === null || s.trim() === '' ? null : clipUtf8(neutralise(s.trim()), 998));

export class EmailBook {
  /** Mail to `email:` addresses: the rate, the records, the queue (email-out.ts). */
  private readonly out: EmailOut;

  constructor(private d: EmailDeps) {
    this.out = new EmailOut(d);
  }

  private get o(): EmailOptions {
    if (!this.d.options) throw new MailError('email_unavailable', 'this daemon has no mail domain (m4a serve --mail-domain)');
    return this.d.options;
  }

  /** Whether e-mail is configured at all (the SMTP door and `capabilities` ask). */
  get domain(): string | null {
    return this.d.options?.domain ?? null;
  }

  /** The account's own address (mail it sends leaves From it), or null without a mail domain or
   *  for an account id that is no local part (one with an @). */
  addressOf(account: string): string | null {
    if (!this.d.options) return null;
    const e = normalEmail(`${account}@${this.d.options.domain}`);
    return typeof e === 'string' ? e : null;
  }

  /** The account a RCPT address names: `<account>@<domain>` or an alias of the domain, in any
   *  case, an account that exists and is not a service account; null refuses it. */
  async recipient(address: string): Promise<string | null> {
    const e = normalEmail(address);
    if (typeof e !== 'string') return null;
    const at = e.lastIndexOf('@');
    if (e.slice(at + 1) !== this.o.domain.toLowerCase()) return null;
    const local = e.slice(0, at);
    const aliased = Object.entries(this.o.aliases ?? {}).find(([k]) => k.toLowerCase() === local)?.[1];
    const wanted = (aliased ?? local).toLowerCase();
    // An address has no case: only when exactly one account has the name in any case (Alice beside
    // alice would otherwise take alice's mail, whichever was listed first).
    const matches = (await this.d.store.listAccounts()).filter((a) => a.id.toLowerCase() === wanted);
    const account = matches.length === 1 ? matches[0] : undefined;
    return account && account.kind !== 'service' ? account.id : null;
  }

  /** Stores one mail from outside for its account, threaded by In-Reply-To and References into a
   *  conversation of that account; a mail sent again with the same Message-ID is stored once. */
  async receive(mail: InboundMail): Promise<{ message_id: string; quiet: boolean; duplicate: boolean }> {
    const o = this.o;
    const account = await this.d.store.getAccount(mail.account);
    if (!account) throw new MailError('unknown_participant', `no account ${mail.account}`, { participant: mail.account });
    const key = keyOfAccount(account.id);
    const messageId = headerValue(mail.messageId);
    // A mail stored here before is this one, however long ago (an MTA retries for days): a
    // recipient refused for the moment refuses the whole mail, and the others' copies come again.
    const prior = messageId ? await ownCopy(this.d.store, messageId, account.id) : null;
    if (prior) return { message_id: prior, quiet: mail.autoSubmitted, duplicate: true };
    const cap = o.externalCap ?? EMAIL_DEFAULTS.externalCap;
    if ((await this.d.store.externalCount(key, cap)) >= cap)
      throw new MailError('external_cap_reached', `${account.id} holds ${cap} mails from outside, the most it may`, { account: account.id, limit: cap });
    const from = [mail.from, mail.envelopeFrom].map((a) => normalEmail(a)).find((a): a is string => typeof a === 'string');
    if (!from) throw new MailError('malformed', 'the mail names no valid sender address', { field: 'from', reason: 'no valid address in From or MAIL FROM' });
    // Mail from outside never speaks as one of this domain's own addresses (agents write to each
    // other here, not through SMTP): a forged From: bob@<domain> would read as the account bob.
    if (from.endsWith(`@${o.domain.toLowerCase()}`))
      throw new MailError('malformed', `mail from outside may not claim an address of @${o.domain}`, { field: 'from', reason: 'an address of this mail domain' });
    if (account.contactPolicy === 'block_all') throw new MailError('contact_refused', `${account.id} takes mail from people only`, { recipient: account.id, policy: 'block_all' });
    // A bounce (MAIL FROM:<>) or a mailer daemon's report is automatic too: never answered (RFC 3834).
    const automatic = mail.autoSubmitted || mail.envelopeFrom === '' || /^(mailer-daemon|postmaster)@/.test(from);
    const now = this.d.clock.now();
    const references = mail.references
      .map(headerValue)
      .filter((r): r is string => r !== null)
      .slice(-20);
    const inReplyTo = headerValue(mail.inReplyTo);
    const parent = await this.parentOf([inReplyTo, ...[...references].reverse()], account.id);
    const id = this.d.ids.messageId();
    const { metas, rows } = this.keepAttachments(id, mail.attachments, now);
    const meta: EmailMeta = { message_id: messageId, in_reply_to: inReplyTo, references, auto_submitted: automatic, envelope_from: mail.envelopeFrom, attachments: metas };
    const subject = subjectLine(mail.subject);
    const body = bodyText(mail.text);
    const m: NewMessage = {
      id,
      threadId: parent ? parent.threadId : id,
      fromAccount: `${EMAIL_PREFIX}${from}`,
      fromSession: null,
      fromKind: 'external',
      toAddress: account.id,
      toKey: key,
      subject,
      body,
      replyTo: parent?.id ?? null,
      correlation: null,
      refs: [],
      priority: 'normal',
      createdAt: now,
      // A relay that timed out after our 250 sends the mail again: one message per Message-ID.
      // Keyed per recipient too: one mail to bob and carol is a message for each.
      idempotencyKey: messageId ? `mid.${digest(`${account.id}\n${messageId}`).slice(0, 40)}` : null,
      fingerprint: messageId ? digest(JSON.stringify([subject, body])) : null,
    };
    // Parts first: a message is never stored without them (a crash in between leaves records
    // nobody lists, deleted with nothing; see docs/email.md).
    await this.d.store.insertRecords([...rows, { kind: EMAIL_REC.meta, id: metaId(id), value: JSON.stringify(meta), updatedAt: now }]);
    const quiet = automatic ? 'an automatic e-mail (Auto-Submitted)' : null;
    const dropParts = (): Promise<unknown> => Promise.all([...rows.map((r) => this.d.store.deleteRecord(r.kind, r.id)), this.d.store.deleteRecord(EMAIL_REC.meta, metaId(id))]);
    let outcome: Awaited<ReturnType<MailPost['storeBuilt']>>;
    try {
      outcome = await this.d.post.storeBuilt(m, quiet, [account.id]);
    } catch (err) {
      // A refused mail (the door answers 451 and the MTA sends it again) leaves nothing behind;
      // the append's own error is the one reported, whatever the clean-up meets. An append can fail
      // after its commit (a connection lost before the answer): the parts stay unless the message
      // is surely absent, since the MTA's retry finds it by its Message-ID and writes none again.
      const absent = await this.d.store.getMessage(id).then(
        (found) => found === null,
        () => false,
      );
      if (absent) await dropParts().catch(() => undefined);
      throw err;
    }
    if (outcome.kind !== 'created') {
      await dropParts();
      return { message_id: outcome.message.id, quiet: quiet !== null, duplicate: true };
    }
    if (messageId) await rememberMessageId(this.d.store, messageId, id, now, account.id);
    this.d.log.info({ message_id: id, to: account.id, from, bytes: utf8Bytes(body), attachments: metas.length, quiet: quiet !== null }, 'e-mail received');
    return { message_id: id, quiet: quiet !== null, duplicate: false };
  }

  /** The newest message named by the mail's threading headers that belongs to the account's own
   *  conversations (delivered to it, or sent by it): an outsider cannot join another's thread. */
  private async parentOf(mids: (string | null)[], account: string): Promise<StoredMessage | null> {
    for (const mid of mids) {
      if (!mid) continue;
      const ours = await lookupMessageId(this.d.store, mid, account);
      const m = ours ? await this.d.store.getMessage(ours) : null;
      if (m && (m.toKey === keyOfAccount(account) || m.toKey.startsWith(`s:${account}/`) || m.fromAccount === account)) return m;
    }
    return null;
  }

  private keepAttachments(id: string, list: InboundMail['attachments'], at: number): { metas: AttachmentMeta[]; rows: RecordRow[] } {
    let room = this.o.keepAttachmentBytes ?? EMAIL_DEFAULTS.keepAttachmentBytes;
    const metas: AttachmentMeta[] = [];
    const rows: RecordRow[] = [];
    for (const [n, a] of list.slice(0, 100).entries()) {
      // Runs of any space one space: ideographic spaces would push an .exe out of sight.
      const name = clipUtf8(unfenceable(neutralise(a.name.replace(/[\\/]/g, '_').replace(/\s+/gu, ' ').trim())) || `attachment-${n}`, LIMITS.labelBytes);
      const type = /^[\w.+-]+\/[\w.+-]+$/.test(a.type) ? a.type.toLowerCase() : 'application/octet-stream';
      const size = a.content.byteLength;
      const kept = size <= room;
      if (kept) {
        room -= size;
        const stored: StoredAttachment = { name, type, size, data: Buffer.from(a.content).toString('base64') };
        rows.push({ kind: EMAIL_REC.attachment, id: attachmentId(id, n), value: JSON.stringify(stored), updatedAt: at });
      }
      metas.push({ n, name, type, size, kept });
    }
    return { metas, rows };
  }

  /** The attachments a mail from outside listed (for get), or null for any other message. */
  async attachmentsOf(m: StoredMessage): Promise<AttachmentMeta[] | null> {
    if (m.fromKind !== 'external') return null;
    return (await readMeta(this.d.store, m.id))?.attachments ?? [];
  }

  /** One kept attachment of a message the caller may read. */
  async attachment(c: Caller, scope: Parameters<typeof readKeys>[0], messageId: string, n: number): Promise<StoredAttachment> {
    need(c, 'read');
    const m = await this.d.store.getMessage(messageId);
    if (!m) throw new MailError('unknown_message', `no message ${messageId}`, { message_id: messageId });
    if (!readKeys(scope).includes(m.toKey)) throw new MailError('not_addressed_to_you', `you may not read ${messageId}`, { message_id: messageId });
    const row = await this.d.store.getRecord(EMAIL_REC.attachment, attachmentId(messageId, n));
    if (!row) throw new MailError('unknown_attachment', `${messageId} has no kept attachment ${n}`, { message_id: messageId, n });
    return JSON.parse(row.value) as StoredAttachment;
  }

  /** Mail to an `email:` address (mail-post.ts dispatch): the relay's outbox (email-out.ts). */
  async send(c: Caller, req: W.SendRequest, parent: StoredMessage | null): Promise<W.SendResponse> {
    need(c, 'send');
    return this.out.send(c, req, parent, this.o);
  }
}

const digest = (s: string): string => createHash('sha256').update(s).digest('hex');
