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
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Clock } from '../engine/clock.js';
import type { Logger } from '../engine/log.js';
import { silentLogger } from '../engine/log.js';
import type { RecordRow, Store } from '../store/types.js';
import { checkWebhookUrl, resolveWebhookTarget, WebhookUrlRefused, type CheckedWebhookUrl, type Resolver } from './remote-url.js';
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

export interface PostRequest {
  url: CheckedWebhookUrl;
  /** The address checked by resolveWebhookTarget: connect here, never re-resolve. */
  address: string;
  family: 4 | 6;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  signal: AbortSignal;
}
export interface PostResponse {
  status: number;
  retryAfter?: string | null;
}
/** One HTTP POST; rejects on network errors and timeouts. Injectable for tests. */
export type WebhookPost = (r: PostRequest) => Promise<PostResponse>;

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
  log?: Logger;
  /** Called once per event when it is delivered or given up (for receipts and logs). */
  onFinal?: (o: FinalOutcome) => void;
}

type Attempt = { kind: 'delivered'; detail: string } | { kind: 'retry'; detail: string; retryAfterMs?: number } | { kind: 'permanent'; detail: string };

/** How long to wait after the n-th failed attempt (n ≥ 1). */
export function backoffMs(n: number, baseMs = 1000, maxMs = 60_000): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(n - 1, 30));
}

export class WebhookOutbox {
  private readonly post: WebhookPost;
  private readonly retryForMs: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly log: Logger;
  /** Events this outbox is handling: a cancel for a scheduled retry, or the attempt in flight. */
  private timers = new Map<string, () => void>();
  private inFlight = new Map<string, Promise<Attempt>>();
  private aborter = new AbortController();
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
    this.log = opts.log ?? silentLogger;
  }

  /** Persists the event, then makes the first attempt and reports it. */
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
    let n = 0;
    for (const row of rows) {
      if (this.closed) break;
      if (this.timers.has(row.id) || this.inFlight.has(row.id)) continue;
      const entry = parseEntry(row);
      if (!entry) {
        this.log.warn({ event_id: row.id }, 'webhook outbox: unreadable record dropped');
        await this.store.deleteRecord(OUTBOX_KIND, row.id);
        continue;
      }
      this.schedule(entry, Math.max(0, entry.next_at - this.clock.now()));
      n++;
    }
    return n;
  }

  /** Events scheduled or in flight in this process. */
  get pending(): number {
    return new Set([...this.timers.keys(), ...this.inFlight.keys()]).size;
  }

  /** Resolves when no attempt is in flight (tests move a ManualClock, then wait for this). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight.values()]);
  }

  /** Stops: cancels scheduled retries, aborts attempts in flight. Pending events stay in the store
   *  for the next start(). */
  async close(): Promise<void> {
    this.closed = true;
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
    this.aborter.abort();
    await this.idle();
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
    const a = await this.attempt(entry);
    if (this.aborter.signal.aborted && a.kind !== 'delivered') return a; // closing: leave the record as it was
    entry.attempts++;
    entry.last_error = a.kind === 'delivered' ? null : a.detail;
    const final = (delivered: boolean, detail: string): void => {
      this.opts.onFinal?.({ eventId: entry.event_id, delivered, attempts: entry.attempts, detail });
    };
    if (a.kind === 'delivered') {
      await this.store.deleteRecord(OUTBOX_KIND, entry.event_id);
      final(true, a.detail);
      return a;
    }
    if (a.kind === 'permanent') {
      await this.store.deleteRecord(OUTBOX_KIND, entry.event_id);
      this.log.warn({ event_id: entry.event_id, detail: a.detail, attempts: entry.attempts }, 'webhook given up');
      final(false, a.detail);
      return a;
    }
    const now = this.clock.now();
    const delay = Math.min(this.maxDelayMs, Math.max(backoffMs(entry.attempts, this.baseDelayMs, this.maxDelayMs), a.retryAfterMs ?? 0));
    if (now + delay > entry.deadline) {
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
    try {
      res = await this.post({ url, address: target.address, family: target.family, body: entry.body, headers, timeoutMs: this.attemptTimeoutMs, signal: this.aborter.signal });
    } catch (err) {
      return { kind: 'retry', detail: `POST failed: ${err instanceof Error ? err.message : String(err)}` };
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

/** The real POST: node:http(s) to the checked address (the Host header and TLS name stay the URL's
 *  host), no keep-alive pool, no redirects, a timeout, the response body discarded. */
export const httpPost: WebhookPost = (r) =>
  new Promise<PostResponse>((resolve, reject) => {
    const lookup: LookupFunction = (_host, options, cb) => {
      if ((options as { all?: boolean }).all) (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address: r.address, family: r.family }]);
      else cb(null, r.address, r.family);
    };
    const send = r.url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send({
      host: r.url.hostname,
      port: r.url.port,
      path: r.url.path,
      method: 'POST',
      agent: false,
      lookup,
      signal: r.signal,
      timeout: r.timeoutMs,
      headers: { ...r.headers, host: r.url.hostHeader, 'content-length': String(Buffer.byteLength(r.body)) },
    });
    req.on('response', (res) => {
      res.resume();
      // node keeps the first of repeated Retry-After headers, so it is one string.
      resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] ?? null });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${r.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(r.body);
  });
