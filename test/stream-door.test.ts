// The stream door on a real daemon (SQLite in a temp data directory): hello, every kind of
// operation, answers out of order, pushed mail, cancel, and the framing's refusals. The client is a
// plain net.connect speaking JSON lines (test/support/stream-raw.ts).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, existsSync } from 'node:fs';
import { STREAM_LIMITS } from '../src/wire/stream.js';
import { LIMITS } from '../src/wire/limits.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { helloRaw, openRaw } from './support/stream-raw.js';
import { until } from './support/until.js';
import type { MailClient } from '../src/client/http-client.js';

describe('stream door', () => {
  let d: TestDaemon;
  let sock: string;
  let claude: { client: MailClient; secret: string };
  let codex: { client: MailClient; secret: string };

  before(async () => {
    d = await startTestDaemon();
    sock = d.socketPath!;
    claude = await d.account('claude');
    codex = await d.account('codex');
  });
  after(() => d.stop());

  it('listens on m4a.sock in the data directory, mode 0600, named in daemon.json', () => {
    assert.equal(sock, `${d.dataDir}/m4a.sock`);
    const st = statSync(sock);
    assert.ok(st.isSocket());
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal(JSON.parse(readFileSync(`${d.dataDir}/daemon.json`, 'utf8')).socket, sock);
  });

  it('hello: the account and the session HTTP attests for this process', async () => {
    const s = await helloRaw(sock, claude.secret);
    const me = await claude.client.whoami();
    assert.equal(s.hello.account, 'claude');
    assert.equal(`claude/${s.hello.session}`, me.address, 'the same session as over HTTP (same process)');
    assert.equal(s.hello.max_in_flight, 64);
    assert.equal(s.hello.max_line_bytes, LIMITS.requestBodyBytes + 65_536);
    assert.equal(typeof s.hello.version, 'string');
    const again = await s.call('hello', { token: claude.secret });
    assert.equal(again.error.code, 'malformed');
    assert.equal(again.error.field, 'op');
    s.close();
  });

  it('before hello every op is refused unauthenticated; a bad token is refused and the connection closed', async () => {
    const s = await openRaw(sock);
    const early = await s.call('whoami');
    assert.equal(early.error.code, 'unauthenticated');
    assert.equal(s.isClosed(), false, 'a request before hello does not close the connection');
    const bad = await s.call('hello', { token: 'not-a-secret' });
    assert.equal(bad.error.code, 'unauthenticated');
    await s.closed;
    const none = await openRaw(sock);
    const missing = await none.call('hello', {});
    assert.equal(missing.error.code, 'malformed');
    assert.equal(missing.error.field, 'token');
    await none.closed;
  });

  it('a request pipelined right after hello is served, not refused', async () => {
    const s = await openRaw(sock);
    s.write({ id: 1, op: 'hello', input: { token: codex.secret } });
    s.write({ id: 2, op: 'whoami' });
    const a = await s.next((f) => f.id === 2);
    assert.equal(a.result.account, 'codex');
    s.close();
  });

  it('every kind of operation: send, inbox, ack, task.create, lease.claim, an operator op, a local op, mcp tools/list', async () => {
    const s = await helloRaw(sock, claude.secret);
    const sent = await s.call('send', { to: 'codex', subject: 'over the socket', body: 'hello' });
    assert.ok(sent.result.message_id.startsWith('m-'));
    const page = await codex.client.inbox();
    assert.ok(page.messages.some((m) => m.message_id === sent.result.message_id));
    const c = await helloRaw(sock, codex.secret);
    const inbox = await c.call('inbox', { limit: 5 });
    assert.ok(inbox.result.messages.some((m: any) => m.message_id === sent.result.message_id && m.body === 'hello'));
    const ack = await c.call('ack', { message_id: sent.result.message_id });
    assert.equal(ack.result.acked[0].message_id, sent.result.message_id);
    const task = await s.call('task.create', { to: 'codex', title: 'review the socket' });
    assert.match(task.result.task_id, /^t-/);
    const lease = await s.call('lease.claim', { resource: 'path:src/**', root: '/tmp/stream-door-test' });
    assert.ok(lease.result.lease_id);
    // The same schema errors as HTTP.
    const badSend = await s.call('send', { to: 'codex', subject: 'x', body: 'y', from: 'codex' });
    assert.equal(badSend.error.code, 'malformed');
    assert.equal(badSend.error.field, 'from');
    // Operator ops take the operator credential; an agent is refused as over HTTP.
    const denied = await s.call('account.add', { id: 'gemini' });
    assert.equal(denied.error.code, 'permission_denied');
    const op = await helloRaw(sock, d.operatorToken);
    // The operator's hello meets no session (over HTTP its admin requests register none either).
    assert.equal(op.hello.session, null);
    const listed = await s.call('directory', { detail: true, include_ended: true });
    const opAccount = listed.result.accounts.find((a: any) => a.id === op.hello.account);
    assert.deepEqual(opAccount?.sessions ?? [], [], 'no session of the operator from its hello');
    const added = await op.call('account.add', { id: 'gemini' });
    assert.equal(added.result.account.id, 'gemini');
    assert.ok(added.result.secret);
    // 'local' operations: the socket is this machine.
    const chains = await op.call('wake.list');
    assert.ok(Array.isArray(chains.result.chains), JSON.stringify(chains));
    const tools = await s.call('mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.equal(tools.result.status, 200);
    assert.ok(tools.result.body.result.tools.some((t: any) => t.name === 'm4a_mail_send'));
    const note = await s.call('mcp', { jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.deepEqual(note.result, { status: 202, body: null });
    const unknown = await s.call('no.such.op');
    assert.equal(unknown.error.code, 'unknown_route');
    assert.equal(unknown.error.field, 'op');
    const browserOnly = await s.call('web.me');
    assert.equal(browserOnly.error.code, 'unknown_route', 'browser-only operations are not served to a bearer');
    for (const x of [s, c, op]) x.close();
  });

  it('answers out of order: a parked inbox does not hold up a send behind it', async () => {
    const s = await helloRaw(sock, codex.secret);
    const head = await s.call('inbox', { limit: 1 });
    s.write({ id: 'wait', op: 'inbox', input: { after: head.result.next_cursor, wait_secs: 30 } });
    await until('the wait parked', () => d.engine.parkedWaits() > 0);
    const sent = await s.call('send', { to: 'codex', subject: 'to myself', body: 'wake the wait' });
    const waited = await s.next((f) => f.id === 'wait', 'the parked inbox');
    const order = s.frames.filter((f) => f.id !== undefined).map((f) => f.id);
    assert.ok(order.indexOf(waited.id) > order.lastIndexOf(s.frames.find((f) => f.result?.message_id === sent.result.message_id).id), 'the send was answered first');
    assert.deepEqual(
      waited.result.messages.map((m: any) => m.message_id),
      [sent.result.message_id],
    );
    s.close();
  });

  it('subscribe pushes what a parked inbox {after: cursor} answers, in the same wake', async () => {
    const s = await helloRaw(sock, codex.secret);
    const sub = await s.call('subscribe');
    assert.match(sub.result.cursor, /^c1\./);
    // A parked HTTP read of the same session (this process) from the same cursor, for comparison.
    const parkedHttp = codex.client.inbox({ after: sub.result.cursor, wait_secs: 30, include_bodies: false });
    await until('both parked', () => d.engine.parkedWaits() >= 2);
    const sent = await claude.client.send({ to: 'codex', subject: 'pushed', body: 'the body is not pushed' });
    const ev = await s.next((f) => f.event === 'mail', 'a mail event');
    const page = await parkedHttp;
    assert.deepEqual(ev.messages, page.messages, 'the event carries what the wait answered');
    assert.equal(ev.messages[0].message_id, sent.message_id);
    assert.equal(ev.messages[0].body, undefined, 'no bodies in events');
    assert.equal(ev.cursor, page.next_cursor);
    assert.equal(ev.more, undefined);
    // It goes on pushing: the next commit is another event, and unsubscribe ends it.
    const second = await claude.client.send({ to: 'codex', subject: 'pushed again', body: 'x' });
    const ev2 = await s.next((f) => f.event === 'mail' && f.messages[0].message_id === second.message_id, 'a second event');
    assert.notEqual(ev2.cursor, ev.cursor);
    assert.deepEqual((await s.call('unsubscribe')).result, { ok: true });
    await until('the subscription left its wait', () => d.engine.parkedWaits() === 0);
    await claude.client.send({ to: 'codex', subject: 'not pushed', body: 'x' });
    await s.call('whoami');
    assert.equal(s.events().length, 2, 'nothing pushed after unsubscribe');
    // From a cursor in the past: what committed since is pushed at once.
    const resub = await s.call('subscribe', { after: sub.result.cursor });
    assert.equal(resub.result.cursor, sub.result.cursor);
    const ev3 = await s.next((f) => f.event === 'mail' && s.events().length >= 3, 'the catch-up event');
    assert.ok(ev3.messages.length >= 1);
    const bad = await s.call('subscribe', { after: 'not-a-cursor' });
    assert.equal(bad.error.code, 'malformed');
    assert.equal(bad.error.field, 'after');
    s.close();
    await until('the subscription ended with its connection', () => d.engine.parkedWaits() === 0);
  });

  it('cancel ends a parked wait as if its client had gone; an unknown id is not found', async () => {
    const s = await helloRaw(sock, claude.secret);
    s.write({ id: 42, op: 'inbox', input: { after: 'c1.zzzzzz', wait_secs: 60 } });
    await until('the wait parked', () => d.engine.parkedWaits() === 1);
    const c = await s.call('cancel', { id: 42 });
    assert.deepEqual(c.result, { ok: true, found: true });
    const ended = await s.next((f) => f.id === 42);
    assert.equal(ended.error.code, 'malformed');
    assert.equal(ended.error.reason, 'client_gone');
    assert.equal(d.engine.parkedWaits(), 0);
    assert.deepEqual((await s.call('cancel', { id: 'nobody' })).result, { ok: true, found: false });
    s.close();
  });

  it('a line that is not a JSON object is refused with id null and the connection stays open', async () => {
    const s = await helloRaw(sock, claude.secret);
    s.write('this is not json\n');
    s.write('[1,2,3]\n');
    s.write('\n');
    s.write(Buffer.from([0xff, 0xfe, 0x0a]).toString('latin1'));
    s.write({ id: -1, op: 'whoami' });
    s.write({ id: 'x', op: 'whoami', extra: true });
    const who = await s.call('whoami');
    assert.equal(who.result.account, 'claude');
    const refusals = s.frames.filter((f) => f.error);
    assert.deepEqual(
      refusals.map((f) => [f.id, f.error.code, f.error.field]),
      [
        [null, 'malformed', 'line'],
        [null, 'malformed', 'line'],
        [null, 'malformed', 'line'],
        [null, 'malformed', 'id'],
        ['x', 'malformed', 'extra'],
      ],
    );
    s.close();
  });

  it('a duplicate id in flight is refused (with id null); the first request still answers', async () => {
    const s = await helloRaw(sock, claude.secret);
    s.write({ id: 7, op: 'inbox', input: { after: 'c1.zzzzzz', wait_secs: 60 } });
    await until('the wait parked', () => d.engine.parkedWaits() === 1);
    s.write({ id: 7, op: 'whoami' });
    const dup = await s.next((f) => f.error?.field === 'id');
    assert.equal(dup.id, null);
    assert.equal(dup.error.code, 'malformed');
    assert.equal(dup.error.reason, 'duplicate');
    await s.call('cancel', { id: 7 });
    const first = await s.next((f) => f.id === 7);
    assert.equal(first.error.reason, 'client_gone');
    // Once answered, the id may be used again.
    s.write({ id: 7, op: 'whoami' });
    await s.next((f) => f.id === 7 && f.result?.account === 'claude');
    s.close();
  });

  it('a line over the bound is refused too_large {field: line, limit} and the connection closed', async () => {
    const s = await helloRaw(sock, claude.secret);
    const limit = STREAM_LIMITS.maxLineBytes;
    s.write(`{"id":1,"op":"send","input":{"body":"${'x'.repeat(limit)}"}}\n`);
    const e = await s.next((f) => f.error?.code === 'too_large');
    assert.equal(e.id, null);
    assert.equal(e.error.field, 'line');
    assert.equal(e.error.limit, limit);
    await s.closed;
    // A line exactly at the bound is read (and refused by the op's own limits, as over HTTP).
    const t = await helloRaw(sock, claude.secret);
    const head = '{"id":2,"op":"send","input":{"to":"codex","subject":"s","body":"';
    const tail = '"}}';
    t.write(head + 'y'.repeat(limit - head.length - tail.length) + tail + '\n');
    const big = await t.next((f) => f.id === 2);
    assert.equal(big.error.code, 'too_large');
    assert.equal(big.error.field, 'body');
    t.close();
  });

  it('a client that ends its side: its requests are answered, a parked wait ends as if it had gone', async () => {
    const s = await helloRaw(sock, claude.secret);
    s.write({ id: 'w', op: 'inbox', input: { after: 'c1.zzzzzz', wait_secs: 60 } });
    await until('the wait parked', () => d.engine.parkedWaits() === 1);
    for (let i = 0; i < 5; i++) s.write({ id: i, op: 'whoami' });
    s.sock.end();
    await s.closed;
    assert.equal(d.engine.parkedWaits(), 0);
    assert.equal(s.frames.find((f) => f.id === 'w')?.error?.reason, 'client_gone');
    assert.deepEqual(
      s.frames
        .filter((f) => typeof f.id === 'number' && f.result?.account === 'claude')
        .map((f) => f.id)
        .sort(),
      [0, 1, 2, 3, 4],
    );
  });
});

describe('stream door shutdown', () => {
  it('answers parked waits, ends subscriptions, closes connections and removes the socket', async () => {
    const d = await startTestDaemon();
    const { secret } = await d.account('claude');
    const s = await helloRaw(d.socketPath!, secret);
    s.write({ id: 'w', op: 'inbox', input: { after: 'c1.zzzzzz', wait_secs: 60 } });
    await s.call('subscribe');
    await until('two parked', () => d.engine.parkedWaits() === 2);
    await d.stop();
    const w = await s.next((f) => f.id === 'w');
    assert.deepEqual(w.result.messages, [], 'the parked wait was answered (empty) before the close');
    await s.closed;
    assert.equal(existsSync(d.socketPath!), false);
  });
});
