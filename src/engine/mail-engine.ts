// The rules of the mailbox. Doors call these functions with a verified Caller; nothing here
// knows about HTTP, MCP or SQL.
import { createHash } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import { formatAddress, parseCompactAddress } from '../wire/address.js';
import { utf8Bytes } from '../wire/text.js';
import { LIMITS } from '../wire/limits.js';
import type * as W from '../wire/ops.js';
import { keyOfLineage, lineageKeyPrefix, readKeys, type AccountRecord, type ReaderScope, type SessionRecord, type Store, type StoredMessage } from '../store/types.js';
import type { Attestation } from '../attest/types.js';
import type { Clock, Ids } from './clock.js';
import { CredentialCheck } from './credentials.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { silentLogger, type Logger } from './log.js';
import { iso, presentMessage, senderAddress } from './present.js';
import { ShortAddresses } from './short-address.js';
import { resolveRecipient } from './recipients.js';
import { SessionBook } from './sessions.js';
import { guardStore } from './store-guard.js';
import { DEFAULT_WAIT_CAPS, WaitRoom, type WaitCaps } from './waits.js';
import { checkListenerUrl, type Doorbell } from './listener-url.js';
import { WakeBatcher } from './wake-batch.js';
import { InboxReader, type InboxDoor } from './inbox-reader.js';
import { Directory } from './directory.js';
import { NOTICE_LIMIT, NoticeBook, shownKey } from './notices.js';
import { TaskBook, type TaskMark } from './tasks.js';
import { ApprovalBook } from './approvals.js';
import { DEFAULT_LOOP_GUARD, LoopGuard, type LoopGuardOptions } from './loop-guard.js';
import type * as H from '../wire/hooks.js';
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

export type { InboxDoor };

