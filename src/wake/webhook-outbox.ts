// Durable webhook delivery, at least once: an event is written to the store's records before the
// first attempt and deleted only after a 2xx (or when it is given up), so a daemon restart resumes
// exactly the pending ones. Retries keep the event id and body; each attempt signs afresh with its
// own timestamp. Backoff 1 s, 2 s, 4 s … capped at 60 s (Retry-After honoured up to the cap), for
// a bounded time (default 1 hour from the event's creation, downtime included).
//
// Outcomes: 2xx delivered; 408, 429, 5xx, network errors, timeouts and DNS failures are retried;
// other 4xx, 3xx (redirects are never followed) and refused URLs are given up at once.
// A receiver can see an event twice (an attempt it answered whose deletion did not commit before a
// crash, or an answer lost on the way): de-duplicate by M4A-Event-Id.
//
// Bounded (outbox-bounds.ts): at most 32 attempts in flight and 2 to one origin (host:port), the rest
// waiting their turn in arrival order; at most 10,000 events pending for one origin, past which the
// oldest of that origin is given up. A dead receiver costs two sockets and a bounded store.
import type { Clock } from '../engine/clock.js';
import type { Logger } from '../engine/log.js';
import { silentLogger } from '../engine/log.js';
import type { RecordRow, Store } from '../store/types.js';
import { originOf, OutboxSlots, PendingByOrigin } from './outbox-bounds.js';
import { checkWebhookUrl, resolveWebhookTarget, WebhookUrlRefused, type CheckedWebhookUrl, type Resolver } from './remote-url.js';
import { httpPost, type PostResponse, type WebhookPost } from './webhook-post.js';
import { EVENT_ID_HEADER, purposeKey, SIGNATURE_HEADER, signWebhook, type SignPurpose } from './webhook-signing.js';

export const OUTBOX_KIND = 'webhook-outbox';

/** The part of the store the outbox uses. */
export type RecordStore = Pick<Store, 'putRecord' | 'insertRecords' | 'getRecord' | 'listRecords' | 'deleteRecord'>;

export interface WebhookEvent {
  eventId: string;
  url: string;
  allowRemote?: boolean;
  /** The raw JSON body, sent byte for byte on every attempt. */
  body: string;
  /** Headers of the receiver's own protocol (A2A push: its content type and the token or
   *  Authorization it asked for); kept with the event. The signature, event id, Host and length
   *  are always the outbox's own. */
  headers?: Record<string, string>;
  /** What it is for (default a wake): decides the signing key (webhook-signing.ts purposeKey). */
  purpose?: SignPurpose;
}

/** As stored in the record's value. */
interface OutboxEntry {
  event_id: string;
  url: string;
  allow_remote: boolean;
  body: string;
  headers?: Record<string, string>;
  purpose?: SignPurpose;
  created_at: number;
  deadline: number;
  attempts: number;
  next_at: number;
  last_error: string | null;
}

export type { PostRequest, PostResponse, WebhookPost } from './webhook-post.js';

export type EnqueueResult =
  | { status: 'delivered'; detail: string }
  /** The first attempt failed in a way worth retrying; the outbox keeps trying. */
  | { status: 'retrying'; detail: string }
  /** Refused for good (4xx, refused URL), or the outbox is closed. */
  | { status: 'failed'; detail: string }
  /** The event id is already in the outbox (a pending event with this id is being delivered). */
  | { status: 'duplicate'; detail: string };

export interface FinalOutcome {
  eventId: string;
  delivered: boolean;
  attempts: number;
  detail: string;
}

export interface WebhookOutboxOptions {
  post?: WebhookPost;
  resolver?: Resolver;
  /** How long after an event's creation it is retried (default 1 hour). */
  retryForMs?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Per attempt (default 10 s). */
  attemptTimeoutMs?: number;
  /** Attempts in flight at once, every receiver together (default 32). */
  maxInFlight?: number;
  /** Attempts in flight at once to one origin, host:port (default 2). */
  perOriginInFlight?: number;
  /** Events pending for one origin in this process; past it the oldest is given up (default 10,000). */
  maxPendingPerOrigin?: number;
  log?: Logger;
  /** Called once per event when it is delivered or given up (for receipts and logs). */
  onFinal?: (o: FinalOutcome) => void;
}

