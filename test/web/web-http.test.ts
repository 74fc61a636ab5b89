// The browser door over plain HTTP: headers, cookies, CSRF and Origin, the login throttle, login
// lifetimes and revocation, and that a person's mail is the same mail agents read.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { MailClient } from '../../src/client/http-client.js';
import { PASSWORD, call, createPerson, login, webPost } from './web-helpers.js';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** fetch cannot set Host (DNS rebinding is what it guards against); node:http can. */
function statusWithHost(url: string, path: string, host: string): Promise<number> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method: 'GET', headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('browser door over HTTP', () => {
  let d: TestDaemon;
  let codex: MailClient;

  before(async () => {
    d = await startTestDaemon({ web: { throttle: { baseMs: 300, maxMs: 5000, forgetMs: 60_000 } } });
    await createPerson(d, 'alice', { display_name: 'Alice' });
    await createPerson(d, 'bob');
    await createPerson(d, 'olga', { operator: true });
    codex = (await d.account('codex')).client;
  });
  after(() => d.stop());

  it('serves the page and its assets from the daemon with strict security headers', async () => {
    for (const path of ['/', '/web/inbox', '/web/thread/m-x']) {
      const r = await fetch(`${d.url}${path}`);
      assert.equal(r.status, 200, path);
      assert.match(r.headers.get('content-type')!, /^text\/html/);
      assert.equal(r.headers.get('content-security-policy'), CSP);
      assert.equal(r.headers.get('x-frame-options'), 'DENY');
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
      const html = await r.text();
      assert.match(html, /<script type="module" src="\/web\/assets\/app\.js"><\/script>/);
      assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)/, 'no inline script');
      assert.doesNotMatch(html, /https?:\/\/(?!www\.w3\.org)/, 'nothing is loaded from elsewhere');
    }
    const js = await fetch(`${d.url}/web/assets/app.js`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type')!, /^text\/javascript/);
    assert.equal(js.headers.get('content-security-policy'), CSP);
    assert.doesNotMatch(await js.text(), /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/, 'the page never parses data as markup');
    const again = await fetch(`${d.url}/web/assets/app.js`, { headers: { 'if-none-match': js.headers.get('etag')! } });
    assert.equal(again.status, 304);
    assert.equal((await fetch(`${d.url}/web/assets/nope.js`)).status, 404);
    assert.equal((await fetch(`${d.url}/`, { method: 'POST', headers: { origin: d.url } })).status, 405);
    assert.equal((await fetch(`${d.url}/web/api/me`)).status, 405, 'the API takes POST only');
  });

  it('logs in only a person with the right password; the cookie is HttpOnly, SameSite=Strict, and only digests are stored', async () => {
    const l = await login(d.url, 'alice');
    assert.match(l.setCookie, /^m4a_session_\d+=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    assert.doesNotMatch(l.setCookie, /Secure/, 'plain loopback HTTP: a Secure cookie would never be sent back');
    const again = await login(d.url, 'alice');
    assert.notEqual(again.cookie, l.cookie, 'every login gets a fresh session id');
    const raw = l.cookie.split('=')[1]!;
    const sessions = await d.store.listRecords('web_session', '', 100);
    assert.ok(sessions.length >= 2);
    for (const s of sessions) {
      assert.notEqual(s.id, raw);
      assert.ok(!s.value.includes(raw) && !s.value.includes(l.csrf), 'neither the cookie nor the CSRF token is stored');
    }
    const pw = await d.store.getRecord('web_password', 'alice');
    assert.match(JSON.parse(pw!.value).hash, /^\$argon2id\$/);
    assert.ok(!pw!.value.includes(PASSWORD));

    const me = await call(d.url, l, 'me');
    assert.deepEqual(me.json, { account: 'alice', label: 'Alice', operator: false, unread: 0, teams: [] });

    for (const [account, password] of [
      ['alice', 'wrong password'],
      ['codex', PASSWORD],
      ['nobody', PASSWORD],
    ] as const) {
      const r = await webPost(d.url, 'login', { body: { account, password } });
      assert.equal(r.status, 401, account);
      assert.equal(r.json.error.code, 'bad_credentials');
      assert.equal(r.json.error.message, 'unknown account or wrong password', 'the same words whatever was wrong');
      assert.equal(r.headers.get('set-cookie'), null);
    }
  });

  it("refuses a request without the login's CSRF token, from another origin, or not sent as JSON by the page", async () => {
    const l = await login(d.url, 'bob');
    const send = { to: 'codex', subject: 'csrf probe', body: 'should never arrive' };
    const refusals: [string, Parameters<typeof webPost>[2], number, string][] = [
      ['no token', { cookie: l.cookie, body: send }, 403, 'csrf_failed'],
      ["another login's token", { cookie: l.cookie, csrf: (await login(d.url, 'olga')).csrf, body: send }, 403, 'csrf_failed'],
      ['a foreign Origin', { cookie: l.cookie, csrf: l.csrf, body: send, origin: 'http://evil.example' }, 403, 'forbidden_origin'],
      ['another port of this host', { cookie: l.cookie, csrf: l.csrf, body: send, origin: 'http://127.0.0.1:1' }, 403, 'forbidden_origin'],
      ['no Origin', { cookie: l.cookie, csrf: l.csrf, body: send, origin: null }, 403, 'csrf_failed'],
      ['cross-site fetch metadata', { cookie: l.cookie, csrf: l.csrf, body: send, headers: { 'sec-fetch-site': 'cross-site' } }, 403, 'csrf_failed'],
      ['a form post', { cookie: l.cookie, csrf: l.csrf, body: JSON.stringify(send), headers: { 'content-type': 'text/plain' } }, 403, 'csrf_failed'],
      ['no cookie', { csrf: l.csrf, body: send }, 401, 'unauthenticated'],
    ];
    for (const [what, o, status, code] of refusals) {
      const r = await webPost(d.url, 'send', o);
      assert.equal(r.status, status, what);
      assert.equal(r.json.error.code, code, what);
    }
    assert.equal(await statusWithHost(d.url, '/web/api/me', 'evil.example'), 403, 'a rebound Host is refused');
    assert.equal((await codex.inbox()).messages.filter((m) => m.subject === 'csrf probe').length, 0, 'nothing refused was sent');
    const ok = await webPost(d.url, 'send', { cookie: l.cookie, csrf: l.csrf, body: send });
    assert.equal(ok.status, 200);
    assert.equal((await codex.inbox()).messages.filter((m) => m.subject === 'csrf probe').length, 1);
  });

  it('slows wrong passwords with growing delays, per account, without locking anyone out', async () => {
    await createPerson(d, 'carol');
    const attempt = (password: string) => webPost(d.url, 'login', { body: { account: 'carol', password } });
    const delays: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await attempt('wrong password');
      assert.equal(r.json.error.code, 'bad_credentials');
      delays.push(r.json.error.retry_after_ms);
      const early = await attempt(PASSWORD);
      assert.equal(early.status, 429, 'during the delay even the right password waits');
      assert.equal(early.json.error.code, 'rate_limited');
      assert.ok(Number(early.headers.get('retry-after')) >= 1);
      // Another person is not slowed by carol's delay.
      assert.equal((await webPost(d.url, 'login', { body: { account: 'bob', password: PASSWORD } })).status, 200);
      await sleep(r.json.error.retry_after_ms + 30);
    }
    assert.deepEqual(delays, [300, 600, 1200], 'each wrong password doubles the delay');
    assert.equal((await attempt(PASSWORD)).status, 200, 'after the delay the right password gets in');
    const fresh = await attempt('wrong again');
    assert.equal(fresh.json.error.retry_after_ms, 300, 'a good login clears the count');
  });

  it("a person's mail is the same mail: agents see it came from a person, and replies land in the inbox the CLI reads", async () => {
    const l = await login(d.url, 'alice');
    const sent = await call(d.url, l, 'send', { to: 'codex', subject: 'please review', body: 'branch fix-42' });
    assert.equal(sent.status, 200);
    assert.equal(sent.json.from, 'alice', 'a person has no session: the account address');
    const got = (await codex.inbox()).messages.find((m) => m.message_id === sent.json.message_id)!;
    assert.equal(got.from, 'alice');
    assert.equal(got.from_kind, 'human');
    const reply = await codex.send({ to: got.from, subject: 'Re: please review', body: 'done', reply_to: got.message_id });

    const inbox = await call(d.url, l, 'inbox');
    assert.equal(inbox.json.messages[0].message_id, reply.message_id);
    assert.equal(inbox.json.messages[0].from_kind, undefined, "an agent's mail: from_kind left out");
    assert.equal(inbox.json.messages[0].from, reply.from, 'the browser reads the sender short, as agents do');
    assert.match(inbox.json.messages[0].from, /^codex\/(?!s-[0-9a-f]{64})/);
    assert.equal(inbox.json.unread, 1);
    const thread = await call(d.url, l, 'get', { message_id: reply.message_id, thread: true });
    assert.deepEqual(
      thread.json.thread.map((m: { message_id: string }) => m.message_id),
      [sent.json.message_id, reply.message_id],
    );

    // The same account through a bearer secret (what m4a inbox uses) reads the same mail.
    const secret = (await d.operator.admin.accountRotate('alice')).secret;
    const cli = new MailClient({ url: d.url, token: secret });
    try {
      assert.ok((await cli.inbox()).messages.some((m) => m.message_id === reply.message_id));
      await cli.ack(reply.message_id);
    } finally {
      cli.close();
    }
    assert.equal((await call(d.url, l, 'me')).json.unread, 0, 'acknowledged once for the account, wherever it was done');
  });

  it("a live update parks on the daemon's wait and answers when mail commits", async () => {
    const l = await login(d.url, 'alice');
    const start = await call(d.url, l, 'inbox');
    const t0 = Date.now();
    const parked = call(d.url, l, 'inbox', { after: start.json.next_cursor, wait_secs: 20 });
    await sleep(200);
    await codex.send({ to: 'alice', subject: 'live one', body: 'hello' });
    const r = await parked;
    assert.equal(r.json.messages[0].subject, 'live one');
    assert.ok(Date.now() - t0 < 5000, 'answered at the commit, not at the end of the wait');
  });

  it('logout, revoke-all, the operator and a new password end logins', async () => {
    const a = await login(d.url, 'bob');
    const b = await login(d.url, 'bob');
    assert.equal((await call(d.url, a, 'logout')).headers.get('set-cookie'), `${a.cookie.split('=')[0]}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
    assert.equal((await call(d.url, a, 'me')).status, 401, 'logged out');
    assert.equal((await call(d.url, b, 'me')).status, 200, 'the other login lives');
    const revoked = await d.operator.call<{ revoked: number }>('/admin/user/revoke-sessions', { id: 'bob' });
    assert.ok(revoked.revoked >= 1);
    assert.equal((await call(d.url, b, 'me')).status, 401);

    const c = await login(d.url, 'bob');
    const e = await login(d.url, 'bob');
    assert.equal((await call(d.url, c, 'revoke-all')).status, 200);
    assert.equal((await call(d.url, e, 'me')).status, 401, 'log out everywhere');

    const f = await login(d.url, 'bob');
    await d.operator.call('/admin/user/passwd', { id: 'bob', password: 'a new password' });
    assert.equal((await call(d.url, f, 'me')).status, 401, 'a new password ends every login');
    assert.equal((await webPost(d.url, 'login', { body: { account: 'bob', password: PASSWORD } })).status, 401);
    await sleep(350); // that wrong password started a delay
    await login(d.url, 'bob', 'a new password');
    await d.operator.call('/admin/user/passwd', { id: 'bob', password: PASSWORD });
  });

  it('operator pages need the operator permission; wake chains are shown, never set or cleared', async () => {
    const alice = await login(d.url, 'alice');
    const denied = await call(d.url, alice, 'admin/overview');
    assert.equal(denied.status, 403);
    assert.equal(denied.json.error.code, 'permission_denied');
    const olga = await login(d.url, 'olga');
    assert.equal((await call(d.url, olga, 'admin/room/add', { name: 'reviewers' })).status, 200);
    assert.equal((await call(d.url, olga, 'admin/room/member/add', { room: 'reviewers', account: 'alice' })).status, 200);
    assert.equal((await call(d.url, olga, 'admin/listener', { account: 'codex', url: 'http://127.0.0.1:9/ring' })).status, 200);
    await d.operator.admin.wakeSet({
      account: 'codex',
      steps: [{ kind: 'hooks' }, { kind: 'command', argv: ['codex', 'exec', 'resume', '{provider_session_id}', '{wake_text}'] }],
    });
    const o = await call(d.url, olga, 'admin/overview');
    assert.deepEqual(
      o.json.wake.map((c: { account: string; steps: { kind: string }[] }) => [c.account, c.steps.map((x) => x.kind)]),
      [['codex', ['hooks', 'command']]],
      'operators see the chains',
    );
    assert.deepEqual(o.json.rooms.find((r: { name: string }) => r.name === 'reviewers').members, ['alice']);
    assert.equal(o.json.listeners.codex, 'http://127.0.0.1:9/ring');
    assert.ok(!JSON.stringify(o.json).includes('secret'), 'no secret or digest in the overview');
    for (const wake of ['admin/wake/set', 'admin/wake/list', 'admin/wake/clear', 'admin/daemon/stop', 'admin/../mail/send']) {
      const r = await call(d.url, olga, wake, {});
      assert.equal(r.status, 404, wake);
      assert.equal(r.json.error.code, 'unknown_route', wake);
    }
    assert.equal((await d.operator.admin.wakeList()).chains.length, 1, 'nothing the browser sent changed a chain');
  });

  it('user create: a human account with send and read, a checked password, operator only', async () => {
    const r = await d.operator.call<{ account: { kind: string; label: string; permissions: Record<string, boolean> } }>('/admin/user/create', {
      id: 'dave',
      display_name: 'Dave D',
      password: 'long enough',
    });
    assert.equal(r.account.kind, 'human');
    assert.equal(r.account.label, 'Dave D');
    assert.deepEqual(r.account.permissions, { send: true, read: true, urgent: false, operator: false });
    assert.ok(!('secret' in r), 'no bearer secret is shown for a person');
    await assert.rejects(d.operator.call('/admin/user/create', { id: 'erin', password: 'short' }), { code: 'malformed' });
    await assert.rejects(d.operator.call('/admin/user/create', { id: 'dave', password: 'long enough' }), { code: 'already_exists' });
    await assert.rejects(codex.call('/admin/user/create', { id: 'mallory', password: 'long enough' }), { code: 'permission_denied' });
    await assert.rejects(d.operator.call('/admin/user/passwd', { id: 'codex', password: 'long enough' }), { code: 'malformed' }, 'agents get no password');
  });

  it('a password may hold bidi marks, invisible and control characters: it is never shown, only compared', async () => {
    const marked = 'pass\u200fword\u2066 \u200b\u00ad\u202e\ufeff\t!';
    await d.operator.call('/admin/user/create', { id: 'zoe', password: marked });
    assert.equal((await webPost(d.url, 'login', { body: { account: 'zoe', password: marked } })).status, 200, 'the person gets in');
    const stripped = await webPost(d.url, 'login', { body: { account: 'zoe', password: 'password !' } });
    assert.equal(stripped.json.error.code, 'bad_credentials', 'the marks are part of the password');
    const other = 'neue\u2067 Zeile\u200d\u2028x';
    await d.operator.call('/admin/user/passwd', { id: 'zoe', password: other });
    await sleep(stripped.json.error.retry_after_ms + 30);
    assert.equal((await webPost(d.url, 'login', { body: { account: 'zoe', password: other } })).status, 200);
    // The limits stay: too long, or not well-formed Unicode, is refused before the throttle sees it.
    const records = JSON.stringify(await d.store.listRecords('web_throttle_addr', 'zoe/', 10));
    const long = await webPost(d.url, 'login', { body: { account: 'zoe', password: 'x'.repeat(1025) } });
    assert.equal(long.json.error.code, 'too_large');
    assert.equal(long.json.error.field, 'password');
    assert.equal((await webPost(d.url, 'login', { body: { account: 'zoe', password: 'lone \ud800 surrogate' } })).json.error.code, 'malformed');
    await assert.rejects(d.operator.call('/admin/user/passwd', { id: 'zoe', password: 'lone \udc00 surrogate' }), { code: 'malformed' });
    await assert.rejects(d.operator.call('/admin/user/passwd', { id: 'zoe', password: 'y'.repeat(1025) }), { code: 'too_large' });
    assert.equal(JSON.stringify(await d.store.listRecords('web_throttle_addr', 'zoe/', 10)), records);
    assert.equal((await webPost(d.url, 'login', { body: { account: 'zoe', password: other } })).status, 200, 'the refused ones changed nothing');
  });
});

describe('browser login lifetimes', () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon({ storeKind: 'memory', web: { idleMs: 400, absoluteMs: 1300 } });
    await createPerson(d, 'alice');
  });
  after(() => d.stop());

  it('an unused login ends after the idle time', async () => {
    const l = await login(d.url, 'alice');
    assert.equal((await call(d.url, l, 'me')).status, 200);
    await sleep(600);
    const r = await call(d.url, l, 'me');
    assert.equal(r.status, 401);
    assert.equal(r.json.error.code, 'unauthenticated');
    assert.equal((await d.store.listRecords('web_session', '', 10)).length, 0, 'the ended login is deleted');
  });

  it('a login in use ends at its absolute lifetime', async () => {
    const l = await login(d.url, 'alice');
    const t0 = Date.now();
    while (Date.now() - t0 < 900) {
      assert.equal((await call(d.url, l, 'me')).status, 200, 'use keeps it past the idle time');
      await sleep(150);
    }
    while (Date.now() - t0 < 1500) await sleep(150).then(() => call(d.url, l, 'me'));
    assert.equal((await call(d.url, l, 'me')).status, 401);
  });
});

describe('browser mailbox on the LAN (--web-lan)', () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon({ storeKind: 'memory', webLan: '127.0.0.2:0' });
    await createPerson(d, 'alice');
  });
  after(() => d.stop());

  it('serves the browser door and nothing else, for its own exact origin', async () => {
    assert.match(d.webLanUrl ?? '', /^http:\/\/127\.0\.0\.2:\d+$/);
    const url = d.webLanUrl!;
    const page = await fetch(`${url}/`);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-security-policy'), CSP);
    const l = await login(url, 'alice');
    assert.equal((await call(url, l, 'me')).status, 200);
    for (const path of ['/mail/send', '/mcp', '/admin/account/list', '/health']) {
      const r = await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${d.operatorToken}`, 'content-type': 'application/json' }, body: '{}' });
      assert.equal(r.status, 404, path);
    }
    assert.equal(await statusWithHost(url, '/', new URL(d.url).host), 403, 'the loopback origin is another site here');
    assert.equal(await statusWithHost(d.url, '/', new URL(url).host), 403, 'and the LAN origin is another site on loopback');
  });
});
