// Refusals by name at the door: credentials, operator-only routes, Host and Origin, listeners.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { createServer, type Server } from 'node:http';
import { MailError } from '../src/wire/errors.js';
import type { MailClient } from '../src/client/http-client.js';
import { raw, startTestDaemon, type TestDaemon } from './support/test-daemon.js';

function withHost(port: number, host: string, path: string, token: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', headers: { host, authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': 2 } },
      (res) => {
        let data = '';
        res.on('data', (c) => (data += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(data) }));
      },
    );
    req.on('error', reject);
    req.end('{}');
  });
}

describe('security', () => {
  let d: TestDaemon;
  let a: MailClient;
  let aSecret: string;
  before(async () => {
    d = await startTestDaemon();
    const acc = await d.account('alice');
    a = acc.client;
    aSecret = acc.secret;
    await d.account('bob');
  });
  after(() => d.stop());

  it('answers /health without a credential, and nothing else', async () => {
    const h = await raw(d.url, '/health', { method: 'GET' });
    assert.equal(h.status, 200);
    assert.equal(h.json.ok, true);
    for (const path of ['/mail/whoami', '/mail/send', '/admin/account/list', '/mcp']) {
      const r = await raw(d.url, path, { body: '{}' });
      assert.equal(r.status, 401, path);
      assert.equal(r.json.error.code, 'unauthenticated');
    }
    const wrong = await raw(d.url, '/mail/whoami', { token: `${aSecret}x`, body: '{}' });
    assert.equal(wrong.json.error.code, 'unauthenticated');
  });

  it('a brute-forced secret gets nowhere and the error says nothing about how close it was', async () => {
    const bodies = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const guess = aSecret.slice(0, aSecret.length - 1) + String.fromCharCode(65 + i);
      const r = await raw(d.url, '/mail/whoami', { token: guess, body: '{}' });
      if (guess !== aSecret) bodies.add(JSON.stringify(r.json));
    }
    assert.equal(bodies.size, 1);
  });

  it('an account secret cannot use /admin', async () => {
    const r = await raw(d.url, '/admin/account/add', { token: aSecret, body: JSON.stringify({ id: 'mallory' }) });
    assert.equal(r.status, 403);
    assert.equal(r.json.error.code, 'permission_denied');
    assert.equal(r.json.error.need, 'operator');
    assert.ok(!(await d.operator.admin.accountList()).accounts.some((x) => x.id === 'mallory'));
  });

  it("refuses a foreign Host or Origin (DNS rebinding), and accepts the daemon's own", async () => {
    assert.equal((await withHost(d.port, `127.0.0.1:${d.port}`, '/mail/whoami', aSecret)).status, 200);
    assert.equal((await withHost(d.port, `localhost:${d.port}`, '/mail/whoami', aSecret)).status, 200);
    for (const host of [`evil.example:${d.port}`, `127.0.0.1:${d.port + 1}`, 'localhost', `127.0.0.2:${d.port}`]) {
      const r = await withHost(d.port, host, '/mail/whoami', aSecret);
      assert.equal(r.status, 403, host);
      assert.equal(r.body.error.code, 'forbidden_origin');
    }
    for (const origin of ['http://evil.example', `http://localhost:${d.port + 1}`, 'null', `https://127.0.0.1:${d.port}`]) {
      const r = await raw(d.url, '/mail/whoami', { token: aSecret, body: '{}', headers: { origin } });
      assert.equal(r.status, 403, origin);
      assert.equal(r.json.error.code, 'forbidden_origin');
    }
    const same = await raw(d.url, '/mail/whoami', { token: aSecret, body: '{}', headers: { origin: d.url } });
    assert.equal(same.status, 200);
  });

  it('answers unknown routes and wrong methods by name', async () => {
    assert.equal((await raw(d.url, '/nope', { token: aSecret, body: '{}' })).json.error.code, 'unknown_route');
    const get = await raw(d.url, '/mail/send', { token: aSecret, method: 'GET' });
    assert.equal(get.status, 405);
    assert.equal(get.json.error.code, 'method_not_allowed');
  });

  it('refuses malformed bodies without storing anything', async () => {
    const before = await d.engine.store.headSeq();
    for (const body of ['{', 'null', '[]', '"x"', '{"to":1,"subject":"s","body":"b"}', '{"to":"bob"}']) {
      const r = await raw(d.url, '/mail/send', { token: aSecret, body });
      assert.equal(r.status, 400, body);
      assert.equal(r.json.error.code, 'malformed', body);
    }
    const badUtf8 = await raw(d.url, '/mail/send', { token: aSecret, body: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]) });
    assert.equal(badUtf8.json.error.code, 'malformed');
    assert.equal(await d.engine.store.headSeq(), before);
  });

  describe('listeners', () => {
    let bell: Server;
    let bellPort: number;
    const rings: any[] = [];
    before(async () => {
      bell = createServer((req, res) => {
        let data = '';
        req.on('data', (c) => (data += c));
        req.on('end', () => {
          rings.push({ headers: req.headers, body: JSON.parse(data) });
          res.end('ok');
        });
      });
      await new Promise<void>((r) => bell.listen(0, '127.0.0.1', () => r()));
      bellPort = (bell.address() as { port: number }).port;
    });
    after(() => new Promise<void>((r) => bell.close(() => r())));

    it('rings with ids only, never a subject or body', async () => {
      await d.operator.admin.listenerSet('bob', `http://localhost:${bellPort}/bell`);
      const s = await a.send({ to: 'bob', subject: 'very secret subject', body: 'very secret body' });
      for (let i = 0; i < 100 && rings.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(rings.length, 1);
      // A program reads the doorbell: the sender's full address, which stays valid when a slug is freed.
      assert.deepEqual(rings[0].body, { account: 'bob', to: 'bob', message_id: s.message_id, from: (await a.whoami()).address });
      assert.ok(!JSON.stringify(rings[0]).includes('secret'));
    });

    it('a dead listener does not fail or slow the send', async () => {
      const dead = createServer();
      await new Promise<void>((r) => dead.listen(0, '127.0.0.1', () => r()));
      const deadPort = (dead.address() as { port: number }).port;
      await new Promise<void>((r) => dead.close(() => r()));
      await d.operator.admin.listenerSet('bob', `http://127.0.0.1:${deadPort}/`);
      const s = await a.send({ to: 'bob', subject: 'still delivered', body: '' });
      assert.ok(s.message_id);
      // A listener that hangs does not hold the send either.
      const hang = createServer(() => undefined);
      await new Promise<void>((r) => hang.listen(0, '127.0.0.1', () => r()));
      await d.operator.admin.listenerSet('bob', `http://127.0.0.1:${(hang.address() as { port: number }).port}/`);
      const t0 = performance.now();
      await a.send({ to: 'bob', subject: 'not held', body: '' });
      assert.ok(performance.now() - t0 < 1000);
      hang.closeAllConnections();
      await new Promise<void>((r) => hang.close(() => r()));
      await d.operator.admin.listenerRemove('bob');
    });

    it('refuses listener URLs off the machine', async () => {
      for (const url of [
        'http://example.com/x',
        'http://10.0.0.1/x',
        'http://127.0.0.2/x',
        'https://localhost/x',
        'http://user:pw@localhost/x',
        'http://localhost.evil.example/x',
        'file:///etc/passwd',
        'not a url',
      ]) {
        const err = await d.operator.admin.listenerSet('bob', url).catch((e: unknown) => e);
        assert.ok(err instanceof MailError && err.code === 'malformed' && err.details.field === 'url', url);
      }
      await d.operator.admin.listenerSet('bob', 'http://[::1]:9/x');
      await d.operator.admin.listenerRemove('bob');
    });
  });
});