type Attempt = { kind: 'delivered'; detail: string } | { kind: 'retry'; detail: string; retryAfterMs?: number } | { kind: 'permanent'; detail: string };

/** How long to wait after the n-th failed attempt (n ≥ 1). */
export function backoffMs(n: number, baseMs = 1000, maxMs = 60_000): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(n - 1, 30));
}

export const OUTBOX_LIMITS = { maxInFlight: 32, perOriginInFlight: 2, maxPendingPerOrigin: 10_000 } as const;

/** An event this process holds, from its enqueue (or resume) until it is delivered or given up. */
interface Held {
  entry: OutboxEntry;
  /** Set while it waits for a slot: ends the wait (the attempt then answers null). */
  cancelWait?: () => void;
  /** Why it was given up while waiting for a slot. */
  givenUp?: string;
}

export class WebhookOutbox {
  private readonly post: WebhookPost;
  private readonly retryForMs: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly log: Logger;
  private readonly slots: OutboxSlots;
  /** Events this outbox is handling: a cancel for a scheduled retry, or the attempt under way
   *  (waiting for its slot or in flight). */
  private timers = new Map<string, () => void>();
  private inFlight = new Map<string, Promise<Attempt>>();
  /** Per origin, oldest first: what the bound on pending events counts. */
  private held: PendingByOrigin<Held>;
  private origins = new WeakMap<OutboxEntry, string>();
  /** One controller per attempt in flight, aborted by close(): no listener piles up on a shared signal. */
  private controllers = new Set<AbortController>();
  private closed = false;

  constructor(
    private readonly store: RecordStore,
    private readonly clock: Clock,
    /** The signing key, or a function that reads it at each attempt (see signingKeyLoader): the
     *  daemon can then start the outbox before `m4a wake set` creates the key and shows it. */
    private readonly key: string | (() => string),
    private readonly opts: WebhookOutboxOptions = {},
  ) {
    this.post = opts.post ?? httpPost;
    this.retryForMs = opts.retryForMs ?? 3_600_000;
    this.baseDelayMs = opts.baseDelayMs ?? 1000;
    this.maxDelayMs = opts.maxDelayMs ?? 60_000;
    this.attemptTimeoutMs = opts.attemptTimeoutMs ?? 10_000;
    this.held = new PendingByOrigin(opts.maxPendingPerOrigin ?? OUTBOX_LIMITS.maxPendingPerOrigin);
    this.log = opts.log ?? silentLogger;
    this.slots = new OutboxSlots(opts.maxInFlight ?? OUTBOX_LIMITS.maxInFlight, opts.perOriginInFlight ?? OUTBOX_LIMITS.perOriginInFlight);
  }

  /** Persists the event, then makes the first attempt (once a slot is free) and reports it. */
  async enqueue(e: WebhookEvent): Promise<EnqueueResult> {
    if (this.closed) return { status: 'failed', detail: 'the webhook outbox is closed' };
    const now = this.clock.now();
    const entry: OutboxEntry = {
      event_id: e.eventId,
      url: e.url,
      allow_remote: e.allowRemote ?? false,
      body: e.body,
      ...(e.headers ? { headers: e.headers } : {}),
      ...(e.purpose && e.purpose !== 'wake' ? { purpose: e.purpose } : {}),
      created_at: now,
      deadline: now + this.retryForMs,
      attempts: 0,
      next_at: now,
      last_error: null,
    };
    const inserted = await this.store.insertRecords([{ kind: OUTBOX_KIND, id: e.eventId, value: JSON.stringify(entry), updatedAt: now }]);
    if (inserted.length === 0) return { status: 'duplicate', detail: `event ${e.eventId} is already in the outbox` };
    // A start() running at the same time may have picked the new record up already.
    if (this.inFlight.has(e.eventId)) return { status: 'retrying', detail: `event ${e.eventId} is being delivered` };
    this.timers.get(e.eventId)?.();
    this.timers.delete(e.eventId);
    this.hold(entry);
    const a = await this.process(entry);
    if (a.kind === 'delivered') return { status: 'delivered', detail: a.detail };
    if (a.kind === 'permanent') return { status: 'failed', detail: a.detail };
    return { status: 'retrying', detail: `${a.detail}; queued for retry (at least once, for up to ${Math.round(this.retryForMs / 60_000)} min)` };
  }

