// The relay over TLS on 127.0.0.1 with a real SQLite store: nodes dial with the real protocol
// (test/support/relay-test-node.ts), browsers call the API with Origin, cookie and CSRF token.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { RELAY_LIMITS } from '../src/wire/relay-link.js';
import type { Logger } from '../src/engine/log.js';
import { RelayState } from '../src/relay/relay-store.js';
import { startRelay, type RunningRelay } from '../src/relay/relay-server.js';
import { makeTestTls, type TestTls } from './support/test-tls.js';
import { TestBrowser, TestNode, dial, type Refusal } from './support/relay-test-node.js';
import { until } from './support/until.js';

const PW = 'correct horse battery';

class RecordingLog implements Logger {
  lines: Record<string, unknown>[] = [];
  debug = (o: object): void => void this.lines.push(o as Record<string, unknown>);
  info = this.debug;
  warn = this.debug;
  error = this.debug;
  has(code: string): boolean {
    return this.lines.some((l) => l.code === code);
  }
}

describe('relay server', () => {
  let tls: TestTls;
  let dir: string;
  let state: RelayState;
  let relay: RunningRelay;
  const log = new RecordingLog();
  const tokens: Record<string, string> = {};
  const nodes: TestNode[] = [];
  let n1: TestNode;
  let n2: TestNode;

  const start = async (port = 0): Promise<void> => {
    state = await RelayState.open({ dataDir: dir });
    relay = await startRelay({ state, log, host: '127.0.0.1', port, tls: { cert: tls.certFile, key: tls.keyFile }, hub: { takeoverPingMs: 300, helloMs: 1000 } });
  };
  const stop = async (): Promise<void> => {
    await relay.close();
    await state.close();
  };
  const node = async (id: string, mailboxes: string[]): Promise<TestNode> => {
    const n = await TestNode.connect(relay.origin, { node: id, token: tokens[id]!, caFile: tls.caFile, mailboxes });
    nodes.push(n);
    return n;
  };
  const browser = async (user: string): Promise<TestBrowser> => {
    const b = new TestBrowser(relay.origin, tls.caFile);
    assert.equal((await b.login(user, PW)).status, 200);
    return b;
  };

  before(async () => {
    tls = makeTestTls();
    dir = mkdtempSync(join(tmpdir(), 'm4a-relay-'));
    state = await RelayState.open({ dataDir: dir });
    for (const n of ['n1', 'n2', 'n3', 'n4']) tokens[n] = await state.addNode(n);
    for (const u of ['alice', 'dave', 'bob', 'carol', 'nogrant']) await state.addUser(u, PW);
    await state.grant('alice', { node: 'n1', mailbox: 'alice', role: 'owner' });
    await state.grant('dave', { node: 'n1', mailbox: 'alice', role: 'delegate' });
    await state.grant('bob', { node: 'n2', mailbox: 'bob', role: 'owner' });
    await state.grant('carol', { node: 'n1', mailbox: 'carol', role: 'owner' });
    await state.close();
    await start();
  });
  after(async () => {
    for (const n of nodes) n.ws.terminate();
    await stop();
    rmSync(dir, { recursive: true, force: true });
    tls.remove();
  });

  it('refuses a wrong token, an unknown node and another node’s token alike (401, logged)', async () => {
    const cases = [
      { node: 'n1', token: 'A'.repeat(43) },
      { node: 'nobody', token: tokens.n1! },
      { node: 'n2', token: tokens.n1! },
    ];
    for (const c of cases) {
      const before = log.lines.filter((l) => l.code === 'relay_node_refused').length;
      const r = (await dial(relay.origin, { ...c, caFile: tls.caFile })) as Refusal;
      assert.equal(r.status, 401, JSON.stringify(c));
      assert.equal(r.body.error.code, 'unauthenticated');
      assert.equal(log.lines.filter((l) => l.code === 'relay_node_refused').length, before + 1);
    }
  });

  it('refuses a second live connection (409 node_in_use) and replaces one that stopped answering pings', async () => {
    const live = await node('n3', ['x']);
    const r = (await dial(relay.origin, { node: 'n3', token: tokens.n3!, caFile: tls.caFile })) as Refusal;
    assert.equal(r.status, 409);
    assert.equal(r.body.error.code, 'node_in_use');
    assert.equal(live.closed, null);
    await live.close();
    const dead = await TestNode.connect(relay.origin, { node: 'n3', token: tokens.n3!, caFile: tls.caFile, mailboxes: ['x'], autoPong: false });
    nodes.push(dead);
    const fresh = await node('n3', ['x']);
    assert.ok(fresh.ws.readyState === WebSocket.OPEN);
    await until('the dead socket terminated', () => dead.closed !== null);
    assert.ok(log.has('relay_node_replaced'));
    await fresh.close();
  });

  it('forwards a call with the grant’s mailbox, whatever the body says, and answers with the node’s status and body', async () => {
    n1 = await node('n1', ['alice', 'other']);
    n2 = await node('n2', ['bob']);
    n1.auto = (c) => ({ status: 200, body: { account: c.mailbox, echo: c.body } });
    const b = await browser('alice');
    const login = await new TestBrowser(relay.origin, tls.caFile).login('alice', PW);
    assert.match(String(login.headers['set-cookie']), /^m4a_session_\d+=[\w-]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/);
    assert.deepEqual(
      { ...login.body, csrf: undefined },
      { account: 'alice', label: 'alice', operator: false, csrf: undefined, relay: { user: 'alice', node: 'n1', role: 'owner' } },
    );
    const r = await b.post('me', {});
    assert.equal(r.status, 200);
    assert.equal(r.headers['cache-control'], 'no-store');
    assert.equal(r.body.account, 'alice');
    const hostile = await b.post('inbox', { mailbox: 'bob', node: 'n2', account: 'other' });
    assert.equal(hostile.status, 200);
    const calls = n1.calls();
    assert.deepEqual(
      calls.map((c) => [c.name, c.mailbox, c.delegate]),
      [
        ['me', 'alice', undefined],
        ['inbox', 'alice', undefined],
      ],
    );
    assert.deepEqual(calls[1]!.body, { mailbox: 'bob', node: 'n2', account: 'other' });
    assert.equal(n2.calls().length, 0);
    // An error answer passes through as the node gave it.
    n1.auto = () => ({ status: 404, body: { error: { code: 'unknown_message' } } });
    const e = await b.post('get', { message_id: 'm-x' });
    assert.equal(e.status, 404);
    assert.equal(e.body.error?.code, 'unknown_message');
    n1.auto = (c) => ({ status: 200, body: { account: c.mailbox } });
  });

  it('refuses a call outside RELAYED_WEB_CALLS (not_relayed) and forwards nothing', async () => {
    const before = n1.calls().length;
    const b = await browser('alice');
    for (const name of ['admin/overview', 'tasks', 'search', 'wake/list']) {
      const r = await b.post(name, {});
      assert.equal(r.status, 403, name);
      assert.equal(r.body.error?.code, 'not_relayed');
      assert.equal(r.body.error?.call, name);
    }
    assert.equal(n1.calls().length, before);
  });

  it('marks a delegate’s calls with delegate; an owner’s carry none', async () => {
    const before = n1.calls().length;
    const d = await browser('dave');
    assert.equal((await d.post('send', { to: 'claude', body: 'hi', delegate: 'alice' })).status, 200);
    const c = n1.calls().slice(before);
    assert.deepEqual(
      c.map((x) => [x.name, x.mailbox, x.delegate]),
      [['send', 'alice', 'dave']],
    );
  });

  it('says relay_unavailable for a node that is away, and not_relayed for a mailbox the node does not offer', async () => {
    const b = await browser('bob');
    await n2.close();
    await until('n2 gone', async () => (await b.post('me', {})).status === 503);
    const r = await b.post('me', {});
    assert.equal(r.body.error?.code, 'relay_unavailable');
    assert.equal(r.body.error?.node, 'n2');
    const c = await browser('carol');
    const nr = await c.post('me', {});
    assert.equal(nr.status, 403);
    assert.equal(nr.body.error?.code, 'not_relayed');
    assert.equal(nr.body.error?.mailbox, 'carol');
  });

  it('refuses a user without a grant at login (not_relayed) and leaves no login', async () => {
    const b = new TestBrowser(relay.origin, tls.caFile);
    const r = await b.login('nogrant', PW);
    assert.equal(r.status, 403);
    assert.equal(r.body.error?.code, 'not_relayed');
    assert.equal(r.headers['set-cookie'], undefined);
    assert.equal((await b.login('nogrant', 'wrong password!')).body.error?.code, 'bad_credentials');
  });

  it('refuses a missing or wrong CSRF token, a foreign Origin, no Origin and a non-JSON body', async () => {
    const b = await browser('alice');
    const noCsrf = await b.post('me', {}, { csrf: null });
    assert.equal(noCsrf.body.error?.code, 'csrf_failed');
    assert.equal((await b.post('me', {}, { csrf: 'x'.repeat(43) })).body.error?.code, 'csrf_failed');
    const foreign = await b.post('me', {}, { origin: 'https://evil.example' });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.body.error?.code, 'forbidden_origin');
    assert.equal((await b.post('me', {}, { origin: null })).body.error?.code, 'csrf_failed');
    assert.equal((await b.post('me', {}, { type: 'text/plain' })).body.error?.code, 'csrf_failed');
    assert.equal((await b.post('me', {}, { cookie: null })).body.error?.code, 'unauthenticated');
  });

  it('parks a live read at the relay until a mail frame, then asks the node again with wait 0', async () => {
    n1.auto = null;
    const b = await browser('alice');
    const start = n1.frames.length;
    const read = b.post('inbox', { after: 'c1', wait_secs: 25 });
    const first = await n1.next('call', start);
    assert.deepEqual([first.name, first.body], ['inbox', { after: 'c1', wait_secs: 0 }]);
    n1.answer(first.id, 200, { messages: [], next_cursor: 'c1', unread: 0 });
    await until('the read parked', () => relay.hub.parkedCount('n1') === 1);
    const mark = n1.frames.length;
    n1.mail('alice', 'c2');
    const ack = await n1.next('ack', mark);
    assert.deepEqual(ack, { t: 'ack', mailbox: 'alice', cursor: 'c2' });
    const second = await n1.next('call', mark);
    assert.deepEqual(second.body, { after: 'c1', wait_secs: 0 });
    n1.answer(second.id, 200, { messages: [{ message_id: 'm-1' }], next_cursor: 'c2', unread: 1 });
    const r = await read;
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.messages, [{ message_id: 'm-1' }]);
    assert.equal(relay.hub.parkedCount('n1'), 0);
  });

  it('sends cancel when the browser goes away mid-call', async () => {
    n1.auto = null;
    const b = await browser('alice');
    const mark = n1.frames.length;
    const ac = new AbortController();
    const gone = b.post('get', { message_id: 'm-1' }, { signal: ac.signal }).catch(() => 'aborted');
    const call = await n1.next('call', mark);
    ac.abort();
    assert.equal(await gone, 'aborted');
    const cancel = await n1.next('cancel', mark);
    assert.equal(cancel.id, call.id);
    n1.pending.clear();
  });

  it(`refuses the call past ${RELAY_LIMITS.callsInFlight} in flight to one node (rate_limited)`, async () => {
    n1.auto = null;
    const b = await browser('alice');
    const held = Array.from({ length: RELAY_LIMITS.callsInFlight }, () => b.post('me', {}));
    await until('all calls at the node', () => n1.pending.size === RELAY_LIMITS.callsInFlight);
    const over = await b.post('me', {});
    assert.equal(over.status, 429);
    assert.equal(over.body.error?.code, 'rate_limited');
    for (const id of [...n1.pending.keys()]) n1.answer(id, 200, { ok: true });
    assert.ok((await Promise.all(held)).every((r) => r.status === 200));
    n1.auto = (c) => ({ status: 200, body: { account: c.mailbox } });
  });

  it('closes a node sending an invalid frame (1008, logged) and fails its calls with relay_unavailable', async () => {
    const n4 = await node('n4', ['zed']);
    await state.addUser('zed', PW);
    await state.grant('zed', { node: 'n4', mailbox: 'zed', role: 'owner' });
    const b = await browser('zed');
    const pending = b.post('me', {});
    await until('the call at n4', () => n4.pending.size === 1);
    n4.send({ t: 'answer', id: 'x', status: 700, body: null });
    await until('n4 closed', () => n4.closed !== null);
    assert.equal(n4.closed, 1008);
    assert.ok(log.has('relay_frame_invalid'));
    const r = await pending;
    assert.equal(r.status, 503);
    assert.equal(r.body.error?.code, 'relay_unavailable');
  });

  it('closes a node that says no hello in time, or sends mail before its hello (1008, logged)', async () => {
    const silent = await TestNode.connect(relay.origin, { node: 'n3', token: tokens.n3!, caFile: tls.caFile, mailboxes: [], hello: false });
    nodes.push(silent);
    await until('the silent node closed', () => silent.closed !== null);
    assert.equal(silent.closed, 1008);
    assert.ok(log.has('relay_no_hello'));
    const early = await TestNode.connect(relay.origin, { node: 'n3', token: tokens.n3!, caFile: tls.caFile, mailboxes: [], hello: false });
    nodes.push(early);
    early.mail('x', 'c1');
    await until('the early node closed', () => early.closed !== null);
    assert.equal(early.closed, 1008);
    assert.equal(early.frames.length, 0, 'no welcome, no ack');
  });

  it('welcomes a reconnecting node with the acknowledged cursors; after a restart on the same data dir, none, and the login still works', async () => {
    const b = await browser('alice');
    await n1.close();
    const again = await node('n1', ['alice']);
    assert.deepEqual(again.frames[0], { t: 'welcome', cursors: { alice: 'c2' } });
    again.ws.terminate();
    const port = relay.port;
    await stop();
    await start(port);
    const after = await node('n1', ['alice']);
    after.auto = (c) => ({ status: 200, body: { account: c.mailbox } });
    assert.deepEqual(after.frames[0], { t: 'welcome', cursors: {} });
    const r = await b.post('me', {});
    assert.equal(r.status, 200);
    assert.equal(r.body.account, 'alice');
  });
});
