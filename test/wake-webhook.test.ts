// Webhook wakes: signed POSTs a receiver can verify, retries with backoff on an injected clock, a
// durable outbox that resumes after a restart (nothing lost, nothing doubled beyond at-least-once),
// permanent 4xx given up, URLs as strict as listeners unless remote hosts are allowed, a
// signing key kept 0600 and shown once, and bounds: attempts in flight in all and per receiver (a
// receiver that never answers holds two sockets, not one per event), pending events per receiver.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock, systemClock } from '../src/engine/clock.js';
import { MailError } from '../src/wire/errors.js';
import { openSqliteStore } from '../src/store/index.js';
import type { Store } from '../src/store/types.js';
import type { Logger } from '../src/engine/log.js';
import type { WakeRequest } from '../src/wake/types.js';
import { WebhookAdapter, type WebhookPayload } from '../src/wake/webhook-adapter.js';
import { OUTBOX_KIND, WebhookOutbox, backoffMs, type FinalOutcome } from '../src/wake/webhook-outbox.js';
import { ensureSigningKey, signingKeyLoader, verifyWebhookSignature, WEBHOOK_KEY_FILE } from '../src/wake/webhook-signing.js';
import { checkWebhookStep, checkWebhookUrl, resolveWebhookTarget, WebhookUrlRefused } from '../src/wake/remote-url.js';
import { until } from './support/until.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  eventId: string;
  at: number;
}

/** A loopback receiver; `answer` picks the status for each request. */
async function startReceiver(answer: (r: Received, n: number) => number): Promise<{ url: string; got: Received[]; close(): Promise<void>; server: Server }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), eventId: String(req.headers['m4a-event-id']), at: Date.now() };
      got.push(r);
      res.statusCode = answer(r, got.length);
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook?x=1`,
    got,
    server,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A loopback receiver that accepts every connection and never answers; counts the connections
 *  open now and the most ever open at once. */
async function startHungReceiver(): Promise<{ url: string; open(): number; maxOpen(): number; requests: string[]; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const held: ServerResponse[] = [];
  const requests: string[] = [];
  let max = 0;
  const server = createServer((req, res) => {
    requests.push(String(req.headers['m4a-event-id']));
    held.push(res);
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    max = Math.max(max, sockets.size);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hung`,
    open: () => sockets.size,
    maxOpen: () => max,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Receivers that answer 200 after `holdMs`, counting the requests each (and all) has at once.
 *  A request counts until just before its answer is sent, so the sender sees it end later. */
async function startSlowReceivers(n: number, holdMs: number): Promise<{ urls: string[]; max: number[]; maxAll(): number; order: string[][]; close(): Promise<void> }> {
  const now = new Array<number>(n).fill(0);
  const max = new Array<number>(n).fill(0);
  const order: string[][] = Array.from({ length: n }, () => []);
  let all = 0;
  let maxAll = 0;
  const servers = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const server = createServer((req, res) => {
        now[i]!++;
        all++;
        max[i] = Math.max(max[i]!, now[i]!);
        maxAll = Math.max(maxAll, all);
        order[i]!.push(String(req.headers['m4a-event-id']));
        req.resume();
        setTimeout(() => {
          now[i]!--;
          all--;
          res.end();
        }, holdMs);
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return server;
    }),
  );
  return {
    urls: servers.map((sv) => `http://127.0.0.1:${(sv.address() as AddressInfo).port}/slow`),
    max,
    maxAll: () => maxAll,
    order,
    close: async () => {
      await Promise.all(servers.map((sv) => new Promise<void>((r) => sv.close(() => r()))));
    },
  };
}

function wakeReq(eventId: string): WakeRequest {
  return {
    eventId,
    account: 'bob',
    session: { id: 's-abc', lineage: 's-abc', slug: 'bob/web', pid: 123, live: false, provider: 'claude', providerSessionId: 'conv-1', cwd: '/tmp', listening: false },
    mail: [{ message_id: 'm-1', from: 'alice/s-1', subject: 'review "x"; rm -rf /', priority: 'normal', thread_id: 'm-1' }],
    urgent: false,
    text: 'You have new mail in mail4agent (1 message)',
  };
}

