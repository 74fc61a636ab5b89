// Contact requests (docs/teams.md, "Contact policies"). A send with request_contact that the
// recipient's contacts_only policy refused is held as a record instead of being stored as mail; the
// first held message of a (sender, recipient) pair opens a request and asks the recipient once.
// Accepting delivers every held message as its sender wrote it; declining returns each once.
//
// Records (kinds in wake-records.ts; accountSweep deletes them with either account):
//   contact_request `<recipient>|<sender>`            → RequestRecord (pending or declined)
//   contact_asked   `<sender>|<recipient>`            → {} (the sender's index of its requests)
//   contact_held    `<recipient>|<sender>|<message id>` → HeldRecord (message ids sort by time)
//   contact_claim   the held record's id → {}: who is delivering or returning it (see once())
import { MailError } from '../wire/errors.js';
import { formatAddress } from '../wire/address.js';
import { LIMITS } from '../wire/limits.js';
import { clipUtf8 } from '../wire/text.js';
import { HELD_PER_REQUEST_MAX, type ContactRequestOut } from '../wire/contacts.js';
import type * as W from '../wire/ops.js';
import type { AccountRecord, RecordRow, Store, StoredMessage } from '../store/types.js';
import type { Clock, Ids } from './clock.js';
import type { Logger } from './log.js';
import { REC } from './wake-records.js';
import { incarnationOf } from './incarnation.js';
import { MAILBOX_ACCOUNT } from './timers.js';
import { callerAddress, type Caller } from './mail-engine.js';

export interface RequestDeps {
  store: Store;
  clock: Clock;
  ids: Ids;
  log: Logger;
  /** mail-post.ts's deliver (admission, storing, wakes), under a promised message id if given. */
  deliver(c: Caller, req: W.SendRequest, parent: StoredMessage | null, messageId?: string): Promise<{ answer: W.SendResponse; message: StoredMessage }>;
  printAll(compacts: Iterable<string>): Promise<Map<string, string>>;
}

interface RequestRecord {
  state: 'pending' | 'declined';
  at: number;
  /** incarnationOf each party when the request was made: a removed account's request never binds
   *  a new account of the same name (the sweep deletes it; this covers a race with the removal). */
  sender: string;
  recipient: string;
}

interface HeldRecord {
  messageId: string;
  /** The send as it was asked for (request_contact left out). */
  req: W.SendRequest;
  /** The session that wrote it: the held message is delivered from it if it is still recorded. */
  session: string | null;
  at: number;
  sender: string;
  recipient: string;
}

/** More than a pair may hold, so a listing always sees past the limit. */
const HELD_LIST = HELD_PER_REQUEST_MAX * 4;
/** Requests listed per account. */
const REQUESTS_LIST = 1000;
/** A claim this old belongs to a daemon that died between claiming and finishing: taken over. */
const CLAIM_STALE_MS = 5 * 60_000;

const requestId = (recipient: string, sender: string): string => `${recipient}|${sender}`;
const heldPrefix = (recipient: string, sender: string): string => `${recipient}|${sender}|`;
const iso = (ms: number): string => new Date(ms).toISOString();
const parse = <T>(row: RecordRow): T => JSON.parse(row.value) as T;

export function declinedError(recipient: string, policy: string): MailError {
  return new MailError('contact_refused', `${recipient} declined your contact request; it takes your mail again once it adds you as a contact`, {
    recipient,
    policy,
    request: 'declined',
  });
}

export class ContactRequests {
  /** Callers minted here, for mail the recipient consented to: the request mail itself (the ask
   *  is what the recipient is asked to consent to; from the sender, so it knows who asks and can
   *  answer), and held messages being delivered on acceptance. admit() lets them through. */
  private consent = new WeakSet<Caller>();

  constructor(private d: RequestDeps) {}

  consented(c: Caller): boolean {
    return this.consent.has(c);
  }

  private consenting(c: Caller): Caller {
    const minted: Caller = { account: c.account, session: c.session };
    this.consent.add(minted);
    return minted;
  }