  /** Resumes the events left pending by an earlier run (after a restart); returns how many. An
   *  event already past its retry window gets one last attempt. */
  async start(limit = 10_000): Promise<number> {
    const rows = await this.store.listRecords(OUTBOX_KIND, '', limit);
    if (rows.length === limit) this.log.warn({ limit }, 'webhook outbox: more pending events than resumed at once');
    const entries: OutboxEntry[] = [];
    for (const row of rows) {
      const entry = parseEntry(row);
      if (entry) entries.push(entry);
      else {
        this.log.warn({ event_id: row.id }, 'webhook outbox: unreadable record dropped');
        await this.store.deleteRecord(OUTBOX_KIND, row.id);
      }
    }
    // Oldest first, so the bound on one origin gives up the oldest.
    entries.sort((a, b) => a.created_at - b.created_at);
    let n = 0;
    for (const entry of entries) {
      if (this.closed) break;
      if (this.timers.has(entry.event_id) || this.inFlight.has(entry.event_id)) continue;
      this.hold(entry);
      this.schedule(entry, Math.max(0, entry.next_at - this.clock.now()));
      n++;
    }
    return n;
  }

  /** Events scheduled or in flight in this process. */
  get pending(): number {
    return new Set([...this.timers.keys(), ...this.inFlight.keys()]).size;
  }

  /** Attempts holding a slot (a socket, at most) and attempts waiting for one. */
  get attempts(): { running: number; waiting: number } {
    return this.slots.stats();
  }

  /** Resolves when no attempt is under way, waiting for its slot or in flight (tests move a
   *  ManualClock, then wait for this). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight.values()]);
  }

  /** Stops: cancels scheduled retries, ends the waits for a slot, aborts attempts in flight.
   *  Pending events stay in the store for the next start(). */
  async close(): Promise<void> {
    this.closed = true;
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
    this.slots.close();
    for (const c of this.controllers) c.abort();
    await this.idle();
    this.held.clear();
  }

  private originOf(entry: OutboxEntry): string {
    let o = this.origins.get(entry);
    if (o === undefined) this.origins.set(entry, (o = originOf(entry.url, entry.allow_remote)));
    return o;
  }

  private heldOf(entry: OutboxEntry): Held | undefined {
    return this.held.get(this.originOf(entry), entry.event_id);
  }

  /** Counts the event against its origin; past the bound, the oldest of that origin that is not
   *  in flight is given up (its record deleted, onFinal told, a log line). */
  private hold(entry: OutboxEntry): void {
    const origin = this.originOf(entry);
    const victim = this.held.add(origin, entry.event_id, { entry }, (id, h) => this.timers.has(id) || h.cancelWait !== undefined);
    if (!victim) return;
    const { id, value: h } = victim;
    const detail = `given up: more than ${this.held.max} events pending for ${origin}`;
    this.log.warn({ event_id: id, origin, attempts: h.entry.attempts, limit: this.held.max }, 'webhook given up: too many events pending for its receiver');
    this.timers.get(id)?.();
    this.timers.delete(id);
    if (h.cancelWait) {
      h.givenUp = detail;
      h.cancelWait();
    }
    void this.store
      .deleteRecord(OUTBOX_KIND, id)
      .then(() => this.opts.onFinal?.({ eventId: id, delivered: false, attempts: h.entry.attempts, detail }))
      .catch((err: unknown) => this.log.error({ event_id: id, err: err instanceof Error ? err.message : String(err) }, 'webhook outbox: store failed'));
  }

