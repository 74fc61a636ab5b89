// The sending path: a send or a reply is checked (permissions, the message it answers), stored
// (recipient rules, idempotency, the loop guard) and announced to listeners after commit. Tasks and
// approvals send through deliver as well (their `post`), so their mail follows the same rules.
import { MailError } from '../wire/errors.js';
import { formatAddress, isTeamAddress, parseCompactAddress, type Address } from '../wire/address.js';
import { utf8Bytes } from '../wire/text.js';
import { LIMITS } from '../wire/limits.js';
import type * as W from '../wire/ops.js';
import { readKeys, type NewMessage, type ReaderScope, type Store, type StoredMessage } from '../store/types.js';
import type { Clock, Ids } from './clock.js';
import type { Logger } from './log.js';
import { senderAddress } from './present.js';
import type { ShortAddresses } from './short-address.js';
import { resolveRecipient, type Recipient } from './recipients.js';
import type { SessionBook } from './sessions.js';
import { checkListenerUrl, type Doorbell } from './listener-url.js';
import type { TaskMark } from './tasks.js';
import type { LoopGuard } from './loop-guard.js';
import { sentBy } from './incarnation.js';
import { sentMessage } from './sent-message.js';
import { need, type Caller } from './mail-engine.js';

/** An external sender's stored account field: `email:` and the address (email-book.ts). */
export const EMAIL_PREFIX = 'email:';

/** What the sending path needs from the mail engine. */
export interface PostDeps {
  store: Store;
  clock: Clock;
  ids: Ids;
  log: Logger;
  sessions: SessionBook;
  loops: LoopGuard;
  addresses: ShortAddresses;
  doorbell: Doorbell | undefined;
  idempotencyWindowMs: number;
  scope(c: Caller): Promise<ReaderScope>;
  /** team: and leader: mail, expanded into one copy per recipient (teams.ts), each through deliver. */
  teams: { send(c: Caller, req: W.SendRequest, parent: StoredMessage | null): Promise<W.SendResponse> };
  /** Mail to an `email:` address: stored and queued for the relay (email-book.ts). */
  email: { send(c: Caller, req: W.SendRequest, parent: StoredMessage | null): Promise<W.SendResponse> };
  /** The recipient's contact policy (contacts.ts): admit throws contact_refused; a send with
   *  request_contact that was refused is held for a contact request instead (hold). */
  contacts: {
    admit(c: Caller, target: Recipient, parent: StoredMessage | null, task: TaskMark | null): Promise<void>;
    hold(c: Caller, req: W.SendRequest, parent: StoredMessage | null, refused: MailError): Promise<W.SendResponse>;
  };
}

/** How deliver stores a copy that is not simply "the message to req.to". */
export interface DeliverOptions {
  /** The address it was written to, kept as the message's toAddress (a team copy: `team:NAME`);
   *  the copy still lands in the resolved recipient's mailbox. */
  writtenTo?: string;
  /** The thread it joins when it answers nothing (the copies of one team send share one). */
  threadId?: string;
  /** The id it was promised when it was held for a contact request (contacts.ts). */
  messageId?: string;
}

/** Where a reply goes: the sender (the session that wrote it, or its account), the room for room
 *  mail unless `toSender`, and for a follow-up to one's own message its recipient. */
function replyTarget(m: StoredMessage, addressedToCaller: boolean, toSender: boolean): Address {
  if (!addressedToCaller) {
    const r = parseCompactAddress(m.toAddress);
    if (r.ok) return r.address;
  }
  if (m.toKey.startsWith('r:') && !toSender) return { kind: 'room', room: m.toKey.slice(2) };
  // Mail from outside came from an e-mail address: the answer leaves through the relay.
  if (m.fromKind === 'external') return { kind: 'email', email: m.fromAccount.slice(EMAIL_PREFIX.length) };
  return m.fromSession ? { kind: 'session', participant: m.fromAccount, session: m.fromSession } : { kind: 'direct', participant: m.fromAccount };
}

