// The relay worker: sends the queued mail to e-mail addresses (engine/email-out.ts wrote the entry,
// the message and its headers before the send answered) through the configured SMTP relay with
// nodemailer, and records each outcome in the entry that receipts read.
//
// Durable: a start resumes every queued entry (the `~q|` index, not every entry ever sent); each
// commit to an `e:` key starts that message's first attempt; a timer runs the retries. Each attempt
// is claimed first (a `try.<n>` record, first writer wins), so daemons sharing a store never make
// the same attempt twice. At least once: the entry is marked sent only after the relay answered
// 250; a crash in between leaves the claim without an outcome, and the next start sends it again
// with the same Message-ID (the receipt says so); so does a store failure writing the outcome
// (the entry stays queued, and the next pass tries it again). No other case sends it twice.
//
// Outcome writes: two daemons of a shared store may write the same entry (a slow attempt's `sent`,
// another daemon's "interrupted"). A terminal outcome is written into the attempt's own claim
// record first (only its claimer writes it), then into the entry; the entry is re-read before
// each write and a `sent` (or `failed`, except by a `sent`) is never overwritten; and before each
// send the claim records are read, so a terminal outcome an overwrite hid is adopted, not resent.
//
// Mail of a removed account (or of an earlier account of the same name) is never sent: each
// attempt checks the sender is still the account that wrote it, and fails the entry otherwise.
//
// Outcomes: 250 sent ("accepted by the relay", not delivered); a 5xx answer (except to AUTH)
// failed at once with the relay's text; 4xx, AUTH failures, connection errors and timeouts retried
// with exponential backoff and jitter (30 s doubling to 30 min), given up 24 h after the send.
import { createTransport } from 'nodemailer';
import type { Logger } from '../engine/log.js';
import { silentLogger } from '../engine/log.js';
import type { Clock } from '../engine/clock.js';
import { isEmailKey, type CommitEvent, type RecordRow, type Store } from '../store/types.js';
import { EMAIL_REC, metaId, readMeta } from '../engine/email-records.js';
import { attemptId, outboxId, parseOutbox, QUEUE_PREFIX, queueId, rateId, type OutboxEntry } from '../engine/email-out.js';
import { sentBy } from '../engine/incarnation.js';
import { relayName, type RelayTarget } from './relay-config.js';
import { classify, line, parseClaim, relayBackoffMs, terminalEntry, type Claim, type Outcome, type Terminal } from './email-relay-outcome.js';

export { classify, relayBackoffMs } from './email-relay-outcome.js';

export type RelayStore = Pick<Store, 'getRecord' | 'putRecord' | 'insertRecords' | 'listRecords' | 'deleteRecord' | 'getMessage' | 'messagesAfter' | 'onCommit' | 'getAccount'>;

export interface EmailRelayOptions {
  target: RelayTarget;
  /** The mail domain: the name this host gives in EHLO. */
  domain: string;
  /** Which daemon claims an attempt (its data directory's host id). */
  hostId: string;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** From the send on; past it a message is failed (default 24 h). */
  giveUpAfterMs?: number;
  /** Connection, greeting and idle socket timeout of one attempt (default 60 s). */
  attemptTimeoutMs?: number;
  /** Attempts at once (default 4). */
  maxInFlight?: number;
  /** How often the queue is read again for what no commit announced (default 5 min). */
  rescanMs?: number;
  log?: Logger;
  random?: () => number;
}

export const RELAY_DEFAULTS = {
  baseDelayMs: 30_000,
  maxDelayMs: 30 * 60_000,
  giveUpAfterMs: 24 * 3_600_000,
  attemptTimeoutMs: 60_000,
  maxInFlight: 4,
  rescanMs: 5 * 60_000,
} as const;

/** An entry whose message has not committed this long after it was written is an orphan (a crash
 *  between the records and the append): it is dropped. */
const ORPHAN_MS = 10 * 60_000;

const isLoopback = (host: string): boolean => host === 'localhost' || host === '::1' || /^127\./.test(host);

