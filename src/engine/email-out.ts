// Mail to an `email:` address (issue #19, docs/email.md "Sending mail"): checked, counted against
// the account's hourly rate, stored as a message to `e:<addr>` with its threading headers, and
// queued for the relay. Every record is written before the message commits and before the send
// answers, so a queued send survives a crash; the relay worker (wake/email-relay.ts) takes it from
// the commit. `From:` is always the account's own address at the mail domain: the caller names
// only the recipient.
import { createHash } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import { formatAddress, normalEmail } from '../wire/address.js';
import type * as W from '../wire/ops.js';
import { keyOfEmail, type RecordRow, type Store, type StoredMessage } from '../store/types.js';
import type { Clock, Ids } from './clock.js';
import type { Logger } from './log.js';
import type { Caller } from './mail-engine.js';
import type { MailPost } from './mail-post.js';
import { sentMessage } from './sent-message.js';
import { EMAIL_DEFAULTS, type EmailOptions } from './email-book.js';
import { EMAIL_REC, metaId, readMeta, rememberMessageId, type EmailMeta } from './email-records.js';

export const HOUR_MS = 3_600_000;
/** References kept on a reply (the newest; RFC 5322 allows trimming the middle). */
const MAX_REFERENCES = 20;

/** The delivery state of one message to an e-mail address, kept for receipts after it is sent. */
export interface OutboxEntry {
  state: 'queued' | 'sent' | 'failed';
  /** The recipient, normalised. */
  to: string;
  /** The account's own address (`<account>@<domain>`). */
  from: string;
  /** The sending account (its rate record is `rateId(account, created_at, message id)`). */
  account: string;
  created_at: number;
  /** Attempts made (each one claimed by a `try` record first). */
  attempts: number;
  /** When the next attempt is due (queued). */
  next_at: number;
  /** Queued: why the last attempt failed; failed: why it was given up. */
  last_error: string | null;
  /** Sent: the relay's answer line ("250 …"). */
  response: string | null;
  /** When it was sent or given up. */
  done_at: number | null;
}

/** The entry (kept with the message: deleted with it). */
export const outboxId = (messageId: string): string => `${messageId}|`;
/** The claim of attempt n (first writer wins): one daemon makes each attempt, and an attempt a
 *  crash interrupted is seen at the next start. Deleted with the message. */
export const attemptId = (messageId: string, n: number): string => `${messageId}|try.${n}`;
/** The index of what is queued, so a start reads only that (no message id starts with `~`). */
export const QUEUE_PREFIX = '~q|';
export const queueId = (messageId: string): string => `${QUEUE_PREFIX}${messageId}`;
/** A send counted against the hourly rate: ids sort by time within the account. */
export const rateId = (account: string, at: number, messageId: string): string => `${account}|${String(at).padStart(15, '0')}|${messageId}`;

export function parseOutbox(row: RecordRow | null): OutboxEntry | null {
  if (!row) return null;
  try {
    const v = JSON.parse(row.value) as Partial<OutboxEntry>;
    if (v.state !== 'queued' && v.state !== 'sent' && v.state !== 'failed') return null;
    if (typeof v.to !== 'string' || typeof v.from !== 'string') return null;
    return {
      state: v.state,
      to: v.to,
      from: v.from,
      account: typeof v.account === 'string' ? v.account : v.from.slice(0, v.from.lastIndexOf('@')),
      created_at: typeof v.created_at === 'number' ? v.created_at : row.updatedAt,
      attempts: typeof v.attempts === 'number' ? v.attempts : 0,
      next_at: typeof v.next_at === 'number' ? v.next_at : row.updatedAt,
      last_error: typeof v.last_error === 'string' ? v.last_error : null,
      response: typeof v.response === 'string' ? v.response : null,
      done_at: typeof v.done_at === 'number' ? v.done_at : null,
    };
  } catch {
    return null;
  }
}

export async function readOutbox(store: Pick<Store, 'getRecord'>, messageId: string): Promise<OutboxEntry | null> {
  return parseOutbox(await store.getRecord(EMAIL_REC.outbox, outboxId(messageId)));
}

/** Our RFC Message-ID of a message we send: unique (our id) and on our domain. */
export const rfcMessageId = (messageId: string, domain: string): string => `<${messageId}@${domain}>`;

/** The account's own address, or why it has none. */
export function accountAddress(account: string, domain: string): string {
  const e = normalEmail(`${account}@${domain}`);
  if (typeof e !== 'string') throw new MailError('email_unavailable', `account ${account} has no e-mail address at ${domain}: ${e.reason}`);
  return e;
}

export interface EmailOutDeps {
  store: Store;
  clock: Clock;
  ids: Ids;
  log: Logger;
  post: MailPost;
}

interface RateRow {
  at: number;
  /** sha256 of the idempotency key, when the send had one. */
  key: string | null;
}

export class EmailOut {
  /** Per account, the tail of its sends: counting and writing a rate record are one step here. */
  private locks = new Map<string, Promise<unknown>>();

  constructor(private d: EmailOutDeps) {}

  async send(c: Caller, req: W.SendRequest, parent: StoredMessage | null, o: EmailOptions): Promise<W.SendResponse> {
    if (req.to.kind !== 'email') throw new MailError('internal', 'email-out sends only to email: addresses');
    if (!o.outbound) throw new MailError('email_unavailable', 'this daemon sends no e-mail (m4a serve --smtp-relay URL --mail-domain DOMAIN)');
    // An e-mail leaves From the account's own address, and nobody outside would see that a
    // delegate wrote it (via marks it only for readers here): the owner sends e-mail, a delegate not.
    if (c.via)
      throw new MailError('permission_denied', `a delegate (${c.via.delegate}, through a relay) may not send e-mail from ${c.account.id}'s address: the owner does`, {
        need: 'owner',
      });
    const to = req.to.email;
    const from = accountAddress(c.account.id, o.domain);
    const parentMeta = parent ? await readMeta(this.d.store, parent.id) : null;
    if (parent && parentMeta?.auto_submitted)
      throw new MailError('auto_submitted', `${parent.id} was sent automatically (Auto-Submitted): it is not answered by e-mail`, { message_id: parent.id });
    return this.serial(c.account.id, () => this.sendCounted(c, req, parent, parentMeta, o, from, to));
  }