/** `Re: ` once, within the subject limit. */
function replySubject(subject: string): string {
  if (/^re:\s/i.test(subject)) return subject;
  const s = `Re: ${subject}`;
  return utf8Bytes(s) <= LIMITS.subjectBytes ? s : subject;
}

export class MailPost {
  constructor(private d: PostDeps) {}

  async send(c: Caller, req: W.SendRequest): Promise<W.SendResponse> {
    need(c, 'send');
    const priority = req.priority ?? 'normal';
    if (priority === 'urgent') need(c, 'urgent');
    const parent = req.reply_to ? (await this.answerable(c, req.reply_to, await this.d.scope(c))).message : null;
    return this.dispatch(c, req, parent);
  }

  /** One recipient through deliver; team: and leader: through the team's expansion. */
  private async dispatch(c: Caller, req: W.SendRequest, parent: StoredMessage | null): Promise<W.SendResponse> {
    if (isTeamAddress(req.to)) return this.d.teams.send(c, req, parent);
    if (req.to.kind === 'email') return this.d.email.send(c, req, parent);
    try {
      return (await this.deliver(c, req, parent)).answer;
    } catch (err) {
      if (req.request_contact && err instanceof MailError && err.code === 'contact_refused') return this.d.contacts.hold(c, req, parent, err);
      throw err;
    }
  }

  /** Answers a message: to its sender (room mail: to the room unless to_sender), in its thread,
   *  subject `Re: …` once, and acknowledges it unless ack is false. */
  async reply(c: Caller, req: W.ReplyRequest): Promise<W.ReplyResponse> {
    need(c, 'send');
    const scope = await this.d.scope(c);
    const { message: m, mine } = await this.answerable(c, req.message_id, scope);
    const to = replyTarget(m, mine, req.to_sender ?? false);
    // The sender's account may have been removed and its name given to someone else since: the
    // message then predates the account of the name, and the answer is meant for nobody there.
    if ((to.kind === 'direct' || to.kind === 'session') && to.participant === m.fromAccount) {
      const sender = await this.d.store.getAccount(m.fromAccount);
      if (!sender || !sentBy(sender, m))
        throw new MailError('unknown_participant', `the account that sent ${m.id} was removed; ${m.fromAccount} now names another account`, { participant: m.fromAccount });
    }
    const send: W.SendRequest = { to, subject: replySubject(m.subject), body: req.body, reply_to: m.id };
    if (req.idempotency_key !== undefined) send.idempotency_key = req.idempotency_key;
    const sent = await this.dispatch(c, send, m);
    const ack = mine && req.ack !== false;
    if (ack) await this.d.store.ack(scope, [{ seq: m.seq, toKey: m.toKey }], this.d.clock.now());
    return { ...sent, acked: ack };
  }

