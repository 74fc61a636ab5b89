// Property tests over the relay (src/relay/): the in-process relay over TLS on 127.0.0.1 with a
// real daemon connected as node "home" through its own relay link (/admin/connect/*), and a second
// node "fz" held by the test with a valid token.
// (a) Relay users send arbitrary requests to /web/api/*: every call name, method, body (JSON or
//     not), cookie, CSRF token, Origin, Host, content type and Sec-Fetch-Site. Every answer is a
//     success or the named envelope with its documented status, never a 5xx or a hang; a refused
//     one changes nothing in the daemon's store.
// (b) The "fz" node sends arbitrary frames: random JSON, wrong types, unknown kinds, frames before
//     its hello, a second hello, mail for a mailbox it did not offer, answers to calls that do not
//     exist and to one a browser waits on, binary, broken UTF-8 and oversized frames. The relay
//     closes exactly when relay-link.ts says (1008; 1007 and 1009 from the WebSocket layer),
//     acknowledges each valid mail frame, hands a valid answer to the waiting browser as is, and
//     every other node and user keeps working.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { silentLogger } from '../../src/engine/log.js';
import { RelayState } from '../../src/relay/relay-store.js';
import { startRelay, type RunningRelay } from '../../src/relay/relay-server.js';
import type { Caller } from '../../src/engine/mail-engine.js';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { makeTestTls, type TestTls } from '../support/test-tls.js';
import { TestNode } from '../support/relay-test-node.js';
import { frameArb, sendFrames } from '../support/relay-fuzz-frames.js';
import { RelayHttp, type RelayAnswer } from '../support/relay-fuzz-net.js';
import { tally } from '../support/soak-tally.js';
import { until } from '../support/until.js';
import { bodyOf, runs, tree } from '../support/fuzz-values.js';
import { assertEnvelope, storeSnapshot } from './helpers.js';
import { stillClock } from './still-clock.js';

const PW = 'correct horse battery';
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

interface Login {
  cookie: string;
  csrf: string;
}

