// An attacker's pass over the relay's one listener, with tight bounds (relay-guard.ts) so each runs
// in seconds: idle and half-sent connections (TCP, TLS, plain HTTP behind a proxy), a flood of
// node upgrades with bad tokens, oversized headers and frames, a node flooding frames, and one
// user parking many live reads. Each time a normal caller is still answered promptly.
// Attackers dial from other loopback addresses (127.0.0.2-11) than the honest callers. The second
// part checks that the real `m4a relay serve` process keeps the default bounds. A hostile relay
// against a daemon's link: relay-hostile-link.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RELAY_LIMITS, RELAY_NODE_HEADER, RELAY_NODE_PATH, RELAY_SUBPROTOCOL } from '../src/wire/relay-link.js';
import type { Logger } from '../src/engine/log.js';
import { RelayState } from '../src/relay/relay-store.js';
import { startRelay, type RunningRelay } from '../src/relay/relay-server.js';
import { RELAY_GUARD, type RelayGuardLimits } from '../src/relay/relay-guard.js';
import { makeTestTls, type TestTls } from './support/test-tls.js';
import { TestBrowser, TestNode } from './support/relay-test-node.js';
import { CLI } from './support/shell-agents.js';
import { until } from './support/until.js';

const PW = 'correct horse battery';
const GUARD: Partial<RelayGuardLimits> = {
  connections: 200,
  perAddress: 20,
  idleTotal: 60,
  tlsHandshakeMs: 1000,
  headersMs: 1000,
  requestMs: 2000,
  keepAliveMs: 500,
  errorLingerMs: 500,
  nodeFailures: 5,
  nodeFramesPerSecond: 50,
  parkedPerUser: 3,
};

class CountingLog implements Logger {
  codes: string[] = [];
  debug = (o: object): void => void this.codes.push(String((o as { code?: unknown }).code));
  info = this.debug;
  warn = this.debug;
  error = this.debug;
  count(code: string): number {
    return this.codes.filter((c) => c === code).length;
  }
}

/** A socket's fate: when it closed (ms after `since`), or null while open. */
interface Watched {
  socket: Socket;
  closedAt: number | null;
}
const watch = (socket: Socket, since: number): Watched => {
  const w: Watched = { socket, closedAt: null };
  socket.on('error', () => undefined);
  socket.once('close', () => (w.closedAt = Date.now() - since));
  return w;
};
const openTcp = (port: number, from: string): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const s = netConnect({ host: '127.0.0.1', port, localAddress: from }, () => resolve(s));
    s.once('error', reject);
  });
const timed = async <T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> => {
  const t = Date.now();
  const value = await f();
  return { value, ms: Date.now() - t };
};

