// What a session's hooks were told, and its listen mode, outlive a daemon restart: old mail is not
// told again, and a listening session stays listening.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MailClient } from '../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

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
    assert.deepEqual(first.mail.map((m) => m.id), [sent.message_id]);
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
    assert.deepEqual(next.mail.map((m) => m.id), [fresh.message_id]);
    claude.close();
  } finally {
    await d?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
