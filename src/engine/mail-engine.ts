// The rules of the mailbox. Doors call these functions with a verified Caller; nothing here
// knows about HTTP, MCP or SQL. MailEngine is the facade: it builds the parts and delegates, the
// rules live in them (sending: mail-post.ts, reading: mail-reads.ts, reminders: timer-ops.ts …).
import { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import type * as W from '../wire/ops.js';
import { keyOfLineage, lineageKeyPrefix, type AccountRecord, type ReaderScope, type SessionRecord, type Store, type StoredMessage } from '../store/types.js';
import type { Attestation } from '../attest/types.js';
import type { Clock, Ids } from './clock.js';
import { CredentialCheck } from './credentials.js';
import { silentLogger, type Logger } from './log.js';
import { ShortAddresses } from './short-address.js';
import { SessionBook } from './sessions.js';
import { guardStore } from './store-guard.js';
import type { Observer } from './observer.js';
import { DEFAULT_WAIT_CAPS, WaitRoom, type WaitCaps } from './waits.js';
import type { Doorbell } from './listener-url.js';
import { WakeBatcher } from './wake-batch.js';
import { InboxReader, type InboxDoor } from './inbox-reader.js';
import { Directory } from './directory.js';
import { NoticeBook } from './notices.js';
import { TaskBook, type TaskMark } from './tasks.js';
import { ApprovalBook } from './approvals.js';
import { LeaseBook } from './leases.js';
import { DEFAULT_LOOP_GUARD, LoopGuard, type LoopGuardOptions } from './loop-guard.js';
import type * as H from '../wire/hooks.js';
import { IncarnationCheck } from './incarnation.js';
import { Receipts } from './receipts.js';
import type { TimerBook } from './timers.js';
import type * as WK from '../wire/wake.js';
import { MailPost } from './mail-post.js';
import { MailReads } from './mail-reads.js';
import { TimerOps } from './timer-ops.js';
import { MailPush, type MailSubscription, type SubscribeOptions } from './mail-push.js';
import { TeamBook } from './teams.js';
import { ContactBook } from './contacts.js';
import { AttentionBook } from './attention.js';
import { RetentionBook } from './retention.js';
import { MailSearch } from './search.js';
import { MailWaitFor } from './wait-for.js';
import { EmailBook, type EmailOptions } from './email-book.js';
import type { WaitForRequest, WaitForResponse } from '../wire/wait-for.js';
import type { SearchRequest, SearchResponse } from '../wire/search.js';

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
  /** Store calls are timed for it (the daemon's metrics, observer.ts). */
  observer?: Observer;
  /** Real e-mail (email-book.ts): absent, the daemon has no mail domain. */
  email?: EmailOptions;
}

/** Who is calling: a verified account and, for agents, its attested session. */
export interface Caller {
  account: AccountRecord;
  session: SessionRecord | null;
  /** A person's delegate writing through a relay (the relay link sets it from the relay's login,
   *  never from a request field): stored on what the caller writes and shown to its readers. */
  via?: { relay: string; delegate: string };
}

export const callerAddress = (c: Caller): string => (c.session ? `${c.account.id}/${c.session.id}` : c.account.id);

const DAY_MS = 24 * 3600 * 1000;

