// Security matrix A: idle and anonymous connections cannot freeze the daemon. They cost no /proc
// lookup (attestation waits for a credential that verifies, and runs on a worker thread), they are
// bounded per peer and in total (the oldest unproven one is closed), and a connection that does not
// finish its headers is closed after the headers deadline. Counted, never timed: the figures are in
// `npm run bench -- --only flood` (docs/benchmarks.md).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { createLinuxAttestor, type LinuxAttestor } from '../../../src/attest/index.js';
import { PACKAGE_ROOT } from '../../../src/daemon/version.js';
import type { MailClient } from '../../../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from '../../support/test-daemon.js';
import { http } from '../helpers.js';
import { until } from '../../support/until.js';

const PER_PEER = 40;

/** Opens `n` connections that send nothing; resolves once all are connected. */
async function idle(port: number, n: number): Promise<Socket[]> {
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const s = connect(port, '127.0.0.1', () => resolve(s));
          s.on('error', reject);
          s.on('close', () => ended.add(s));
          s.resume(); // flowing, so the daemon's close is seen
        }),
    ),
  );
}

const ended = new WeakSet<Socket>();
const closed = (s: Socket) => ended.has(s);

describe('security matrix A: idle connections', () => {
  let d: TestDaemon;
  let attestor: LinuxAttestor;
  let alice: MailClient;
  let aliceSecret: string;
  const held: Socket[] = [];

  before(async () => {
    attestor = createLinuxAttestor({ hostId: 'matrix-a', packageRoot: PACKAGE_ROOT });
    d = await startTestDaemon({ attestor, gate: { perPeer: PER_PEER, total: 4 * PER_PEER }, headersTimeoutMs: 1_000 });
    ({ client: alice, secret: aliceSecret } = await d.account('alice'));
    await alice.whoami();
  });
  after(async () => {
    for (const s of held) s.destroy();
    await d.stop();
  });

  it('attestation runs on a worker thread, not on the event loop', () => {
    assert.equal(attestor.stats().mode, 'worker');
  });

  it('idle connections, /health and refused credentials cost no attestation', async () => {
    const before = attestor.stats();
    held.push(...(await idle(d.port, PER_PEER - 5)));
    for (let i = 0; i < 20; i++) assert.equal((await http(d.url, '/health', { method: 'GET', fresh: true })).status, 200);
    for (let i = 0; i < 20; i++) {
      const r = await http(d.url, '/mail/inbox', { token: 'm4a_not-a-secret', body: '{}', fresh: true });
      assert.equal(r.status, 401);
      assert.equal(r.json.error.code, 'unauthenticated');
    }
    const after = attestor.stats();
    assert.equal(after.batches, before.batches, 'no attestation batch ran');
    assert.equal(after.netScans, before.netScans, 'no /proc/net read');
    // A request with a credential is attested (and so the counters above can move).
    assert.equal((await http(d.url, '/mail/inbox', { token: aliceSecret, body: '{}', fresh: true })).status, 200);
    assert.ok(attestor.stats().batches > after.batches, 'a verified request is attested');
  });

  it('over the per-peer bound the oldest unproven connections are closed, and a newcomer is answered', async () => {
    for (const s of held.splice(0)) s.destroy();
    const first = await idle(d.port, PER_PEER);
    const second = await idle(d.port, PER_PEER / 2);
    held.push(...first, ...second);
    await until('the oldest half was closed', () => first.slice(0, PER_PEER / 2).every(closed), 5_000);
    assert.ok(first.slice(PER_PEER / 2).every((s) => !closed(s)) && second.every((s) => !closed(s)), 'the newer connections stay open');
    // A new agent request arrives while the bound is full: it is answered, and attested.
    const who = await http(d.url, '/mail/whoami', { token: aliceSecret, body: '{}', fresh: true });
    assert.equal(who.status, 200);
    assert.equal(who.json.account, 'alice');
  });

  it('a proven connection is not bounded: a keep-alive client that presented its credential stays open', async () => {
    for (const s of held.splice(0)) s.destroy();
    const s = (await idle(d.port, 1))[0] as Socket;
    held.push(s);
    const answered = new Promise<string>((resolve) => {
      let buf = '';
      s.on('data', (c: Buffer) => {
        buf += c.toString('utf8');
        if (buf.includes('\r\n\r\n')) resolve(buf);
      });
    });
    const body = '{}';
    s.write(
      `POST /mail/whoami HTTP/1.1\r\nhost: 127.0.0.1:${d.port}\r\nauthorization: Bearer ${aliceSecret}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    );
    assert.match(await answered, /^HTTP\/1\.1 200/);
    held.push(...(await idle(d.port, PER_PEER + 10)));
    await until('unproven ones were closed', () => held.filter((x) => x !== s && closed(x)).length >= 10, 5_000);
    assert.ok(!closed(s), 'the proven connection stays');
  });

  it('a connection that never finishes its headers is closed after the headers deadline', async () => {
    for (const s of held.splice(0)) s.destroy();
    const [slow] = await idle(d.port, 1);
    held.push(slow as Socket);
    (slow as Socket).write('GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n');
    const silent = (await idle(d.port, 1))[0] as Socket;
    held.push(silent);
    await until('both closed by the 1 s headers deadline', () => closed(slow as Socket) && closed(silent), 8_000);
  });

  it('a worker that does not answer in time is replaced, and its batch refused by name, not left hanging', async (t) => {
    // 1 ms is shorter than a worker's start, so every batch times out: each answer is
    // attestor_unavailable, and each timed-out worker is replaced by a new one.
    const stuck = createLinuxAttestor({ hostId: 'matrix-a-stuck', packageRoot: PACKAGE_ROOT, batchTimeoutMs: 1 });
    t.after(() => stuck.close?.());
    const conn = { localAddress: '127.0.0.1', localPort: d.port, remoteAddress: '127.0.0.1', remotePort: 1 };
    assert.deepEqual(await stuck.attest(conn), { ok: false, reason: 'attestor_unavailable' });
    assert.deepEqual(await stuck.attest(conn), { ok: false, reason: 'attestor_unavailable' });
    assert.ok(stuck.stats().workersStarted >= 2, `a new worker after the stuck one (started ${stuck.stats().workersStarted})`);
    assert.equal(stuck.stats().mode, 'worker', 'never falls back to the event loop');
  });

  it('a request being answered is never closed by the bound (a browser login whose body is arriving survives a flood)', async () => {
    for (const s of held.splice(0)) s.destroy();
    // A browser login whose body is still arriving: a request in flight on an unproven connection.
    const slow = (await idle(d.port, 1))[0] as Socket;
    held.push(slow);
    const origin = `http://127.0.0.1:${d.port}`;
    slow.write(`POST /web/api/login HTTP/1.1\r\nhost: 127.0.0.1:${d.port}\r\norigin: ${origin}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{`);
    await until('the headers are read: the request is in flight', () => d.connections().busy === 1, 5_000);
    const flood = await idle(d.port, PER_PEER + 5);
    held.push(...flood);
    await until('the flood pushed out its own oldest', () => flood.slice(0, 5).every(closed), 5_000);
    assert.ok(!closed(slow), 'the connection whose request is in flight stays');
  });

  it('the LAN listener of the browser door has the same bounds, deadline and error envelope', async (t) => {
    const lan = await startTestDaemon({ storeKind: 'memory', webLan: '127.0.0.2:0', gate: { perPeer: 10, total: 40 }, headersTimeoutMs: 1_000 });
    t.after(() => lan.stop());
    const port = Number(new URL(lan.webLanUrl as string).port);
    const open = (n: number) =>
      Promise.all(
        Array.from(
          { length: n },
          () =>
            new Promise<Socket>((resolve, reject) => {
              const s = connect({ port, host: '127.0.0.2' }, () => resolve(s));
              s.on('error', reject);
              s.on('close', () => ended.add(s));
              s.resume();
            }),
        ),
      );
    const first = await open(10);
    const more = await open(3);
    await until('the oldest three were closed', () => first.slice(0, 3).every(closed), 5_000);
    assert.ok(more.every((s) => !closed(s)));
    await until('the rest closed by the headers deadline', () => [...first, ...more].every(closed), 8_000);
    const answer = await new Promise<string>((resolve, reject) => {
      const s = connect({ port, host: '127.0.0.2' }, () => s.write('NOT HTTP\r\n\r\n'));
      let data = '';
      s.on('data', (c: Buffer) => (data += c.toString('utf8')));
      s.on('error', reject);
      s.on('close', () => resolve(data));
    });
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.equal(JSON.parse(answer.split('\r\n\r\n')[1] ?? '').error.code, 'malformed');
  });
});