  private unhold(entry: OutboxEntry): void {
    this.held.delete(this.originOf(entry), entry.event_id);
  }

  private schedule(entry: OutboxEntry, delayMs: number): void {
    const cancel = this.clock.timer(delayMs, () => {
      this.timers.delete(entry.event_id);
      if (!this.closed) void this.process(entry);
    });
    this.timers.set(entry.event_id, cancel);
  }

  /** One attempt and its bookkeeping; never rejects. */
  private process(entry: OutboxEntry): Promise<Attempt> {
    const p = this.attemptAndRecord(entry).catch((err: unknown): Attempt => {
      // The store failed: the record is as it was, so the next start() tries again.
      this.unhold(entry);
      this.log.error({ event_id: entry.event_id, err: err instanceof Error ? err.message : String(err) }, 'webhook outbox: store failed');
      return { kind: 'retry', detail: 'the store failed; the event stays pending' };
    });
    this.inFlight.set(entry.event_id, p);
    void p.finally(() => {
      if (this.inFlight.get(entry.event_id) === p) this.inFlight.delete(entry.event_id);
    });
    return p;
  }

  private async attemptAndRecord(entry: OutboxEntry): Promise<Attempt> {
    const h = this.heldOf(entry);
    const { slot, cancel } = this.slots.acquire(this.originOf(entry));
    if (h) h.cancelWait = cancel;
    const release = await slot;
    if (h) delete h.cancelWait;
    // Given up by the bound while it waited (perhaps just as its slot came): hold() deleted its record.
    if (h?.givenUp) {
      release?.();
      return { kind: 'permanent', detail: h.givenUp };
    }
    if (!release) return { kind: 'retry', detail: 'the webhook outbox closed before the attempt; the event stays pending' };
    let a: Attempt;
    try {
      a = await this.attempt(entry);
    } finally {
      release();
    }
    if (this.closed && a.kind !== 'delivered') return a; // closing: leave the record as it was
    entry.attempts++;
    entry.last_error = a.kind === 'delivered' ? null : a.detail;
    const final = (delivered: boolean, detail: string): void => {
      this.opts.onFinal?.({ eventId: entry.event_id, delivered, attempts: entry.attempts, detail });
    };
    if (a.kind === 'delivered') {
      this.unhold(entry);
      await this.store.deleteRecord(OUTBOX_KIND, entry.event_id);
      final(true, a.detail);
      return a;
    }
    if (a.kind === 'permanent') {
      this.unhold(entry);
      await this.store.deleteRecord(OUTBOX_KIND, entry.event_id);
      this.log.warn({ event_id: entry.event_id, detail: a.detail, attempts: entry.attempts }, 'webhook given up');
      final(false, a.detail);
      return a;
    }
    const now = this.clock.now();
    const delay = Math.min(this.maxDelayMs, Math.max(backoffMs(entry.attempts, this.baseDelayMs, this.maxDelayMs), a.retryAfterMs ?? 0));
    if (now + delay > entry.deadline) {
      this.unhold(entry);
      await this.store.deleteRecord(OUTBOX_KIND, entry.event_id);
      const detail = `${a.detail}; given up after ${entry.attempts} attempts`;
      this.log.warn({ event_id: entry.event_id, detail }, 'webhook given up');
      final(false, detail);
      return { kind: 'permanent', detail };
    }
    entry.next_at = now + delay;
    await this.store.putRecord({ kind: OUTBOX_KIND, id: entry.event_id, value: JSON.stringify(entry), updatedAt: now });
    if (!this.closed) this.schedule(entry, delay);
    return a;
  }

