// The typed client over the stream door of a real daemon: mail both ways with the daemon's HTTP
// address pointing nowhere (so nothing could have gone over HTTP), answers out of order on one
// connection, pushed mail, giving up, reconnecting after a restart, unref, and the fallbacks to
// HTTP (no socket, `--no-stream`, another user's socket file). The built CLI: test/stream-cli.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MailClient } from '../src/client/http-client.js';
import { DaemonUnreachable } from '../src/client/errors.js';
import type { MailEvent } from '../src/client/stream-transport.js';
import { daemonTarget } from '../src/cli/daemon-target.js';
import { MailError } from '../src/wire/errors.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

/** Nothing listens there: a request that went over HTTP would fail. */
const NOWHERE = 'http://127.0.0.1:1';
const CLIENT_TS = new URL('../src/client/http-client.ts', import.meta.url).href;

/** Connected Unix sockets at `path` (the daemon's side of each accepted connection), from the kernel. */
function connectionsAt(path: string): number {
  return readFileSync('/proc/net/unix', 'utf8')
    .split('\n')
    .filter((l) => l.endsWith(` ${path}`) && l.trim().split(/\s+/)[5] === '03').length;
}

describe('typed client over the stream door (real daemon)', () => {
  let d: TestDaemon;
  let alice: string;
  let bob: string;
  const clients: MailClient[] = [];
  const over = (token: string, o: Partial<ConstructorParameters<typeof MailClient>[0]> = {}): MailClient => {
    const c = new MailClient({ url: NOWHERE, token, socket: d.socketPath!, ...o });
    clients.push(c);
    return c;
  };

  before(async () => {
    d = await startTestDaemon();
    assert.ok(d.socketPath, 'the test daemon has its stream door');
    alice = (await d.account('alice')).secret;
    bob = (await d.account('bob')).secret;
  });
  after(async () => {
    for (const c of clients) c.close();
    await d.stop();
  });

  it('send, inbox and ack; the same named errors as over HTTP', async () => {
    const a = over(alice);
    const b = over(bob);
    const sent = await a.send({ to: 'bob', subject: 'over the socket', body: 'hello' });
    const page = await b.inbox();
    assert.deepEqual(
      page.messages.map((m) => [m.message_id, m.subject, m.body]),
      [[sent.message_id, 'over the socket', 'hello']],
    );
    assert.deepEqual(
      (await b.ack(sent.message_id)).acked.map((m) => m.message_id),
      [sent.message_id],
    );
    assert.deepEqual((await b.inbox()).messages, []);
    assert.equal((await b.unread()).unread, 0);
    const viaHttp = new MailClient({ url: d.url, token: alice });
    clients.push(viaHttp);
    const refusal = async (c: MailClient) => {
      try {
        await c.send({ to: 'nobody', subject: 's', body: 'b' });
      } catch (e) {
        assert.ok(e instanceof MailError);
        return { code: e.code, message: e.message, details: e.details };
      }
      assert.fail('sent to nobody');
    };
    assert.deepEqual(await refusal(a), await refusal(viaHttp));
    assert.equal(a.streaming, true);
  });

  it('one connection: a parked wait and then a send on the same client, answered out of order', async () => {
    const before = connectionsAt(d.socketPath!);
    const b = over(bob);
    await b.whoami();
    assert.equal(connectionsAt(d.socketPath!), before + 1);
    const wait = b.inbox({ wait_secs: 20 });
    let answered = false;
    void wait.then(() => (answered = true));
    await until('the wait parked', () => d.engine.parkedWaits() === 1);
    const mine = await b.send({ to: 'alice', subject: 'behind my own wait', body: 'x' });
    assert.match(mine.message_id, /^m-/);
    assert.equal(answered, false, 'the send was answered while the wait stays parked');
    const reply = await over(alice).send({ to: 'bob', subject: 'wakes the wait', body: 'y' });
    const page = await wait;
    assert.deepEqual(
      page.messages.map((m) => m.message_id),
      [reply.message_id],
    );
    assert.equal(connectionsAt(d.socketPath!), before + 2, "bob's one connection and alice's");
    await b.ack(reply.message_id);
  });

  it("post('/mcp') goes over the mcp operation", async () => {
    const r = await over(alice).post('/mcp', JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'm4a_mail_whoami', arguments: {} } }));
    assert.equal(r.status, 200);
    const body = JSON.parse(r.text) as { id: number; result: { content: { text: string }[] } };
    assert.equal(body.id, 7);
    assert.equal(JSON.parse(body.result.content[0]!.text).account, 'alice');
  });

  it('pushed mail: the ids and senders of mail that commits after subscribing, without bodies', async () => {
    const b = over(bob);
    const got: MailEvent[] = [];
    const { cursor } = await b.subscribe((e) => got.push(e));
    assert.equal(typeof cursor, 'string');
    const sent = await over(alice).send({ to: 'bob', subject: 'pushed', body: 'secret body' });
    await until('the event', () => got.length > 0);
    assert.equal(got[0]!.event, 'mail');
    assert.deepEqual(
      got.flatMap((e) => e.messages.map((m) => [m.message_id, m.subject, m.body])),
      [[sent.message_id, 'pushed', undefined]],
    );
    await b.unsubscribe();
    await b.ack(sent.message_id);
  });

  it('a caller giving up ends its parked wait at the daemon', async () => {
    const b = over(bob);
    const ac = new AbortController();
    const wait = b.inbox({ wait_secs: 30 }, ac.signal);
    await until('the wait parked', () => d.engine.parkedWaits() === 1);
    ac.abort();
    await assert.rejects(wait, { name: 'AbortError' });
    await until('the daemon let it go', () => d.engine.parkedWaits() === 0);
    await b.whoami(); // the connection goes on
  });

  describe('falls back to HTTP', () => {
    it('when the socket path does not exist', async () => {
      const c = over(alice, { url: d.url, socket: join(d.dataDir, 'nothing-here.sock') });
      assert.equal((await c.whoami()).account, 'alice');
      assert.equal(c.streaming, false);
    });

    it('when the socket file belongs to another user: the secret is not sent there', async () => {
      const before = d.streamDoor!.stats();
      chownSync(d.socketPath!, 65534, 65534);
      try {
        const c = over(alice, { url: d.url });
        assert.equal((await c.whoami()).account, 'alice');
        assert.equal(c.streaming, false);
        assert.equal(d.streamDoor!.stats().requests, before.requests, 'nothing reached the stream door');
      } finally {
        chownSync(d.socketPath!, process.getuid!(), process.getgid!());
      }
    });

    it('when the daemon runs without its stream door (--no-stream)', async () => {
      const plain = await startTestDaemon({ stream: false });
      try {
        assert.equal(plain.socketPath, null);
        assert.equal(daemonTarget(plain.dataDir, {}).socket, undefined, 'daemon.json names no socket');
        const secret = (await plain.account('carol')).secret;
        const c = new MailClient({ url: plain.url, token: secret, socket: join(plain.dataDir, 'm4a.sock') });
        clients.push(c);
        assert.equal((await c.whoami()).account, 'carol');
        assert.equal(c.streaming, false);
      } finally {
        await plain.stop();
      }
    });
  });

  it('reconnects after the daemon restarts, and the subscription resumes where it was', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'm4a-stream-restart-'));
    let one: TestDaemon | null = await startTestDaemon({ dataDir: dir });
    let two: TestDaemon | null = null;
    try {
      const carol = (await one.account('carol')).secret;
      const dave = (await one.account('dave')).secret;
      const socket = one.socketPath!;
      const c = new MailClient({ url: NOWHERE, token: carol, socket });
      const sender = new MailClient({ url: NOWHERE, token: dave, socket });
      clients.push(c, sender);
      const got: string[] = [];
      await c.subscribe((e) => got.push(...e.messages.map((m) => m.subject)));
      await sender.send({ to: 'carol', subject: 'before', body: 'b' });
      await until('the first event', () => got.length === 1);
      await one.stop();
      one = null;
      await assert.rejects(c.whoami(), DaemonUnreachable, 'no daemon at all');
      assert.equal(c.streaming, true, 'still on the stream: HTTP did not answer either');
      two = await startTestDaemon({ dataDir: dir });
      assert.equal(two.socketPath, socket);
      assert.equal((await c.whoami()).account, 'carol');
      await sender.send({ to: 'carol', subject: 'after', body: 'b' });
      await until('the event after the restart', () => got.includes('after'));
      assert.deepEqual(got, ['before', 'after']);
      c.close();
      sender.close();
    } finally {
      await one?.stop();
      await two?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('unref: a process whose only business is a parked wait exits; without unref the wait holds it', async () => {
    const child = (unref: boolean) => {
      const code = `process.stdin.resume();
        const { MailClient } = await import(${JSON.stringify(CLIENT_TS)});
        const c = new MailClient({ url: ${JSON.stringify(NOWHERE)}, token: ${JSON.stringify(bob)}, socket: ${JSON.stringify(d.socketPath)}, unref: ${unref} });
        c.inbox({ wait_secs: 30 }).then(() => console.log('answered'), (e) => console.log('failed', e.message));`;
      const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
      return { p, exited: new Promise<number | null>((r) => p.on('exit', (c) => r(c))) };
    };
    const exitsWithin = (ms: number, p: Promise<unknown>) => Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), ms))]);
    const held = child(false);
    const freed = child(true);
    try {
      await until('both waits parked', () => d.engine.parkedWaits() === 2, 20_000);
      held.p.stdin.end();
      freed.p.stdin.end();
      assert.equal(await exitsWithin(5_000, freed.exited), true, 'the unref client let its process exit');
      assert.equal(await freed.exited, 0);
      assert.equal(await exitsWithin(1_000, held.exited), false);
    } finally {
      held.p.kill();
      freed.p.kill();
      await Promise.all([held.exited, freed.exited]);
    }
  });

  it('a parked wait whose process exited is let go by the daemon', async () => {
    await until('the daemon let the waits of the exited processes go', () => d.engine.parkedWaits() === 0, 3_000);
  });
});
