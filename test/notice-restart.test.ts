// What a session's hooks were told, and its listen mode, outlive a daemon restart: old mail is not
// told again, and a listening session stays listening.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MailClient } from '../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

it('notice state and listen mode survive a restart', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'm4a-notice-'));
  let d: TestDaemon | null = await startTestDaemon({ dataDir });
  try {
    const { secret } = await d.account('claude');
    const alice = (await d.account('alice')).client;
    let claude = new MailClient({ url: d.url, token: secret });
    const sent = await alice.send({ to: 'claude', subject: 'old news', body: 'x' });
    const first = await claude.notice({ event: 'stop' });
    assert.equal(first.block, true);
    assert.deepEqual(
      first.mail.map((m) => m.message_id),
      [sent.message_id],
    );
    assert.equal((await claude.listen(true)).listening, true);
    claude.close();
    alice.close();
    await d.stop();
    d = null;

    d = await startTestDaemon({ dataDir });
    claude = new MailClient({ url: d.url, token: secret });
    const again = await claude.notice({ event: 'peek' });
    assert.deepEqual(again.mail, [], 'old mail is not told again after the restart');
    assert.equal(again.listening, true, 'still listening');
    const bob = (await d.account('bob')).client;
    const fresh = await bob.send({ to: 'claude', subject: 'new news', body: 'y' });
    const next = await claude.notice({ event: 'stop' });
    assert.deepEqual(
      next.mail.map((m) => m.message_id),
      [fresh.message_id],
    );
    claude.close();
  } finally {
    await d?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

it('what an inbox page showed stays shown after a restart (the mark is written behind the read, flushed at stop)', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'm4a-shown-'));
  let d: TestDaemon | null = await startTestDaemon({ dataDir });
  try {
    const { secret } = await d.account('claude');
    const alice = (await d.account('alice')).client;
    let claude = new MailClient({ url: d.url, token: secret });
    const old = await alice.send({ to: 'claude', subject: 'read, never acknowledged', body: 'x' });
    assert.deepEqual(
      (await claude.inbox()).messages.map((m) => m.message_id),
      [old.message_id],
    );
    claude.close();
    alice.close();
    await d.stop();
    d = null;

    d = await startTestDaemon({ dataDir });
    claude = new MailClient({ url: d.url, token: secret });
    assert.deepEqual((await claude.notice({ event: 'peek' })).mail, [], 'shown by the inbox before the restart: not news');
    const waiting = claude.inbox({ wait_secs: 30 });
    await until('the wait parked', () => d!.engine.parkedWaits() === 1);
    const bob = (await d.account('bob')).client;
    const fresh = await bob.send({ to: 'claude', subject: 'new', body: 'y' });
    assert.deepEqual(
      (await waiting).messages.map((m) => m.message_id),
      [old.message_id, fresh.message_id],
    );
    claude.close();
  } finally {
    await d?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
