// The rules of the mailbox. Doors call these functions with a verified Caller; nothing here
// knows about HTTP, MCP or SQL.
import { createHash } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import { formatAddress, parseCompactAddress } from '../wire/address.js';
import { utf8Bytes } from '../wire/text.js';
import { LIMITS } from '../wire/limits.js';
import type * as W from '../wire/ops.js';
import {
  keyOfLineage,
  lineageKeyPrefix,
  readKeys,
  type AccountRecord,
  type PagedMessage,
  type ReaderScope,
  type SessionRecord,
  type Store,
  type StoredMessage,
} from '../store/types.js';
import type { Attestation } from '../attest/types.js';
import type { Clock, Ids } from './clock.js';
import { CredentialCheck } from './credentials.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { silentLogger, type Logger } from './log.js';
import { iso, presentCard, presentMessage, presentPaged, presentPeer, presentSession, senderAddress, type ReaderView } from './present.js';
import { ShortAddresses } from './short-address.js';
import { resolveRecipient } from './recipients.js';
import { SessionBook } from './sessions.js';
import { guardStore } from './store-guard.js';
import { DEFAULT_WAIT_CAPS, WaitRoom, type WaitCaps } from './waits.js';
import { checkListenerUrl, type Doorbell } from './listener-url.js';
import { fitToBudget } from './inbox-budget.js';
import { WakeBatcher } from './wake-batch.js';
import { NOTICE_LIMIT, NoticeBook, shownKey } from './notices.js';
import { DEFAULT_LOOP_GUARD, LoopGuard, type LoopGuardOptions } from './loop-guard.js';
import type * as H from '../wire/hooks.js';
import { aliasName } from './names.js';
import { accountSweep, IncarnationCheck, sentBy } from './incarnation.js';
import { Receipts } from './receipts.js';
import { MAILBOX_ACCOUNT, TimerBook, type TimerRecord } from './timers.js';
import type * as WK from '../wire/wake.js';
import type { Address } from '../wire/address.js';

export interface EngineOptions {
  store: Store;
  clock: Clock;
  ids: Ids;
  hostId: string;
  isAlive(pid: number, startTime: number): boolean;
  doorbell?: Doorbell;
  log?: Logger;
  waitCaps?: WaitCaps;
  /** How long ended sessions stay in the directory (default 24 h). */
  sessionRetentionMs?: number;
  idempotencyWindowMs?: number;
  loopGuard?: LoopGuardOptions;
  /** How often timers set through another daemon are looked for (default 30 s). */
  timerPollMs?: number;
}

/** Who is calling: a verified account and, for agents, its attested session. */
export interface Caller {
  account: AccountRecord;
  session: SessionRecord | null;
}

export const callerAddress = (c: Caller): string => (c.session ? `${c.account.id}/${c.session.id}` : c.account.id);

const DAY_MS = 24 * 3600 * 1000;

const accountGone = (c: Caller): MailError =>
  new MailError('unauthenticated', `account ${c.account.id} was removed while this read waited: the secret names no account`);

/** Nobody reads this: the client of a parked wait closed its connection (the door's signal). */
const clientGone = (): MailError => new MailError('malformed', 'the client closed the connection while its read waited', { field: '(request)', reason: 'client_gone' });

/** What a door says about an inbox read: its longest wait, its byte budget, and a signal that
 *  aborts when its client has gone away (a parked wait is then dropped at once). */
export interface InboxDoor {
  maxWaitSecs: number;
  budgetBytes?: number;
  signal?: AbortSignal;
}

interface AnswerOptions {
  budgetBytes?: number | undefined;
  /** A wait without a cursor: its answer must keep some mail above this mark (the shown mark). */
  newAbove: number | null;
  /** Where the answer is marked shown (null: a hook notice marks what it told itself). */
  shown: { key: string; thread: string | null } | null;
}

/** A wait's answer: the shown, still unacknowledged mail and the new, oldest first; when both do
 *  not fit in `limit`, the oldest shown mail makes room, so the new mail is always in it. */
function withShown(old: PagedMessage[], fresh: PagedMessage[], limit: number): PagedMessage[] {
  const kept = fresh.slice(0, limit);
  return [...old.slice(0, limit - kept.length), ...kept];
}

/** Where a reply goes: the sender (the session that wrote it, or its account), the room for room
 *  mail unless `toSender`, and for a follow-up to one's own message its recipient. */