export class EmailRelay {
  private readonly o: Required<Omit<EmailRelayOptions, 'target' | 'domain' | 'hostId'>> & EmailRelayOptions;
  private readonly transport;
  private readonly timers = new Map<string, () => void>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly waiting: (() => void)[] = [];
  private inFlight = 0;
  private closed = false;
  private unsubscribe: (() => void) | null = null;
  private rescan: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: RelayStore,
    private readonly clock: Clock,
    opts: EmailRelayOptions,
  ) {
    this.o = { ...RELAY_DEFAULTS, log: silentLogger, random: Math.random, ...opts };
    const t = opts.target;
    this.transport = createTransport({
      host: t.host,
      port: t.port,
      secure: t.secure,
      ...(t.auth ? { auth: { user: t.auth.user, pass: t.auth.pass } } : {}),
      // A password crosses the network only encrypted; a relay on this machine may take it plain.
      requireTLS: !t.secure && t.auth !== null && !isLoopback(t.host),
      name: opts.domain,
      connectionTimeout: this.o.attemptTimeoutMs,
      greetingTimeout: this.o.attemptTimeoutMs,
      socketTimeout: this.o.attemptTimeoutMs,
      disableFileAccess: true,
      disableUrlAccess: true,
      logger: false,
    });
  }

  get relay(): string {
    return relayName(this.o.target);
  }

  /** Subscribes to commits and resumes what an earlier run left queued; returns how many. */
  async start(): Promise<number> {
    this.unsubscribe = this.store.onCommit((e) => this.onCommit(e));
    this.rescan = setInterval(() => void this.resume().catch((err: unknown) => this.warn('the e-mail queue could not be read', err)), this.o.rescanMs);
    this.rescan.unref();
    return this.resume();
  }

  /** Messages with an attempt scheduled or under way (tests). */
  get pending(): number {
    return new Set([...this.timers.keys(), ...this.running.keys()]).size;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe?.();
    if (this.rescan) clearInterval(this.rescan);
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
    for (const w of this.waiting.splice(0)) w();
    // Attempts under way finish (bounded by their timeouts) and record what the relay answered.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.running.values()]), new Promise((r) => (timer = setTimeout(r, 5_000)))]);
    clearTimeout(timer);
    this.transport.close();
  }

  private onCommit(e: CommitEvent): void {
    if (this.closed) return;
    for (const key of e.keys) {
      if (!isEmailKey(key)) continue;
      void this.store
        .messagesAfter(key, e.seq - 1, 1)
        .then(([m]) => {
          if (m && m.seq === e.seq) this.schedule(m.id, 0);
        })
        .catch((err: unknown) => this.warn('a committed e-mail could not be read', err));
    }
  }

  /** Schedules every queued entry not scheduled here yet (the oldest 10,000; the rest on a later
   *  pass, once these are done). */
  private async resume(): Promise<number> {
    const rows = await this.store.listRecords(EMAIL_REC.outbox, QUEUE_PREFIX, 10_000);
    if (rows.length === 10_000) this.o.log.warn({ limit: 10_000 }, 'e-mail queue: more queued than resumed at once');
    let n = 0;
    for (const r of rows) {
      if (this.closed) break;
      const mid = r.id.slice(QUEUE_PREFIX.length);
      if (this.timers.has(mid) || this.running.has(mid)) continue;
      const entry = parseOutbox(await this.store.getRecord(EMAIL_REC.outbox, outboxId(mid)));
      if (!entry || entry.state !== 'queued') {
        await this.store.deleteRecord(EMAIL_REC.outbox, r.id);
        continue;
      }
      this.schedule(mid, Math.max(0, entry.next_at - this.clock.now()));
      n++;
    }
    return n;
  }

  /** An attempt in `delayMs`; while one runs, it is asked again once that one is done (a commit
   *  can announce a message whose attempt found it not yet committed). */
  private schedule(mid: string, delayMs: number): void {
    if (this.closed) return;
    if (this.running.has(mid)) return void this.again.add(mid);
    this.timers.get(mid)?.();
    const cancel = this.clock.timer(delayMs, () => {
      if (this.timers.get(mid) === cancel) this.timers.delete(mid);
      if (this.closed || this.running.has(mid)) return;
      const p = this.run(mid)
        .catch((err: unknown): null => {
          this.warn('an e-mail attempt could not be recorded; it stays queued', err, mid);
          return null;
        })
        .then((next) => {
          this.running.delete(mid);
          const again = this.again.delete(mid);
          if (next !== null) this.schedule(mid, next);
          else if (again) this.schedule(mid, 0);
        });
      this.running.set(mid, p);
    });
    this.timers.set(mid, cancel);
  }

  private async slot(): Promise<boolean> {
    while (this.inFlight >= this.o.maxInFlight) {
      if (this.closed) return false;
      await new Promise<void>((r) => this.waiting.push(r));
    }
    if (this.closed) return false;
    this.inFlight++;
    return true;
  }

  private release(): void {
    this.inFlight--;
    this.waiting.shift()?.();
  }

  /** One attempt; the delay of the next one, or null when none is due. */
  private async run(mid: string): Promise<number | null> {
    if (!(await this.slot())) return null;
    try {
      return await this.attempt(mid);
    } finally {
      this.release();
    }
  }

  private async attempt(mid: string): Promise<number | null> {
    const entry = parseOutbox(await this.store.getRecord(EMAIL_REC.outbox, outboxId(mid)));
    if (!entry || entry.state !== 'queued') {
      await this.store.deleteRecord(EMAIL_REC.outbox, queueId(mid));
      return null;
    }
    const now = this.clock.now();
    // Not due yet (another daemon of the store failed an attempt and set the backoff): wait for it.
    if (entry.next_at > now) return entry.next_at - now;
    const m = await this.store.getMessage(mid);
    if (!m) {
      // Written before its message: committing now, or an orphan of a crash (or deleted since).
      if (now - entry.created_at < ORPHAN_MS) return null;
      await Promise.all([
        this.store.deleteRecord(EMAIL_REC.outbox, queueId(mid)),
        this.store.deleteRecord(EMAIL_REC.outbox, outboxId(mid)),
        this.store.deleteRecord(EMAIL_REC.meta, metaId(mid)),
        // The send never happened: it no longer counts against the hour.
        this.store.deleteRecord(EMAIL_REC.rate, rateId(entry.account, entry.created_at, mid)),
      ]);
      return null;
    }
    const account = await this.store.getAccount(m.fromAccount);
    if (!account || !sentBy(account, m)) {
      const detail = 'the sending account was removed';
      await this.finish(mid, { ...entry, state: 'failed', last_error: detail, done_at: now }, now);
      this.o.log.warn({ message_id: mid, to: entry.to, account: m.fromAccount, reason: detail }, 'e-mail failed');
      return null;
    }
    const n = entry.attempts + 1;
    const claim: Claim = { at: now, host: this.o.hostId };
    const won = await this.store.insertRecords([{ kind: EMAIL_REC.outbox, id: attemptId(mid, n), value: JSON.stringify(claim), updatedAt: now }]);
    if (won.length === 0) return this.claimed(mid, entry, n, now);
    // An earlier attempt may have ended it while an "interrupted" write hid that from the entry.
    const ended = await this.endedBefore(mid, n);
    if (ended) {
      await this.finish(mid, terminalEntry({ ...entry, attempts: n - 1 }, ended), now);
      return null;
    }
    const meta = await readMeta(this.store as Store, mid);
    let outcome: Outcome;
    try {
      const info = await this.transport.sendMail({
        from: entry.from,
        to: entry.to,
        envelope: { from: entry.from, to: [entry.to] },
        subject: m.subject,
        text: m.body,
        date: new Date(m.createdAt),
        ...(meta?.message_id ? { messageId: meta.message_id } : {}),
        ...(meta?.in_reply_to ? { inReplyTo: meta.in_reply_to } : {}),
        ...(meta && meta.references.length > 0 ? { references: meta.references } : {}),
        // Written by a program: auto-responders keep quiet (RFC 3834), so two of them cannot loop.
        headers: { 'Auto-Submitted': 'auto-generated' },
      });
      outcome = { kind: 'sent', response: line(info.response || '250 (no text)') };
    } catch (err) {
      outcome = classify(err);
    }
    return this.record(mid, entry, n, claim, outcome);
  }

  /** The terminal outcome an attempt before n wrote into its claim record, if any. */
  private async endedBefore(mid: string, n: number): Promise<Terminal | null> {
    const rows = await this.store.listRecords(EMAIL_REC.outbox, `${mid}|try.`, 10_000);
    let failed: Terminal | null = null;
    for (const r of rows) {
      if (r.id === attemptId(mid, n)) continue;
      const o = parseClaim(r).outcome;
      if (o?.state === 'sent') return o;
      if (o) failed = o;
    }
    return failed;
  }

  /** Attempt n is claimed already: by an earlier run of this daemon that stopped during it (a
   *  crash, perhaps after the relay took it), or by another daemon of a shared store, whose claim
   *  counts as interrupted once it is older than an attempt can last. */
  private async claimed(mid: string, entry: OutboxEntry, n: number, now: number): Promise<number | null> {
    const row = await this.store.getRecord(EMAIL_REC.outbox, attemptId(mid, n));
    const c = parseClaim(row);
    if (c.outcome) {
      // Its claimer ended it (its entry write lost a race, or is still to come).
      await this.finish(mid, terminalEntry({ ...entry, attempts: n }, c.outcome), now);
      return null;
    }
    const stale = this.o.attemptTimeoutMs * 4;
    if (c.host !== this.o.hostId && now - c.at < stale) return c.at + stale - now;
    const detail = `attempt ${n} was interrupted (the daemon stopped during it); the relay may have taken it, and it is sent again with the same Message-ID`;
    this.o.log.warn({ message_id: mid, attempt: n }, 'e-mail attempt interrupted: sent again (at least once)');
    const next: OutboxEntry = { ...entry, attempts: n, last_error: detail, next_at: now };
    if (!(await this.put(mid, next, now))) {
      await this.store.deleteRecord(EMAIL_REC.outbox, queueId(mid));
      return null;
    }
    return 0;
  }

  private async record(mid: string, entry: OutboxEntry, n: number, claim: Claim, outcome: Outcome): Promise<number | null> {
    const now = this.clock.now();
    const base = { ...entry, attempts: n };
    let next: OutboxEntry;
    if (outcome.kind === 'sent') next = { ...base, state: 'sent', response: outcome.response, last_error: null, done_at: now };
    else if (outcome.kind === 'failed') next = { ...base, state: 'failed', last_error: outcome.detail, done_at: now };
    else {
      const delay = relayBackoffMs(n, this.o.baseDelayMs, this.o.maxDelayMs, this.o.random);
      if (now + delay > entry.created_at + this.o.giveUpAfterMs) {
        const hours = Math.round((now - entry.created_at) / 360_000) / 10;
        next = { ...base, state: 'failed', last_error: `given up after ${n} attempts in ${hours} h: ${outcome.detail}`, done_at: now };
      } else next = { ...base, last_error: outcome.detail, next_at: now + delay };
    }
    if (next.state !== 'queued') {
      // Into this attempt's claim first: only its claimer writes it, so no other write hides it.
      const end: Terminal = next.state === 'sent' ? { state: 'sent', response: next.response ?? '', at: now } : { state: 'failed', detail: next.last_error ?? '', at: now };
      await this.store.putRecord({ kind: EMAIL_REC.outbox, id: attemptId(mid, n), value: JSON.stringify({ ...claim, outcome: end } satisfies Claim), updatedAt: now });
    }
    const written = await this.put(mid, next, now);
    const log = { message_id: mid, to: next.to, from: next.from, attempt: n, relay: this.relay };
    if (written && next.state === 'queued') {
      this.o.log.info({ ...log, detail: next.last_error, next_at: new Date(next.next_at).toISOString() }, 'e-mail attempt failed: retried');
      return next.next_at - now;
    }
    await this.store.deleteRecord(EMAIL_REC.outbox, queueId(mid));
    if (next.state === 'sent') this.o.log.info({ ...log, response: next.response }, 'e-mail accepted by the relay');
    else if (next.state === 'failed') this.o.log.warn({ ...log, reason: next.last_error }, 'e-mail failed');
    return null;
  }

  /** Writes the entry unless it already ended otherwise: a `sent` stands against anything, a
   *  `failed` against anything but a `sent` (the relay did take it). False: not written. The
   *  window between the read and the write is covered by the claim records (endedBefore). */
  private async put(mid: string, next: OutboxEntry, now: number): Promise<boolean> {
    const cur = parseOutbox(await this.store.getRecord(EMAIL_REC.outbox, outboxId(mid)));
    if (cur?.state === 'sent' && next.state !== 'sent') return false;
    if (cur?.state === 'failed' && next.state === 'queued') return false;
    await this.store.putRecord(row2(mid, next, now));
    return true;
  }

  /** Writes an ended entry and drops it from the queue. */
  private async finish(mid: string, next: OutboxEntry, now: number): Promise<void> {
    await this.put(mid, next, now);
    await this.store.deleteRecord(EMAIL_REC.outbox, queueId(mid));
  }

  private warn(msg: string, err: unknown, mid?: string): void {
    this.o.log.warn({ ...(mid ? { message_id: mid } : {}), err: err instanceof Error ? err.message : String(err) }, msg);
  }
}

const row2 = (mid: string, e: OutboxEntry, now: number): RecordRow => ({ kind: EMAIL_REC.outbox, id: outboxId(mid), value: JSON.stringify(e), updatedAt: now });
