// POST /mail/wait_for on a real daemon over HTTP (docs/email.md): answered by the first matching
// message that commits after the call, with its codes and links; never by older mail or by mail
// that does not match; a timeout answers message null; bad input is a named error; a client that
// goes away leaves no parked wait behind. Once per store.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MailClient } from '../src/client/http-client.js';
import { MailError } from '../src/wire/errors.js';
import type { WaitForResponse } from '../src/wire/wait-for.js';
import { raw, startTestDaemon, STORE_KINDS, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';
import { startCliDaemon, type CliDaemon } from './support/cli-daemon.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const GITHUB = {
  subject: '[GitHub] Please verify your device',
  body: 'Verification code: 482913\n\nIf you did not attempt to sign in, change your password at https://github.com/settings/admin.\nConfirm here: https://github.com/login/device/confirm?token=abc.',
};

for (const kind of STORE_KINDS) {
  describe(`wait_for over HTTP (${kind})`, () => {
    let d: TestDaemon;
    let bob: MailClient;
    let bobSecret: string;
    let github: MailClient;
    let other: MailClient;
    before(async () => {
      d = await startTestDaemon({ storeKind: kind });
      ({ client: bob, secret: bobSecret } = await d.account('bob'));
      ({ client: github } = await d.account('github', { kind: 'service' }));
      ({ client: other } = await d.account('other'));
    });
    after(async () => d?.stop());

    /** Starts a wait_for and resolves once it is parked (boxed: a promise would be awaited). */
    const park = async (run: () => Promise<WaitForResponse>) => {
      const n = d.engine.parkedWaits();
      const answer = run();
      await until('the wait_for parks', () => d.engine.parkedWaits() > n);
      return { answer };
    };

    it('a later matching message answers it, with codes and links; older and non-matching mail do not', async () => {
      // Older mail that matches every filter: it must not answer the wait.
      await github.send({ to: 'bob', subject: GITHUB.subject, body: 'Verification code: 111111' });
      const { answer } = await park(() => bob.waitFor({ from: 'github', subject_contains: 'VERIFY your', body_contains: 'verification code', timeout_secs: 30 }));
      await other.send({ to: 'bob', subject: GITHUB.subject, body: GITHUB.body }); // wrong sender
      await github.send({ to: 'bob', subject: 'Weekly digest', body: GITHUB.body }); // wrong subject
      await github.send({ to: 'bob', subject: GITHUB.subject, body: 'no code here' }); // wrong body
      const sent = await github.send({ to: 'bob', subject: GITHUB.subject, body: GITHUB.body });
      const r = await answer;
      assert.equal(r.message?.message_id, sent.message_id);
      assert.match(r.message?.from ?? '', /^github(\/|$)/, 'the sender as printed');
      assert.equal(r.message?.subject, GITHUB.subject);
      assert.equal(r.message?.body, GITHUB.body);
      assert.deepEqual(r.codes, ['482913']);
      assert.deepEqual(r.links, ['https://github.com/login/device/confirm?token=abc', 'https://github.com/settings/admin']);
      assert.equal(d.engine.parkedWaits(), 0);
      // The sender as printed matches too, and another sender's does not.
      const printed = r.message.from;
      const again = await park(() => bob.waitFor({ from: printed.toUpperCase(), timeout_secs: 30 }));
      await other.send({ to: 'bob', subject: 's', body: 'b' });
      const second = await github.send({ to: 'bob', subject: 's2', body: 'b2' });
      assert.equal((await again.answer).message?.message_id, second.message_id);
    });

    it('without filters the next message answers; room mail the caller reads counts', async () => {
      await d.operator.admin.roomAdd('ops');
      for (const a of ['bob', 'other']) await d.operator.admin.memberAdd('ops', a);
      const { answer } = await park(() => bob.waitFor({ timeout_secs: 30 }));
      const sent = await other.send({ to: '#ops', subject: 'Your login code', body: 'Your login code is A7K9Q2.' });
      const r = await answer;
      assert.equal(r.message?.message_id, sent.message_id);
      assert.deepEqual(r.codes, ['A7K9Q2']);
      assert.deepEqual(r.links, []);
    });

    it('a timeout answers message null, and old mail never answers at once', async () => {
      await github.send({ to: 'bob', subject: 'old', body: 'code 222222' });
      const r = await bob.waitFor({ from: 'github', timeout_secs: 0.2 });
      assert.deepEqual(r, { message: null, codes: [], links: [] });
      assert.deepEqual(await bob.waitFor({ timeout_secs: 0 }), { message: null, codes: [], links: [] });
    });

    it('bad input is a named error and parks nothing', async () => {
      const refused = async (body: unknown, code: string, field: string, limit?: number) => {
        const r = await raw(d.url, '/mail/wait_for', { token: bobSecret, body: JSON.stringify(body) });
        assert.equal(r.json.error?.code, code, JSON.stringify(r.json));
        assert.equal(r.json.error?.details?.field ?? r.json.error?.field, field, JSON.stringify(r.json));
        if (limit !== undefined) assert.equal(r.json.error?.details?.limit ?? r.json.error?.limit, limit, JSON.stringify(r.json));
      };
      await refused({ timeout_secs: 601 }, 'too_large', 'timeout_secs', 600);
      await refused({ timeout_secs: 1, subject_contains: 'x'.repeat(257) }, 'too_large', 'subject_contains', 256);
      await refused({ timeout_secs: -1 }, 'malformed', 'timeout_secs');
      await refused({ timeout_secs: 'soon' }, 'malformed', 'timeout_secs');
      await refused({ timeout_secs: 1, sender: 'github' }, 'malformed', 'sender');
      await refused({ from: 'github' }, 'malformed', 'timeout_secs');
      await assert.rejects(bob.waitFor({ timeout_secs: 1e9 }), (e: unknown) => e instanceof MailError && e.code === 'too_large');
      assert.equal(d.engine.parkedWaits(), 0);
    });

    it('a client that goes away leaves no parked wait', async () => {
      const ac = new AbortController();
      const { answer } = await park(() => bob.waitFor({ subject_contains: 'never', timeout_secs: 600 }, ac.signal));
      ac.abort();
      await assert.rejects(answer);
      await until('the wait leaves when its client goes away', () => d.engine.parkedWaits() === 0);
      assert.equal(d.engine.parkedWaits(), 0);
    });
  });
}

