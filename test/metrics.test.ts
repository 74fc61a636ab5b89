// GET /metrics on the real daemon: who may read it (loopback door, operator credential, on unless
// --no-metrics), counters that move with real sends, refusals (the browser's API calls among
// them), waits and wakes, every metric
// listed in docs/operations.md, doctor's summary of it, and request ids on answers and log lines.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MailClient } from '../src/client/http-client.js';
import { parseExposition, summarize, type Sample } from '../src/cli/metrics-summary.js';
import { doctorReport } from '../src/cli/doctor.js';
import { MailError } from '../src/wire/errors.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { recordingLogger, type LogLine } from './support/recording-logger.js';
import { until } from './support/until.js';
import { helloRaw } from './support/stream-raw.js';
import { call, createPerson, login, webPost } from './web/web-helpers.js';

const get = (url: string, token?: string, headers: Record<string, string> = {}) =>
  fetch(`${url}/metrics`, { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } });

async function scrape(d: TestDaemon): Promise<Sample[]> {
  const r = await get(d.url, d.operatorToken);
  assert.equal(r.status, 200);
  return parseExposition(await r.text());
}

/** The value of one series (0 when absent: a counter that never moved has no labelled series). */
function value(s: Sample[], name: string, labels: Record<string, string> = {}): number {
  return s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v)).reduce((a, x) => a + x.value, 0);
}