  private serial<T>(account: string, f: () => Promise<T>): Promise<T> {
    const run = (this.locks.get(account) ?? Promise.resolve()).then(f, f);
    const tail = run.catch(() => undefined);
    this.locks.set(account, tail);
    void tail.then(() => {
      if (this.locks.get(account) === tail) this.locks.delete(account);
    });
    return run;
  }

  private async sendCounted(
    c: Caller,
    req: W.SendRequest,
    parent: StoredMessage | null,
    parentMeta: EmailMeta | null,
    o: EmailOptions,
    from: string,
    to: string,
  ): Promise<W.SendResponse> {
    const now = this.d.clock.now();
    const limit = o.sendPerHour ?? EMAIL_DEFAULTS.sendPerHour;
    const keyDigest = req.idempotency_key ? sha256(req.idempotency_key) : null;
    const window = await this.liveRates(c.account.id, now, limit);
    // A retry with the key of a send still in the window answers that send (below), at the limit too.
    if (window.length >= limit && !(keyDigest && window.some((r) => r.key === keyDigest))) {
      const oldest = window[0] as RateRow;
      const retryAfter = Math.max(1, Math.ceil((oldest.at + HOUR_MS - now) / 1000));
      throw new MailError('rate_limited', `account ${c.account.id} sent ${limit} e-mails in the last hour, the most it may`, {
        retry_after: retryAfter,
        limit,
        scope: 'email',
        account: c.account.id,
      });
    }
    const id = this.d.ids.messageId();
    const mid = rfcMessageId(id, o.domain);
    const inReplyTo = parentMeta?.message_id ?? null;
    const references = [...(parentMeta?.references ?? []), ...(inReplyTo ? [inReplyTo] : [])].slice(-MAX_REFERENCES);
    const meta: EmailMeta = { message_id: mid, in_reply_to: inReplyTo, references, auto_submitted: false, envelope_from: from, attachments: [] };
    const entry: OutboxEntry = { state: 'queued', to, from, account: c.account.id, created_at: now, attempts: 0, next_at: now, last_error: null, response: null, done_at: null };
    const rows: RecordRow[] = [
      { kind: EMAIL_REC.meta, id: metaId(id), value: JSON.stringify(meta), updatedAt: now },
      { kind: EMAIL_REC.outbox, id: outboxId(id), value: JSON.stringify(entry), updatedAt: now },
      { kind: EMAIL_REC.outbox, id: queueId(id), value: '{}', updatedAt: now },
      { kind: EMAIL_REC.rate, id: rateId(c.account.id, now, id), value: JSON.stringify({ at: now, key: keyDigest } satisfies RateRow), updatedAt: now },
    ];
    const m = sentMessage(c, req, { id, parent, toAddress: formatAddress(req.to), toKey: keyOfEmail(to), createdAt: now });
    // Records first: the worker learns of the send from the commit and finds its entry there.
    await this.d.store.insertRecords(rows);
    let outcome: Awaited<ReturnType<MailPost['storeBuilt']>>;
    try {
      outcome = await this.d.post.storeBuilt(m, null, []);
    } catch (err) {
      await this.dropRows(rows);
      throw err;
    }
    if (outcome.kind !== 'created') {
      await this.dropRows(rows);
      if (outcome.kind === 'conflict')
        throw new MailError('idempotency_conflict', `idempotency key ${req.idempotency_key} was used for a different message`, { message_id: outcome.message.id });
    } else {
      await rememberMessageId(this.d.store, mid, id, now);
      this.d.log.info({ message_id: id, from, to, account: c.account.id }, 'e-mail queued for the relay');
    }
    const stored = outcome.message;
    return {
      message_id: stored.id,
      from,
      thread_id: stored.threadId,
      to: stored.toAddress,
      redirected: false,
      duplicate: outcome.kind === 'duplicate',
    };
  }

  private async dropRows(rows: RecordRow[]): Promise<void> {
    await Promise.all(rows.map((r) => this.d.store.deleteRecord(r.kind, r.id)));
  }

  /** The account's sends of the last hour, oldest first (at most `limit`); older ones are deleted
   *  on the way, so the list stays about `limit` long. */
  private async liveRates(account: string, now: number, limit: number): Promise<RateRow[]> {
    const since = now - HOUR_MS;
    for (;;) {
      const rows = await this.d.store.listRecords(EMAIL_REC.rate, `${account}|`, Math.max(limit, 64));
      const live: RateRow[] = [];
      const old: RecordRow[] = [];
      for (const r of rows) {
        const v = parseRate(r);
        if (v.at <= since) old.push(r);
        else live.push(v);
      }
      await Promise.all(old.map((r) => this.d.store.deleteRecord(r.kind, r.id)));
      if (live.length > 0 || rows.length < Math.max(limit, 64)) return live.slice(0, limit);
    }
  }
}

function parseRate(r: RecordRow): RateRow {
  try {
    const v = JSON.parse(r.value) as Partial<RateRow>;
    return { at: typeof v.at === 'number' ? v.at : r.updatedAt, key: typeof v.key === 'string' ? v.key : null };
  } catch {
    return { at: r.updatedAt, key: null };
  }
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