describe('m4a wait-for', () => {
  let c: CliDaemon;
  let github: MailClient;
  before(async () => {
    c = await startCliDaemon('m4a-wait-for-');
    const bob = (await c.d.account('bob')).secret;
    github = (await c.d.account('github', { kind: 'service' })).client;
    mkdirSync(join(c.home, 'mail4agent'), { recursive: true });
    writeFileSync(join(c.home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { bob: { secret: bob } } }), { mode: 0o600 });
  });
  after(async () => c?.stop());

  it('prints the matching message with its codes and links; a timeout exits 1; a bad timeout is named', async () => {
    const n = c.d.engine.parkedWaits();
    const run = c.cli(['wait-for', '--from', 'github', '--subject-contains', 'verify', '--timeout', '30', '--account', 'bob', '--json']);
    await until('the CLI parks', () => c.d.engine.parkedWaits() > n);
    const sent = await github.send({ to: 'bob', subject: GITHUB.subject, body: GITHUB.body });
    const r = await run;
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as WaitForResponse;
    assert.equal(out.message?.message_id, sent.message_id);
    assert.deepEqual(out.codes, ['482913']);
    assert.equal(out.links[0], 'https://github.com/login/device/confirm?token=abc');

    const late = await c.cli(['wait-for', '--body-contains', 'nothing', '--timeout', '0.1', '--account', 'bob']);
    assert.equal(late.status, 1, late.stderr);
    assert.match(late.stdout, /no matching mail/);
    const bad = await c.cli(['wait-for', '--timeout', '601', '--account', 'bob']);
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr + bad.stdout, /too_large/);
    assert.match(bad.stderr + bad.stdout, /timeout_secs/);
  });
});
