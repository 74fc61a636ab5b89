// A parked wait whose client has gone away is dropped at once: it leaves the wait room, stops
// counting against the caps, and the next clients park in its place.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request, type ClientRequest } from 'node:http';
import { MailError } from '../src/wire/errors.js';
import type { MailClient } from '../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

const CLIENTS = 200;

describe('waits of clients that went away', () => {
  let d: TestDaemon;
  let secret: string;
  let w: MailClient;
  let sender: MailClient;
  before(async () => {
    // Every client here is this test process, one session: the per-account cap is the one that binds.
    d = await startTestDaemon({ waitCaps: { perSession: 10_000, perAccount: CLIENTS, total: 10_000 } });
    ({ client: w, secret } = await d.account('w'));
    sender = (await d.account('sender')).client;
  });
  after(() => d.stop());

  /** A POST on a connection of its own, left hanging; `answer` settles when (if) it is answered. */
  const hanging = (path: string, body: unknown) => {
    let req!: ClientRequest;
    const answer = new Promise<{ status: number; json: any }>((resolve, reject) => {
      req = request(`${d.url}${path}`, { method: 'POST', agent: false, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
    answer.catch(() => undefined); // destroyed on purpose
    return { req, answer };
  };

  it(`${CLIENTS} clients park and disconnect: the parked count returns to 0 and the cap is free again`, async () => {
    const first = Array.from({ length: CLIENTS }, () => hanging('/mail/inbox', { wait_secs: 50 }));
    await until(`${CLIENTS} waits parked`, () => d.engine.parkedWaits() === CLIENTS);
    const over = await w.inbox({ wait_secs: 50 }).catch((e: unknown) => e);
    assert.ok(over instanceof MailError && over.code === 'rate_limited', 'the account is at its cap');
    for (const c of first) c.req.destroy();
    await until('every wait of a gone client dropped', () => d.engine.parkedWaits() === 0);

    // The cap is free: a new batch parks in full, and is answered by the next mail.
    const second = Array.from({ length: CLIENTS }, () => hanging('/mail/inbox', { wait_secs: 50 }));
    await until(`${CLIENTS} new waits parked`, () => d.engine.parkedWaits() === CLIENTS);
    const sent = await sender.send({ to: 'w', subject: 'for all of you', body: '' });
    for (const r of await Promise.all(second.map((c) => c.answer))) {
      assert.equal(r.status, 200);
      assert.deepEqual(
        r.json.messages.map((m: { message_id: string }) => m.message_id),
        [sent.message_id],
      );
    }
    assert.equal(d.engine.parkedWaits(), 0);
  });

  it("a listening Stop hook's wait is dropped when its hook goes away", async () => {
    await w.listen(true);
    const hook = hanging('/mail/notice', { event: 'stop', wait_secs: 50 });
    await until('the hook parked', () => d.engine.parkedWaits() === 1);
    hook.req.destroy();
    await until('its wait dropped', () => d.engine.parkedWaits() === 0);
    // Nothing was told to the hook that left: the next one still hears of new mail.
    const sent = await sender.send({ to: 'w', subject: 'after the hook left', body: '' });
    assert.deepEqual(
      (await w.notice({ event: 'stop' })).mail.map((m) => m.message_id),
      [sent.message_id],
    );
  });
});