function replyTarget(m: StoredMessage, addressedToCaller: boolean, toSender: boolean): Address {
  if (!addressedToCaller) {
    const r = parseCompactAddress(m.toAddress);
    if (r.ok) return r.address;
  }
  if (m.toKey.startsWith('r:') && !toSender) return { kind: 'room', room: m.toKey.slice(2) };
  return m.fromSession ? { kind: 'session', participant: m.fromAccount, session: m.fromSession } : { kind: 'direct', participant: m.fromAccount };
}

/** `Re: ` once, within the subject limit. */
function replySubject(subject: string): string {
  if (/^re:\s/i.test(subject)) return subject;
  const s = `Re: ${subject}`;
  return utf8Bytes(s) <= LIMITS.subjectBytes ? s : subject;
}

export class MailEngine {
  // The substrate every part shares: the store (wrapped by store-guard.ts), the clock, the log.
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Logger;
  // Collaborators are private: doors, the wake dispatcher and the registry reach them through the
  // operations below, so each rule has one owner.
  private ids: Ids;
  private credentials: CredentialCheck;
  private sessions: SessionBook;
  private waits: WaitRoom;
  private doorbell: Doorbell | undefined;
  private wakes: WakeBatcher;
  private notices: NoticeBook;
  private loops: LoopGuard;
  private receipts: Receipts;
  /** Printed forms of session addresses (account/slug …), looked up per answer. */
  private addresses: ShortAddresses;
  private timers: TimerBook;
  private incarnations: IncarnationCheck;
  /** Which parked readers each recent commit woke (seq → owners), for the wake dispatcher. */
  private woken = new Map<number, string[]>();
  /** Highest seq this engine has seen committed; -1 until start(). */
  private lastSeq = -1;
  private idemWindow: number;
  private unsubscribe: () => void;

  constructor(o: EngineOptions) {
    this.log = o.log ?? silentLogger;
    this.store = guardStore(o.store, this.log);
    this.clock = o.clock;
    this.ids = o.ids;
    this.credentials = new CredentialCheck(this.store, o.clock);
    this.incarnations = new IncarnationCheck(this.store);
    this.sessions = new SessionBook(this.store, o.clock, { hostId: o.hostId, isAlive: (pid, startTime) => o.isAlive(pid, startTime), retentionMs: o.sessionRetentionMs ?? DAY_MS });
    this.waits = new WaitRoom(o.clock, o.waitCaps ?? DEFAULT_WAIT_CAPS);
    this.doorbell = o.doorbell;
    this.idemWindow = o.idempotencyWindowMs ?? DAY_MS;
    this.wakes = new WakeBatcher(this.store);
    this.notices = new NoticeBook(this.store, o.clock, this.log);
    this.loops = new LoopGuard(o.clock, o.loopGuard ?? DEFAULT_LOOP_GUARD);
    this.receipts = new Receipts(this.store, o.clock, this.log);
    this.addresses = new ShortAddresses(this.store, o.clock, o.sessionRetentionMs ?? DAY_MS);
    this.timers = new TimerBook(this.store, o.clock, this.log, (t, to, key) => this.deliverTimer(t, to, key), o.timerPollMs);
    // A commit is a hint; parked readers re-query (the query is the truth), many at once in a batch.
    this.unsubscribe = o.store.onCommit((e) => {
      if (e.seq > this.lastSeq && this.lastSeq >= 0) this.lastSeq = e.seq;
      this.wakes.noteCommit(e.keys, e.seq);
      const owners = this.waits.notify(e.keys);
      if (owners.length > 0) {
        this.woken.set(e.seq, owners);
        if (this.woken.size > 4096) this.woken.delete(this.woken.keys().next().value as number);
      }
    });
  }

  /** Learns the store's head so woken waits can be answered in batches (until then each re-queries). */
  async start(): Promise<void> {
    const head = await this.store.headSeq();
    this.lastSeq = Math.max(this.lastSeq, head);
    await this.ensureMailbox();
    this.timers.start();
  }

  /** The parked readers (owners: `account/session` or `account`) that the commit of `seq` answered. */
  wokenBy(seq: number): string[] {
    return this.woken.get(seq) ?? [];
  }

  /** The reserved service account reminders come from: no secret anyone holds, send only. */
  private async ensureMailbox(): Promise<void> {
    if (await this.store.getAccount(MAILBOX_ACCOUNT)) return;
    await this.store.addAccount({
      id: MAILBOX_ACCOUNT,
      kind: 'service',
      label: 'mailbox (reminders)',
      permissions: { send: true, read: false, urgent: false, operator: false },
      bindProvider: null,
      secretDigest: createHash('sha256').update(this.ids.secret()).digest('hex'),
      createdAt: this.clock.now(),
    }, accountSweep(MAILBOX_ACCOUNT));
  }

