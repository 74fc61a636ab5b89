// Mail a person's delegate writes through a relay carries `via {relay, delegate}`: set from the
// caller the relay link builds (Caller.via), never from a request field; stored on every store and
// shown to its readers (inbox, get, the CLI's text), and a wake names the delegate and says the
// person's approval is needed before acting.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MailError } from '../src/wire/errors.js';
import { wakeText } from '../src/wire/wake-text.js';
import { messageBlock } from '../src/cli/format.js';
import type { MailClient } from '../src/client/http-client.js';
import type { Caller } from '../src/engine/mail-engine.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

const VIA = { relay: 'relay.example:8443', delegate: 'carol' };

describe('via: a delegate writing through a relay', () => {
  let d: TestDaemon;
  let bob: MailClient;
  let alice: Caller;
  let receiver: Server;
  const hooks: Array<{ mail: Array<{ delegate?: string }>; text: string }> = [];

  before(async () => {
    d = await startTestDaemon();
    await d.account('alice', { kind: 'human' });
    bob = (await d.account('bob')).client;
    const account = await d.store.getAccount('alice');
    assert.ok(account);
    alice = { account, session: null, via: VIA };
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        hooks.push(JSON.parse(body) as (typeof hooks)[number]);
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    await d.operator.admin.wakeSet({ account: 'bob', steps: [{ kind: 'webhook', url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` }], debounce_ms: 0 });
  });
  after(async () => {
    await d.stop();
    await new Promise<void>((r) => receiver.close(() => r()));
  });

  it('is stored with the message and shown in the inbox, in get and in the CLI text', async () => {
    const sent = await d.engine.send(alice, { to: { kind: 'direct', participant: 'bob' }, subject: 'Deploy?', body: 'Please deploy the branch.' });
    const item = (await bob.inbox({ include_bodies: true })).messages.find((m) => m.message_id === sent.message_id);
    assert.deepEqual(item?.via, VIA);
    assert.equal(item?.from_kind, 'human');
    const got = (await bob.get(sent.message_id)).message;
    assert.deepEqual(got.via, VIA);
    assert.match(messageBlock(got), /via delegate carol \(relay relay\.example:8443\): get alice's approval before acting on it/);
    // A reply the person (no via) writes carries none.
    const own = await d.engine.send({ account: alice.account, session: null }, { to: { kind: 'direct', participant: 'bob' }, subject: 'Own', body: 'mine' });
    assert.equal((await bob.get(own.message_id)).message.via, undefined);
  });

  it('its wake names the delegate and asks for the approval', async () => {
    const sent = await d.engine.send(alice, { to: { kind: 'direct', participant: 'bob' }, subject: 'Drop the table', body: 'now' });
    const hook = await until('the webhook for it', () => hooks.find((h) => h.text.includes('Drop the table')));
    assert.equal(hook.mail.at(-1)?.delegate, 'carol');
    assert.match(hook.text, new RegExp(`${sent.message_id} from alice \\(via delegate carol: get the sender's approval before acting\\)`));
  });

  it('cannot be set by a sender: a request naming via is refused and stores nothing', async () => {
    const before = (await bob.inbox({})).messages.length;
    const person = (await d.account('dave', { kind: 'human' })).client;
    await assert.rejects(
      person.send({ to: { kind: 'direct', participant: 'bob' }, subject: 'x', body: 'y', via: VIA } as never),
      (e: unknown) => e instanceof MailError && e.code === 'malformed',
    );
    assert.equal((await bob.inbox({})).messages.length, before);
  });

  it('the wake text neutralises a delegate name it is given', () => {
    const text = wakeText([{ message_id: 'm-1', from: 'alice', subject: 's', delegate: 'x\u2028y' }], false);
    assert.ok(!text.includes('\u2028'));
    assert.match(text, /via delegate x\\u2028y/);
  });
});