  /** Holds a send that contacts_only refused; under block_all (or any other refusal) it stands. */
  async hold(c: Caller, req: W.SendRequest, parent: StoredMessage | null, refused: MailError): Promise<W.SendResponse> {
    const { policy, recipient: rid } = refused.details;
    if (policy !== 'contacts_only' || typeof rid !== 'string') throw refused;
    const recipient = await this.d.store.getAccount(rid);
    if (!recipient) throw refused;
    const s = c.account.id;
    const r = recipient.id;
    const parties = { sender: incarnationOf(c.account), recipient: incarnationOf(recipient) };
    const request = await this.request(r, s, parties);
    if (request?.state === 'declined') throw declinedError(r, policy);
    const held = await this.held(r, s);
    if (req.idempotency_key !== undefined) {
      const same = held.find((h) => h.value.req.idempotency_key === req.idempotency_key);
      if (same) {
        if (JSON.stringify(same.value.req) !== JSON.stringify(withoutFlag(req)))
          throw new MailError('idempotency_conflict', `idempotency key ${req.idempotency_key} was used for a different message`, { message_id: same.value.messageId });
        return this.answer(c, same.value, parent, r, true);
      }
    }
    if (held.length >= HELD_PER_REQUEST_MAX) throw tooMany(r);
    const now = this.d.clock.now();
    const record: HeldRecord = { messageId: this.d.ids.messageId(), req: withoutFlag(req), session: c.session?.id ?? null, at: now, ...parties };
    const id = `${heldPrefix(r, s)}${record.messageId}`;
    let opened = false;
    if (!request) {
      const value = JSON.stringify({ state: 'pending', at: now, ...parties } satisfies RequestRecord);
      // First writer wins: of concurrent first holds, one asks.
      opened = (await this.d.store.insertRecords([{ kind: REC.contactRequest, id: requestId(r, s), value, updatedAt: now }])).length === 1;
      if (opened) await this.d.store.putRecord({ kind: REC.contactAsked, id: `${s}|${r}`, value: '{}', updatedAt: now });
    }
    await this.d.store.putRecord({ kind: REC.contactHeld, id, value: JSON.stringify(record), updatedAt: now });
    const settled = await this.settle(c, recipient, id, record, parent, refused);
    if (settled) return settled;
    if (opened) await this.ask(c, recipient, record);
    return this.answer(c, record, parent, r, false);
  }

  /** An accept or decline that listed the pair's held messages before this one was written has
   *  missed it: settle it as they would have. Holds that raced past the limit give theirs back. */
  private async settle(c: Caller, recipient: AccountRecord, id: string, record: HeldRecord, parent: StoredMessage | null, refused: MailError): Promise<W.SendResponse | null> {
    const r = recipient.id;
    const s = c.account.id;
    const [contact, row, held] = await Promise.all([
      this.d.store.hasContact(r, s),
      this.d.store.getRecord(REC.contactRequest, requestId(r, s)),
      this.d.store.listRecords(REC.contactHeld, heldPrefix(r, s), HELD_LIST),
    ]);
    const state = row ? parse<RequestRecord>(row).state : null;
    const over = held.findIndex((x) => x.id === id) >= HELD_PER_REQUEST_MAX;
    if (!contact && state === 'pending' && !over) return null;
    if (contact) {
      const sent = await this.once(id, () => this.deliverHeld(this.consenting(c), record, parent, r));
      return sent ? sent.result : this.answer(c, record, parent, r, false);
    }
    // Taken back; unless an accept or decline has it already (then it is theirs).
    if (!(await this.once(id, () => Promise.resolve(true)))) return this.answer(c, record, parent, r, false);
    if (over) throw tooMany(r);
    throw state === 'declined' ? declinedError(r, 'contacts_only') : refused;
  }

  /** Runs `act` on the held message `id` for exactly one of the callers racing for it (accepts and
   *  declines on any daemon, the hold itself): a claim record, first writer wins, says who acts,
   *  and the held record goes only once act has committed, so a crash in between leaves it held
   *  and claimed; a claim older than CLAIM_STALE_MS is taken over. act is idempotent (a fixed
   *  idempotency key), so taking over a claim whose act did commit stores nothing twice. null: the
   *  message is another caller's, or gone. */
  private async once<T>(id: string, act: () => Promise<T>): Promise<{ result: T } | null> {
    if (!(await this.claim(id))) return null;
    // A caller that finished deleted the held record before its claim: claiming after it finds none.
    if (!(await this.d.store.getRecord(REC.contactHeld, id))) {
      await this.d.store.deleteRecord(REC.contactClaim, id);
      return null;
    }
    let result: T;
    try {
      result = await act();
    } catch (err) {
      await this.d.store.deleteRecord(REC.contactClaim, id);
      throw err;
    }
    const mine = await this.d.store.deleteRecord(REC.contactHeld, id);
    await this.d.store.deleteRecord(REC.contactClaim, id);
    return mine ? { result } : null;
  }

  private async claim(id: string): Promise<boolean> {
    const now = this.d.clock.now();
    const row = { kind: REC.contactClaim, id, value: '{}', updatedAt: now };
    if ((await this.d.store.insertRecords([row])).length === 1) return true;
    const standing = await this.d.store.getRecord(REC.contactClaim, id);
    if (standing && now - standing.updatedAt < CLAIM_STALE_MS) return false;
    // Its claimer died: of the callers taking it over, the one whose delete removed it.
    if (standing && !(await this.d.store.deleteRecord(REC.contactClaim, id))) return false;
    return (await this.d.store.insertRecords([row])).length === 1;
  }

