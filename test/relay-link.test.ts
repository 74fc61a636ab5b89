// The relay link's connector against a TLS relay peer on 127.0.0.1 that speaks the real protocol:
// the real daemon, its operator route, real SQLite. Heartbeat and backoff are shortened through
// the daemon's options; every wait is for a state (until), never for a time.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestDaemon, raw, type TestDaemon } from './support/test-daemon.js';
import { makeTestTls, type TestTls } from './support/test-tls.js';
import { RelayTestPeer, type PeerConn } from './support/relay-test-peer.js';
import { recordingLogger, type LogLine } from './support/recording-logger.js';
import { until } from './support/until.js';
import type { MailClient } from '../src/client/http-client.js';

const TOKEN = 'node-token-0123456789abcdef-SECRET';
const TIMINGS = { heartbeatMs: 150, backoffBaseMs: 20, backoffCapMs: 200, resetAfterMs: 100 };

describe('relay link: the connector', () => {
  let tls: TestTls;
  let peer: RelayTestPeer;
  let d: TestDaemon;
  let dataDir: string;
  let bot: MailClient;
  const lines: LogLine[] = [];
  const admin = async (op: string, body: unknown = {}) => raw(d.url, `/admin/connect/${op}`, { token: d.operatorToken, body: JSON.stringify(body) });
  const status = async () => (await admin('status')).json;
  const hello = (c: PeerConn) => c.frames.find((f) => f.t === 'hello');
  /** A connection that said hello after `n` connections came before it. */
  const connAfter = (n: number) =>
    until(`connection #${n + 1}`, () => (peer.conns.length > n && hello(peer.conns.at(-1)!) && !peer.conns.at(-1)!.closed ? peer.conns.at(-1)! : null));

  before(async () => {
    tls = makeTestTls();
    peer = await RelayTestPeer.start(tls, { token: TOKEN, nodeId: 'home-box' });
    dataDir = mkdtempSync(join(tmpdir(), 'm4a-relay-link-'));
    d = await startTestDaemon({ dataDir, log: recordingLogger(lines), relayLink: TIMINGS });
    await d.account('alice', { kind: 'human' });
    await d.account('carol', { kind: 'human' });
    bot = (await d.account('bot')).client;
  });
  after(async () => {
    await d.stop();
    await peer.close();
    tls.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('configure refuses what it cannot offer, and changes nothing', async () => {
    const base = { server_url: peer.url, node_id: 'home-box', node_token: TOKEN, human_mailboxes: ['alice'], ca_file: tls.caFile };
    const cases: [unknown, number, string, string | undefined][] = [
      [{ ...base, human_mailboxes: ['nobody'] }, 404, 'unknown_participant', 'human_mailboxes'],
      [{ ...base, human_mailboxes: ['bot'] }, 400, 'malformed', 'human_mailboxes'],
      [{ ...base, server_url: 'ws://relay.example.com' }, 400, 'malformed', 'server_url'],
      [{ ...base, server_url: 'https://relay.example.com' }, 400, 'malformed', 'server_url'],
      [{ ...base, ca_file: 'relative.pem' }, 400, 'malformed', 'ca_file'],
      [{ ...base, human_mailboxes: Array.from({ length: 17 }, (_, i) => `p${i}`) }, 413, 'too_large', 'human_mailboxes'],
      [{ ...base, node_id: 'Not Valid' }, 400, 'malformed', 'node_id'],
    ];
    for (const [body, code, name, field] of cases) {
      const r = await admin('configure', body);
      assert.equal(r.status, code, JSON.stringify(r.json));
      assert.equal(r.json.error.code, name);
      assert.equal(r.json.error.field, field);
    }
    // An agent's bearer is no operator.
    const agent = await d.account('agent-x');
    const r = await raw(d.url, '/admin/connect/configure', { token: agent.secret, body: JSON.stringify(base) });
    assert.ok(r.status === 401 || r.status === 403, String(r.status));
    assert.equal((await status()).configured, false);
    assert.throws(() => statSync(join(dataDir, 'relay-link.json')), /ENOENT/);
  });

  it('configure keeps the token in a 0600 file and never answers it back', async () => {
    const r = await admin('configure', { server_url: peer.url, node_id: 'home-box', node_token: TOKEN, human_mailboxes: ['alice'], ca_file: tls.caFile });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.token, 'set');
    assert.equal(r.json.enabled, false);
    assert.ok(!JSON.stringify(r.json).includes(TOKEN));
    const file = join(dataDir, 'relay-link.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).node_token, TOKEN);
    assert.equal(peer.conns.length, 0, 'configure alone does not dial');
  });

  it('start dials with the bearer and node header, says hello, and measures the round trip', async () => {
    assert.equal((await admin('start')).status, 200);
    const c = await peer.live();
    assert.equal(c.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(c.headers['x-m4a-node'], 'home-box');
    assert.equal(c.protocol, 'm4a-relay.1');
    const h = hello(c);
    assert.ok(h && h.t === 'hello');
    assert.equal(h.node, 'home-box');
    assert.deepEqual(h.mailboxes, ['alice']);
    const s = await until('connected with a round trip', async () => {
      const st = await status();
      return st.connected && st.rtt_ms !== null ? st : null;
    });
    assert.equal(s.last_error, null);
    assert.ok(!JSON.stringify(s).includes(TOKEN));
  });

  it('runs calls for an offered mailbox, and refuses (and logs) the rest', async () => {
    const c = await peer.live();
    await bot.send({ to: 'alice', subject: 'hello alice', body: 'from the bot' });
    const inbox = await peer.call(c, { id: 'i1', mailbox: 'alice', name: 'inbox', body: {} });
    assert.equal(inbox.status, 200, JSON.stringify(inbox.body));
    assert.ok((inbox.body as { messages: { subject: string }[] }).messages.some((m) => m.subject === 'hello alice'));
    const sent = await peer.call(c, { id: 's1', mailbox: 'alice', name: 'send', body: { to: 'bot', subject: 'from alice', body: 'hi' } });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const got = await bot.inbox({});
    const m = got.messages.find((x) => x.subject === 'from alice');
    assert.ok(m);
    assert.equal(m.from, 'alice');
    assert.equal(m.via, undefined, 'the owner writes without via');

    const other = await peer.call(c, { id: 'x1', mailbox: 'carol', name: 'inbox', body: {} });
    assert.equal(other.status, 403);
    assert.deepEqual((other.body as { error: { code: string; mailbox: string } }).error.code, 'not_relayed');
    assert.equal((other.body as { error: { mailbox: string } }).error.mailbox, 'carol');
    assert.ok(lines.some((l) => l.level === 'warn' && (l.obj as { mailbox?: string }).mailbox === 'carol'));
    const unlisted = await peer.call(c, { id: 'x2', mailbox: 'alice', name: 'search', body: { query: 'x' } });
    assert.equal(unlisted.status, 403);
    assert.equal((unlisted.body as { error: { code: string; call: string } }).error.call, 'search');
    const bad = await peer.call(c, { id: 'x3', mailbox: 'alice', name: 'send', body: { to: 'bot' } });
    assert.equal(bad.status, 400);
    assert.equal((bad.body as { error: { code: string } }).error.code, 'malformed');
  });

  it("a delegate's send carries via {relay, delegate}", async () => {
    const c = await peer.live();
    const sent = await peer.call(c, { id: 'd1', mailbox: 'alice', name: 'send', body: { to: 'bot', subject: 'from a delegate', body: 'hi' }, delegate: 'dave' });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const m = (await bot.inbox({})).messages.find((x) => x.subject === 'from a delegate');
    assert.ok(m);
    assert.deepEqual(m.via, { relay: `127.0.0.1:${peer.port}`, delegate: 'dave' });
  });

  it('a cancel ends a parked read at once', async () => {
    const c = await peer.live();
    const first = await peer.call(c, { id: 'w0', mailbox: 'alice', name: 'inbox', body: {} });
    const cursor = (first.body as { next_cursor: string }).next_cursor;
    // alice's notice loop waits for an ack nobody sent yet, so the count moves only by this read.
    const base = d.engine.parkedWaits();
    c.send({ t: 'call', id: 'w1', mailbox: 'alice', name: 'inbox', body: { after: cursor, wait_secs: 30 } });
    await until('the read parked', () => d.engine.parkedWaits() > base);
    c.send({ t: 'cancel', id: 'w1' });
    await until('the cancelled read answered', () => c.frames.some((f) => f.t === 'answer' && f.id === 'w1'));
  });

  it('pushes a mail notice for new mail, and the next only after the ack', async () => {
    const c = await peer.live();
    const mails = () => c.frames.filter((f): f is Extract<typeof f, { t: 'mail' }> => f.t === 'mail');
    const before = mails().length;
    for (const m of mails()) c.send({ t: 'ack', mailbox: m.mailbox, cursor: m.cursor }); // earlier mail of this test run
    await bot.send({ to: 'alice', subject: 'push one', body: 'x' });
    const one = await until('a mail notice', () => mails().find((m, i) => i >= before && m.mailbox === 'alice'));
    await bot.send({ to: 'alice', subject: 'push two', body: 'x' });
    // A round trip on the same connection after the second mail committed: still one notice.
    assert.equal((await peer.call(c, { id: 'p1', mailbox: 'alice', name: 'me', body: {} })).status, 200);
    assert.equal(mails().length, before + 1);
    c.send({ t: 'ack', mailbox: 'alice', cursor: one.cursor });
    const two = await until('the next notice', () => mails()[before + 1]);
    assert.ok(two.cursor > one.cursor || two.cursor.length > one.cursor.length);
  });

  it('a half-open relay (no pongs) is dropped and dialled again', async () => {
    const n = peer.conns.length;
    peer.silent = true;
    await until('the half-open link dropped', () => peer.conns[n - 1]!.closed);
    // Told in the log (status may already show the next connection, which the relay welcomes).
    await until('the heartbeat named as the cause', () => lines.some((l) => /heartbeat/.test(String((l.obj as { why?: string }).why))));
    peer.silent = false;
    await connAfter(n);
    await until('connected again', async () => (await status()).connected);
  });

  it('a killed relay: last_error, backoff, and connected again after it returns, with the mail sent meanwhile', async () => {
    await peer.live();
    const lastMail = peer.conns
      .flatMap((x) => x.frames)
      .filter((f) => f.t === 'mail')
      .at(-1);
    const n = peer.conns.length;
    await peer.kill();
    await until('disconnected', async () => !(await status()).connected);
    await bot.send({ to: 'alice', subject: 'while apart', body: 'x' });
    const apart = await status();
    assert.ok(apart.last_error);
    assert.ok(apart.since);
    // The relay comes back remembering the last cursor it acknowledged.
    peer.welcome = lastMail && lastMail.t === 'mail' ? { alice: lastMail.cursor } : {};
    await peer.restart();
    const back = await connAfter(n);
    await until('the notice of mail committed while apart', () => back.frames.some((f) => f.t === 'mail' && f.mailbox === 'alice'));
    await until('connected', async () => (await status()).connected);
  });

  it('a refused upgrade (401, 409) keeps retrying and names the refusal', async () => {
    for (const [code, name] of [
      [401, /unauthenticated/],
      [409, /node_in_use/],
    ] as const) {
      peer.refuse = code;
      const n = peer.conns.length;
      peer.conns.at(-1)?.ws.terminate();
      await until(`last_error ${code}`, async () => name.test(String((await status()).last_error)));
      const tries = peer.attempts;
      await until('another attempt', () => peer.attempts > tries + 1);
      peer.refuse = null;
      await connAfter(n);
      await until('connected', async () => (await status()).connected);
    }
  });

  it('a certificate another CA signed is refused', async () => {
    const r = await admin('update', { ca_file: tls.otherCaFile });
    assert.equal(r.status, 200);
    await until('a TLS refusal', async () => /certificate|self.signed|verify/i.test(String((await status()).last_error)));
    assert.equal((await status()).connected, false);
    const n = peer.conns.length;
    assert.equal((await admin('update', { ca_file: tls.caFile })).status, 200);
    await connAfter(n);
  });

  it('update keeps what is not given; removeuser takes one mailbox away', async () => {
    const n = peer.conns.length;
    const r = await admin('update', { human_mailboxes: ['alice', 'carol'] });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.server_url, new URL(peer.url).href);
    assert.equal(r.json.node_id, 'home-box');
    assert.equal(r.json.ca_file, tls.caFile);
    assert.equal(r.json.token, 'set');
    const c = await connAfter(n);
    assert.deepEqual(hello(c)?.t === 'hello' && hello(c), { t: 'hello', node: 'home-box', mailboxes: ['alice', 'carol'], version: (hello(c) as { version: string }).version });
    assert.equal(JSON.parse(readFileSync(join(dataDir, 'relay-link.json'), 'utf8')).node_token, TOKEN);

    assert.equal((await admin('removeuser', { human_mailbox: 'nobody' })).json.error.code, 'unknown_participant');
    const rm = await admin('removeuser', { human_mailbox: 'carol' });
    assert.deepEqual(rm.json.human_mailboxes, ['alice']);
    const c2 = await connAfter(n + 1);
    assert.deepEqual((hello(c2) as { mailboxes: string[] }).mailboxes, ['alice']);
  });

  it('stop closes the link and start opens it again', async () => {
    const c = await peer.live();
    const stopped = await admin('stop');
    assert.equal(stopped.json.enabled, false);
    await until('closed', () => c.closed);
    assert.equal((await status()).connected, false);
    const n = peer.conns.length;
    await admin('start');
    await connAfter(n);
  });

  it('a restarted daemon reads its settings and dials again; the token was never logged', async () => {
    const n = peer.conns.length;
    await d.close();
    d = await startTestDaemon({ dataDir, log: recordingLogger(lines), relayLink: TIMINGS });
    await connAfter(n);
    assert.ok(!lines.some((l) => JSON.stringify(l).includes(TOKEN)));
  });
});
