// The pi/omp extension's own rules, against a real daemon: how a batch is delivered (idle, busy,
// urgent, omp's attribution), the injected text, and `/mail` as a person types it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deliveryOf, liveText } from '../src/cli/extension/live-mail.js';
import { MAIL_COMMAND_HELP, runMailCommand } from '../src/cli/extension/mail-command.js';
import type { MailClient } from '../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

const batch = (priority?: 'urgent') => ({
  mail: [{ message_id: 'm-1', from: 'claude/web-ui', subject: 'review "this"', ...(priority ? { priority } : {}) }],
  more: false,
  block: true,
  listening: false,
  consecutive_blocks: 0,
});

describe('extension delivery', () => {
  it('starts a turn when idle, follows up while busy, steers urgent mail, and attributes to the agent on omp', () => {
    assert.deepEqual(deliveryOf(batch(), true, false), {});
    assert.deepEqual(deliveryOf(batch(), false, false), { deliverAs: 'followUp' });
    assert.deepEqual(deliveryOf(batch('urgent'), false, false), { deliverAs: 'steer' });
    assert.deepEqual(deliveryOf(batch(), false, true), { deliverAs: 'followUp', attribution: 'agent' });
    assert.deepEqual(deliveryOf(batch(), true, true), { attribution: 'agent' });
  });

  it('injects the wake text behind 📬: ids, senders and quoted subjects, never bodies', () => {
    const t = liveText(batch('urgent'));
    assert.match(t, /^📬 You have new mail in mail4agent:\n- m-1 from claude\/web-ui \[urgent\]: "review \\"this\\""\n/);
    assert.match(t, /m4a_mail_inbox/);
  });
});

describe('/mail', () => {
  let d: TestDaemon;
  let me: MailClient;
  let bob: MailClient;
  before(async () => {
    d = await startTestDaemon();
    me = (await d.account('pi')).client;
    bob = (await d.account('bob')).client;
    await bob.whoami();
  });
  after(() => d.stop());

  it('answers help, whoami, alias, agents and inbox', async () => {
    assert.equal(await runMailCommand(me, ''), MAIL_COMMAND_HELP);
    assert.match(await runMailCommand(me, 'alias  tee'), /now also answers to @tee/);
    assert.match(await runMailCommand(me, 'whoami'), /^pi\/\S+ \(.*pi\/@tee/);
    const agents = await runMailCommand(me, 'agents');
    assert.match(agents, /^pi\//m);
    assert.match(agents, /^bob\//m);
    assert.equal(await runMailCommand(me, 'inbox'), 'no unacknowledged mail');
    await bob.send({ to: 'pi', subject: 'hello "there"', body: 'b' });
    assert.match(await runMailCommand(me, 'inbox'), /^m-\S+ from bob\/\S+: "hello \\"there\\""$/);
  });

  it('sends recipient first, subject, then the body with its spacing, and to a bare alias of its own account', async () => {
    const out = await runMailCommand(bob, 'pi hello-from-bob first  live mail');
    assert.match(out, /^→ pi · hello-from-bob · m-/);
    const got = await me.inbox({ include_bodies: true });
    const m = got.messages.find((x) => x.subject === 'hello-from-bob');
    assert.equal(m?.body, 'first  live mail');
    // A bare name that is no account: a slug or alias of the sender's own account.
    assert.match(await runMailCommand(me, '@tee note-to-self body'), /^→ pi\/\S+ · note-to-self/);
    // Neither an account nor a name of its own: the second refusal names what is known.
    await assert.rejects(runMailCommand(me, 'nobody-here s b'), { code: 'unknown_session' });
    assert.match(await runMailCommand(me, 'bob'), /^usage: /);
  });
});