  /** The one request mail of a pair: who asks, what waits, how to answer. */
  private async ask(c: Caller, recipient: AccountRecord, first: HeldRecord): Promise<void> {
    const s = c.account.id;
    const body = [
      `${s} asks to write to you: your contact policy (contacts_only) refused its mail.`,
      `1 message waits for your answer: "${first.req.subject}". Later ones join this request (at most ${HELD_PER_REQUEST_MAX}); m4a contacts list counts them.`,
      '',
      `Accept (${s} becomes a contact and the waiting mail is delivered): m4a contacts accept ${s}`,
      `Decline (the waiting mail goes back to ${s}, and its further requests are refused): m4a contacts decline ${s}`,
    ].join('\n');
    try {
      await this.d.deliver(
        this.consenting(c),
        { to: { kind: 'direct', participant: recipient.id }, subject: clipUtf8(`Contact request from ${s}`, LIMITS.subjectBytes), body: clipUtf8(body, LIMITS.bodyBytes) },
        null,
      );
    } catch (err) {
      // The message is held and the request listed either way: a failed ask must not fail the send.
      this.d.log.warn({ err: err instanceof Error ? err.message : String(err), sender: s, recipient: recipient.id }, 'contact request mail failed');
    }
  }

  private async answer(c: Caller, h: HeldRecord, parent: StoredMessage | null, recipient: string, duplicate: boolean): Promise<W.SendResponse> {
    const from = callerAddress(c);
    const to = formatAddress(h.req.to);
    const printed = await this.d.printAll([from, to]);
    return {
      message_id: h.messageId,
      from: printed.get(from) ?? from,
      thread_id: parent ? parent.threadId : h.messageId,
      to: printed.get(to) ?? to,
      redirected: false,
      duplicate,
      held: { recipient, policy: 'contacts_only' },
    };
  }

  /** The pair's request, unless none or one made by removed accounts of these names. */
  private async request(r: string, s: string, parties: { sender: string; recipient: string }): Promise<RequestRecord | null> {
    const row = await this.d.store.getRecord(REC.contactRequest, requestId(r, s));
    if (!row) return null;
    const v = parse<RequestRecord>(row);
    if (v.sender === parties.sender && v.recipient === parties.recipient) return v;
    await this.forget(r, s);
    return null;
  }

  private async held(r: string, s: string): Promise<{ id: string; value: HeldRecord }[]> {
    return (await this.d.store.listRecords(REC.contactHeld, heldPrefix(r, s), HELD_LIST)).map((row) => ({ id: row.id, value: parse<HeldRecord>(row) }));
  }

  /** Delivers the pair's held messages, oldest first, as their sender (its account read again: a
   *  removed sender, or a new account of its name, gets nothing delivered and its records go).
   *  Each is delivered by one caller (once()). Returns the ids this call delivered. */
  async release(recipient: AccountRecord, s: string): Promise<string[]> {
    const held = await this.held(recipient.id, s);
    if (held.length === 0) return [];
    const sender = await this.d.store.getAccount(s);
    const delivered: string[] = [];
    for (const { id, value: h } of held) {
      if (!sender || h.sender !== incarnationOf(sender) || h.recipient !== incarnationOf(recipient)) {
        await this.once(id, () => Promise.resolve(null));
        continue;
      }
      const session = h.session ? await this.d.store.getSession(s, h.session) : null;
      const parent = h.req.reply_to ? await this.d.store.getMessage(h.req.reply_to) : null;
      // The id stored: the promised one, or the sender's retry's if that was admitted first.
      const sent = await this.once(id, () => this.deliverHeld(this.consenting({ account: sender, session }), h, parent, recipient.id));
      if (sent) delivered.push(sent.result.message_id);
    }
    return delivered;
  }

  /** As its sender wrote it, under the promised id, where it was written; if that session has
   *  ended since, to the recipient's account. Idempotent: under the sender's own key if it gave one
   *  (so its retry after the acceptance is this message, not a second copy), else, or when that key
   *  names other mail of the sender's by now, under a key of its own. */
  private async deliverHeld(c: Caller, h: HeldRecord, parent: StoredMessage | null, recipient: string): Promise<W.SendResponse> {
    const own = `contact-held ${h.messageId}`;
    const req: W.SendRequest = { ...h.req, idempotency_key: h.req.idempotency_key ?? own };
    if (!parent) delete req.reply_to;
    const to = async (r: W.SendRequest): Promise<W.SendResponse> => {
      try {
        return (await this.d.deliver(c, r, parent, h.messageId)).answer;
      } catch (err) {
        if (!(err instanceof MailError) || (err.code !== 'session_ended' && err.code !== 'unknown_session')) throw err;
        return (await this.d.deliver(c, { ...r, to: { kind: 'direct', participant: recipient } }, parent, h.messageId)).answer;
      }
    };
    try {
      return await to(req);
    } catch (err) {
      if (!(err instanceof MailError) || err.code !== 'idempotency_conflict' || req.idempotency_key === own) throw err;
      return to({ ...req, idempotency_key: own });
    }
  }