describe('GET /metrics', () => {
  let d: TestDaemon;
  let alice: MailClient;
  let bob: MailClient;
  let bobSecret: string;

  before(async () => {
    d = await startTestDaemon({ webLan: '127.0.0.2:0' });
    alice = (await d.account('alice')).client;
    ({ client: bob, secret: bobSecret } = await d.account('bob'));
  });
  after(() => d.stop());

  it('is the Prometheus text format for the operator; refused without a credential, to other accounts, and to other methods', async () => {
    const ok = await get(d.url, d.operatorToken);
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    assert.match(await ok.text(), /^# HELP m4a_operations_total /m);

    const none = await get(d.url);
    assert.equal(none.status, 401);
    assert.equal(((await none.json()) as { error: { code: string } }).error.code, 'unauthenticated');
    const wrong = await get(d.url, 'not-a-secret');
    assert.equal(wrong.status, 401);
    const agent = await get(d.url, bobSecret);
    assert.equal(agent.status, 403);
    const refused = ((await agent.json()) as { error: { code: string; need?: string } }).error;
    assert.equal(refused.code, 'permission_denied');
    assert.equal(refused.need, 'operator');
    const post = await fetch(`${d.url}/metrics`, { method: 'POST', headers: { authorization: `Bearer ${d.operatorToken}` } });
    assert.equal(post.status, 405);
  });

  it("is not served on the browser's LAN listener, even with the operator credential", async () => {
    assert.ok(d.webLanUrl);
    const lan = await get(d.webLanUrl, d.operatorToken);
    assert.equal(lan.status, 404);
    assert.equal(((await lan.json()) as { error: { code: string } }).error.code, 'unknown_route');
  });

  it('counts sends, refusals by code, store calls and commit batches', async () => {
    const s0 = await scrape(d);
    await alice.send({ to: 'bob', subject: 'one', body: 'b' });
    await Promise.all([alice.send({ to: 'bob', subject: 'two', body: 'b' }), bob.send({ to: 'alice', subject: 'three', body: 'b' })]);
    await assert.rejects(alice.send({ to: 'nobody-here', subject: 'x', body: 'b' }), (e: unknown) => e instanceof MailError && e.code === 'unknown_participant');
    const stream = await helloRaw(d.socketPath!, bobSecret);
    await stream.call('send', { to: 'alice', subject: 'four', body: 'b' });
    stream.close();
    const anon = await fetch(`${d.url}/mail/send`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(anon.status, 401);
    const s1 = await scrape(d);
    const delta = (name: string, labels: Record<string, string> = {}) => value(s1, name, labels) - value(s0, name, labels);
    assert.equal(delta('m4a_sends_total', { door: 'http' }), 3);
    assert.equal(delta('m4a_sends_total', { door: 'stream' }), 1);
    assert.equal(delta('m4a_operations_total', { door: 'http', operation: 'send' }), 3);
    assert.equal(delta('m4a_refusals_total', { door: 'http', operation: 'send', code: 'unknown_participant' }), 1);
    assert.equal(delta('m4a_refusals_total', { door: 'http', operation: 'send', code: 'unauthenticated' }), 1);
    assert.equal(delta('m4a_store_call_duration_seconds_count', { method: 'appendMessage' }), 4);
    assert.ok(delta('m4a_store_call_duration_seconds_sum', { method: 'appendMessage' }) > 0);
    // Four messages in at most four commits (two of them may share a group commit).
    assert.equal(delta('m4a_commit_batch_messages_sum'), 4);
    const batches = delta('m4a_commit_batch_messages_count');
    assert.ok(batches >= 3 && batches <= 4, `batches ${batches}`);
    assert.equal(delta('m4a_store_appends_total'), 4);
    assert.equal(delta('m4a_store_append_batches_total'), batches);
    assert.ok(value(s1, 'm4a_sessions_live') >= 2, 'alice and bob run in this process: live sessions');
  });

  it("counts the browser's /web/api calls under door web: answered, refused by code, and refused before they ran", async () => {
    await createPerson(d, 'pat');
    const l = await login(d.url, 'pat');
    const s0 = await scrape(d);
    assert.equal((await call(d.url, l, 'send', { to: 'alice', subject: 'from the browser', body: 'b' })).status, 200);
    assert.equal((await call(d.url, l, 'me')).status, 200);
    const unknown = await call(d.url, l, 'send', { to: 'nobody-here', subject: 'x', body: 'b' });
    assert.equal(unknown.json.error.code, 'unknown_participant');
    const malformed = await call(d.url, l, 'send', { to: 'alice', subject: 'x', body: 'b', bogus: 1 });
    assert.equal(malformed.json.error.code, 'malformed');
    const forged = await call(d.url, { ...l, csrf: 'not-the-token' }, 'me');
    assert.equal(forged.json.error.code, 'csrf_failed');
    const loggedOut = await webPost(d.url, 'inbox', { body: {} });
    assert.equal(loggedOut.json.error.code, 'unauthenticated');
    // Not an operation: the door's own route, counted nowhere.
    assert.equal((await webPost(d.url, 'no-such-route', { cookie: l.cookie, csrf: l.csrf })).status, 404);
    const s1 = await scrape(d);
    const delta = (name: string, labels: Record<string, string> = {}) => value(s1, name, labels) - value(s0, name, labels);
    assert.equal(delta('m4a_operations_total', { door: 'web', operation: 'send' }), 1);
    assert.equal(delta('m4a_operations_total', { door: 'web', operation: 'web.me' }), 1);
    assert.equal(delta('m4a_operations_total', { door: 'web' }), 2, 'nothing else counted as answered');
    assert.equal(delta('m4a_sends_total', { door: 'web' }), 1);
    assert.equal(delta('m4a_refusals_total', { door: 'web', operation: 'send', code: 'unknown_participant' }), 1);
    assert.equal(delta('m4a_refusals_total', { door: 'web', operation: 'send', code: 'malformed' }), 1);
    assert.equal(delta('m4a_refusals_total', { door: 'web', operation: 'web.me', code: 'csrf_failed' }), 1);
    assert.equal(delta('m4a_refusals_total', { door: 'web', operation: 'web.inbox', code: 'unauthenticated' }), 1);
    assert.equal(delta('m4a_refusals_total', { door: 'web' }), 4, 'the unknown route is not an operation');
    assert.equal(delta('m4a_operations_total', { door: 'http' }), 0, 'counted once, under web only');
    assert.equal(delta('m4a_refusals_total', { door: 'http' }), 0);
  });

  it('answers a scrape while the store fails its live-sessions read, counting the failure', async () => {
    const failures = (s: Sample[]) => value(s, 'm4a_store_call_failures_total', { method: 'listSessions' });
    const s0 = await scrape(d);
    // An own property over the store's method, deleted again below.
    d.store.listSessions = () => Promise.reject(new Error('the database went away'));
    try {
      const s1 = await scrape(d);
      assert.equal(value(s1, 'm4a_sessions_live'), value(s0, 'm4a_sessions_live'), 'its last value kept');
    } finally {
      delete (d.store as Partial<typeof d.store>).listSessions;
    }
    // The failure is counted as it happens: the scrape that met it had read the counter already.
    assert.equal(failures(await scrape(d)), failures(s0) + 1);
  });

  it('counts parked waits while they are parked', async () => {
    await bob.inbox({});
    const waiting = bob.inbox({ wait_secs: 20 });
    await until('a parked wait', async () => value(await scrape(d), 'm4a_waits_parked') === 1);
    await alice.send({ to: 'bob', subject: 'wake up', body: 'b' });
    assert.ok((await waiting).messages.some((m) => m.subject === 'wake up'));
    assert.equal(value(await scrape(d), 'm4a_waits_parked'), 0);
  });

  it('counts wake attempts by adapter and outcome', async () => {
    await d.account('carol');
    await d.operator.admin.wakeSet({
      account: 'carol',
      steps: [
        { kind: 'command', argv: [process.execPath, '-e', 'process.exit(3)'], timeout_secs: 30 },
        { kind: 'command', argv: [process.execPath, '-e', ''], timeout_secs: 30 },
      ],
    });
    const s0 = await scrape(d);
    await alice.send({ to: 'carol', subject: 'wake', body: 'b' });
    const s1 = await until('two attempts counted', async () => {
      const s = await scrape(d);
      return value(s, 'm4a_wake_attempts_total') - value(s0, 'm4a_wake_attempts_total') === 2 && s;
    });
    assert.equal(
      value(s1, 'm4a_wake_attempts_total', { adapter: 'command', outcome: 'failed' }) - value(s0, 'm4a_wake_attempts_total', { adapter: 'command', outcome: 'failed' }),
      1,
    );
    assert.equal(value(s1, 'm4a_wake_attempts_total', { adapter: 'command', outcome: 'ok' }) - value(s0, 'm4a_wake_attempts_total', { adapter: 'command', outcome: 'ok' }), 1);
  });

  it('lists every metric it serves in docs/operations.md, with its type, and nothing it does not serve', async () => {
    const doc = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
    const section = doc.split(/^## /m).find((s) => s.startsWith('Metrics and health'));
    assert.ok(section, 'a Metrics and health section');
    const listed = new Map([...section.matchAll(/^\| `([a-z_:][a-z0-9_:]*)` \| (counter|gauge|histogram|summary) \|/gm)].map((m) => [m[1]!, m[2]!]));
    const text = await (await get(d.url, d.operatorToken)).text();
    const served = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    const unlisted = [...served].filter(([n, t]) => listed.get(n) !== t).map(([n, t]) => `${n} (${t})`);
    assert.deepEqual(unlisted, [], 'served but not listed (with this type) in docs/operations.md');
    assert.deepEqual(
      [...listed.keys()].filter((n) => !served.has(n)),
      [],
      'listed but not served',
    );
  });

  it("doctor summarises it with the data directory's operator credential", async () => {
    const home = mkdtempSync(join(tmpdir(), 'm4a-home-'));
    try {
      const { checks, metrics } = await doctorReport({ dataDir: d.dataDir, project: home }, { HOME: home, PATH: process.env.PATH ?? '' });
      assert.ok(metrics, JSON.stringify(checks));
      const m = summarize(await scrape(d));
      assert.ok(metrics.sends >= 5 && metrics.sends <= m.sends);
      assert.ok(metrics.refusals >= 2);
      assert.ok(metrics.top_refusals.some((r) => r.code === 'unknown_participant'));
      assert.equal(metrics.wake_failures, 1);
      assert.ok(metrics.store_p99_seconds !== null && metrics.store_p99_seconds > 0);
      assert.equal(metrics.feed_lag_seconds, null, 'no feed on SQLite: no lag shown');
      const line = checks.find((c) => c.name === 'metrics');
      assert.equal(line?.status, 'ok');
      assert.match(line.detail, /^sends \d+, operations \d+, refusals \d+ \(/);
      assert.match(line.detail, /store p99 [\d.]+ ms/);
      assert.doesNotMatch(line.detail, /feed lag/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('m4a serve --no-metrics', () => {
  it('serves no /metrics at all', async () => {
    const d = await startTestDaemon({ metrics: false, storeKind: 'memory' });
    try {
      const r = await get(d.url, d.operatorToken);
      assert.equal(r.status, 404);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'unknown_route');
      const home = mkdtempSync(join(tmpdir(), 'm4a-home-'));
      const { checks, metrics } = await doctorReport({ dataDir: d.dataDir, project: home }, { HOME: home, PATH: process.env.PATH ?? '' });
      rmSync(home, { recursive: true, force: true });
      assert.equal(metrics, null);
      assert.match(checks.find((c) => c.name === 'metrics')?.detail ?? '', /--no-metrics/);
    } finally {
      await d.stop();
    }
  });
});

describe('request ids', () => {
  it("are answered in x-request-id and carried by the engine's and store's log lines of that request", async () => {
    const lines: LogLine[] = [];
    const d = await startTestDaemon({ log: recordingLogger(lines) });
    try {
      const { secret } = await d.account('alice');
      const send = (id?: string) =>
        fetch(`${d.url}/mail/send`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, ...(id ? { 'x-request-id': id } : {}) },
          body: JSON.stringify({ to: 'alice', subject: 's', body: 'b' }),
        });
      const ok = await send('trace-1.a:b');
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('x-request-id'), 'trace-1.a:b');
      const made = await send('bad id\twith "quotes"');
      const madeId = made.headers.get('x-request-id') ?? '';
      assert.match(madeId, /^[A-Za-z0-9_-]{12}$/, 'an unsafe id is replaced by one the daemon makes');
      assert.notEqual((await send()).headers.get('x-request-id'), madeId);
      assert.ok(
        lines.filter((l) => l.msg === 'mail4agent listening').every((l) => !('req_id' in l.obj)),
        'lines outside a request have none',
      );

      // The stream door: one id per request, on the lines logged while serving it.
      const said = (l: LogLine) => l.msg === 'stream connection said hello';
      for (let i = 0; i < 2; i++) (await helloRaw(d.socketPath!, secret)).close();
      const hellos = lines.filter(said).map((l) => (l.obj as { req_id?: string }).req_id ?? '');
      assert.equal(hellos.length, 2);
      assert.ok(hellos.every((id) => /^[A-Za-z0-9_-]{12}$/.test(id)));
      assert.notEqual(hellos[0], hellos[1]);

      // The store goes away under the daemon: the store guard logs the cause inside the request.
      await d.store.close();
      const failed = await send('req-store-down');
      assert.equal(failed.status, 503);
      assert.equal(failed.headers.get('x-request-id'), 'req-store-down');
      // Background sweeps fail too, outside any request: only the request's own calls are asserted.
      const logged = lines.filter((l) => l.msg === 'store failure' && (l.obj as { operation?: string }).operation === 'getAccount');
      assert.ok(logged.length > 0, 'the failure was logged');
      assert.ok(
        logged.every((l) => (l.obj as { req_id?: string }).req_id === 'req-store-down'),
        JSON.stringify(logged.map((l) => l.obj)),
      );
    } finally {
      await d.stop().catch(() => undefined);
    }
  });
});