const never = new AbortController().signal;

describe('webhook wakes', () => {
  let dir: string;
  let key: string;
  const stores: Store[] = [];
  const outboxes: WebhookOutbox[] = [];
  const openStore = (): Store => {
    const s = openSqliteStore({ path: join(dir, 'mail.db') });
    stores.push(s);
    return s;
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'm4a-webhook-'));
    key = ensureSigningKey(dir).key;
  });
  after(async () => {
    for (const o of outboxes) await o.close();
    for (const s of stores) await s.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  const outbox = (store: Store, clock = systemClock, opts: ConstructorParameters<typeof WebhookOutbox>[3] = {}): WebhookOutbox => {
    const o = new WebhookOutbox(store, clock, key, opts);
    outboxes.push(o);
    return o;
  };

  it('the signing key is 32 random bytes in a 0600 file, created once and shown once', () => {
    const d = mkdtempSync(join(tmpdir(), 'm4a-key-'));
    try {
      // The daemon's outbox reads the key lazily: it never creates it, so `m4a wake set` shows it.
      const load = signingKeyLoader(d);
      assert.throws(load, /ENOENT/);
      const first = ensureSigningKey(d);
      assert.equal(load(), first.key);
      assert.equal(first.created, true);
      assert.match(first.key, /^m4a_whsec_[A-Za-z0-9_-]{43}$/);
      assert.equal(statSync(join(d, WEBHOOK_KEY_FILE)).mode & 0o777, 0o600);
      const again = ensureSigningKey(d);
      assert.equal(again.created, false, 'shown once: later calls say it already existed');
      assert.equal(again.key, first.key);
      chmodSync(join(d, WEBHOOK_KEY_FILE), 0o644);
      ensureSigningKey(d);
      assert.equal(statSync(join(d, WEBHOOK_KEY_FILE)).mode & 0o777, 0o600, 'a loosened file is tightened again');
      assert.notEqual(ensureSigningKey(mkdtempSync(join(tmpdir(), 'm4a-key-'))).key, first.key);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('a delivered wake is signed: the receiver verifies it, a tampered body or another key fails', async () => {
    const rx = await startReceiver(() => 204);
    try {
      const adapter = new WebhookAdapter({ kind: 'webhook', url: rx.url }, { outbox: outbox(openStore()) });
      const r = await adapter.wake(wakeReq('ev-signed-1'), never);
      assert.deepEqual(r, { ok: true, detail: 'delivered: HTTP 204' });
      assert.equal(rx.got.length, 1);
      const got = rx.got[0]!;
      assert.equal(got.headers['content-type'], 'application/json');
      assert.equal(got.headers['m4a-event-id'], 'ev-signed-1');
      const header = String(got.headers['m4a-signature']);
      assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
      assert.deepEqual(verifyWebhookSignature({ key, header, body: got.body }).ok, true);

      const payload = JSON.parse(got.body) as WebhookPayload;
      assert.equal(payload.event_id, 'ev-signed-1');
      assert.equal(payload.type, 'mail.wake');
      assert.equal(payload.account, 'bob');
      assert.deepEqual(payload.session, { id: 's-abc', lineage: 's-abc', slug: 'bob/web' });
      assert.deepEqual(payload.mail, [{ message_id: 'm-1', from: 'alice/s-1', subject: 'review "x"; rm -rf /', priority: 'normal', thread_id: 'm-1' }]);
      assert.equal(payload.urgent, false);
      assert.ok(!Number.isNaN(Date.parse(payload.created_at)));
      assert.ok(!('body' in payload.mail[0]!), 'a wake never carries a body');

      const tampered = got.body.replace('"urgent":false', '"urgent":true');
      assert.notEqual(tampered, got.body);
      assert.deepEqual(verifyWebhookSignature({ key, header, body: tampered }), { ok: false, reason: 'signature mismatch' });
      const other = ensureSigningKey(mkdtempSync(join(tmpdir(), 'm4a-key-'))).key;
      assert.equal(verifyWebhookSignature({ key: other, header, body: got.body }).ok, false);
      // The timestamp is signed too: 5 minutes of tolerance, then refused (replays).
      assert.equal(verifyWebhookSignature({ key, header, body: got.body, now: Date.now() + 4 * 60_000 }).ok, true);
      assert.deepEqual(verifyWebhookSignature({ key, header, body: got.body, now: Date.now() + 6 * 60_000 }), { ok: false, reason: 'timestamp outside the tolerance' });
      const t = Number(/t=(\d+)/.exec(header)![1]);
      const forgedT = header.replace(`t=${t}`, `t=${t + 1}`);
      assert.equal(verifyWebhookSignature({ key, header: forgedT, body: got.body }).ok, false);
      assert.equal(verifyWebhookSignature({ key, header: undefined, body: got.body }).ok, false);
      assert.equal((await stores[0]!.listRecords(OUTBOX_KIND, '', 10)).length, 0, 'a delivered event leaves the outbox');

      // localhost is connected to as 127.0.0.1 (never resolved); the Host header stays the URL's.
      const viaName = rx.url.replace('127.0.0.1', 'localhost');
      const r2 = await new WebhookAdapter({ kind: 'webhook', url: viaName }, { outbox: outbox(stores[0]!) }).wake(wakeReq('ev-signed-2'), never);
      assert.equal(r2.ok, true);
      assert.equal(rx.got[1]!.headers.host, new URL(viaName).host);
    } finally {
      await rx.close();
    }
  });

  it('failed attempts are retried with exponential backoff on the injected clock, same event id, fresh signatures', async () => {
    const clock = new ManualClock();
    const rx = await startReceiver((_r, n) => (n <= 3 ? 503 : 200));
    try {
      const finals: FinalOutcome[] = [];
      const ob = outbox(openStore(), clock, { onFinal: (f) => finals.push(f) });
      const adapter = new WebhookAdapter({ kind: 'webhook', url: rx.url }, { outbox: ob, clock });
      const r = await adapter.wake(wakeReq('ev-retry-1'), never);
      assert.equal(r.ok, true, 'a retryable failure still counts as reached: the outbox guarantees at least once');
      assert.match(r.detail, /HTTP 503; queued for retry/);
      assert.equal(rx.got.length, 1);

      const schedule: number[] = [];
      for (const step of [1000, 2000, 4000]) {
        clock.advance(step - 1);
        await ob.idle();
        assert.equal(rx.got.length, schedule.length + 1, `no attempt before ${step} ms`);
        clock.advance(1);
        await ob.idle();
        schedule.push(step);
        assert.equal(rx.got.length, schedule.length + 1, `an attempt after ${step} ms`);
      }
      assert.deepEqual(
        rx.got.map((g) => g.eventId),
        ['ev-retry-1', 'ev-retry-1', 'ev-retry-1', 'ev-retry-1'],
      );
      assert.equal(new Set(rx.got.map((g) => g.body)).size, 1, 'the same body every time');
      const ts = rx.got.map((g) => Number(/t=(\d+)/.exec(String(g.headers['m4a-signature']))![1]));
      assert.deepEqual(
        ts.map((t) => t - ts[0]!),
        [0, 1, 3, 7],
        'each attempt signs with its own time',
      );
      const last = rx.got[3]!;
      assert.equal(verifyWebhookSignature({ key, header: String(last.headers['m4a-signature']), body: last.body, now: clock.now() }).ok, true);
      assert.deepEqual(finals, [{ eventId: 'ev-retry-1', delivered: true, attempts: 4, detail: 'delivered: HTTP 200' }]);
      clock.advance(3_600_000);
      await ob.idle();
      assert.equal(rx.got.length, 4, 'nothing more once delivered');
      assert.equal(clock.pendingTimers(), 0);
      assert.deepEqual(
        [1, 2, 3, 6, 7, 8, 20].map((n) => backoffMs(n)),
        [1000, 2000, 4000, 32_000, 60_000, 60_000, 60_000],
      );
    } finally {
      await rx.close();
    }
  });

  it('retries stop after the bounded time; 408 and 429 are retried, other 4xx given up at once', async () => {
    const clock = new ManualClock();
    const statuses = new Map<string, number>([
      ['ev-500', 500],
      ['ev-408', 408],
      ['ev-429', 429],
      ['ev-404', 404],
      ['ev-400', 400],
    ]);
    const rx = await startReceiver((r) => statuses.get(r.eventId) ?? 200);
    try {
      const finals: FinalOutcome[] = [];
      const store = openStore();
      const ob = outbox(store, clock, { retryForMs: 10_000, onFinal: (f) => finals.push(f) });
      const adapter = new WebhookAdapter({ kind: 'webhook', url: rx.url }, { outbox: ob, clock });
      const results = new Map<string, { ok: boolean; detail: string }>();
      for (const id of statuses.keys()) results.set(id, await adapter.wake(wakeReq(id), never));
      assert.equal(results.get('ev-404')!.ok, false);
      assert.match(results.get('ev-404')!.detail, /HTTP 404: given up/);
      assert.equal(results.get('ev-400')!.ok, false);
      for (const id of ['ev-500', 'ev-408', 'ev-429']) assert.equal(results.get(id)!.ok, true, id);

      // 1 s + 2 s + 4 s = 7 s; the next wait (8 s) would pass the 10 s window: 4 attempts each.
      for (let i = 0; i < 30; i++) {
        clock.advance(1000);
        await ob.idle();
      }
      const count = (id: string) => rx.got.filter((g) => g.eventId === id).length;
      assert.deepEqual(['ev-500', 'ev-408', 'ev-429', 'ev-404', 'ev-400'].map(count), [4, 4, 4, 1, 1]);
      assert.deepEqual(finals.filter((f) => f.delivered).length, 0);
      assert.deepEqual(finals.map((f) => f.eventId).sort(), ['ev-400', 'ev-404', 'ev-408', 'ev-429', 'ev-500']);
      assert.match(finals.find((f) => f.eventId === 'ev-500')!.detail, /given up after 4 attempts/);
      assert.equal((await store.listRecords(OUTBOX_KIND, 'ev-4', 10)).length, 0);
      assert.equal((await store.listRecords(OUTBOX_KIND, 'ev-5', 10)).length, 0);
    } finally {
      await rx.close();
    }
  });

  it('a restart resumes exactly the pending events from the store: nothing lost, nothing doubled', async () => {
    let up = false;
    const rx = await startReceiver((r) => (r.eventId === 'ev-r-ok' || up ? 200 : 503));
    try {
      const clock1 = new ManualClock();
      const store1 = openSqliteStore({ path: join(dir, 'restart.db') });
      const ob1 = new WebhookOutbox(store1, clock1, key);
      const adapter1 = new WebhookAdapter({ kind: 'webhook', url: rx.url }, { outbox: ob1, clock: clock1 });
      for (const id of ['ev-r-ok', 'ev-r-1', 'ev-r-2']) await adapter1.wake(wakeReq(id), never);
      clock1.advance(1000); // a second attempt for the two pending ones, still failing
      await ob1.idle();
      assert.deepEqual(
        rx.got.map((g) => g.eventId),
        ['ev-r-ok', 'ev-r-1', 'ev-r-2', 'ev-r-1', 'ev-r-2'],
      );
      // The daemon stops with two events pending (a retry timer is cancelled, the records stay).
      await ob1.close();
      await store1.close();
      rx.got.length = 0;

      up = true;
      const clock2 = new ManualClock(clock1.now() + 30_000);
      const store2 = openSqliteStore({ path: join(dir, 'restart.db') });
      stores.push(store2);
      const pending = await store2.listRecords(OUTBOX_KIND, '', 10);
      assert.deepEqual(
        pending.map((p) => p.id),
        ['ev-r-1', 'ev-r-2'],
      );
      assert.equal(JSON.parse(pending[0]!.value).attempts, 2);
      const finals: FinalOutcome[] = [];
      const ob2 = outbox(store2, clock2, { onFinal: (f) => finals.push(f) });
      assert.equal(await ob2.start(), 2);
      assert.equal(rx.got.length, 0, 'nothing is sent before the clock says so');
      clock2.advance(0);
      await ob2.idle();
      assert.deepEqual(rx.got.map((g) => g.eventId).sort(), ['ev-r-1', 'ev-r-2'], 'each pending event once more; the delivered one never again');
      for (const g of rx.got) assert.equal(verifyWebhookSignature({ key, header: String(g.headers['m4a-signature']), body: g.body, now: clock2.now() }).ok, true);
      assert.deepEqual(finals.map((f) => [f.eventId, f.delivered, f.attempts]).sort(), [
        ['ev-r-1', true, 3],
        ['ev-r-2', true, 3],
      ]);
      assert.equal(await ob2.start(), 0, 'a second start finds nothing pending');
      clock2.advance(3_600_000);
      await ob2.idle();
      assert.equal(rx.got.length, 2);
      assert.equal((await store2.listRecords(OUTBOX_KIND, '', 10)).length, 0);
    } finally {
      await rx.close();
    }
  });

  it('an event past its window when the daemon comes back gets one last attempt', async () => {
    const rx = await startReceiver(() => 503);
    try {
      const clock1 = new ManualClock();
      const store1 = openSqliteStore({ path: join(dir, 'late.db') });
      const ob1 = new WebhookOutbox(store1, clock1, key, { retryForMs: 60_000 });
      await ob1.enqueue({ eventId: 'ev-late', url: rx.url, body: '{}' });
      await ob1.close();
      await store1.close();
      const clock2 = new ManualClock(clock1.now() + 2 * 3_600_000);
      const store2 = openSqliteStore({ path: join(dir, 'late.db') });
      stores.push(store2);
      const ob2 = outbox(store2, clock2, { retryForMs: 60_000 });
      assert.equal(await ob2.start(), 1);
      clock2.advance(0);
      await ob2.idle();
      assert.equal(rx.got.length, 2);
      assert.equal((await store2.listRecords(OUTBOX_KIND, '', 10)).length, 0, 'given up after the last attempt');
    } finally {
      await rx.close();
    }
  });

  it('a duplicate event id is not queued twice; an abort answers at once and the event stays queued', async () => {
    const clock = new ManualClock();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const rx = await startReceiver(() => 200);
    try {
      const store = openStore();
      const ob = outbox(store, clock, {
        // A slow receiver: the POST waits for the gate.
        post: async (r) => {
          await gate;
          const res = await fetch(r.url.href, { method: 'POST', headers: r.headers, body: r.body });
          return { status: res.status };
        },
      });
      const adapter = new WebhookAdapter({ kind: 'webhook', url: rx.url }, { outbox: ob, clock });
      const ac = new AbortController();
      const pending = adapter.wake(wakeReq('ev-abort'), ac.signal);
      await new Promise((r) => setTimeout(r, 20));
      ac.abort();
      const r = await pending;
      assert.equal(r.ok, false);
      assert.match(r.detail, /aborted/);
      const dup = await ob.enqueue({ eventId: 'ev-abort', url: rx.url, body: '{}' });
      assert.equal(dup.status, 'duplicate');
      release();
      await ob.idle();
      assert.deepEqual(
        rx.got.map((g) => g.eventId),
        ['ev-abort'],
        'the aborted wait did not cancel the durable event; the duplicate sent nothing',
      );
      const pre = new AbortController();
      pre.abort();
      assert.equal((await adapter.wake(wakeReq('ev-pre-aborted'), pre.signal)).ok, false);
      assert.equal(await store.getRecord(OUTBOX_KIND, 'ev-pre-aborted'), null, 'nothing queued when aborted before');
    } finally {
      await rx.close();
    }
  });

  /** Warnings node emits meanwhile: one abort listener per attempt on a shared signal shows here. */
  const listenerWarnings = (): { list(): string[]; stop(): void } => {
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    return { list: () => warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message), stop: () => process.off('warning', onWarning) };
  };

  it('a receiver that accepts and never answers: 100 events hold 2 connections, another receiver still gets through, close() drains the queue', { timeout: 20_000 }, async () => {
    const warnings = listenerWarnings();
    const hung = await startHungReceiver();
    const rx = await startReceiver(() => 200);
    try {
      const store = openStore();
      const ob = outbox(store);
      const results: Array<{ status: string; detail: string } | null> = Array.from({ length: 100 }, () => null);
      const queued = Array.from({ length: 100 }, (_, i) => ob.enqueue({ eventId: `ev-hung-${i}`, url: hung.url, body: '{}' }).then((r) => (results[i] = r)));
      await until('two attempts at the hung receiver', () => hung.open() === 2 && ob.attempts.waiting === 98);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(hung.maxOpen(), 2, 'never more than the per-origin limit');
      assert.deepEqual(hung.requests.sort(), ['ev-hung-0', 'ev-hung-1'], 'the first two, in arrival order');
      assert.deepEqual(ob.attempts, { running: 2, waiting: 98 });
      // Another origin is not queued behind the dead one.
      const other = await ob.enqueue({ eventId: 'ev-other-origin', url: rx.url, body: '{}' });
      assert.equal(other.status, 'delivered');
      assert.equal(rx.got.length, 1);
      assert.equal(results.filter((r) => r !== null).length, 0, 'each enqueue waits for its first attempt');

      const started = Date.now();
      await ob.close();
      await Promise.all(queued);
      assert.ok(Date.now() - started < 2000, 'close() aborted the attempts in flight and ended the waits');
      for (const r of results) assert.equal(r?.status, 'retrying', r?.detail);
      assert.match(results[99]!.detail, /closed before the attempt/);
      assert.deepEqual(ob.attempts, { running: 0, waiting: 0 });
      assert.equal((await store.listRecords(OUTBOX_KIND, 'ev-hung-', 200)).length, 100, 'every event stays pending for the next start');
      await until('the aborted connections closed', () => hung.open() === 0);
      assert.equal(hung.maxOpen(), 2);
      assert.deepEqual(warnings.list(), []);
    } finally {
      warnings.stop();
      await hung.close();
      await rx.close();
    }
  });

  it('attempts in flight stay within the global and the per-origin limit, first come first served', { timeout: 20_000 }, async () => {
    const warnings = listenerWarnings();
    const slow = await startSlowReceivers(8, 30);
    try {
      // 8 receivers could take 16 at once: the global limit of 12 is what holds.
      const ob = outbox(openStore(), systemClock, { maxInFlight: 12, perOriginInFlight: 2 });
      const events = Array.from({ length: 48 }, (_, i) => ({ eventId: `ev-slow-${i}`, url: slow.urls[i % 8]!, body: '{}' }));
      const results = await Promise.all(events.map((e) => ob.enqueue(e)));
      assert.deepEqual(new Set(results.map((r) => r.status)), new Set(['delivered']));
      assert.equal(slow.maxAll(), 12, 'the global limit was reached and never passed');
      for (const m of slow.max) assert.ok(m <= 2, `per origin: ${m}`);
      // One origin: in arrival order, give or take the two that went out together.
      const one = Array.from({ length: 20 }, (_, i) => ({ eventId: `ev-one-${i}`, url: slow.urls[0]!, body: '{}' }));
      const before = slow.order[0]!.length;
      await Promise.all(one.map((e) => ob.enqueue(e)));
      const seen = slow.order[0]!.slice(before);
      for (const [i, id] of seen.entries()) assert.ok(Math.abs(Number(id.split('-').pop()) - i) <= 1, `${id} arrived ${i}th: ${seen.join(' ')}`);
      assert.equal(slow.max[0], 2);
      assert.deepEqual(warnings.list(), [], 'no abort listener piles up on a shared signal');
    } finally {
      warnings.stop();
      await slow.close();
    }
  });

  it('past the bound of pending events for one origin, the oldest is given up with a log line; other origins untouched', { timeout: 20_000 }, async () => {
    const clock = new ManualClock();
    const rx = await startReceiver(() => 503);
    const other = await startReceiver(() => 503);
    const hung = await startHungReceiver();
    const warned: Array<{ obj: Record<string, unknown>; msg: string }> = [];
    const log: Logger = {
      debug: () => undefined,
      info: () => undefined,
      error: () => undefined,
      warn: (obj, msg) => warned.push({ obj: obj as Record<string, unknown>, msg: msg ?? '' }),
    };
    try {
      const finals: FinalOutcome[] = [];
      const store = openStore();
      const ob = outbox(store, clock, { maxPendingPerOrigin: 3, log, onFinal: (f) => finals.push(f) });
      for (let i = 0; i < 2; i++) assert.equal((await ob.enqueue({ eventId: `ev-other-${i}`, url: other.url, body: '{}' })).status, 'retrying');
      // Retrying on their timers: the fourth gives the first up, and so on.
      for (let i = 0; i < 6; i++) assert.equal((await ob.enqueue({ eventId: `ev-bound-${i}`, url: rx.url, body: '{}' })).status, 'retrying');
      await until('three given up', () => finals.length === 3);
      assert.deepEqual(
        finals.map((f) => [f.eventId, f.delivered, f.attempts]),
        [
          ['ev-bound-0', false, 1],
          ['ev-bound-1', false, 1],
          ['ev-bound-2', false, 1],
        ],
      );
      assert.match(finals[0]!.detail, /more than 3 events pending for 127\.0\.0\.1:\d+/);
      const gaveUp = warned.filter((w) => /too many events pending/.test(w.msg));
      assert.deepEqual(
        gaveUp.map((w) => w.obj.event_id),
        ['ev-bound-0', 'ev-bound-1', 'ev-bound-2'],
      );
      assert.equal(gaveUp[0]!.obj.origin, `127.0.0.1:${new URL(rx.url).port}`);
      assert.deepEqual(
        (await store.listRecords(OUTBOX_KIND, 'ev-bound-', 10)).map((r) => r.id),
        ['ev-bound-3', 'ev-bound-4', 'ev-bound-5'],
      );
      assert.equal((await store.listRecords(OUTBOX_KIND, 'ev-other-', 10)).length, 2);
      // The given-up events are never tried again; the rest are.
      const tried = rx.got.length;
      clock.advance(1000);
      await ob.idle();
      assert.deepEqual(
        rx.got
          .slice(tried)
          .map((g) => g.eventId)
          .sort(),
        ['ev-bound-3', 'ev-bound-4', 'ev-bound-5'],
      );

      // An event waiting for its slot is given up too: its enqueue answers at once.
      const ob2 = outbox(store, systemClock, { maxPendingPerOrigin: 2, perOriginInFlight: 1 });
      const first = ob2.enqueue({ eventId: 'ev-wait-0', url: hung.url, body: '{}' });
      await until('the first attempt in flight', () => hung.open() === 1);
      const second = ob2.enqueue({ eventId: 'ev-wait-1', url: hung.url, body: '{}' });
      await until('the second waiting', () => ob2.attempts.waiting === 1);
      const third = ob2.enqueue({ eventId: 'ev-wait-2', url: hung.url, body: '{}' });
      const r2 = await second;
      assert.equal(r2.status, 'failed');
      assert.match(r2.detail, /given up: more than 2 events pending/);
      await until('its record deleted', async () => (await store.getRecord(OUTBOX_KIND, 'ev-wait-1')) === null);
      assert.deepEqual(ob2.attempts, { running: 1, waiting: 1 });
      await ob2.close();
      assert.equal((await first).status, 'retrying');
      assert.equal((await third).status, 'retrying');
      assert.deepEqual(hung.requests, ['ev-wait-0']);
    } finally {
      await rx.close();
      await other.close();
      await hung.close();
    }
  });

  describe('URL rules (as strict as listeners unless allow_remote)', () => {
    const refused = (url: string, allow_remote?: boolean): string => {
      try {
        checkWebhookStep({ url, ...(allow_remote !== undefined ? { allow_remote } : {}) });
      } catch (e) {
        assert.ok(e instanceof MailError);
        assert.equal(e.code, 'malformed');
        assert.equal(e.details.field, 'url');
        return typeof e.details.reason === 'string' ? e.details.reason : JSON.stringify(e.details.reason);
      }
      return 'accepted';
    };
    let clock: ManualClock;
    beforeEach(() => (clock = new ManualClock()));

    it('loopback hosts pass; anything else needs allow_remote and https; no credentials; no link-local or metadata', () => {
      for (const ok of ['http://127.0.0.1:9/x', 'https://localhost/x', 'http://[::1]:8080/', 'http://127.8.9.10/', 'http://0x7f.1/']) assert.equal(refused(ok), 'accepted', ok);
      assert.equal(checkWebhookUrl('http://0x7f.1/').loopback, '127.0.0.1');
      assert.equal(checkWebhookUrl('http://localhost:1/').loopback, '127.0.0.1', 'localhost is never resolved');
      assert.match(refused('https://hooks.example.com/x'), /allow_remote/);
      assert.match(refused('http://10.0.0.5/x'), /allow_remote/);
      assert.match(refused('http://[::ffff:127.0.0.1]/'), /allow_remote/);
      assert.equal(refused('https://hooks.example.com/x', true), 'accepted');
      assert.equal(refused('https://10.0.0.5/x', true), 'accepted', "a private address is the operator's choice with allow_remote");
      assert.match(refused('http://hooks.example.com/x', true), /https/);
      assert.match(refused('http://user:pw@127.0.0.1/'), /user info/);
      assert.match(refused('https://user@hooks.example.com/', true), /user info/);
      assert.match(refused('ftp://127.0.0.1/'), /http/);
      assert.match(refused('file:///etc/passwd'), /http/);
      assert.match(refused('not a url'), /not a URL/);
      assert.match(refused('https://169.254.169.254/latest/meta-data', true), /link-local|metadata/);
      assert.match(refused('https://[fe80::1]/', true), /link-local/);
      assert.match(refused('https://0.0.0.0/', true), /unspecified/);
      assert.throws(() => new WebhookAdapter({ kind: 'webhook', url: 'https://hooks.example.com/' }, { outbox: outbox(openStore(), clock) }), MailError);
    });

    it('a remote name is resolved and every address checked before connecting', async () => {
      const u = checkWebhookUrl('https://hooks.example.com/', true);
      const at = (addrs: string[]) => async () => addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
      assert.deepEqual(await resolveWebhookTarget(u, at(['93.184.216.34', '2606:2800::1'])), { address: '93.184.216.34', family: 4 });
      await assert.rejects(resolveWebhookTarget(u, at(['93.184.216.34', '169.254.169.254'])), WebhookUrlRefused);
      await assert.rejects(resolveWebhookTarget(u, at(['::ffff:169.254.169.254'])), WebhookUrlRefused);
      await assert.rejects(resolveWebhookTarget(u, at(['fd00:ec2::254'])), WebhookUrlRefused);

      // Through the adapter: a name that resolves to the metadata service is refused for good, and
      // a DNS failure is retried.
      let posts = 0;
      const ob = outbox(openStore(), clock, {
        resolver: async (h) => {
          if (h === 'nx.example.com') throw Object.assign(new Error('getaddrinfo ENOTFOUND nx.example.com'), { code: 'ENOTFOUND' });
          return [{ address: '169.254.169.254', family: 4 }];
        },
        post: async () => {
          posts++;
          return { status: 200 };
        },
      });
      const meta = await new WebhookAdapter({ kind: 'webhook', url: 'https://meta.example.com/', allow_remote: true }, { outbox: ob, clock }).wake(wakeReq('ev-meta'), never);
      assert.equal(meta.ok, false);
      assert.match(meta.detail, /refused: meta\.example\.com: 169\.254\.169\.254/);
      const nx = await new WebhookAdapter({ kind: 'webhook', url: 'https://nx.example.com/', allow_remote: true }, { outbox: ob, clock }).wake(wakeReq('ev-nx'), never);
      assert.equal(nx.ok, true);
      assert.match(nx.detail, /could not resolve nx\.example\.com.*queued for retry/);
      assert.equal(posts, 0, 'nothing was sent to a refused or unresolved host');
    });
  });
});
