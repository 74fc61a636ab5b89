// A send to a room of many parked readers: every woken answer is byte for byte what the reader's own
// query answers, readers who see the page alike share one presentation (the engine counts them),
// and a non-member's or a sibling session's wait gets nothing it may not read.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { startAgent, type AgentProc } from './support/agent.js';
import { until } from './support/until.js';
import type { MailClient } from '../src/client/http-client.js';
import fc from 'fast-check';
import { bytesOf, jsonOf, share } from '../src/engine/shared-page.js';

const READERS = 200;

interface Reader {
  id: string;
  token: string;
  agent: Agent;
  /** The parked request's fields besides wait_secs (what the slow path is asked again). */
  ask: Record<string, unknown>;
}

/** One POST over the reader's own keep-alive connection: the raw answer text. */
function post(port: number, r: Reader, path: string, body: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = request(
      {
        agent: r.agent,
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: { authorization: `Bearer ${r.token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function inParallel<T>(items: T[], n: number, fn: (x: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i] as T, i);
      }
    }),
  );
}

async function settledWithin<T>(p: Promise<T>, ms: number): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setTimeout(r, ms));
  return done;
}

describe('answers with a shared page serialise as JSON.stringify does', () => {
  it('any plain object holding shared values: the same text, and equal answers the same Buffer', () => {
    const value = fc.oneof(fc.jsonValue(), fc.constant(undefined));
    fc.assert(
      fc.property(fc.array(fc.jsonValue()), fc.dictionary(fc.string(), value), fc.string(), (page, rest, key) => {
        const shared = share([...page]);
        const body = { ...rest, [key]: shared, tail: rest[key] };
        const text = JSON.stringify(body);
        assert.equal(jsonOf(body), text);
        const b = bytesOf(body);
        assert.equal(b.toString('utf8'), text);
        assert.equal(bytesOf({ ...body }), b, 'an equal answer is the same Buffer');
      }),
    );
    const page = share([{ message_id: 'm-1', subject: 'ü\u2028"' }]);
    assert.notEqual(bytesOf({ messages: page, unread: 1 }), bytesOf({ messages: page, unread: 2 }));
    assert.equal(jsonOf({ messages: page, unread: 2 }), JSON.stringify({ messages: page, unread: 2 }));
    assert.throws(() => (page as { subject?: string }[]).push({}), TypeError, 'a shared page is frozen');
  });
});

describe('a room of parked readers woken by one send', () => {
  let d: TestDaemon;
  let port: number;
  let sender: MailClient;
  const readers: Reader[] = [];
  let outsider: Reader;
  const procs: AgentProc[] = [];

  before(async () => {
    d = await startTestDaemon();
    port = Number(new URL(d.url).port);
    // Open: the sender posts without being a member, so it is never among the woken.
    await d.operator.admin.roomAdd('crowd', { open: true });
    sender = (await d.account('sender')).client;
    const ids = Array.from({ length: READERS }, (_, i) => `r${i}`);
    await inParallel(ids, 8, async (id) => {
      const { secret } = await d.account(id);
      await d.operator.admin.memberAdd('crowd', id);
      readers.push({ id, token: secret, agent: new Agent({ keepAlive: true, maxSockets: 1 }), ask: {} });
    });
    readers.sort((a, b) => Number(a.id.slice(1)) - Number(b.id.slice(1)));
    outsider = { id: 'outsider', token: (await d.account('outsider')).secret, agent: new Agent({ keepAlive: true, maxSockets: 1 }), ask: {} };
  });
  after(async () => {
    for (const p of procs) await p.exit();
    for (const r of [...readers, outsider]) r.agent.destroy();
    await d.stop();
  });

  it('every answer equals its own query byte for byte; alike views share one presented page; an outsider is not woken', async () => {
    // Some readers have other unread mail (so unread differs), some ask without bodies or verbose;
    // a quarter waits without a cursor, so its answer also holds shown, unacknowledged mail.
    await inParallel(readers, 8, async (r, i) => {
      if (i % 5 === 0) await sender.send({ to: r.id, subject: `only for ${r.id}`, body: 'direct' });
      const kind = i % 4;
      if (kind === 3) {
        const shown = await post(port, r, '/mail/inbox', {});
        assert.equal(shown.status, 200);
        r.ask = {};
      } else {
        const head = JSON.parse((await post(port, r, '/mail/inbox', { include_acked: true, limit: 256 })).text) as { next_cursor: string };
        r.ask = { after: head.next_cursor, ...(kind === 1 ? { include_bodies: false } : {}), ...(kind === 2 ? { verbose: true } : {}) };
      }
    });
    const outsiderHead = JSON.parse((await post(port, outsider, '/mail/inbox', { include_acked: true })).text) as { next_cursor: string };
    const parked0 = d.engine.parkedWaits();
    const waits = readers.map((r) => post(port, r, '/mail/inbox', { ...r.ask, wait_secs: 30 }));
    const outsiderWait = post(port, outsider, '/mail/inbox', { after: outsiderHead.next_cursor, wait_secs: 30 });
    await until('every reader parked', () => d.engine.parkedWaits() === parked0 + READERS + 1);
    const stats0 = { ...d.engine.wakeStats() };

    const sent = await sender.send({ to: '#crowd', subject: 'to all of you', body: 'the same for everyone' });
    const answers = await Promise.all(waits);
    for (const [i, a] of answers.entries()) {
      assert.equal(a.status, 200, a.text);
      const page = JSON.parse(a.text) as { messages: { message_id: string }[] };
      assert.ok(
        page.messages.some((m) => m.message_id === sent.message_id),
        `reader ${i} got the room mail`,
      );
    }
    // The slow path: each reader's own query, asked again now, answers the same bytes.
    await inParallel(readers, 8, async (r, i) => {
      const again = await post(port, r, '/mail/inbox', r.ask);
      assert.equal(answers[i]?.text, again.text, `reader ${r.id} (${JSON.stringify(r.ask)})`);
    });
    const s = d.engine.wakeStats();
    // Three views of the same new mail (bodies, no bodies, verbose): three pages presented, every
    // other reader took one of them, but readers without a cursor that keep shown mail the batch
    // did not fetch: those present their own.
    const alone = readers.filter((_, i) => i % 4 === 3 && i % 5 === 0).length;
    assert.equal(s.presented - stats0.presented, 3);
    assert.equal(s.reused - stats0.reused, READERS - alone - 3);
    assert.equal(s.fetches - stats0.fetches, 1, 'one query for the whole room');
    // Readers who see the same page and count the same unread get the very same bytes.
    const plain = answers.filter((_, i) => i % 4 === 0 && i % 5 !== 0).map((a) => a.text);
    assert.ok(plain.length > 10);
    assert.equal(new Set(plain).size, 1);

    assert.equal(await settledWithin(outsiderWait, 100), false, 'room mail does not wake a non-member');
    const direct = await sender.send({ to: 'outsider', subject: 'yours', body: '' });
    const got = JSON.parse((await outsiderWait).text) as { messages: { message_id: string }[] };
    assert.deepEqual(
      got.messages.map((m) => m.message_id),
      [direct.message_id],
    );
  });

  it('readers that park again as soon as they are answered (as a pushed subscription does) miss nothing', async () => {
    const heads = await Promise.all(
      readers.map(async (r) => (JSON.parse((await post(port, r, '/mail/inbox', { include_acked: true, limit: 256 })).text) as { next_cursor: string }).next_cursor),
    );
    const parked0 = d.engine.parkedWaits();
    const second: Promise<{ status: number; text: string }>[] = [];
    let parkedAgain!: () => void;
    const allParkedAgain = new Promise<void>((r) => (parkedAgain = r));
    let left = readers.length;
    // Each reader's next wait starts the moment its first answer arrives: early readers park again
    // while the batch still answers the later ones.
    const first = readers.map((r, i) =>
      post(port, r, '/mail/inbox', { after: heads[i], wait_secs: 30 }).then((a) => {
        const page = JSON.parse(a.text) as { next_cursor: string };
        second[i] = post(port, r, '/mail/inbox', { after: page.next_cursor, wait_secs: 30 });
        if (--left === 0) parkedAgain();
        return page;
      }),
    );
    await until('every reader parked', () => d.engine.parkedWaits() === parked0 + READERS);
    const one = await sender.send({ to: '#crowd', subject: 'first', body: '' });
    for (const p of await Promise.all(first)) assert.ok(p.next_cursor);
    await allParkedAgain;
    await until('every reader parked again', () => d.engine.parkedWaits() === parked0 + READERS);
    const two = await sender.send({ to: '#crowd', subject: 'second', body: '' });
    for (const [i, a] of (await Promise.all(second)).entries()) {
      const ids = (JSON.parse(a.text) as { messages: { message_id: string }[] }).messages.map((m) => m.message_id);
      assert.deepEqual(ids, [two.message_id], `reader ${i}`);
    }
    assert.notEqual(one.message_id, two.message_id);
  });

  it("a sibling session woken in the same batch never gets the other session's mail", async () => {
    const sib = await d.account('sib');
    await d.operator.admin.memberAdd('crowd', 'sib');
    const one = await startAgent(d.url, sib.secret);
    const two = await startAgent(d.url, sib.secret);
    procs.push(one, two);
    const addr1 = ((await one.call('/mail/whoami')).body as { address: string }).address;
    const head = async (p: AgentProc): Promise<string> => ((await p.call('/mail/inbox', { include_acked: true, limit: 256 })).body as { next_cursor: string }).next_cursor;
    const [c1, c2] = [await head(one), await head(two)];
    const parked0 = d.engine.parkedWaits();
    const w1 = one.call('/mail/inbox', { after: c1, wait_secs: 30 });
    const w2 = two.call('/mail/inbox', { after: c2, wait_secs: 30 });
    await until('both sessions parked', () => d.engine.parkedWaits() === parked0 + 2);
    // Sent side by side: committed together, answered in one batch.
    const [secret, room] = await Promise.all([
      sender.send({ to: addr1, subject: 'only for session one', body: 'secret' }),
      sender.send({ to: '#crowd', subject: 'for the room', body: '' }),
    ]);
    const ids = async (w: Promise<{ body: unknown }>): Promise<string[]> => ((await w).body as { messages: { message_id: string }[] }).messages.map((m) => m.message_id);
    const [got1, got2] = [await ids(w1), await ids(w2)];
    assert.deepEqual(got2, [room.message_id], 'session two: the room mail only');
    assert.ok(got1.includes(secret.message_id) || got1.includes(room.message_id));
    assert.ok(got1.every((id) => id === secret.message_id || id === room.message_id));
    const later = ((await two.call('/mail/inbox', { include_acked: true, limit: 256 })).body as { messages: { message_id: string }[] }).messages.map((m) => m.message_id);
    assert.ok(!later.includes(secret.message_id), 'a sibling never reads session mail');
  });
});