  /** Stores a checked send (`parent`: the message `reply_to` names, already checked; `task`: a
   *  task's change this message carries). */
  async deliver(
    c: Caller,
    req: W.SendRequest,
    parent: StoredMessage | null,
    task: TaskMark | null = null,
    opts: DeliverOptions = {},
  ): Promise<{ answer: W.SendResponse; message: StoredMessage }> {
    const now = this.d.clock.now();
    if (isTeamAddress(req.to)) throw new MailError('internal', 'team: and leader: mail is expanded before deliver');
    if (req.to.kind === 'email') throw new MailError('internal', 'email: mail goes through the e-mail book, not deliver');
    const target = await resolveRecipient(this.d.store, this.d.sessions, req.to, parent, now, c.account);
    await this.d.contacts.admit(c, target, parent, task);
    if (opts.writtenTo !== undefined) target.address = opts.writtenTo;
    const id = opts.messageId ?? this.d.ids.messageId();
    // The commit announces the message before the loop guard has judged it: wakers ask verdict().
    const judged = this.d.loops.judgingStarts(id);
    let quiet: string | null = null;
    let outcome: Awaited<ReturnType<Store['appendMessage']>>;
    try {
      outcome = await this.d.store.appendMessage(
        {
          ...sentMessage(c, req, { id, parent, ...(opts.threadId !== undefined ? { threadId: opts.threadId } : {}), toAddress: target.address, toKey: target.key, createdAt: now }),
          ...(task ? { task } : {}),
        },
        now - this.d.idempotencyWindowMs,
      );
      if (outcome.kind === 'created') {
        quiet = await this.judgeLoop(c, outcome.message, req.to.kind === 'room' ? null : (target.accounts[0] ?? null));
        if (quiet) this.d.loops.markQuiet(outcome.message.id);
      }
    } finally {
      judged();
    }
    const m = outcome.message;
    if (outcome.kind === 'conflict') throw new MailError('idempotency_conflict', `idempotency key ${req.idempotency_key} was used for a different message`, { message_id: m.id });
    if (outcome.kind === 'created' && !quiet) void this.ring(target.accounts, m);
    const [from, to] = await Promise.all([this.d.addresses.print(senderAddress(m), [c.session]), this.d.addresses.print(m.toAddress, [target.session])]);
    const answer: W.SendResponse = {
      message_id: m.id,
      from,
      thread_id: m.threadId,
      to,
      redirected: outcome.kind === 'created' ? target.redirected : m.toAddress !== formatAddress(req.to),
      duplicate: outcome.kind === 'duplicate',
      ...(quiet ? { quiet: `stored but wakes nobody: ${quiet} (loop guard; do not send acknowledgement-only replies)` } : {}),
      ...(outcome.kind === 'created' && target.waiting ? { not_running: true as const } : {}),
    };
    return { answer, message: m };
  }

  /** Stores a message that came from outside or leaves for outside (email-book.ts), already built:
   *  the same judging window, quiet marking and doorbells as a send; `quiet` wakes nobody. */
  async storeBuilt(m: NewMessage, quiet: string | null, ring: string[]): Promise<Awaited<ReturnType<Store['appendMessage']>>> {
    const judged = this.d.loops.judgingStarts(m.id);
    let outcome: Awaited<ReturnType<Store['appendMessage']>>;
    try {
      outcome = await this.d.store.appendMessage(m, this.d.clock.now() - this.d.idempotencyWindowMs);
      if (outcome.kind === 'created' && quiet) this.d.loops.markQuiet(m.id);
    } finally {
      judged();
    }
    if (outcome.kind === 'created' && !quiet) void this.ring(ring, outcome.message);
    return outcome;
  }

  /** A message the caller may answer: addressed to it, or sent by its account (a follow-up).
   *  `mine`: it is in the caller's mail, so answering it can acknowledge it. */
  private async answerable(c: Caller, id: string, scope: ReaderScope): Promise<{ message: StoredMessage; mine: boolean }> {
    const message = await this.d.store.getMessage(id);
    if (!message) throw new MailError('unknown_message', `no message ${id}`, { message_id: id });
    const mine = readKeys(scope).includes(message.toKey);
    if (!mine && !sentBy(c.account, message)) throw new MailError('not_addressed_to_you', `you may not reply to ${id}`, { message_id: id });
    return { message, mine };
  }

  private async judgeLoop(c: Caller, m: StoredMessage, to: string | null): Promise<string | null> {
    // A person's message is never throttled, and it resets nothing: the guard only counts agents.
    if (c.account.kind === 'human') return null;
    let thread = { length: 1, hasHuman: false };
    if (m.threadId !== m.id) {
      const all = await this.d.store.getThread(m.threadId);
      thread = { length: all.length, hasHuman: all.some((x) => x.fromKind === 'human') };
    }
    return this.d.loops.judge(c.account.id, to, thread);
  }

  /** Doorbells after commit: best effort, never able to fail or slow the send. */
  private async ring(accounts: string[], m: StoredMessage): Promise<void> {
    if (!this.d.doorbell) return;
    try {
      // One read for a room's members, not one per member.
      const urls = await this.d.store.listenersOf(accounts);
      for (const account of accounts) {
        const url = urls.get(account);
        if (!url) continue;
        this.d.doorbell.ring(checkListenerUrl(url), { account, to: m.toAddress, message_id: m.id, from: senderAddress(m) });
      }
    } catch (err) {
      this.d.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'listener lookup failed');
    }
  }
}
