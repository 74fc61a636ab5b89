// The stream door's client against a stand-in that speaks the framing (test/support/stream-fake.ts):
// what goes on the wire (one connection, hello once, ids, cancel, agent_session), answers in any
// order, timeouts, giving up, reconnecting, pushed mail, and when MailClient goes over HTTP instead.
// The real daemon: test/stream-client.test.ts.
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MailClient } from '../src/client/http-client.js';
import { DaemonUnreachable } from '../src/client/errors.js';
import { socketProblem, type MailEvent } from '../src/client/stream-transport.js';
import { MailError } from '../src/wire/errors.js';
import { StreamFake, type Frame } from './support/stream-fake.js';
import { until } from './support/until.js';

const CLIENT_TS = new URL('../src/client/http-client.ts', import.meta.url).href;

describe('stream client protocol (stand-in daemon)', () => {
  let dir: string;
  let sock: string;
  let fake: StreamFake;
  let http: Server;
  let url: string;
  let httpCalls: string[];
  const clients: MailClient[] = [];
  const client = (o: Partial<ConstructorParameters<typeof MailClient>[0]> = {}): MailClient => {
    const c = new MailClient({ url, token: 'secret-1', socket: sock, ...o });
    clients.push(c);
    return c;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'm4a-stream-proto-'));
    http = createServer((req, res) => {
      httpCalls.push(req.url ?? '');
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ via: 'http', path: req.url })));
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((r) => http.close(r));
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    httpCalls = [];
    sock = join(dir, `m4a-${Math.random().toString(36).slice(2)}.sock`);
    fake = new StreamFake(sock);
    await fake.listen();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    await fake.close();
  });

  it('one connection and one hello; answers taken in any order', async () => {
    let parked: { f: Frame; conn: import('node:net').Socket } | null = null;
    fake.handlers.inbox = (f, conn) => ((parked = { f, conn }), 'later');
    const c = client({ clientName: 'proto-test/1' });
    const wait = c.inbox({ wait_secs: 5 });
    let waited = false;
    void wait.then(() => (waited = true));
    await until('the wait parked', () => parked);
    const sent = (await c.send({ to: 'codex', subject: 'hi', body: 'b' })) as unknown as { op: string; input: { to: string } };
    assert.deepEqual([sent.op, sent.input.to], ['send', 'codex'], 'the send behind the parked wait is answered first');
    assert.equal(waited, false);
    fake.answer(parked!.conn, parked!.f.id, { result: { messages: [], next_cursor: 'c9', unread: 0 } });
    assert.equal((await wait).next_cursor, 'c9');
    await c.whoami();
    assert.equal(fake.hellos, 1);
    assert.equal(fake.conns.size, 1);
    const hello = fake.frames.find((f) => f.op === 'hello')!;
    assert.deepEqual(hello.input, { token: 'secret-1', client: 'proto-test/1' });
    const ids = fake.frames.map((f) => f.id);
    assert.equal(new Set(ids).size, ids.length, 'every request has its own id');
    assert.deepEqual(fake.ops(), ['hello', 'inbox', 'send', 'whoami']);
    assert.deepEqual(httpCalls, []);
    assert.equal(c.streaming, true);
  });

  it("the daemon's error is a MailError with its details and no reason to go over HTTP", async () => {
    fake.handlers.send = () => ({ error: { code: 'too_large', message: 'subject too long', field: 'subject', limit: 256 } });
    const c = client();
    await assert.rejects(
      c.send({ to: 'codex', subject: 'x', body: 'b' }),
      (e: unknown) => e instanceof MailError && e.code === 'too_large' && e.details.field === 'subject' && e.details.limit === 256,
    );
    await c.whoami();
    assert.deepEqual(httpCalls, []);
    assert.equal(c.streaming, true);
  });

  it('a refused hello is the answer (unauthenticated), not a fallback', async () => {
    const c = client({ token: 'wrong' });
    await assert.rejects(c.whoami(), (e: unknown) => e instanceof MailError && e.code === 'unauthenticated');
    const mcp = await c.post('/mcp', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    assert.equal(mcp.status, 401, 'what POST /mcp answers');
    assert.equal((JSON.parse(mcp.text) as { error: { code: string } }).error.code, 'unauthenticated');
    assert.deepEqual(httpCalls, []);
    assert.equal(c.streaming, true);
  });

  it('a wait gets its wait time on top of the timeout; a request past its timeout is cancelled at the daemon', async () => {
    fake.handlers.inbox = (f, conn) => (setTimeout(() => fake.answer(conn, f.id, { result: { messages: [], next_cursor: null, unread: 0 } }), 600), 'later');
    fake.handlers.whoami = () => 'later';
    const c = client({ timeoutMs: 200 });
    assert.equal((await c.inbox({ wait_secs: 1 })).unread, 0, 'answered at 600 ms: within 200 ms + 1 s');
    await assert.rejects(c.whoami(), (e: unknown) => e instanceof MailError && e.code === 'internal' && /in time/.test(e.message));
    const who = fake.frames.find((f) => f.op === 'whoami')!;
    await until('the cancel', () => fake.frames.find((f) => f.op === 'cancel'));
    assert.deepEqual(fake.frames.find((f) => f.op === 'cancel')!.input, { id: who.id });
  });

  it('a caller giving up (AbortSignal) ends the request at the daemon', async () => {
    fake.handlers.inbox = () => 'later';
    const c = client();
    const ac = new AbortController();
    const wait = c.inbox({ wait_secs: 30 }, ac.signal);
    await until('the wait sent', () => fake.frames.find((f) => f.op === 'inbox'));
    ac.abort();
    await assert.rejects(wait, { name: 'AbortError' });
    const inbox = fake.frames.find((f) => f.op === 'inbox')!;
    await until('the cancel', () => fake.frames.find((f) => f.op === 'cancel'));
    assert.deepEqual(fake.frames.find((f) => f.op === 'cancel')!.input, { id: inbox.id });
    await assert.rejects(c.inbox({}, AbortSignal.abort()), { name: 'AbortError' });
  });

  it('a dropped connection fails what is in flight and the next request connects again', async () => {
    fake.handlers.inbox = () => 'later';
    const c = client();
    const wait = c.inbox({ wait_secs: 30 });
    await until('the wait sent', () => fake.frames.find((f) => f.op === 'inbox'));
    fake.dropAll();
    await assert.rejects(wait, (e: unknown) => e instanceof DaemonUnreachable && e.url === sock);
    await c.whoami();
    assert.equal(fake.hellos, 2);
    assert.deepEqual(httpCalls, []);
  });

  it('pushed mail reaches the subscriber, and the subscription resumes from its last cursor after a drop', async () => {
    fake.handlers.subscribe = (f) => ({ result: { cursor: (f.input.after as string | undefined) ?? 'c0' } });
    const c = client();
    const got: MailEvent[] = [];
    assert.deepEqual(await c.subscribe((e) => got.push(e)), { cursor: 'c0' });
    const m = { message_id: 'm-1', from: 'codex', subject: 'hi', created_at: '2026-01-01T00:00:00Z' };
    fake.push({ event: 'mail', cursor: 'c1', messages: [m] });
    await until('the event', () => got.length === 1);
    assert.deepEqual(got[0], { event: 'mail', cursor: 'c1', messages: [m] });
    fake.dropAll();
    await until('a new subscribe', () => fake.frames.filter((f) => f.op === 'subscribe').length === 2);
    assert.deepEqual(fake.frames.filter((f) => f.op === 'subscribe')[1]!.input, { after: 'c1' });
    fake.push({ event: 'mail', cursor: 'c2', messages: [], more: true });
    await until('the second event', () => got.length === 2);
    await c.unsubscribe();
    assert.equal(fake.ops().at(-1), 'unsubscribe');
  });

  it("post('/mcp') is the mcp operation; the conversation header becomes agent_session", async () => {
    fake.handlers.mcp = (f) =>
      (f.input as { id?: number }).id === undefined ? { result: { status: 202, body: null } } : { result: { status: 200, body: { jsonrpc: '2.0', id: 1, result: { ok: true } } } };
    const c = client({ headers: () => ({ 'x-m4a-agent-session': 'conv-7' }) });
    const r = await c.post('/mcp', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    assert.deepEqual([r.status, JSON.parse(r.text)], [200, { jsonrpc: '2.0', id: 1, result: { ok: true } }]);
    assert.deepEqual(await c.post('/mcp', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })), { status: 202, text: '' });
    const mcp = fake.frames.find((f) => f.op === 'mcp')!;
    assert.equal(mcp.agent_session, 'conv-7');
    // The daemon meets the session at hello: it must hear the conversation there too (pi and omp
    // resuming a conversation were not linked to it when the hello left it out).
    assert.equal(fake.frames.find((f) => f.op === 'hello')!.agent_session, 'conv-7');
    assert.deepEqual(mcp.input, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    fake.handlers.mcp = () => ({ error: { code: 'unattested', message: 'no process', reason: 'gone' } });
    const refused = await c.post('/mcp', JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }));
    assert.equal(refused.status, 403);
    assert.deepEqual(JSON.parse(refused.text), { error: { code: 'unattested', message: 'no process', reason: 'gone' } });
    assert.deepEqual(httpCalls, []);
  });

  it('a line split inside a UTF-8 character is read whole', async () => {
    fake.handlers.get = (f, conn) => {
      const line = Buffer.from(`${JSON.stringify({ id: f.id, result: { subject: '📬 mail' } })}\n`);
      const cut = line.indexOf(Buffer.from('📬')) + 2;
      conn.write(line.subarray(0, cut));
      setTimeout(() => conn.write(line.subarray(cut)), 20);
      return 'later';
    };
    const r = (await client().get('m-1')) as unknown as { subject: string };
    assert.equal(r.subject, '📬 mail');
  });

  it('a request longer than a stream line goes over HTTP; the client stays on the stream', async () => {
    const c = client();
    const r = (await c.send({ to: 'codex', subject: 'big', body: 'x'.repeat(10_000) })) as unknown as { via: string };
    assert.equal(r.via, 'http');
    assert.deepEqual(httpCalls, ['/mail/send']);
    await c.whoami();
    assert.equal(c.streaming, true);
    assert.equal(fake.ops().includes('send'), false);
  });

  describe('falls back to HTTP, and the secret stays home', () => {
    const viaHttp = async (c: MailClient): Promise<void> => {
      const r = (await c.whoami()) as unknown as { via: string };
      assert.equal(r.via, 'http');
      assert.equal(c.streaming, false, 'for good');
      await c.unread();
      assert.deepEqual(httpCalls, ['/mail/whoami', '/mail/unread']);
      assert.equal(fake.hellos, 0, 'nothing was said on the socket');
    };

    it('when no socket file exists (ENOENT)', async () => {
      await viaHttp(client({ socket: join(dir, 'none.sock') }));
    });

    it('when nobody listens on the socket file (ECONNREFUSED: a stale file)', async () => {
      const stale = join(dir, 'stale.sock');
      spawnSync(process.execPath, ['-e', `require('node:net').createServer().listen(${JSON.stringify(stale)}, () => process.kill(process.pid, 'SIGKILL'))`]);
      assert.equal(socketProblem(stale), null, 'a socket of ours, only nobody listens');
      await viaHttp(client({ socket: stale }));
    });

    it('when the path is a symbolic link to the socket, or not a socket', async () => {
      const link = join(dir, 'link.sock');
      symlinkSync(sock, link);
      assert.match(socketProblem(link) ?? '', /symbolic link/);
      await viaHttp(client({ socket: link }));
      const plain = join(dir, 'plain.sock');
      writeFileSync(plain, '');
      assert.match(socketProblem(plain) ?? '', /not a socket/);
    });

    it('when another user owns the socket file', async () => {
      chownSync(sock, 65534, 65534);
      assert.match(socketProblem(sock) ?? '', /owned by uid 65534/);
      await viaHttp(client());
    });
  });

  it('with no daemon at all it reports DaemonUnreachable and tries the socket again next time', async () => {
    const down = join(dir, 'later.sock');
    const c = new MailClient({ url: 'http://127.0.0.1:1', token: 'secret-1', socket: down });
    clients.push(c);
    await assert.rejects(c.whoami(), DaemonUnreachable);
    assert.equal(c.streaming, true, 'HTTP did not answer either: the daemon is down, not without a socket');
    const later = new StreamFake(down);
    await later.listen();
    try {
      assert.equal(((await c.whoami()) as unknown as { op: string }).op, 'whoami');
      assert.equal(later.hellos, 1);
    } finally {
      c.close();
      await later.close();
    }
  });

  describe('unref', () => {
    const child = (code: string) => {
      // The child holds itself up by its stdin until the parent ends it.
      const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `process.stdin.resume(); ${code}`], { stdio: ['pipe', 'pipe', 'inherit'] });
      const exited = new Promise<number | null>((r) => p.on('exit', (c) => r(c)));
      return { p, exited };
    };
    const waitFor = (ms: number, p: Promise<unknown>) => Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), ms))]);

    it('an unref client lets the process exit with a wait parked; without unref the wait holds it', async () => {
      fake.handlers.inbox = () => 'later';
      const script = (unref: boolean) =>
        `const { MailClient } = await import(${JSON.stringify(CLIENT_TS)});
         const c = new MailClient({ url: ${JSON.stringify(url)}, token: 'secret-1', socket: ${JSON.stringify(sock)}, unref: ${unref} });
         c.inbox({ wait_secs: 30 }).then(() => console.log('answered'), (e) => console.log('failed', e.message));`;
      const held = child(script(false));
      const freed = child(script(true));
      await until('both waits parked', () => fake.frames.filter((f) => f.op === 'inbox').length === 2, 20_000);
      held.p.stdin.end();
      freed.p.stdin.end();
      assert.equal(await waitFor(5_000, freed.exited), true, 'the unref client did not keep its process alive');
      assert.equal(await freed.exited, 0);
      assert.equal(await waitFor(1_000, held.exited), false, 'a parked wait of a plain client holds the process');
      held.p.kill();
      await held.exited;
    });

    it('an idle connection does not hold the process', async () => {
      const idle = child(
        `const { MailClient } = await import(${JSON.stringify(CLIENT_TS)});
         const c = new MailClient({ url: ${JSON.stringify(url)}, token: 'secret-1', socket: ${JSON.stringify(sock)} });
         await c.whoami();`,
      );
      idle.p.stdin.end();
      assert.equal(await waitFor(15_000, idle.exited), true);
      assert.equal(await idle.exited, 0);
      assert.deepEqual(fake.ops(), ['hello', 'whoami']);
    });
  });
});