  private async deliverTimer(t: TimerRecord, to: Address, idempotencyKey: string): Promise<void> {
    const account = await this.store.getAccount(MAILBOX_ACCOUNT);
    if (!account) throw new MailError('unknown_participant', 'the mailbox account is missing', { participant: MAILBOX_ACCOUNT });
    const set = new Date(t.createdAt).toISOString();
    await this.send(
      { account, session: null },
      { to, subject: `Reminder: ${t.note}`, body: `Reminder ${t.id}, set at ${set}:\n${t.note}`, idempotency_key: idempotencyKey },
    );
  }

  // ---- timers and receipts

  async remind(c: Caller, req: WK.TimerSetRequest): Promise<WK.TimerOut> {
    this.need(c, 'read');
    if (!req.account && !c.session) throw new MailError('permission_denied', 'only an attested session has its own timers; pass account: true', { need: 'session' });
    return this.timers.set({ account: c.account.id, session: c.session ? { id: c.session.id, lineage: c.session.lineage } : null }, req.in_secs, req.note, !!req.account);
  }

  async timerList(c: Caller): Promise<{ timers: WK.TimerOut[] }> {
    return { timers: await this.timers.list(c.account.id) };
  }

  async timerSnooze(c: Caller, req: { id: string; in_secs: number }): Promise<WK.TimerOut> {
    return this.timers.snooze(c.account.id, req.id, req.in_secs);
  }

  async timerClear(c: Caller, req: { id: string }): Promise<{ ok: true }> {
    return this.timers.clear(c.account.id, req.id);
  }

  async receiptsOf(c: Caller, req: { message_id: string }): Promise<WK.ReceiptsResponse> {
    const scope = await this.scope(c);
    const m = await this.store.getMessage(req.message_id);
    const r = await this.receipts.receipts({ account: c.account, operator: c.account.permissions.operator, scope }, m, req.message_id);
    const names = await this.addresses.printAll(r.receipts.map((x) => x.recipient), [c.session]);
    return { ...r, receipts: r.receipts.map((x) => ({ ...x, recipient: names.get(x.recipient) ?? x.recipient })) };
  }

  /** The printed form of each address (account/slug, account/s-…; engine/short-address.ts). */
  async printAddresses(compacts: Iterable<string>): Promise<Map<string, string>> {
    return this.addresses.printAll(compacts);
  }

  /** The caller for a verified account and, when the connection is attested, the session it is. */
  async callerFor(account: AccountRecord, att: Attestation | null): Promise<Caller> {
    if (!att) return { account, session: null };
    return { account, session: await this.sessions.sessionFor(account, att) };
  }

  async scope(c: Caller): Promise<ReaderScope> {
    return {
      account: c.account.id,
      sessionKey: c.session ? keyOfLineage(c.account.id, c.session.lineage) : null,
      rooms: await this.store.roomsOf(c.account.id),
    };
  }

  private need(c: Caller, perm: 'send' | 'read' | 'urgent'): void {
    if (!c.account.permissions[perm]) throw new MailError('permission_denied', `account ${c.account.id} may not ${perm}`, { need: perm });
  }

  private async readable(c: Caller, m: StoredMessage, scope?: ReaderScope): Promise<boolean> {
    const s = scope ?? (await this.scope(c));
    return readKeys(s).includes(m.toKey);
  }