/** Refuses a caller whose account lacks the permission. */
export function need(c: Caller, perm: 'send' | 'read' | 'urgent'): void {
  if (!c.account.permissions[perm]) throw new MailError('permission_denied', `account ${c.account.id} may not ${perm}`, { need: perm });
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
  private wakes: WakeBatcher;
  private notices: NoticeBook;
  private loops: LoopGuard;
  private receipts: Receipts;
  /** Printed forms of session addresses (account/slug …), looked up per answer. */
  private addresses: ShortAddresses;
  private searcher: MailSearch;
  private waitFors: MailWaitFor;
  private dir: Directory;
  /** The sending path (mail-post.ts), reading (mail-reads.ts), reminders (timer-ops.ts). */
  private post: MailPost;
  private reads: MailReads;
  private timerOps: TimerOps;
  /** Pushed mail for connected sessions (mail-push.ts): loops of the same parked reads. */
  private push: MailPush;
  /** Tasks and approvals (tasks.ts, approvals.ts): doors reach them as engine.tasks / engine.approvals. */
  readonly tasks: TaskBook;
  readonly approvals: ApprovalBook;
  /** Leases: file reservations, and pooled tasks' claims (leases.ts). */
  readonly leases: LeaseBook;
  /** Teams (teams.ts), contact policies (contacts.ts) and quiet hours (attention.ts). */
  readonly teams: TeamBook;
  readonly contacts: ContactBook;
  readonly attention: AttentionBook;
  /** Deletes old acknowledged mail where set, prunes old wake records (retention.ts). */
  readonly retention: RetentionBook;
  /** Real e-mail: addresses, mail from the SMTP door, mail to the relay (email-book.ts). */
  readonly email: EmailBook;
  private incarnations: IncarnationCheck;
  /** Which parked readers each recent commit woke (seq → owners), for the wake dispatcher. */
  private woken = new Map<number, string[]>();
  /** Highest seq this engine has seen committed; -1 until start(). */
  private lastSeq = -1;
  private unsubscribe: () => void;

  constructor(o: EngineOptions) {
    this.log = o.log ?? silentLogger;
    this.store = guardStore(o.store, this.log, o.observer);
    this.clock = o.clock;
    this.hostId = o.hostId;
    this.ids = o.ids;
    this.credentials = new CredentialCheck(this.store, o.clock);
    this.incarnations = new IncarnationCheck(this.store);
    this.sessions = new SessionBook(this.store, o.clock, {
      hostId: o.hostId,
      isAlive: (pid, startTime) => o.isAlive(pid, startTime),
      retentionMs: o.sessionRetentionMs ?? DAY_MS,
      log: this.log,
    });
    this.waits = new WaitRoom(o.clock, o.waitCaps ?? DEFAULT_WAIT_CAPS);
    const idempotencyWindowMs = o.idempotencyWindowMs ?? DAY_MS;
    this.wakes = new WakeBatcher(this.store);
    this.notices = new NoticeBook(this.store, o.clock, this.log);
    this.loops = new LoopGuard(o.clock, o.loopGuard ?? DEFAULT_LOOP_GUARD);
    this.receipts = new Receipts(this.store, o.clock, this.log);
    this.addresses = new ShortAddresses(this.store, o.clock, o.sessionRetentionMs ?? DAY_MS);
    const scope = (c: Caller) => this.scope(c);
    this.post = new MailPost({
      store: this.store,
      clock: o.clock,
      ids: this.ids,
      log: this.log,
      sessions: this.sessions,
      loops: this.loops,
      addresses: this.addresses,
      doorbell: o.doorbell,
      idempotencyWindowMs,
      scope,
      teams: { send: (c, req, parent) => this.teams.send(c, req, parent) },
      email: { send: (c, req, parent) => this.email.send(c, req, parent) },
      contacts: { admit: (c, target, parent, task) => this.contacts.admit(c, target, parent, task), hold: (c, req, parent, err) => this.contacts.hold(c, req, parent, err) },
    });
    this.email = new EmailBook({ store: this.store, clock: o.clock, ids: this.ids, log: this.log, post: this.post, options: o.email });
    this.timerOps = new TimerOps({ store: this.store, clock: o.clock, ids: this.ids, log: this.log, pollMs: o.timerPollMs, send: (c, req) => this.post.send(c, req) });
    this.dir = new Directory({ store: this.store, sessions: this.sessions, addresses: this.addresses, emailOf: (a) => this.email.addressOf(a) });
    const work = {
      store: this.store,
      clock: o.clock,
      waits: this.waits,
      newId: () => this.ids.messageId().slice(2),
      post: async (c: Caller, req: W.SendRequest, parent: StoredMessage | null, mark: TaskMark | null) => {
        need(c, 'send');
        return (await this.post.deliver(c, req, parent, mark)).message;
      },
      printAll: (compacts: Iterable<string>) => this.addresses.printAll(compacts),
      idempotencyWindowMs,
    };
    this.tasks = new TaskBook(work);
    this.approvals = new ApprovalBook({ ...work, tasks: this.tasks });
    this.leases = new LeaseBook({ store: this.store, clock: o.clock, log: this.log, newId: work.newId, printAll: work.printAll, isLive: (s) => this.sessions.isLive(s) });
    // A pooled task's claim is a lease; its end returns the task to the pool (pool.ts).
    this.leases.onEnded((l) => this.tasks.pool.leaseEnded(l));
    this.leases.registerTaskClaim(async (c, req) => (await this.tasks.pool.claim(c, { task_id: req.resource, ...(req.ttl_secs ? { ttl_secs: req.ttl_secs } : {}) })).lease!);
    this.teams = new TeamBook({
      store: this.store,
      clock: o.clock,
      idempotencyWindowMs,
      deliver: (c, req, parent, opts) => this.post.deliver(c, req, parent, null, opts),
      setTeamTimers: (accounts, inSecs, note, origin) => this.timerOps.setForTeam(accounts, inSecs, note, origin),
      roomsChanged: (account) => this.roomsChanged(account),
      releaseHeldBy: (account, room) => this.tasks.pool.releaseHeldBy(account, room),
      admitsMail: (c, account) => this.contacts.admitsMail(c, account),
    });
    this.contacts = new ContactBook({
      store: this.store,
      clock: o.clock,
      ids: this.ids,
      log: this.log,
      deliver: (c, req, parent, messageId) => this.post.deliver(c, req, parent, null, messageId ? { messageId } : {}),
      printAll: work.printAll,
    });
    this.attention = new AttentionBook({ store: this.store, clock: o.clock, log: this.log });
    this.retention = new RetentionBook({ store: this.store, clock: o.clock, log: this.log, hostId: o.hostId });
    const reader = new InboxReader({
      store: this.store,
      clock: o.clock,
      waits: this.waits,
      wakes: this.wakes,
      notices: this.notices,
      receipts: this.receipts,
      addresses: this.addresses,
      incarnations: this.incarnations,
      scope,
      head: () => this.lastSeq,
    });
    this.reads = new MailReads({
      store: this.store,
      clock: o.clock,
      reader,
      notices: this.notices,
      loops: this.loops,
      receipts: this.receipts,
      addresses: this.addresses,
      scope,
      attention: this.attention,
    });
    this.searcher = new MailSearch({ store: this.store, addresses: this.addresses, scope });
    this.waitFors = new MailWaitFor({ store: this.store, clock: o.clock, waits: this.waits, addresses: this.addresses, scope });
    this.push = new MailPush({ clock: o.clock, read: (c, req, door) => this.reads.read(c, req, door, true), headSeq: () => this.store.headSeq() });
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

  /** Learns the store's head so woken waits can be answered in batches (until then each re-queries),
   *  makes sure the `mailbox` account exists, arms the timer loop, settles leases a crash left
   *  unsettled and arms their expiry sweep. */
  async start(): Promise<void> {
    const head = await this.store.headSeq();
    this.lastSeq = Math.max(this.lastSeq, head);
    await this.timerOps.start();
    await this.leases.start();
    this.retention.start();
  }

  /** The parked readers (owners: `account/session` or `account`) that the commit of `seq` answered. */
  wokenBy(seq: number): string[] {
    return this.woken.get(seq) ?? [];
  }

  // ---- timers and receipts

  remind(c: Caller, req: WK.TimerSetRequest): Promise<WK.TimerOut> {
    return this.timerOps.remind(c, req);
  }

  timerList(c: Caller): Promise<{ timers: WK.TimerOut[] }> {
    return this.timerOps.list(c);
  }

  timerSnooze(c: Caller, req: { id: string; in_secs: number }): Promise<WK.TimerOut> {
    return this.timerOps.snooze(c, req);
  }

  timerClear(c: Caller, req: { id: string }): Promise<{ ok: true }> {
    return this.timerOps.clear(c, req);
  }

  receiptsOf(c: Caller, req: { message_id: string }): Promise<WK.ReceiptsResponse> {
    return this.reads.receiptsOf(c, req);
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

  // ---- sending (mail-post.ts)

  send(c: Caller, req: W.SendRequest): Promise<W.SendResponse> {
    return this.post.send(c, req);
  }

  /** Answers a message: to its sender (room mail: to the room unless to_sender), in its thread,
   *  subject `Re: …` once, and acknowledges it unless ack is false. */
  reply(c: Caller, req: W.ReplyRequest): Promise<W.ReplyResponse> {
    return this.post.reply(c, req);
  }

  // ---- reading (mail-reads.ts)

  /** A page of readable mail, oldest first. With wait_secs and a cursor, parks until mail after it
   *  commits; without one, until there is mail this reader has not been shown (notices.ts). */
  async inbox(c: Caller, req: W.InboxRequest, door: InboxDoor = { maxWaitSecs: LIMITS.waitSecsHttp }): Promise<W.InboxResponse> {
    return this.reads.read(c, req, door, true);
  }

  /** Pushes mail this caller may read as it commits after a cursor, until ended (mail-push.ts). */
  subscribeMail(o: SubscribeOptions): Promise<MailSubscription> {
    return this.push.subscribe(o);
  }

  ack(c: Caller, req: W.AckRequest): Promise<W.AckResponse> {
    return this.reads.ack(c, req);
  }

  /** Full-text search of the mail the caller may read (search.ts). */
  search(c: Caller, req: SearchRequest): Promise<SearchResponse> {
    return this.searcher.search(c, req);
  }

  /** The next matching message that commits after the call, with its codes and links (wait-for.ts). */
  waitFor(c: Caller, req: WaitForRequest, signal?: AbortSignal): Promise<WaitForResponse> {
    return this.waitFors.waitFor(c, req, signal);
  }

  get(c: Caller, req: W.GetRequest): Promise<W.GetResponse> {
    return this.reads.get(c, req);
  }

  unread(c: Caller): Promise<W.UnreadResponse> {
    return this.reads.unread(c);
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

  /** For hooks: mail this session has not been shown, and whether a Stop hook should block
   *  (the rules are in notices.ts). `signal` ends a listening Stop hook's wait when it has gone. */
  notice(c: Caller, req: H.NoticeRequest, door: { signal?: AbortSignal } = {}): Promise<H.NoticeResponse> {
    return this.reads.notice(c, req, door);
  }

  listen(c: Caller, on: boolean): Promise<{ address: string; listening: boolean }> {
    return this.reads.listen(c, on);
  }

  // ---- what the other layers may ask of the collaborators

  /** The account a bearer secret names (1 s digest cache), or unauthenticated. */
  verify(secret: string | undefined): Promise<AccountRecord> {
    return this.credentials.verify(secret);
  }

  /** The session's process is running (pid and start time), or its host's heartbeat is fresh. */
  isLive(s: SessionRecord): boolean {
    return this.sessions.isLive(s);
  }

  /** Ends sessions whose process is gone (and their leases) and prunes the directory. */
  async sweepSessions(): ReturnType<SessionBook['sweep']> {
    const r = await this.sessions.sweep();
    await this.leases.sessionsEnded(r.sessions);
    await this.tasks.pool.reconcile().catch((err: unknown) => this.log.warn({ err: String(err) }, 'reconciling pooled claims failed'));
    return r;
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
    this.attention.forgetAccount(id);
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
    return this.timerOps.tick();
  }

  /** Resolves once the receipts written behind have reached the store. */
  receiptsSettled(): Promise<void> {
    return this.receipts.settled();
  }

  /** How many inbox reads are parked on this daemon (for tests and metrics). */
  parkedWaits(): number {
    return this.waits.size;
  }

  /** Shutdown: answer every parked wait, flush session touches. */
  async close(): Promise<void> {
    this.timerOps.close();
    this.attention.close();
    await this.retention.close();
    await this.leases.close();
    this.push.close(); // before the waits close: no subscription parks again
    this.waits.closeAll();
    this.unsubscribe();
    await this.sessions.flushTouches().catch(() => undefined);
    await this.notices.close();
    await this.receipts.settled();
  }
}