/** A node upgrade request over https from `from`; the refusal's status, Retry-After and code. */
function upgradeAttempt(
  port: number,
  ca: Buffer,
  from: string,
  headers: Record<string, string>,
  path = RELAY_NODE_PATH,
): Promise<{ status: number; retryAfter: string | undefined; code: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({
      host: '127.0.0.1',
      port,
      path,
      ca,
      localAddress: from,
      agent: false,
      headers: {
        host: `127.0.0.1:${port}`,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
        ...headers,
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const body = text ? (JSON.parse(text) as { error?: { code?: string } }) : {};
        resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], code: body.error?.code });
      });
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      resolve({ status: 101, retryAfter: undefined, code: undefined });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('relay under hostile clients', () => {
  let tls: TestTls;
  let ca: Buffer;
  let dir: string;
  let state: RelayState;
  let relay: RunningRelay;
  const log = new CountingLog();
  let token = '';
  const nodes: TestNode[] = [];
  const node = async (): Promise<TestNode> => {
    const n = await TestNode.connect(relay.origin, { node: 'n1', token, caFile: tls.caFile, mailboxes: ['alice'] });
    nodes.push(n);
    n.auto = (c) => (c.name === 'inbox' ? { status: 200, body: { messages: [] } } : { status: 200, body: { account: 'alice' } });
    return n;
  };
  const honest = async (): Promise<{ status: number; ms: number }> => {
    const b = new TestBrowser(relay.origin, tls.caFile);
    const { value, ms } = await timed(() => b.login('alice', PW));
    return { status: value.status, ms };
  };

  before(async () => {
    tls = makeTestTls();
    ca = readFileSync(tls.caFile);
    dir = mkdtempSync(join(tmpdir(), 'm4a-relay-hostile-'));
    state = await RelayState.open({ dataDir: dir });
    token = await state.addNode('n1');
    await state.addUser('alice', PW);
    await state.grant('alice', { node: 'n1', mailbox: 'alice', role: 'owner' });
    relay = await startRelay({ state, log, host: '127.0.0.1', port: 0, tls: { cert: tls.certFile, key: tls.keyFile }, guard: GUARD, hub: { helloMs: 1000, callTimeoutMs: 600 } });
  });
  after(async () => {
    for (const n of nodes) n.ws.terminate();
    await relay.close();
    await state.close();
    rmSync(dir, { recursive: true, force: true });
    tls.remove();
  });

  it('idle TCP sockets that never start TLS: one address keeps at most perAddress, the rest closed within the handshake bound; a login is answered at once', async () => {
    const t0 = Date.now();
    const idle: Watched[] = [];
    for (let i = 0; i < 50; i++) idle.push(watch(await openTcp(relay.port, '127.0.0.2'), t0));
    await until('the oldest past perAddress closed', () => idle.filter((w) => w.closedAt === null).length <= GUARD.perAddress!);
    const login = await honest();
    assert.equal(login.status, 200);
    assert.ok(login.ms < 2000, `login took ${login.ms} ms beside 50 idle sockets`);
    await until('every idle socket closed', () => idle.every((w) => w.closedAt !== null), 5000);
    const last = Math.max(...idle.map((w) => w.closedAt!));
    assert.ok(last < GUARD.tlsHandshakeMs! + 2500, `the last handshake-less socket closed after ${last} ms`);
  });

  it('TLS done, headers half sent (slow loris): 408 and closed within the headers bound, also when the sender never reads; another address is still answered', async () => {
    const base = relay.connections().open;
    const t0 = Date.now();
    const loris: Watched[] = [];
    for (let i = 0; i < 10; i++) {
      const s = tlsConnect({ socket: await openTcp(relay.port, '127.0.0.3'), servername: 'localhost', ca });
      await new Promise<void>((r, j) => s.once('secureConnect', r).once('error', j));
      s.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${relay.port}\r\nX-Slow: `);
      loris.push(watch(s, t0));
    }
    // One reads its answer; the others never read, so they never see the relay's FIN: the relay
    // must drop them itself.
    let answer = '';
    loris[0]!.socket.on('data', (c: Buffer) => (answer += c.toString('utf8')));
    assert.ok(relay.connections().open >= base + 10);
    const login = await honest();
    assert.equal(login.status, 200);
    await until('the reader closed', () => loris[0]!.closedAt !== null, 6000);
    assert.match(answer, /^HTTP\/1\.1 408/);
    await until('the relay dropped every slow sender', () => relay.connections().open <= base, 6000);
    const dropped = Date.now() - t0;
    assert.ok(dropped < GUARD.headersMs! + GUARD.errorLingerMs! + 2500, `the relay held slow senders for ${dropped} ms`);
    for (const w of loris) w.socket.destroy();
  });

  it('a kept-alive connection with no next request is closed after the keep-alive bound', async () => {
    const s = tlsConnect({ host: '127.0.0.1', port: relay.port, ca });
    await new Promise<void>((r, j) => s.once('secureConnect', r).once('error', j));
    let text = '';
    s.on('data', (c: Buffer) => (text += c.toString('utf8')));
    s.write(`GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1:${relay.port}\r\n\r\n`);
    await until('answered', () => text.includes('\r\n\r\n'));
    const t0 = Date.now();
    const w = watch(s, t0);
    await until('closed', () => w.closedAt !== null, 5000);
    assert.ok(w.closedAt! < GUARD.keepAliveMs! + 1500, `idle keep-alive closed after ${w.closedAt} ms`);
  });

  it('oversized headers are refused 431 in the error envelope', async () => {
    const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port: relay.port, path: '/', ca, agent: false, headers: { host: `127.0.0.1:${relay.port}`, 'x-big': 'a'.repeat(20_000) } },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString('utf8')));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal(r.status, 431);
    assert.equal((JSON.parse(r.body) as { error: { code: string } }).error.code, 'too_large');
  });

  it('upgrades on other paths or without the subprotocol are refused (404, 400)', async () => {
    const auth = { authorization: `Bearer ${token}`, [RELAY_NODE_HEADER]: 'n1', 'sec-websocket-protocol': RELAY_SUBPROTOCOL };
    assert.equal((await upgradeAttempt(relay.port, ca, '127.0.0.4', auth, '/web/api/inbox')).status, 404);
    const { 'sec-websocket-protocol': _, ...noProto } = auth;
    assert.equal((await upgradeAttempt(relay.port, ca, '127.0.0.5', noProto)).status, 400);
  });

  it('a flood of bad-token upgrades from one address: nodeFailures checked, the rest 429 with Retry-After, none stalls a valid node', async () => {
    const bad = { authorization: `Bearer ${'x'.repeat(43)}`, [RELAY_NODE_HEADER]: 'n1', 'sec-websocket-protocol': RELAY_SUBPROTOCOL };
    const before = log.count('relay_node_refused');
    const { value: answers, ms } = await timed(() => Promise.all(Array.from({ length: 60 }, () => upgradeAttempt(relay.port, ca, '127.0.0.6', bad))));
    const by = (s: number): number => answers.filter((a) => a.status === s).length;
    assert.equal(by(401), GUARD.nodeFailures, `401s: ${by(401)}`);
    assert.equal(by(429), 60 - GUARD.nodeFailures!);
    assert.ok(answers.filter((a) => a.status === 429).every((a) => Number(a.retryAfter) > 0 && a.code === 'rate_limited'));
    assert.equal(log.count('relay_node_refused') - before, GUARD.nodeFailures, 'one log line per checked attempt, none for the throttled');
    const { value: n, ms: nodeMs } = await timed(node);
    assert.ok(nodeMs < 2000, `the valid node took ${nodeMs} ms`);
    assert.equal(relay.hub.link('n1')?.node, 'n1');
    assert.ok(ms < 5000, `60 attempts took ${ms} ms`);
    void n;
  });

  it('a frame over the 1 MiB cap closes the node socket 1009', async () => {
    const n = nodes.at(-1) ?? (await node());
    n.ws.send(JSON.stringify({ t: 'mail', mailbox: 'alice', cursor: 'x'.repeat(RELAY_LIMITS.frameBytes) }));
    await until('closed', () => n.closed !== null);
    assert.equal(n.closed, 1009);
    await until('dropped', () => relay.hub.link('n1') === undefined);
  });

  it('a node flooding frames is closed 1008 and may reconnect', async () => {
    const n = await node();
    for (let i = 0; i < GUARD.nodeFramesPerSecond! * 3; i++) n.send({ t: 'answer', id: `nope-${i}`, status: 200, body: null });
    await until('closed', () => n.closed !== null);
    assert.equal(n.closed, 1008);
    assert.ok(log.count('relay_node_flood') >= 1);
    await until('dropped', () => relay.hub.link('n1') === undefined);
    // Pings count too: each costs the relay a pong.
    const p = await node();
    for (let i = 0; i < GUARD.nodeFramesPerSecond! * 3; i++) p.ws.ping();
    await until('closed after pings', () => p.closed !== null);
    assert.equal(p.closed, 1008);
    await until('dropped', () => relay.hub.link('n1') === undefined);
    await node();
  });

  it('one user parks at most parkedPerUser live reads; the next is 429, and a freed slot parks again', async () => {
    if (!relay.hub.link('n1')) await node();
    const b = new TestBrowser(relay.origin, tls.caFile);
    assert.equal((await b.login('alice', PW)).status, 200);
    const ac = new AbortController();
    const parked = Array.from({ length: GUARD.parkedPerUser! }, () => b.post('inbox', { after: 'c', wait_secs: 30 }, { signal: ac.signal }).catch(() => null));
    await until('all parked', () => relay.hub.parkedCount('n1') === GUARD.parkedPerUser);
    const over = await b.post('inbox', { after: 'c', wait_secs: 30 });
    assert.equal(over.status, 429);
    assert.equal(over.headers['retry-after'], '1');
    ac.abort();
    await Promise.all(parked);
    await until('unparked', () => relay.hub.parkedCount('n1') === 0);
    const again = await timed(() => b.post('inbox', { after: 'c', wait_secs: 1 }));
    assert.equal(again.value.status, 200);
    assert.ok(again.ms >= 900, `parked ${again.ms} ms`);
  });

  it('a flood from the same address as a node and a parked read closes neither: they are never the idle ones', async () => {
    const n = relay.hub.link('n1') ? nodes.at(-1)! : await node();
    n.auto = (c) => (c.name === 'inbox' ? { status: 200, body: { messages: [] } } : { status: 200, body: { account: 'alice' } });
    const b = new TestBrowser(relay.origin, tls.caFile);
    assert.equal((await b.login('alice', PW)).status, 200);
    const read = b.post('inbox', { after: 'c', wait_secs: 2 });
    await until('parked', () => relay.hub.parkedCount('n1') === 1);
    const t0 = Date.now();
    const idle: Watched[] = [];
    for (let i = 0; i < GUARD.perAddress! * 2; i++) idle.push(watch(await openTcp(relay.port, '127.0.0.1'), t0));
    assert.equal((await read).status, 200, 'the parked read was answered');
    assert.equal(n.closed, null, "the node's socket stayed open");
    assert.ok(relay.connections().evicted > 0);
    for (const w of idle) w.socket.destroy();
  });

  it('a call the node never answers fails relay_unavailable after the call timeout and the node is told to cancel', async () => {
    const n = relay.hub.link('n1') ? nodes.at(-1)! : await node();
    n.auto = null;
    const b = new TestBrowser(relay.origin, tls.caFile);
    assert.equal((await b.login('alice', PW)).status, 200);
    const { value: r, ms } = await timed(() => b.post('me', {}));
    assert.equal(r.body.error?.code, 'relay_unavailable');
    assert.ok(ms >= 550 && ms < 3000, `failed after ${ms} ms`);
    const call = n.calls().at(-1)!;
    await until('cancel sent', () => n.frames.some((f) => f.t === 'cancel' && f.id === call.id));
  });

  it('behind a proxy (plain HTTP): half-sent headers get 408 within the bound, idle sockets per address are bounded, a request is answered', async () => {
    const plain = await startRelay({ state, log, host: '127.0.0.1', port: 0, publicUrl: 'https://relay.example', guard: GUARD });
    try {
      const t0 = Date.now();
      const idle: Watched[] = [];
      for (let i = 0; i < 40; i++) idle.push(watch(await openTcp(plain.port, '127.0.0.7'), t0));
      await until('bounded per address', () => idle.filter((w) => w.closedAt === null).length <= GUARD.perAddress!);
      const base = plain.connections().open - idle.filter((w) => w.closedAt === null).length;
      let answer = '';
      idle.at(-1)!.socket.on('data', (c: Buffer) => (answer += c.toString('utf8')));
      idle.at(-1)!.socket.write('GET / HTTP/1.1\r\nHost: relay.example\r\n');
      const page = await timed(
        () =>
          new Promise<number>((resolve, reject) => {
            const req = httpRequest({ host: '127.0.0.1', port: plain.port, path: '/', agent: false, headers: { host: 'relay.example' } }, (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            });
            req.on('error', reject);
            req.end();
          }),
      );
      assert.equal(page.value, 200);
      assert.ok(page.ms < 1000, `the page took ${page.ms} ms`);
      await until('the relay dropped every idle socket', () => plain.connections().open <= base, 6000);
      const dropped = Date.now() - t0;
      assert.ok(dropped < GUARD.headersMs! + GUARD.errorLingerMs! + 2500, `the relay held idle sockets for ${dropped} ms`);
      await until('the reader got its answer', () => answer !== '');
      assert.match(answer, /^HTTP\/1\.1 408/);
      for (const w of idle) w.socket.destroy();
    } finally {
      await plain.close();
    }
  });
});

describe('m4a relay serve (the real process) keeps its default limits', () => {
  let tls: TestTls;
  let ca: Buffer;
  let dir: string;
  let child: ChildProcess;
  let port = 0;

  before(async () => {
    tls = makeTestTls();
    ca = readFileSync(tls.caFile);
    dir = mkdtempSync(join(tmpdir(), 'm4a-relay-serve-'));
    child = spawn(process.execPath, [CLI, 'relay', 'serve', '--listen', '127.0.0.1:0', '--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--data-dir', dir], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    port = await new Promise<number>((resolve, reject) => {
      child.stderr!.on('data', (c: Buffer) => {
        err += c.toString('utf8');
        const m = /"code":"relay_listening"[^\n]*"port":(\d+)/.exec(err);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`the relay exited (${code}): ${err}`)));
    });
  });
  after(async () => {
    if (child.exitCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
    tls.remove();
  });

  it(`a handshake-less socket and a slow sender are closed within ${RELAY_GUARD.tlsHandshakeMs / 1000} s and ${RELAY_GUARD.headersMs / 1000} s`, async () => {
    const t0 = Date.now();
    const bare = watch(await openTcp(port, '127.0.0.9'), t0);
    const slow = tlsConnect({ socket: await openTcp(port, '127.0.0.9'), servername: 'localhost', ca });
    await new Promise<void>((r, j) => slow.once('secureConnect', r).once('error', j));
    slow.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: `);
    let answer = '';
    slow.on('data', (c: Buffer) => (answer += c.toString('utf8')));
    const loris = watch(slow, t0);
    await until('both closed', () => bare.closedAt !== null && loris.closedAt !== null, RELAY_GUARD.tlsHandshakeMs + 5000);
    assert.ok(bare.closedAt! >= RELAY_GUARD.tlsHandshakeMs - 500 && bare.closedAt! < RELAY_GUARD.tlsHandshakeMs + 2000, `no handshake: closed after ${bare.closedAt} ms`);
    assert.ok(loris.closedAt! < RELAY_GUARD.headersMs + 2500, `slow headers: closed after ${loris.closedAt} ms`);
    assert.match(answer, /^HTTP\/1\.1 408/);
  });

  it(`the ${RELAY_GUARD.nodeFailures + 1}th bad node upgrade from one address is 429 with Retry-After`, async () => {
    const bad = { authorization: `Bearer ${'y'.repeat(43)}`, [RELAY_NODE_HEADER]: 'ghost', 'sec-websocket-protocol': RELAY_SUBPROTOCOL };
    for (let i = 0; i < RELAY_GUARD.nodeFailures; i++) assert.equal((await upgradeAttempt(port, ca, '127.0.0.10', bad)).status, 401);
    const over = await upgradeAttempt(port, ca, '127.0.0.10', bad);
    assert.equal(over.status, 429);
    assert.equal(over.code, 'rate_limited');
    assert.ok(Number(over.retryAfter) > 0 && Number(over.retryAfter) <= RELAY_GUARD.nodeFailureWindowMs / 1000);
    assert.equal((await upgradeAttempt(port, ca, '127.0.0.11', bad)).status, 401, 'another address is not throttled');
  });
});