describe('fuzz: the relay', () => {
  let tls: TestTls;
  let dir: string;
  let state: RelayState;
  let relay: RunningRelay;
  let net: RelayHttp;
  let d: TestDaemon;
  let alice: Caller;
  const tokens: Record<string, string> = {};
  const logins: Record<string, Login> = {};
  let ids: { mine: string[]; foreign: string };

  const login = async (user: string): Promise<Login> => {
    const r = await net.request('/web/api/login', { headers: { origin: relay.origin, 'content-type': 'application/json' }, body: JSON.stringify({ account: user, password: PW }) });
    assert.equal(r.status, 200, `login ${user}: ${r.text}`);
    return (logins[user] = { cookie: String(([] as string[]).concat(r.headers['set-cookie'] ?? [])[0]).split(';')[0]!, csrf: r.json.csrf as string });
  };
  const api = (l: Login, name: string, body: unknown, o: { node?: boolean } = {}): Promise<RelayAnswer> =>
    net.request(`/web/api/${name}`, {
      headers: { origin: relay.origin, 'content-type': 'application/json', cookie: l.cookie, 'x-m4a-csrf': l.csrf },
      body: JSON.stringify(body),
      ...o,
    });
  /** The daemon's store as a refusal must leave it, the person's unread count included. */
  const daemonState = async (): Promise<string> => `${(await storeSnapshot(d.engine.store)).text}\n${(await d.engine.unread(alice)).unread}`;
  /** The daemon's node answers through the relay: other users are unaffected by what a run did. */
  const homeWorks = async (where: string): Promise<void> => {
    const r = await api(logins['alice-web']!, 'me', {});
    assert.equal(r.status, 200, `${where}: alice-web's me through the daemon's node: ${r.text}`);
    assert.equal(r.json.account, 'alice');
  };

  before(async () => {
    tls = makeTestTls();
    dir = mkdtempSync(join(tmpdir(), 'm4a-fuzz-relay-'));
    state = await RelayState.open({ dataDir: dir });
    for (const n of ['home', 'fz']) tokens[n] = await state.addNode(n);
    for (const u of ['alice-web', 'dave', 'victim', 'fzuser', 'nogrant']) await state.addUser(u, PW);
    await state.grant('alice-web', { node: 'home', mailbox: 'alice', role: 'owner' });
    await state.grant('dave', { node: 'home', mailbox: 'alice', role: 'delegate' });
    await state.grant('victim', { node: 'home', mailbox: 'alice', role: 'delegate' });
    await state.grant('fzuser', { node: 'fz', mailbox: 'fzbox', role: 'owner' });
    relay = await startRelay({ state, log: silentLogger, host: '127.0.0.1', port: 0, tls: { cert: tls.certFile, key: tls.keyFile }, hub: { takeoverPingMs: 200, helloMs: 3000 } });
    net = new RelayHttp(relay.port, tls.caFile);

    // Time stands still in the daemon (still-clock.ts): a live read it is asked for ends within ms.
    d = await startTestDaemon({ clock: stillClock(), timerPollMs: 1, relayLink: { heartbeatMs: 1000, backoffBaseMs: 20, backoffCapMs: 200, resetAfterMs: 100 } });
    await d.operator.call('/admin/user/create', { id: 'alice', password: PW });
    const bot = (await d.account('bot')).client;
    await d.account('bob');
    alice = { account: (await d.engine.store.getAccount('alice'))!, session: null };
    const mine: string[] = [];
    for (let i = 0; i < 4; i++) mine.push((await bot.send({ to: 'alice', subject: `to alice ${i}`, body: 'b' })).message_id);
    const foreign = (await bot.send({ to: 'bob', subject: 'not for alice', body: 'b' })).message_id;
    ids = { mine, foreign };
    const configure = await d.operator.call('/admin/connect/configure', {
      server_url: `wss://127.0.0.1:${relay.port}`,
      node_id: 'home',
      node_token: tokens.home,
      human_mailboxes: ['alice'],
      ca_file: tls.caFile,
    });
    assert.ok(configure);
    await d.operator.call('/admin/connect/start', {});
    await until('the daemon connected as node home', () => relay.hub.link('home'));
    for (const u of ['alice-web', 'dave']) await login(u);
  });
  after(async () => {
    await d?.stop();
    net?.close();
    await relay?.close();
    await state?.close();
    tls?.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  it('(a) arbitrary /web/api/* requests by logged-in relay users: a success or the named envelope; a refusal changes nothing at the daemon', async () => {
    const cursors = ['c1.0', 'c1.1', 'c1.zzzz', '', 'x'.repeat(65), null];
    const messageIds = [...ids.mine, ids.foreign, 'm-0', 'm-', 'x'.repeat(65)];
    const text = ['', 'plain', 'line\nbreak', 'x'.repeat(70_000)];
    const calls: Record<string, Parameters<typeof bodyOf>[0]> = {
      me: { bases: [{}], fields: {} },
      directory: { bases: [{}], fields: {} },
      inbox: { bases: [{}, { after: 'c1.0', wait_secs: 0.01 }, { after: null }], fields: { after: cursors, wait_secs: [0, 0.01, 30, 1e9, -1, 'x'] } },
      get: {
        bases: [{ message_id: ids.mine[0] }, { message_id: ids.mine[1], thread: true }],
        fields: { message_id: messageIds, thread: [true, false, 'yes'], verbose: [true, 1] },
      },
      send: {
        bases: [
          { to: 'bot', subject: 'fz', body: 'fz' },
          { to: 'bot', subject: 'Re', body: 'b', reply_to: ids.mine[0], idempotency_key: 'k1' },
        ],
        fields: {
          to: ['bot', 'alice', 'bob', 'nobody', '#lobby', '', { kind: 'direct', participant: 'bot' }, 'team:x'],
          subject: text,
          body: text,
          reply_to: messageIds,
          idempotency_key: ['k1', 'k2', 'bad key', 'k'.repeat(129)],
          priority: ['normal', 'urgent', 'low'],
          via: [{ relay: 'r', delegate: 'x' }],
          delegate: ['alice', 'dave'],
        },
      },
      reply: {
        bases: [{ message_id: ids.mine[0], body: 'fz' }],
        fields: { message_id: messageIds, body: text, ack: [true, false], to_sender: [true, false], idempotency_key: ['r1', 'bad key'] },
      },
      ack: {
        bases: [{ message_id: ids.mine[2] }, { message_ids: [ids.mine[3], ids.foreign] }],
        fields: { message_id: messageIds, message_ids: [[], messageIds, Array.from({ length: 257 }, () => 'm-1')] },
      },
      login: {
        bases: [
          { account: 'victim', password: 'wrong password!' },
          { account: 'victim', password: PW },
          { account: 'nogrant', password: PW },
        ],
        fields: { account: ['victim', 'nobody', 'nogrant', '', 'x'.repeat(65)], password: ['wrong password!', PW, '', 'x'.repeat(5000)] },
      },
      logout: { bases: [{}], fields: {} },
      'revoke-all': { bases: [{}], fields: {} },
      'login-throttle': { bases: [{}], fields: { x: [1] } },
      'login-throttle/clear': { bases: [{}], fields: { x: [1] } },
    };
    const named = fc.oneof(
      ...Object.entries(calls).map(([name, spec]) => ({
        weight: name.startsWith('log') || name === 'revoke-all' ? 1 : 4,
        arbitrary: fc.record({ name: fc.constant(name), body: bodyOf(spec) }),
      })),
      {
        weight: 2,
        arbitrary: fc.record({ name: fc.constantFrom('tasks', 'search', 'admin/overview', 'wake/list', 'task/create', 'reservations', 'status'), body: fc.constant({}) }),
      },
      { weight: 1, arbitrary: fc.record({ name: fc.oneof(fc.constantFrom('', 'ME', 'me/', '../login', '%2e%2e/login', 'me?x=1', 'inbox%00'), fc.webSegment()), body: tree }) },
    );
    const arb = fc.record({
      who: fc.constantFrom('alice-web', 'dave'),
      call: named,
      cookie: fc.oneof({ weight: 12, arbitrary: fc.constant('own') }, { weight: 1, arbitrary: fc.constantFrom('none', 'garbage', 'other') }),
      csrf: fc.oneof({ weight: 12, arbitrary: fc.constant('own') }, { weight: 1, arbitrary: fc.constantFrom('none', 'wrong', 'other') }),
      origin: fc.oneof({ weight: 14, arbitrary: fc.constant('own') }, { weight: 1, arbitrary: fc.constantFrom('none', 'https://evil.example', 'null', 'http-variant') }),
      host: fc.oneof({ weight: 20, arbitrary: fc.constant('own') }, { weight: 1, arbitrary: fc.constantFrom('evil.example', 'localhost', 'LOCALHOST') }),
      type: fc.oneof(
        { weight: 14, arbitrary: fc.constant('application/json') },
        { weight: 1, arbitrary: fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'none') },
      ),
      site: fc.oneof({ weight: 14, arbitrary: fc.constant('none') }, { weight: 1, arbitrary: fc.constantFrom('same-origin', 'cross-site', 'same-site') }),
      method: fc.oneof({ weight: 20, arbitrary: fc.constant('POST') }, { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE', 'OPTIONS') }),
      raw: fc.oneof(
        { weight: 20, arbitrary: fc.constant(undefined) },
        {
          weight: 1,
          arbitrary: fc.constantFrom('', '{', 'null', '[]', '"x"', Buffer.from([0x7b, 0xff, 0x7d]), Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]), 'x'.repeat(256 * 1024 + 1)),
        },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
      ),
    });
    const seen = { accepted: 0, refused: new Map<string, number>() };
    await fc.assert(
      fc.asyncProperty(arb, async (a) => {
        const own = logins[a.who]!;
        const other = logins[a.who === 'dave' ? 'alice-web' : 'dave']!;
        let body = a.call.body;
        // A live read parks at the relay (real time) until mail comes: kept short here, and
        // exercised long in its own test.
        if (a.call.name === 'inbox' && isObject(body) && typeof body.after === 'string' && typeof body.wait_secs === 'number' && body.wait_secs > 0.05)
          body = { ...body, wait_secs: 0.02 };
        const headers: Record<string, string> = {};
        if (a.host !== 'own') headers.host = a.host === 'localhost' ? `localhost:${relay.port}` : a.host;
        if (a.origin !== 'none') headers.origin = a.origin === 'own' ? relay.origin : a.origin === 'http-variant' ? relay.origin.replace('https:', 'http:') : a.origin;
        if (a.type !== 'none') headers['content-type'] = a.type;
        if (a.site !== 'none') headers['sec-fetch-site'] = a.site;
        if (a.cookie !== 'none') headers.cookie = a.cookie === 'own' ? own.cookie : a.cookie === 'other' ? other.cookie : `${own.cookie.split('=')[0]}=garbage`;
        if (a.csrf !== 'none') headers['x-m4a-csrf'] = a.csrf === 'own' ? own.csrf : a.csrf === 'other' ? other.csrf : 'x'.repeat(43);
        const sent = a.raw !== undefined ? a.raw : (JSON.stringify(body) ?? '');
        const where = `${a.method} /web/api/${a.call.name} ${JSON.stringify({ ...a, call: undefined, raw: undefined })} ${String(sent).slice(0, 300)}`;
        // A page (the path as URL parsing resolves it, %2e%2e included) takes GET, the API POST.
        const resolved = new URL(`/web/api/${a.call.name}`, 'http://x').pathname;
        const was = await daemonState();
        const r = await net.request(`/web/api/${a.call.name}`, { method: a.method, headers, ...(a.method === 'GET' ? {} : { body: sent }) });
        assert.ok(r.status < 500, `${where}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
        if (r.status !== 200) {
          const code = assertEnvelope({ status: r.status, json: r.json }, where);
          seen.refused.set(code, (seen.refused.get(code) ?? 0) + 1);
          if (code === 'rate_limited') assert.ok(r.headers['retry-after'], `${where}: 429 without Retry-After`);
          if (code === 'method_not_allowed') assert.equal(r.headers.allow, resolved.startsWith('/web/api/') ? 'POST' : 'GET, HEAD', `${where}: 405 and its Allow`);
          if (a.host !== 'own') assert.equal(code, 'forbidden_origin', where);
          const now = await daemonState();
          if (now !== was) {
            tally('relay').changed++;
            assert.fail(`${where}: a refused request changed the daemon's store (${code})`);
          }
        } else seen.accepted++;
        if (r.status === 200 && !resolved.startsWith('/web/api/')) {
          // A page: public, for GET, on the relay's own Host and Origin.
          assert.ok(a.method === 'GET' && a.host === 'own' && (a.origin === 'own' || a.origin === 'none'), `${where}: a page served from elsewhere`);
          assert.match(String(r.headers['content-type']), /^text\/html/, `${where}: a page`);
        } else if (r.status === 200 && a.call.name !== 'login') {
          // Accepted: only with the user's own login, from the relay's own origin, as JSON.
          assert.ok(a.method === 'POST' && a.host === 'own' && a.origin === 'own', `${where}: accepted from elsewhere`);
          assert.ok((a.cookie === 'own' || a.cookie === 'other') && a.csrf === a.cookie, `${where}: accepted without a login and its CSRF token`);
          assert.ok(a.type.startsWith('application/json') && (a.site === 'none' || a.site === 'same-origin'), `${where}: accepted as ${a.type}, ${a.site}`);
        }
        // A logout or revoke-all that went through ended a login the next runs need.
        if (r.status === 200 && (a.call.name === 'logout' || a.call.name === 'revoke-all')) for (const u of ['alice-web', 'dave']) await login(u);
      }),
      runs(300),
    );
    // The runs reached the daemon's node and were refused for many reasons, not one setup failure.
    if (process.env.M4A_FUZZ_STATS) console.log('relay (a)', seen.accepted, Object.fromEntries(seen.refused));
    assert.ok(seen.accepted > 0 && seen.refused.size >= 5, `accepted ${seen.accepted}, refused ${JSON.stringify(Object.fromEntries(seen.refused))}`);
    await homeWorks('after the property');
  });

  it('(a) a long live read parks at the relay, not at the daemon, and mail for the person wakes it', async () => {
    const l = logins['alice-web']!;
    const first = await api(l, 'inbox', {});
    assert.equal(first.status, 200, first.text);
    const cursor = first.json.next_cursor as string;
    const reading = api(l, 'inbox', { after: cursor, wait_secs: 25 });
    await until('the read parked at the relay', () => relay.hub.parkedCount('home') === 1);
    const sent = await d.engine.send(
      { account: (await d.engine.store.getAccount('bot'))!, session: null },
      { to: { kind: 'direct', participant: 'alice' }, subject: 'wake the read', body: 'b' },
    );
    const r = await reading;
    assert.equal(r.status, 200, r.text);
    assert.ok(
      (r.json.messages as { message_id: string }[]).some((m) => m.message_id === sent.message_id),
      r.text,
    );
  });

  it('(b) a node with a valid token sending arbitrary frames: closed or ignored as documented; other nodes and users keep working', async () => {
    const fzBrowser = await login('fzuser');
    let node: TestNode | null = null;
    /** The mailboxes the live fz link's hello offered. */
    let liveOffered: readonly string[] = [];
    const connect = async (hello: boolean): Promise<TestNode> => {
      if (node && node.closed === null) node.ws.terminate();
      await until('the old fz link gone', () => !relay.hub.link('fz'));
      return (node = await until('fz connected', () =>
        TestNode.connect(relay.origin, { node: 'fz', token: tokens.fz!, caFile: tls.caFile, mailboxes: ['fzbox'], hello }).catch(() => null),
      ));
    };
    const arb = fc.record({ greeted: fc.boolean(), pending: fc.boolean(), frames: fc.array(frameArb, { minLength: 1, maxLength: 4 }) });
    const seen = { open: 0, closes: new Map<number, number>(), acks: 0, answered: 0 };
    await fc.assert(
      fc.asyncProperty(arb, async (a) => {
        const reused = node !== null && node.closed === null && a.greeted;
        const n = reused ? node! : await connect(a.greeted);
        if (!reused) liveOffered = a.greeted ? ['fzbox'] : [];
        const mark = n.frames.length;
        let pendingId = 'none';
        let browser: Promise<RelayAnswer> | null = null;
        // A browser call waits at the node (the relay asks only a node offering the grant's mailbox).
        if (a.greeted && a.pending && liveOffered.includes('fzbox')) {
          n.auto = null;
          browser = api(fzBrowser, 'get', { message_id: 'm-1' }, { node: true });
          const call = await n.next('call', mark);
          pendingId = call.id;
        }
        // The model of relay-nodes.ts: which frame closes the link, with which code.
        const { close, acks, answered, greeted, offered: afterFrames } = sendFrames(n.ws, a.frames, { greeted: a.greeted, offered: a.greeted ? liveOffered : [], pendingId });
        let offered = afterFrames;
        const where = JSON.stringify(a).slice(0, 600);
        if (close === null) {
          // Still open: a last valid frame, and its ack (or welcome), shows every frame before it was read.
          if (greeted) {
            // The relay's WebSocket answers a ping after every frame before it was handled (and
            // their acks sent).
            await new Promise<void>((r) => {
              n.ws.once('pong', () => r());
              n.ws.ping();
            });
          } else {
            // Said hello after all, so the link is greeted for the next run.
            n.send({ t: 'hello', node: 'fz', mailboxes: ['fzbox'], version: 'sync' });
            await n.next('welcome', mark);
            offered = ['fzbox'];
          }
          assert.equal(n.closed, null, `${where}: closed though every frame was valid`);
          liveOffered = offered;
        } else {
          await until(`${where}: closed with ${close}`, () => n.closed !== null, 5_000, 5);
          assert.equal(n.closed, close, `${where}: the close code`);
        }
        if (close === null) seen.open++;
        else seen.closes.set(close, (seen.closes.get(close) ?? 0) + 1);
        seen.acks += acks.length;
        if (answered) seen.answered++;
        assert.deepEqual(
          n.frames
            .slice(mark)
            .filter((x) => x.t === 'ack')
            .map((x) => (x.t === 'ack' ? { mailbox: x.mailbox, cursor: x.cursor } : null)),
          acks,
          `${where}: one ack per valid mail frame`,
        );
        if (browser) {
          if (!answered && close === null) n.answer(pendingId, 200, { late: true });
          const r = await browser;
          if (answered) {
            assert.equal(r.status, answered.status, `${where}: the node's status reaches the browser`);
            if (answered.status !== 204 && answered.body !== undefined) assert.deepEqual(r.json, answered.body, `${where}: the node's body reaches the browser`);
          } else if (close === null) assert.deepEqual([r.status, r.json], [200, { late: true }], where);
          else {
            assert.equal(r.status, 503, `${where}: ${r.text}`);
            assert.equal(r.json.error.code, 'relay_unavailable');
          }
        }
        n.auto = (c) => ({ status: 200, body: { account: c.mailbox } });
        await homeWorks(where);
      }),
      runs(150, 0.5),
    );
    if (process.env.M4A_FUZZ_STATS) console.log('relay (b)', seen.open, Object.fromEntries(seen.closes), seen.acks, seen.answered);
    assert.ok(
      seen.open > 0 && seen.closes.size >= 2 && seen.answered > 0,
      `open ${seen.open}, closes ${JSON.stringify(Object.fromEntries(seen.closes))}, answered ${seen.answered}`,
    );
    if (node) (node as TestNode).ws.terminate();
    assert.ok(relay.hub.link('home'), "the daemon's link stayed");
  });

  it('(b) a burst of answers to nobody is ignored; a node socket torn mid-frame leaves the relay serving', async () => {
    const n = await until('fz connected', () => TestNode.connect(relay.origin, { node: 'fz', token: tokens.fz!, caFile: tls.caFile, mailboxes: ['fzbox'] }).catch(() => null));
    // Answers to calls nobody made, as fast as the socket takes them (under the relay's frame rate
    // bound, 500 a second, past which it closes the node 1008).
    for (let i = 0; i < 300; i++) n.send({ t: 'answer', id: `flood-${i}`, status: 200, body: { i } });
    n.mail('fzbox', 'after-flood');
    await until(`the ack after the flood (closed: ${n.closed})`, () => n.frames.some((f) => f.t === 'ack' && f.cursor === 'after-flood') || n.closed !== null);
    assert.equal(n.closed, null, 'the flood closed the link');
    n.ws.terminate();
    await until('fz gone', () => !relay.hub.link('fz'));
    // An upgrade by hand, half a frame's header, and the socket destroyed under it.
    const sock = tlsConnect({ host: '127.0.0.1', port: relay.port, ca: readFileSync(tls.caFile), servername: 'localhost' });
    await new Promise<void>((r) => sock.once('secureConnect', () => r()));
    sock.write(
      `GET /m4a/node HTTP/1.1\r\nhost: 127.0.0.1:${relay.port}\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\n` +
        `sec-websocket-key: ${randomBytes(16).toString('base64')}\r\nsec-websocket-protocol: m4a-relay.1\r\nauthorization: Bearer ${tokens.fz}\r\nx-m4a-node: fz\r\n\r\n`,
    );
    await new Promise<void>((r) => sock.once('data', () => r()));
    sock.write(Buffer.from([0x81, 0xfe, 0x10]));
    sock.destroy();
    await until('the torn link gone', () => !relay.hub.link('fz'));
    await homeWorks('after a torn frame');
  });
});