export class MailEngine {
  // The substrate every part shares: the store (wrapped by store-guard.ts), the clock, the log.
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Logger;
  /** This daemon's host: sessions it registers (or imports) carry it. */
  readonly hostId: string;
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
  private reader: InboxReader;
  private dir: Directory;
  /** Tasks and approvals (tasks.ts, approvals.ts): doors reach them as engine.tasks / engine.approvals. */
  readonly tasks: TaskBook;
  readonly approvals: ApprovalBook;
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
    this.hostId = o.hostId;
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
    this.dir = new Directory({ store: this.store, sessions: this.sessions, addresses: this.addresses });
    const work = {
      store: this.store,
      clock: o.clock,
      waits: this.waits,
      newId: () => this.ids.messageId().slice(2),
      post: async (c: Caller, req: W.SendRequest, parent: StoredMessage | null, mark: TaskMark | null) => {
        this.need(c, 'send');
        return (await this.deliver(c, req, parent, mark)).message;
      },
      printAll: (compacts: Iterable<string>) => this.addresses.printAll(compacts),
      idempotencyWindowMs: this.idemWindow,
    };
    this.tasks = new TaskBook(work);
    this.approvals = new ApprovalBook({ ...work, tasks: this.tasks });
    this.reader = new InboxReader({
      store: this.store,
      clock: o.clock,
      waits: this.waits,
      wakes: this.wakes,
      notices: this.notices,
      receipts: this.receipts,
      addresses: this.addresses,
      incarnations: this.incarnations,
      scope: (c) => this.scope(c),
      head: () => this.lastSeq,
    });
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
    await this.store.addAccount(
      {
        id: MAILBOX_ACCOUNT,
        kind: 'service',
        label: 'mailbox (reminders)',
        permissions: { send: true, read: false, urgent: false, operator: false },
        bindProvider: null,
        secretDigest: createHash('sha256').update(this.ids.secret()).digest('hex'),
        createdAt: this.clock.now(),
      },
      accountSweep(MAILBOX_ACCOUNT),
    );
  }

  private async deliverTimer(t: TimerRecord, to: Address, idempotencyKey: string): Promise<void> {
    const account = await this.store.getAccount(MAILBOX_ACCOUNT);
    if (!account) throw new MailError('unknown_participant', 'the mailbox account is missing', { participant: MAILBOX_ACCOUNT });
    const set = new Date(t.createdAt).toISOString();
    await this.send({ account, session: null }, { to, subject: `Reminder: ${t.note}`, body: `Reminder ${t.id}, set at ${set}:\n${t.note}`, idempotency_key: idempotencyKey });
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
    const names = await this.addresses.printAll(
      r.receipts.map((x) => x.recipient),
      [c.session],
    );
    return { ...r, receipts: r.receipts.map((x) => ({ ...x, recipient: names.get(x.recipient) ?? x.recipient })) };
  }

  /** The printed form of each address (account/slug, account/s-…; engine/short-address.ts). */
  async printAddresses(compacts: Iterable<string>): Promise<Map<string, string>> {
    return this.addresses.printAll(compacts);
  }

  /** The caller for a verified account and, when the connection is attested, the session it is. */
  async callerFor(account: AccountRecord, att: Attestation | null, reported?: string): Promise<Caller> {
    if (!att) return { account, session: null };
    return { account, session: await this.sessions.sessionFor(account, att, reported) };
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

  async send(c: Caller, req: W.SendRequest): Promise<W.SendResponse> {
    this.need(c, 'send');
    const priority = req.priority ?? 'normal';
    if (priority === 'urgent') this.need(c, 'urgent');
    const parent = req.reply_to ? (await this.answerable(c, req.reply_to, await this.scope(c))).message : null;
    return (await this.deliver(c, req, parent)).answer;
  }

  /** A message the caller may answer: addressed to it, or sent by its account (a follow-up).
   *  `mine`: it is in the caller's mail, so answering it can acknowledge it. */
  private async answerable(c: Caller, id: string, scope: ReaderScope): Promise<{ message: StoredMessage; mine: boolean }> {
    const message = await this.store.getMessage(id);
    if (!message) throw new MailError('unknown_message', `no message ${id}`, { message_id: id });
    const mine = readKeys(scope).includes(message.toKey);
    if (!mine && !sentBy(c.account, message)) throw new MailError('not_addressed_to_you', `you may not reply to ${id}`, { message_id: id });
    return { message, mine };
  }

  /** Stores a checked send (`parent`: the message `reply_to` names, already checked; `task`: a
   *  task's change this message carries). */
  private async deliver(c: Caller, req: W.SendRequest, parent: StoredMessage | null, task: TaskMark | null = null): Promise<{ answer: W.SendResponse; message: StoredMessage }> {
    const priority = req.priority ?? 'normal';
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
          ...(task ? { task } : {}),
        },
        now - this.idemWindow,
      );
      if (outcome.kind === 'created') {
        quiet = await this.judgeLoop(c, outcome.message, req.to.kind === 'room' ? null : (target.accounts[0] ?? null));
        if (quiet) this.loops.markQuiet(outcome.message.id);
      }
    } finally {
      judged();
    }
    const m = outcome.message;
    if (outcome.kind === 'conflict') throw new MailError('idempotency_conflict', `idempotency key ${req.idempotency_key} was used for a different message`, { message_id: m.id });
    if (outcome.kind === 'created' && !quiet) void this.ring(target.accounts, m);
    const [from, to] = await Promise.all([this.addresses.print(senderAddress(m), [c.session]), this.addresses.print(m.toAddress, [target.session])]);
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

  /** The inbox read (inbox-reader.ts); `mark`: the answer counts as shown (a hook notice decides that itself). */
  private read(c: Caller, req: W.InboxRequest, door: InboxDoor, mark: boolean): Promise<W.InboxResponse> {
    this.need(c, 'read');
    return this.reader.read(c, req, door, mark);
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

  whoami(c: Caller): Promise<W.WhoamiResponse> {
    return this.dir.whoami(c);
  }

  status(c: Caller, req: W.StatusRequest): Promise<W.StatusResponse> {
    return this.dir.status(c, req);
  }

  directory(c: Caller, req: W.DirectoryRequest = {}): Promise<W.DirectoryResponse> {
    return this.dir.directory(c, req);
  }

  /** Answers a message: to its sender (room mail: to the room unless to_sender), in its thread,
   *  subject `Re: …` once, and acknowledges it unless ack is false. */
  async reply(c: Caller, req: W.ReplyRequest): Promise<W.ReplyResponse> {
    this.need(c, 'send');
    const scope = await this.scope(c);
    const { message: m, mine } = await this.answerable(c, req.message_id, scope);
    const to = replyTarget(m, mine, req.to_sender ?? false);
    // The sender's account may have been removed and its name given to someone else since: the
    // message then predates the account of the name, and the answer is meant for nobody there.
    if (to.kind !== 'room' && to.participant === m.fromAccount) {
      const sender = await this.store.getAccount(m.fromAccount);
      if (!sender || !sentBy(sender, m))
        throw new MailError('unknown_participant', `the account that sent ${m.id} was removed; ${m.fromAccount} now names another account`, { participant: m.fromAccount });
    }
    const send: W.SendRequest = { to, subject: replySubject(m.subject), body: req.body, reply_to: m.id };
    if (req.idempotency_key !== undefined) send.idempotency_key = req.idempotency_key;
    const sent = (await this.deliver(c, send, m)).answer;
    const ack = mine && req.ack !== false;
    if (ack) await this.store.ack(scope, [{ seq: m.seq, toKey: m.toKey }], this.clock.now());
    return { ...sent, acked: ack };
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

  /** Session names were added outside status (an import): printed forms cached before are stale. */
  namesChanged(): void {
    this.addresses.clear();
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