  /** Marks the pair's request declined and returns each held message to its sender once, as mail
   *  from `mailbox`. A pair with no pending request returns nothing. */
  async decline(recipient: AccountRecord, s: string): Promise<number> {
    const r = recipient.id;
    const sender = await this.d.store.getAccount(s);
    const parties = sender ? { sender: incarnationOf(sender), recipient: incarnationOf(recipient) } : null;
    const request = parties ? await this.request(r, s, parties) : null;
    const held = await this.held(r, s);
    if (request) {
      // Declined first, so a send racing this one is refused rather than joining what is returned.
      await this.d.store.putRecord({ kind: REC.contactRequest, id: requestId(r, s), value: JSON.stringify({ ...request, state: 'declined' }), updatedAt: this.d.clock.now() });
    }
    const mailbox = await this.d.store.getAccount(MAILBOX_ACCOUNT);
    let returned = 0;
    for (const { id, value: h } of held) {
      if (!sender || !mailbox || h.sender !== incarnationOf(sender) || h.recipient !== incarnationOf(recipient)) {
        await this.once(id, () => Promise.resolve(null));
        continue;
      }
      if (await this.once(id, () => this.giveBack(mailbox, s, r, h))) returned++;
    }
    return returned;
  }

  /** One held message back to its sender, from `mailbox` (idempotent, as deliverHeld is). */
  private async giveBack(mailbox: AccountRecord, s: string, r: string, h: HeldRecord): Promise<void> {
    const quoted = h.req.body
      .split('\n')
      .map((l) => `> ${l}`)
      .join('\n');
    await this.d.deliver(
      { account: mailbox, session: null },
      {
        to: { kind: 'direct', participant: s },
        subject: clipUtf8(`Your message to ${r} was declined: ${h.req.subject}`, LIMITS.subjectBytes),
        body: clipUtf8(`${r} declined your contact request; this message (${h.messageId}) was not delivered:\n\n${quoted}`, LIMITS.bodyBytes),
        idempotency_key: `contact-declined ${h.messageId}`,
      },
      null,
    );
  }

  /** The request goes once nothing is held for it any more (the recipient added the sender). */
  async forgetAnswered(r: string, s: string): Promise<void> {
    if ((await this.held(r, s)).length === 0) await this.forget(r, s);
  }

  /** The pair's request and the sender's index of it go. */
  async forget(r: string, s: string): Promise<void> {
    await Promise.all([this.d.store.deleteRecord(REC.contactRequest, requestId(r, s)), this.d.store.deleteRecord(REC.contactAsked, `${s}|${r}`)]);
  }

  /** Requests others made of this account. */
  async incoming(me: AccountRecord): Promise<ContactRequestOut[]> {
    const rows = await this.d.store.listRecords(REC.contactRequest, `${me.id}|`, REQUESTS_LIST);
    const out = await Promise.all(
      rows.map(async (row) => {
        const v = parse<RequestRecord>(row);
        const s = row.id.slice(me.id.length + 1);
        if (v.recipient !== incarnationOf(me)) return null;
        return { account: s, at: iso(v.at), held: (await this.held(me.id, s)).length, state: v.state };
      }),
    );
    return out.filter((x) => x !== null);
  }

  /** Requests this account made of others. */
  async outgoing(me: AccountRecord): Promise<ContactRequestOut[]> {
    const rows = await this.d.store.listRecords(REC.contactAsked, `${me.id}|`, REQUESTS_LIST);
    const out = await Promise.all(
      rows.map(async (row) => {
        const r = row.id.slice(me.id.length + 1);
        const req = await this.d.store.getRecord(REC.contactRequest, requestId(r, me.id));
        const v = req ? parse<RequestRecord>(req) : null;
        if (!v || v.sender !== incarnationOf(me)) return null;
        return { account: r, at: iso(v.at), held: (await this.held(r, me.id)).length, state: v.state };
      }),
    );
    return out.filter((x) => x !== null);
  }
}

function withoutFlag(req: W.SendRequest): W.SendRequest {
  const { request_contact: _flag, ...rest } = req;
  return rest;
}

function tooMany(recipient: string): MailError {
  return new MailError('rate_limited', `${HELD_PER_REQUEST_MAX} messages already wait for ${recipient}'s answer to your contact request`, { limit: HELD_PER_REQUEST_MAX });
}