  async send(c: Caller, req: W.SendRequest): Promise<W.SendResponse> {
    this.need(c, 'send');
    const priority = req.priority ?? 'normal';
    if (priority === 'urgent') this.need(c, 'urgent');
    let parent: StoredMessage | null = null;
    if (req.reply_to) {
      parent = await this.store.getMessage(req.reply_to);
      if (!parent) throw new MailError('unknown_message', `no message ${req.reply_to}`, { message_id: req.reply_to });
      if (!sentBy(c.account, parent) && !(await this.readable(c, parent)))
        throw new MailError('not_addressed_to_you', `you may not reply to ${req.reply_to}`, { message_id: req.reply_to });
    }
    const now = this.clock.now();
    const target = await resolveRecipient(this.store, this.sessions, req.to, parent, now, c.account);
    const refs = req.refs ?? [];
    const fingerprint = req.idempotency_key
      ? createHash('sha256')
          .update(JSON.stringify([formatAddress(req.to), req.subject, req.body, req.reply_to ?? null, req.correlation ?? null, refs, priority]))
          .digest('hex')
      : null;
    const id = this.ids.messageId();
    // The commit announces the message before the loop guard has judged it: wakers ask verdict().
    const judged = this.loops.judgingStarts(id);
    let quiet: string | null = null;
    let outcome: Awaited<ReturnType<Store['appendMessage']>>;
    try {
      outcome = await this.store.appendMessage(
        {
          id,
          threadId: parent ? parent.threadId : id,
          fromAccount: c.account.id,
          fromSession: c.session?.id ?? null,
          fromKind: c.account.kind,
          toAddress: target.address,
          toKey: target.key,
          subject: req.subject,
          body: req.body,
          replyTo: req.reply_to ?? null,
          correlation: req.correlation ?? null,
          refs,
          priority,
          createdAt: now,
          idempotencyKey: req.idempotency_key ?? null,
          fingerprint,
        },
        now - this.idemWindow,
      );
      if (outcome.kind === 'created') {
        quiet = await this.judgeLoop(c, outcome.message, req.to.kind === 'room' ? null : target.accounts[0] ?? null);
        if (quiet) this.loops.markQuiet(outcome.message.id);
      }
    } finally {
      judged();
    }
    const m = outcome.message;
    if (outcome.kind === 'conflict')
      throw new MailError('idempotency_conflict', `idempotency key ${req.idempotency_key} was used for a different message`, { message_id: m.id });
    if (outcome.kind === 'created' && !quiet) void this.ring(target.accounts, m);
    const [from, to] = await Promise.all([this.addresses.print(senderAddress(m), [c.session]), this.addresses.print(m.toAddress, [target.session])]);
    return {
      message_id: m.id,
      from,
      thread_id: m.threadId,
      to,
      redirected: outcome.kind === 'created' ? target.redirected : m.toAddress !== formatAddress(req.to),
      duplicate: outcome.kind === 'duplicate',
      ...(quiet ? { quiet: `stored but wakes nobody: ${quiet} (loop guard; do not send acknowledgement-only replies)` } : {}),
    };
  }

  private async judgeLoop(c: Caller, m: StoredMessage, to: string | null): Promise<string | null> {
    // A person's message is never throttled, and it resets nothing: the guard only counts agents.
    if (c.account.kind === 'human') return null;
    let thread = { length: 1, hasHuman: false };
    if (m.threadId !== m.id) {
      const all = await this.store.getThread(m.threadId);
      thread = { length: all.length, hasHuman: all.some((x) => x.fromKind === 'human') };
    }
    return this.loops.judge(c.account.id, to, thread);
  }