  private async attempt(entry: OutboxEntry): Promise<Attempt> {
    let url: CheckedWebhookUrl;
    try {
      url = checkWebhookUrl(entry.url, entry.allow_remote);
    } catch (err) {
      return { kind: 'permanent', detail: err instanceof Error ? err.message : String(err) };
    }
    let target: { address: string; family: 4 | 6 };
    try {
      target = await resolveWebhookTarget(url, this.opts.resolver);
    } catch (err) {
      if (err instanceof WebhookUrlRefused) return { kind: 'permanent', detail: `refused: ${err.reason}` };
      return { kind: 'retry', detail: `could not resolve ${url.hostname}: ${err instanceof Error ? err.message : String(err)}` };
    }
    let key: string;
    try {
      key = typeof this.key === 'string' ? this.key : this.key();
    } catch (err) {
      return { kind: 'permanent', detail: `no signing key: ${err instanceof Error ? err.message : String(err)}` };
    }
    const t = Math.floor(this.clock.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      ...ownHeaders(entry.headers),
      [EVENT_ID_HEADER]: entry.event_id,
      [SIGNATURE_HEADER]: signWebhook(purposeKey(key, entry.purpose ?? 'wake'), entry.body, t),
      'user-agent': 'mail4agent-webhook',
    };
    let res: PostResponse;
    const controller = new AbortController();
    if (this.closed) controller.abort();
    this.controllers.add(controller);
    try {
      res = await this.post({ url, address: target.address, family: target.family, body: entry.body, headers, timeoutMs: this.attemptTimeoutMs, signal: controller.signal });
    } catch (err) {
      return { kind: 'retry', detail: `POST failed: ${err instanceof Error ? err.message : String(err)}` };
    } finally {
      this.controllers.delete(controller);
    }
    const s = res.status;
    if (s >= 200 && s < 300) return { kind: 'delivered', detail: `delivered: HTTP ${s}` };
    if (s === 408 || s === 429 || s >= 500) {
      const ra = retryAfterMs(res.retryAfter, this.clock.now());
      return { kind: 'retry', detail: `HTTP ${s}`, ...(ra !== undefined ? { retryAfterMs: ra } : {}) };
    }
    return { kind: 'permanent', detail: `HTTP ${s}: given up (only 408, 429 and 5xx are retried; redirects are not followed)` };
  }
}

function parseEntry(row: RecordRow): OutboxEntry | null {
  try {
    const v = JSON.parse(row.value) as Partial<OutboxEntry>;
    if (typeof v.event_id !== 'string' || typeof v.url !== 'string' || typeof v.body !== 'string') return null;
    if (typeof v.deadline !== 'number' || typeof v.next_at !== 'number') return null;
    return {
      event_id: v.event_id,
      url: v.url,
      allow_remote: v.allow_remote === true,
      body: v.body,
      ...(v.headers && typeof v.headers === 'object' ? { headers: ownHeaders(v.headers) } : {}),
      ...(v.purpose === 'a2a-push' ? { purpose: v.purpose } : {}),
      created_at: typeof v.created_at === 'number' ? v.created_at : row.updatedAt,
      deadline: v.deadline,
      attempts: typeof v.attempts === 'number' ? v.attempts : 0,
      next_at: v.next_at,
      last_error: typeof v.last_error === 'string' ? v.last_error : null,
    };
  } catch {
    return null;
  }
}

/** The headers an event may set: string values only, never the ones the outbox owns. */
const OUTBOX_OWNS = new Set([EVENT_ID_HEADER.toLowerCase(), SIGNATURE_HEADER.toLowerCase(), 'host', 'content-length', 'user-agent', 'transfer-encoding', 'connection']);
function ownHeaders(h: Record<string, unknown> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h ?? {})) if (typeof v === 'string' && !OUTBOX_OWNS.has(k.toLowerCase())) out[k.toLowerCase()] = v;
  return out;
}

/** Retry-After as seconds or an HTTP date, in ms from now. */
function retryAfterMs(v: string | null | undefined, now: number): number | undefined {
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
