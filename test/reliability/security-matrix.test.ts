// The security matrix: one test per attack, each asserting the named refusal and that nothing
// changed. Some of these are also covered where the feature lives (security, sessions, waits
// tests); here the whole list is visible in one place.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { randomBytes, createHash } from 'node:crypto';
import { LIMITS } from '../../src/wire/limits.js';
import { OPERATIONS, OPERATION_NAMES } from '../../src/wire/operations.js';
import type { MailClient } from '../../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { startAgent, type AgentProc } from '../support/agent.js';
import { assertEnvelope, assertUnchanged, http, sleep, storeSnapshot } from './helpers.js';

/** Sends raw request bytes on a fresh connection and returns the status line and the body. */
function rawRequest(port: number, bytes: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => s.destroy(new Error('no answer (a hang)')), 10_000);
    s.on('connect', () => s.write(bytes));
    s.on('data', (c: Buffer) => (data += c.toString('utf8')));
    s.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    s.on('close', () => {
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(data)?.[1] ?? 0);
      const text = data.split('\r\n\r\n').slice(1).join('\r\n\r\n');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      resolve({ status, body });
    });
  });
}

describe('security matrix', () => {
  let d: TestDaemon;
  let alice: MailClient;
  let aliceSecret: string;
  let bob: MailClient;
  let bobSecret: string;
  let carolSecret: string;
  let floodSecret: string;
  const procs: AgentProc[] = [];

  before(async () => {
    d = await startTestDaemon({ waitCaps: { perSession: 2, perAccount: 3, total: 100 } });
    ({ client: alice, secret: aliceSecret } = await d.account('alice'));
    ({ client: bob, secret: bobSecret } = await d.account('bob'));
    carolSecret = (await d.account('carol')).secret;
    floodSecret = (await d.account('flood')).secret;
    // First contact registers the test process as a session of each account.
    await alice.whoami();
    await bob.whoami();
  });
  after(async () => {
    for (const p of procs) await p.exit();
    await d.stop();
  });

  const agent = async (secret: string): Promise<AgentProc> => {
    const p = await startAgent(d.url, secret);
    procs.push(p);
    return p;
  };
  const snapshot = () => storeSnapshot(d.engine.store);
  const unchanged = (before: Awaited<ReturnType<typeof snapshot>>, why = 'nothing changed') => assertUnchanged(d.engine.store, before, why);

  it('a spoofed sender field is refused as malformed {field: "from"} on both doors, and the sender stays the attested session', async () => {
    const before = await snapshot();
    const r = await http(d.url, '/mail/send', { token: aliceSecret, body: JSON.stringify({ to: 'bob', subject: 'from bob, honest', body: 'x', from: 'bob' }) });
    assert.equal(assertEnvelope(r, 'from'), 'malformed');
    assert.equal(r.json.error.field, 'from');
    // Other spellings of a sender are unknown fields: refused by name too.
    for (const field of ['sender', 'from_session', 'fromAccount', 'from_kind']) {
      const x = await http(d.url, '/mail/send', { token: aliceSecret, body: JSON.stringify({ to: 'bob', subject: 's', body: 'b', [field]: 'bob' }) });
      assert.equal(assertEnvelope(x, field), 'malformed');
      assert.equal(x.json.error.field, field);
    }
    const mcp = await http(d.url, '/mcp', {
      token: aliceSecret,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'm4a_mail_send', arguments: { to: 'bob', subject: 's', body: 'b', from: 'bob/s-0' } } }),
    });
    assert.equal(mcp.status, 200);
    assert.equal(mcp.json.result.isError, true);
    const env = JSON.parse(mcp.json.result.content[0].text);
    assert.equal(env.error.code, 'malformed');
    assert.equal(env.error.field, 'from');
    await unchanged(before, 'a refused spoof stores nothing');
    // The sender of an accepted send is the caller's own session, whatever it might wish.
    const me = await alice.whoami();
    const sent = await alice.send({ to: 'bob', subject: 'honest', body: '' });
    assert.equal(sent.from, `alice/${me.slug}`, 'printed short');
    const got = (await bob.get(sent.message_id)).message;
    assert.equal(got.from, `alice/${me.slug}`);
    assert.equal(got.from_session, me.session, 'the full id is the attested session');
  });

  it('a sibling session cannot read, fetch, acknowledge or reply to session mail of another session of its account', async () => {
    const one = await agent(carolSecret);
    const two = await agent(carolSecret);
    const oneAddr = (await one.call('/mail/whoami')).body.address as string;
    await two.call('/mail/whoami');
    const secret = await alice.send({ to: oneAddr, subject: 'for one only', body: 'the plan' });
    const before = await snapshot();
    const inbox = (await two.call('/mail/inbox', { include_acked: true, limit: 256 })).body;
    assert.ok(!inbox.messages.some((m: any) => m.message_id === secret.message_id), "not in the sibling's inbox");
    for (const [path, body] of [
      ['/mail/get', { message_id: secret.message_id }],
      ['/mail/get', { message_id: secret.message_id, thread: true }],
      ['/mail/ack', { message_id: secret.message_id }],
      ['/mail/ack', { message_ids: [secret.message_id] }],
      ['/mail/send', { to: 'alice', subject: 'Re', body: '', reply_to: secret.message_id }],
    ] as const) {
      const r = await two.call(path, body);
      assert.equal(r.status, 403, `${path} ${JSON.stringify(body)}`);
      assert.equal(r.body.error.code, 'not_addressed_to_you');
      assert.equal(r.body.error.message_id, secret.message_id);
    }
    await unchanged(before, 'the refused ack and reply changed nothing');
    const own = (await one.call('/mail/inbox', { limit: 256 })).body;
    assert.ok(
      own.messages.some((m: any) => m.message_id === secret.message_id && m.acked_at === undefined),
      'still pending for its session',
    );
  });

  it("a removed room member loses the room's whole history: no inbox, get, ack or reply", async () => {
    await d.operator.admin.roomAdd('ops');
    await d.operator.admin.memberAdd('ops', 'alice');
    await d.operator.admin.memberAdd('ops', 'bob');
    const old = await alice.send({ to: '#ops', subject: 'room history', body: 'before the removal' });
    assert.ok(
      (await bob.inbox({ include_acked: true, limit: 256 })).messages.some((m) => m.message_id === old.message_id),
      'a member reads it',
    );
    const unreadBefore = (await bob.unread()).unread;
    await d.operator.admin.memberRemove('ops', 'bob');
    const later = await alice.send({ to: '#ops', subject: 'after the removal', body: '' });
    const before = await snapshot();
    const seen = (await bob.inbox({ include_acked: true, limit: 256 })).messages.map((m) => m.message_id);
    assert.ok(!seen.includes(old.message_id) && !seen.includes(later.message_id), 'no room mail, old or new');
    assert.equal((await bob.unread()).unread, unreadBefore - 1, "the room's unread mail left the count");
    for (const [path, body] of [
      ['/mail/get', { message_id: old.message_id }],
      ['/mail/get', { message_id: later.message_id, thread: true }],
      ['/mail/ack', { message_id: old.message_id }],
      ['/mail/send', { to: 'alice', subject: 'Re', body: '', reply_to: old.message_id }],
    ] as const) {
      const r = await http(d.url, path, { token: bobSecret, body: JSON.stringify(body) });
      assert.equal(assertEnvelope(r, path), 'not_addressed_to_you', path);
    }
    const w = await http(d.url, '/mail/whoami', { token: bobSecret, body: '{}' });
    assert.deepEqual(w.json.rooms, []);
    await unchanged(before);
  });

  it('an account secret used for /admin is refused permission_denied {need: "operator"} on every route, changing nothing', async () => {
    const before = await snapshot();
    const bodies: Record<string, unknown> = {
      '/admin/account/add': { id: 'mallory', permissions: { operator: true } },
      '/admin/account/rotate': { id: 'operator' },
      '/admin/account/remove': { id: 'bob' },
      '/admin/account/list': {},
      '/admin/room/add': { name: 'mallory-room', everyone: true },
      '/admin/room/remove': { name: 'ops' },
      '/admin/room/set': { name: 'ops', open: true },
      '/admin/room/list': {},
      '/admin/room/member/add': { room: 'ops', account: 'bob' },
      '/admin/room/member/remove': { room: 'ops', account: 'alice' },
      '/admin/listener': { account: 'bob', url: 'http://127.0.0.1:9/steal' },
      '/admin/listener/remove': { account: 'bob' },
      '/admin/user/create': { id: 'mallory', password: 'long enough password', operator: true },
      '/admin/user/passwd': { id: 'alice', password: 'long enough password' },
      '/admin/user/revoke-sessions': { id: 'alice' },
      '/admin/daemon/stop': { when: 'now' },
      '/admin/team/create': { name: 'mallory-team', members: ['alice', 'bob'] },
      '/admin/team/member/add': { team: 'ops', account: 'bob' },
      '/admin/team/member/remove': { team: 'ops', account: 'alice' },
      '/admin/team/leader/add': { team: 'ops', account: 'alice' },
      '/admin/team/leader/remove': { team: 'ops', account: 'alice' },
      '/admin/team/grant': { team: 'ops', leader: 'alice', capability: 'team.manage_members' },
      '/admin/team/revoke': { team: 'ops', leader: 'alice', capability: 'team.manage_members' },
      '/admin/team/list': {},
      '/admin/team/show': { team: 'ops' },
      '/admin/account/policy': { account: 'bob', policy: 'block_all' },
      '/admin/retention/set': { account: 'bob', days: 1 },
      '/admin/retention/list': {},
      '/admin/retention/run': {},
    };
    const paths = OPERATION_NAMES.filter((n) => OPERATIONS[n].callers.includes('operator')).map((n) => OPERATIONS[n].path);
    for (const p of paths) assert.ok(p in bodies, `a body for ${p}`);
    for (const p of paths) {
      const r = await http(d.url, p, { token: aliceSecret, body: JSON.stringify(bodies[p]) });
      assert.equal(assertEnvelope(r, p), 'permission_denied', p);
      assert.equal(r.json.error.need, 'operator', p);
    }
    await unchanged(before);
    assert.equal((await http(d.url, '/health', { method: 'GET' })).status, 200, 'still serving');
  });

  it('a brute-forced secret gets 401 unauthenticated every time, with one identical answer and nothing learned', async () => {
    const before = await snapshot();
    const digest = createHash('sha256').update(aliceSecret).digest('hex');
    const guesses = [
      ...Array.from({ length: 40 }, () => `m4a_${randomBytes(32).toString('base64url')}`),
      ...Array.from({ length: 20 }, (_, i) => aliceSecret.slice(0, -1) + String.fromCharCode(65 + i)),
      aliceSecret.slice(0, -1),
      `${aliceSecret}x`,
      aliceSecret.toUpperCase(),
      digest,
      `${d.operatorToken.slice(0, 10)}`,
      'operator',
    ].filter((g) => g !== aliceSecret && g !== d.operatorToken);
    const bodies = new Set<string>();
    for (const [i, guess] of guesses.entries()) {
      const path = i % 3 === 0 ? '/admin/account/list' : i % 3 === 1 ? '/mail/inbox' : '/mcp';
      const body = path === '/mcp' ? JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) : '{}';
      const r = await http(d.url, path, { token: guess, body });
      assert.equal(assertEnvelope(r, `guess ${i}`), 'unauthenticated');
      bodies.add(r.text);
    }
    assert.equal(bodies.size, 1, 'every wrong secret gets the same answer, however close it was');
    await unchanged(before);
    assert.equal((await http(d.url, '/mail/whoami', { token: aliceSecret, body: '{}' })).status, 200, 'the real secret still works');
  });

  it('a listener pointing off the machine is refused malformed {field: "url"} and not stored', async () => {
    const before = await snapshot();
    for (const url of [
      'http://example.com/x',
      'http://10.0.0.1/x',
      'http://169.254.169.254/latest/meta-data',
      'http://127.0.0.2/x',
      'http://0.0.0.0:9/x',
      'http://[::ffff:127.0.0.1]/x',
      'http://localhost./x',
      'http://localhost.evil.example/x',
      'http://evil.example#@localhost/x',
      'http://localhost@evil.example/x',
      'http://user:pw@localhost/x',
      'https://localhost/x',
      'file:///etc/passwd',
      'gopher://localhost/x',
      'not a url',
    ]) {
      const r = await http(d.url, '/admin/listener', { token: d.operatorToken, body: JSON.stringify({ account: 'bob', url }) });
      assert.equal(assertEnvelope(r, url), 'malformed', url);
      assert.equal(r.json.error.field, 'url', url);
    }
    assert.equal(await d.engine.store.getListener('bob'), null);
    await unchanged(before);
  });

  it('a foreign Host or Origin (DNS rebinding) is refused forbidden_origin before anything else, on every door', async () => {
    const before = await snapshot();
    const send = JSON.stringify({ to: 'bob', subject: 'rebound', body: '' });
    const hosts = [`evil.example:${d.port}`, `127.0.0.1:${d.port + 1}`, 'localhost', `127.0.0.2:${d.port}`, `localhost.:${d.port}`, `[::1]:${d.port}`];
    for (const host of hosts) {
      for (const [path, token, body, method] of [
        ['/mail/send', aliceSecret, send, 'POST'],
        ['/mcp', aliceSecret, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), 'POST'],
        ['/admin/account/add', d.operatorToken, JSON.stringify({ id: 'rebound' }), 'POST'],
        ['/health', undefined, undefined, 'GET'],
      ] as const) {
        const r = await http(d.url, path, { method, ...(token ? { token } : {}), ...(body ? { body } : {}), headers: { host } });
        assert.equal(assertEnvelope(r, `${host} ${path}`), 'forbidden_origin');
        assert.equal(r.json.error.field, 'host');
      }
    }
    const origins = ['http://evil.example', `http://localhost:${d.port + 1}`, 'null', `https://127.0.0.1:${d.port}`, `http://127.0.0.1:${d.port}/`, `http://LOCALHOST:${d.port}`];
    for (const origin of origins) {
      for (const [path, token, body] of [
        ['/mail/send', aliceSecret, send],
        ['/mcp', aliceSecret, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })],
        ['/admin/account/add', d.operatorToken, JSON.stringify({ id: 'rebound' })],
      ] as const) {
        const r = await http(d.url, path, { token, body, headers: { origin } });
        assert.equal(assertEnvelope(r, `${origin} ${path}`), 'forbidden_origin');
        assert.equal(r.json.error.field, 'origin');
      }
    }
    // No Host header at all (HTTP/1.0 allows leaving it out).
    const noHost = await rawRequest(
      d.port,
      `POST /mail/send HTTP/1.0\r\nAuthorization: Bearer ${aliceSecret}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(send)}\r\n\r\n${send}`,
    );
    assert.equal(noHost.status, 403);
    assert.equal(noHost.body.error.code, 'forbidden_origin');
    await unchanged(before, 'nothing sent, nothing created');
    // The daemon's own names still pass.
    assert.equal(
      (await http(d.url, '/mail/whoami', { token: aliceSecret, body: '{}', headers: { host: `localhost:${d.port}`, origin: `http://localhost:${d.port}` } })).status,
      200,
    );
  });

  it('an oversized body is refused 413 too_large {field: "(body)"} before parsing, on every door, storing nothing', async () => {
    const before = await snapshot();
    const over = LIMITS.requestBodyBytes + 1;
    // A real send whose body field alone overflows the request cap.
    const big = JSON.stringify({ to: 'bob', subject: 's', body: 'x'.repeat(over) });
    for (const path of ['/mail/send', '/mcp', '/admin/account/add']) {
      const r = await http(d.url, path, { token: path.startsWith('/admin') ? d.operatorToken : aliceSecret, body: big, fresh: true });
      assert.equal(assertEnvelope(r, path), 'too_large');
      assert.equal(r.json.error.field, '(body)');
      assert.equal(r.json.error.limit, LIMITS.requestBodyBytes);
    }
    // Chunked, so no Content-Length announces it: the cap still holds while reading.
    const chunked = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const s = connect(d.port, '127.0.0.1');
      let data = '';
      s.on('connect', () => {
        s.write(
          `POST /mail/send HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAuthorization: Bearer ${aliceSecret}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`,
        );
        const chunk = 'y'.repeat(64 * 1024);
        for (let sent = 0; sent <= over; sent += chunk.length) s.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
        s.write('0\r\n\r\n');
      });
      s.on('data', (c: Buffer) => (data += c.toString()));
      s.on('error', () => undefined); // the daemon may close while we still write
      s.on('close', () => {
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0);
        try {
          resolve({ status, body: JSON.parse(data.split('\r\n\r\n')[1] ?? '') });
        } catch (e) {
          reject(new Error(`unexpected answer ${data.slice(0, 200)}: ${String(e)}`));
        }
      });
    });
    assert.equal(chunked.status, 413);
    assert.equal(chunked.body.error.code, 'too_large');
    assert.equal(chunked.body.error.field, '(body)');
    await unchanged(before);
    assert.equal((await http(d.url, '/mail/whoami', { token: aliceSecret, body: '{}' })).status, 200, 'the daemon still serves');
  });

  it('a flood of waits from one account is bounded per account (rate_limited) while another account can still wait', async () => {
    const sessions = [await agent(floodSecret), await agent(floodSecret), await agent(floodSecret), await agent(floodSecret)];
    for (const s of sessions) assert.equal((await s.call('/mail/whoami')).status, 200);
    const base = d.engine.parkedWaits();
    // Three sessions of one account park one wait each: the account's cap is 3.
    const parked = sessions.slice(0, 3).map((s) => s.call('/mail/inbox', { wait_secs: 30 }));
    for (let i = 0; i < 1000 && d.engine.parkedWaits() < base + 3; i++) await sleep(10);
    assert.equal(d.engine.parkedWaits(), base + 3);
    const fourth = await sessions[3]!.call('/mail/inbox', { wait_secs: 30 });
    assert.equal(fourth.status, 429);
    assert.equal(fourth.body.error.code, 'rate_limited');
    assert.equal(typeof fourth.body.error.retry_after, 'number');
    assert.equal(d.engine.parkedWaits(), base + 3, 'the refused wait parked nothing');
    // The Retry-After header travels with the 429 (checked on a raw call from this process's session).
    const raw = await http(d.url, '/mail/inbox', { token: floodSecret, body: JSON.stringify({ wait_secs: 30 }) });
    assert.equal(assertEnvelope(raw, 'raw wait'), 'rate_limited');
    // Another account is not affected by the flood.
    const bobHead = (await bob.inbox({ include_acked: true, limit: 256 })).next_cursor!;
    const bobWait = bob.inbox({ wait_secs: 30, after: bobHead });
    for (let i = 0; i < 1000 && d.engine.parkedWaits() < base + 4; i++) await sleep(10);
    assert.equal(d.engine.parkedWaits(), base + 4, 'bob parked');
    // Mail for the account answers its parked waits; mail for bob answers bob's.
    const m = await alice.send({ to: 'flood', subject: 'wake up', body: '' });
    for (const p of parked) {
      const r = await p;
      assert.equal(r.status, 200);
      assert.deepEqual(
        r.body.messages.map((x: any) => x.message_id),
        [m.message_id],
      );
    }
    const mb = await alice.send({ to: 'bob', subject: 'wake bob', body: '' });
    assert.deepEqual(
      (await bobWait).messages.map((x) => x.message_id),
      [mb.message_id],
    );
    assert.equal(d.engine.parkedWaits(), base, 'no wait left parked');
    // The cap bounds concurrent waits, it is not a ban: the fourth session can wait now.
    const cur = (await sessions[3]!.call('/mail/inbox', { include_acked: true, limit: 256 })).body.next_cursor;
    const again = sessions[3]!.call('/mail/inbox', { wait_secs: 30, after: cur });
    for (let i = 0; i < 1000 && d.engine.parkedWaits() < base + 1; i++) await sleep(10);
    const m2 = await alice.send({ to: 'flood', subject: 'again', body: '' });
    assert.deepEqual(
      (await again).body.messages.map((x: any) => x.message_id),
      [m2.message_id],
    );
  });
});