  /** Doorbells after commit: best effort, never able to fail or slow the send. */
  private async ring(accounts: string[], m: StoredMessage): Promise<void> {
    if (!this.doorbell) return;
    try {
      for (const account of accounts) {
        const url = await this.store.getListener(account);
        if (!url) continue;
        this.doorbell.ring(checkListenerUrl(url), { account, to: m.toAddress, message_id: m.id, from: senderAddress(m) });
      }
    } catch (err) {
      this.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'listener lookup failed');
    }
  }

  /** A page of readable mail, oldest first. With wait_secs and a cursor, parks until mail after it
   *  commits; without one, until there is mail this reader has not been shown (notices.ts). */
  async inbox(c: Caller, req: W.InboxRequest, door: InboxDoor = { maxWaitSecs: LIMITS.waitSecsHttp }): Promise<W.InboxResponse> {
    return this.read(c, req, door, true);
  }

  /** The inbox; `mark`: the answer counts as shown (a hook notice decides that itself). */
  private async read(c: Caller, req: W.InboxRequest, door: InboxDoor, mark: boolean): Promise<W.InboxResponse> {
    const maxWaitSecs = door.maxWaitSecs;
    this.need(c, 'read');
    const limit = req.limit ?? LIMITS.inboxLimitDefault;
    if (limit > LIMITS.inboxLimitMax)
      throw new MailError('too_large', `limit is over ${LIMITS.inboxLimitMax}`, { field: 'limit', limit: LIMITS.inboxLimitMax, actual: limit });
    const after = req.after !== undefined ? decodeCursor(req.after) : null;
    const waitMs = Math.round(Math.min(Math.max(req.wait_secs ?? 0, 0), maxWaitSecs) * 1000);
    const deadline = this.clock.now() + waitMs;
    const owner = c.session ? `${c.account.id}/${c.session.id}` : c.account.id;
    const look: ReaderView = { includeBody: req.include_bodies ?? true, reader: c.account.id, verbose: req.verbose === true, self: c.session };
    const thread = req.thread_id ?? null;
    const key = shownKey(c.account.id, c.session?.lineage ?? null);
    const q = { after, pendingOnly: !req.include_acked, limit, threadId: thread };

    const [first, st] = await Promise.all([this.scope(c), this.notices.state(key)]);
    let scope = first;
    let waited = false;
    for (;;) {
      const remaining = deadline - this.clock.now();
      // Without a cursor a wait ends only on mail above the shown mark; what it was shown stays in
      // the answer (unacknowledged), so `old` is that part of the page.
      const shown = after === null ? this.notices.shownFor(st, thread) : null;
      // Register before the query so a commit in between still wakes us, and remember the head this
      // query is sure to see: woken readers are then answered in batches (wake-batch.ts).
      const bound = this.lastSeq >= 0 ? Math.max(after ?? 0, shown ?? 0, this.lastSeq) : null;
      const parked = remaining > 0 ? this.waits.park(owner, c.account.id, readKeys(scope), remaining, door.signal) : null;
      let rows: PagedMessage[];
      let old: PagedMessage[] = [];
      try {
        rows = await this.store.page(scope, q);
        if (parked && shown !== null) {
          old = rows.filter((m) => m.seq <= shown);
          let fresh = rows.slice(old.length);
          // A full page may hold back new mail behind shown mail: read on after the mark.
          if (rows.length >= limit && old.length > 0) fresh = await this.store.page(scope, { ...q, after: shown });
          rows = fresh.length > 0 ? withShown(old, fresh, limit) : [];
        }
      } catch (err) {
        parked?.cancel();
        throw err;
      }
      const answer = (rows: PagedMessage[]): Promise<W.InboxResponse> =>
        this.answer(scope, rows, after, look, { budgetBytes: door.budgetBytes, newAbove: parked ? shown : null, shown: mark ? { key, thread } : null });
      if (rows.length > 0 || !parked) {
        parked?.cancel();
        if (waited) await this.stillSameAccount(c);
        return answer(rows);
      }
      const end = await parked.ended;
      waited = true;
      if (end === 'gone') throw clientGone();
      if (end === 'removed') throw accountGone(c);
      let checked = false;
      if (end === 'woken' && bound !== null && !req.thread_id) {
        const woke = await this.wakes.page({ scope, keys: readKeys(scope), bound, limit });
        if (woke && woke.length > 0) {
          // Checked after the mail was read: mail of a new account of the name would be newer than it.
          await this.stillSameAccount(c);
          checked = true;
          // New mail can be acknowledged already (a sibling session read it first), and so can the
          // shown mail kept in the answer: the store says.
          const acked = await this.store.ackedAt(scope, [...old, ...woke].map((m) => ({ seq: m.seq, toKey: m.toKey })));
          const now = <T extends StoredMessage>(list: T[]): PagedMessage[] =>
            list.map((m) => ({ ...m, ackedAt: acked.get(m.seq) ?? null })).filter((m) => req.include_acked || m.ackedAt === null);
          const fresh = now(woke);
          if (fresh.length > 0) return answer(withShown(now(old), fresh, limit));
        }
      }
      // Whatever follows reads the account's mail, counts it or parks on it again: only for the
      // account that parked (removed through another daemon sharing the store, it is not).
      if (!checked) await this.stillSameAccount(c);
      if (end !== 'woken' && end !== 'refresh') {
        return { messages: [], next_cursor: encodeCursor(after ?? (await this.store.headSeq())), unread: await this.store.unread(scope) };
      }
      scope = await this.scope(c);
    }
  }

  /** Refuses a parked reader whose account another daemon sharing the store removed (and perhaps
   *  created again) meanwhile. A removal through this daemon ends its waits itself ('removed'), so a
   *  woken wait on a store no other daemon shares costs no account read. */
  private async stillSameAccount(c: Caller): Promise<void> {
    if (!this.store.shared) return;
    if (!(await this.incarnations.same(c.account))) throw accountGone(c);
  }

  private async answer(scope: ReaderScope, rows: PagedMessage[], after: number | null, look: ReaderView, o: AnswerOptions): Promise<W.InboxResponse> {
    const unread = await this.store.unread(scope);
    // One lookup per distinct sender or recipient of the page, not per message.
    const printed = await this.addresses.forMessages(rows, [look.self]);
    const show = (m: PagedMessage): W.MessageOut => presentPaged(m, { ...look, printed });
    let messages = rows.map(show);
    if (o.budgetBytes !== undefined) {
      messages = fitToBudget(messages, o.budgetBytes, 80);
      // A wait's answer cut down to shown mail only would be given again at once: drop that instead.
      const above = o.newAbove;
      if (above != null && !rows.slice(0, messages.length).some((m) => m.seq > above)) {
        rows = rows.filter((m) => m.seq > above);
        messages = fitToBudget(rows.map(show), o.budgetBytes, 80);
      }
    }
    this.receipts.noteSurfaced(scope, rows.slice(0, messages.length));
    const last = rows[messages.length - 1];
    if (last && o.shown) this.notices.markShown(o.shown.key, last.seq, o.shown.thread);
    const next = last ? last.seq : (after ?? (await this.store.headSeq()));
    return { messages, next_cursor: encodeCursor(next), unread };
  }

  async ack(c: Caller, req: W.AckRequest): Promise<W.AckResponse> {
    this.need(c, 'read');
    const ids = req.message_ids ?? (req.message_id ? [req.message_id] : []);
    const scope = await this.scope(c);
    const keys = readKeys(scope);
    const items: { id: string; seq: number; toKey: string }[] = [];
    // Check every id before acknowledging any: a refused request changes nothing.
    for (const id of [...new Set(ids)]) {
      const m = await this.store.getMessage(id);
      if (!m) throw new MailError('unknown_message', `no message ${id}`, { message_id: id });
      if (!keys.includes(m.toKey)) throw new MailError('not_addressed_to_you', `message ${id} is not addressed to you`, { message_id: id });
      items.push({ id, seq: m.seq, toKey: m.toKey });
    }
    const results = await this.store.ack(scope, items, this.clock.now());
    return {
      acked: results.map((r, i) => ({ message_id: items[i]!.id, acked_at: iso(r.ackedAt) })),
      unread: await this.store.unread(scope),
    };
  }

  async get(c: Caller, req: W.GetRequest): Promise<W.GetResponse> {
    this.need(c, 'read');
    const m = await this.store.getMessage(req.message_id);
    if (!m) throw new MailError('unknown_message', `no message ${req.message_id}`, { message_id: req.message_id });
    const scope = await this.scope(c);
    const keys = readKeys(scope);
    const mayRead = (x: StoredMessage): boolean => keys.includes(x.toKey) || sentBy(c.account, x);
    if (!mayRead(m)) throw new MailError('not_addressed_to_you', `message ${req.message_id} is not addressed to you`, { message_id: req.message_id });
    const visible = req.thread ? (await this.store.getThread(m.threadId)).filter(mayRead) : [m];
    const acked = await this.store.ackedAt(
      scope,
      visible.filter((x) => keys.includes(x.toKey)).map((x) => ({ seq: x.seq, toKey: x.toKey })),
    );
    const printed = await this.addresses.forMessages(visible, [c.session]);
    const out = (x: StoredMessage, fromSession = false) =>
      presentMessage(x, acked.get(x.seq) ?? null, { reader: c.account.id, printed, verbose: req.verbose === true, fromSession });
    return req.thread ? { message: out(m, true), thread: visible.map((x) => out(x)) } : { message: out(m, true) };
  }

  async unread(c: Caller): Promise<W.UnreadResponse> {
    this.need(c, 'read');
    return { unread: await this.store.unread(await this.scope(c)) };
  }

  /** The aliases of the caller's lineage. */
  private async aliasesOf(s: SessionRecord | null): Promise<string[]> {
    if (!s) return [];
    return (await this.store.namesOf(s.account)).filter((n) => n.kind === 'alias' && n.lineage === s.lineage).map((n) => n.name);
  }

  async whoami(c: Caller): Promise<W.WhoamiResponse> {
    return {
      address: callerAddress(c),
      account: c.account.id,
      label: c.account.label,
      kind: c.account.kind,
      session: c.session?.id ?? null,
      slug: c.session?.slug ?? null,
      aliases: await this.aliasesOf(c.session),
      rooms: (await this.store.roomsOf(c.account.id)).map((r) => `#${r}`),
      card: presentCard(c.session),
    };
  }

  async status(c: Caller, req: W.StatusRequest): Promise<W.StatusResponse> {
    const session = c.session;
    if (!session) throw new MailError('permission_denied', 'only an attested session has a card', { need: 'session' });
    // Both names are checked before either changes anything.
    const alias = req.alias === undefined ? undefined : aliasName(req.alias);
    const unalias = req.unalias === undefined ? undefined : aliasName(req.unalias, 'unalias');
    if (alias !== undefined && (await this.store.addAlias(c.account.id, session.lineage, alias)) === 'taken') {
      const owner = await this.store.resolveName(c.account.id, alias);
      throw new MailError('already_exists', `${c.account.id}/${alias} is taken by another session`, { field: 'alias', kind: owner?.kind ?? 'alias' });
    }
    if (unalias !== undefined) await this.store.removeAlias(c.account.id, session.lineage, unalias);
    if (alias !== undefined || unalias !== undefined) this.addresses.clear();
    const d = { ...session.declared };
    if (req.working_on !== undefined) d.workingOn = req.working_on || undefined;
    if (req.role !== undefined) d.role = req.role || undefined;
    if (req.parent !== undefined) d.parent = req.parent || undefined;
    const changed = req.working_on !== undefined || req.role !== undefined || req.parent !== undefined;
    const rec = changed ? await this.store.setDeclared(c.account.id, session.id, d) : session;
    if (rec) {
      this.sessions.remember(rec);
      c.session = rec;
    }
    return { address: callerAddress(c), slug: (rec ?? session).slug, aliases: await this.aliasesOf(rec ?? session), card: presentCard(rec ?? session) };
  }

  /** Answers a message: to its sender (room mail: to the room unless to_sender), in its thread,
   *  subject `Re: …` once, and acknowledges it unless ack is false. */
  async reply(c: Caller, req: W.ReplyRequest): Promise<W.ReplyResponse> {
    this.need(c, 'send');
    const m = await this.store.getMessage(req.message_id);
    if (!m) throw new MailError('unknown_message', `no message ${req.message_id}`, { message_id: req.message_id });
    const scope = await this.scope(c);
    const mine = readKeys(scope).includes(m.toKey);
    if (!mine && !sentBy(c.account, m)) throw new MailError('not_addressed_to_you', `you may not reply to ${req.message_id}`, { message_id: req.message_id });
    const to = replyTarget(m, mine, req.to_sender ?? false);
    const sent = await this.send(c, {
      to,
      subject: replySubject(m.subject),
      body: req.body,
      reply_to: m.id,
      ...(req.idempotency_key !== undefined ? { idempotency_key: req.idempotency_key } : {}),
    });
    const ack = mine && req.ack !== false;
    if (ack) await this.store.ack(scope, [{ seq: m.seq, toKey: m.toKey }], this.clock.now());
    return { ...sent, acked: ack };
  }

  async directory(c: Caller, req: W.DirectoryRequest = {}): Promise<W.DirectoryResponse> {
    const [accounts, sessions, rooms, mine, names] = await Promise.all([
      this.store.listAccounts(),
      this.store.listSessions(),
      this.store.listRooms(),
      this.store.roomsOf(c.account.id),
      this.store.listNames(),
    ]);
    const aliases = new Map<string, string[]>();
    for (const n of names) if (n.kind === 'alias') aliases.set(`${n.account}/${n.lineage}`, [...(aliases.get(`${n.account}/${n.lineage}`) ?? []), n.name]);
    const byAccount = new Map<string, W.DirectoryResponse['accounts'][number]['sessions']>();
    const listed = sessions.filter((s) => req.include_ended || this.sessions.isLive(s));
    // Without detail a session is its printed address (the one mail shows and `to` takes back).
    const printed = req.detail ? new Map<string, string>() : await this.addresses.printAll(listed.map((s) => `${s.account}/${s.id}`), listed);
    for (const s of listed) {
      const live = this.sessions.isLive(s);
      const list = byAccount.get(s.account) ?? [];
      const own = aliases.get(`${s.account}/${s.lineage}`) ?? [];
      const full = `${s.account}/${s.id}`;
      list.push(req.detail ? presentSession(s, live, own) : presentPeer(s, live, printed.get(full) ?? full));
      byAccount.set(s.account, list);
    }
    return {
      accounts: accounts.map((a) => ({
        id: a.id,
        ...(a.label !== a.id ? { label: a.label } : {}),
        ...(a.kind !== 'agent' ? { kind: a.kind } : {}),
        sessions: byAccount.get(a.id) ?? [],
      })),
      rooms: rooms.map((r) => ({ name: r.name, member: mine.includes(r.name) })),
    };
  }

  /** For hooks: mail this session has not been shown, and whether a Stop hook should block
   *  (the rules are in notices.ts). `signal` ends a listening Stop hook's wait when it has gone. */
  async notice(c: Caller, req: H.NoticeRequest, door: { signal?: AbortSignal } = {}): Promise<H.NoticeResponse> {
    this.need(c, 'read');
    const session = c.session;
    if (!session) throw new MailError('permission_denied', 'hooks speak for an attested session', { need: 'session' });
    return this.notices.notice(shownKey(c.account.id, session.lineage), req, {
      page: async (afterSeq, waitSecs) => {
        const inboxDoor: InboxDoor = { maxWaitSecs: LIMITS.waitSecsHttp, ...(door.signal ? { signal: door.signal } : {}) };
        const page = await this.read(c, { after: encodeCursor(afterSeq), limit: NOTICE_LIMIT, include_bodies: false, wait_secs: waitSecs }, inboxDoor, false);
        const items = page.messages.map((m) => ({ message_id: m.message_id, from: m.from, subject: m.subject, ...(m.priority ? { priority: m.priority } : {}) }));
        return { items, nextSeq: page.next_cursor ? decodeCursor(page.next_cursor) : null };
      },
      quiet: (id) => this.loops.verdict(id),
    });
  }

  async listen(c: Caller, on: boolean): Promise<{ address: string; listening: boolean }> {
    if (!c.session) throw new MailError('permission_denied', 'listen mode belongs to an attested session', { need: 'session' });
    await this.notices.listen(shownKey(c.account.id, c.session.lineage), on);
    return { address: callerAddress(c), listening: on };
  }

  /** How many inbox reads are parked on this daemon (for tests and metrics). */
  // ---- what the other layers may ask of the collaborators

  /** The account a bearer secret names (1 s digest cache), or unauthenticated. */
  verify(secret: string | undefined): Promise<AccountRecord> {
    return this.credentials.verify(secret);
  }

  /** The session's process is running (pid and start time), or its host's heartbeat is fresh. */
  isLive(s: SessionRecord): boolean {
    return this.sessions.isLive(s);
  }

  /** Ends sessions whose process is gone and prunes the directory. */
  sweepSessions(): ReturnType<SessionBook['sweep']> {
    return this.sessions.sweep();
  }

  /** The loop guard's verdict on a message: true when it is stored but wakes nobody. */
  loopVerdict(messageId: string): ReturnType<LoopGuard['verdict']> {
    return this.loops.verdict(messageId);
  }

  /** A hook of this lineage has called this daemon, and whether it is in listen mode. */
  hookState(account: string, lineage: string): { hooked: boolean; listening: boolean } {
    const key = keyOfLineage(account, lineage);
    return this.notices.known(key) ? { hooked: true, listening: this.notices.get(key).listening } : { hooked: false, listening: false };
  }

  /** A fresh bearer secret. */
  newSecret(): string {
    return this.ids.secret();
  }

  /** A secret changed: the digest cache forgets at once. */
  credentialsChanged(): void {
    this.credentials.clear();
  }

  /** An account was removed: nothing of it stays cached, its waits end ('removed'). */
  accountRemoved(id: string): void {
    this.credentials.clear();
    this.sessions.forget(id);
    this.notices.forget(lineageKeyPrefix(id));
    this.receipts.forget(id);
    this.waits.removed(id);
    this.addresses.clear();
  }

  /** Room memberships changed (of one account, or of everyone): parked readers re-query in full. */
  roomsChanged(account?: string): void {
    this.waits.refresh(account);
  }

  /** Counters of the batched wake path (for tests and benchmarks). */
  wakeStats(): WakeBatcher['stats'] {
    return this.wakes.stats;
  }

  /** Sends the reminders due now (the timer loop calls it; tests too). */
  tickTimers(): ReturnType<TimerBook['tick']> {
    return this.timers.tick();
  }

  /** Resolves once the receipts written behind have reached the store. */
  receiptsSettled(): Promise<void> {
    return this.receipts.settled();
  }

  parkedWaits(): number {
    return this.waits.size;
  }

  /** Shutdown: answer every parked wait, flush session touches. */
  async close(): Promise<void> {
    this.timers.close();
    this.waits.closeAll();
    this.unsubscribe();
    await this.sessions.flushTouches().catch(() => undefined);
    await this.notices.close();
    await this.receipts.settled();
  }
}
