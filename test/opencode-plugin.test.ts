// The opencode plugin's delivery against the real daemon (opencode itself runs only in test/agents:
// opencode-live.test.ts). The plugin object is the one the stub exports; opencode's client is
// replaced by a recorder of `session.promptAsync` calls, the one call of it the plugin makes.
// Proven: mail before any session is seen waits and is given once one is prompted; a sub-agent's
// session is never the target; mail becomes one 📬 prompt to the session last prompted; a prompt that fails waits for that
// session's next `session.idle` and is given then, once.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpencodeMail, type OpencodeInput } from '../src/cli/extension/opencode-plugin.js';
import { until } from './support/until.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

describe('the opencode plugin', () => {
  let d: TestDaemon;
  let home: string;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    d = await startTestDaemon();
    home = mkdtempSync(join(tmpdir(), 'm4a-oc-plugin-'));
    const secret = (await d.account('opencode')).secret;
    mkdirSync(join(home, 'mail4agent'));
    writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { opencode: { secret } } }), { mode: 0o600 });
    env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir, PATH: process.env.PATH };
  });
  after(async () => {
    await d.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('gives each batch of mail to the top-level session as one 📬 prompt; a failed prompt waits for its next idle', async () => {
    const prompts: { id: string; text: string; ok: boolean }[] = [];
    let failNext = false;
    const input: OpencodeInput = {
      client: {
        session: {
          promptAsync: ({ path, body }) => {
            const ok = !failNext;
            failNext = false;
            prompts.push({ id: path.id, text: body.parts.map((p) => p.text).join(''), ok });
            return Promise.resolve(ok ? {} : { error: { name: 'NotFoundError' } });
          },
        },
      },
    };
    const plugin = new OpencodeMail(input, { account: 'opencode' }, env);
    const hooks = plugin.hooks();
    try {
      const alice = (await d.account('alice')).client;
      // A task tool's sub-agent session is never where mail goes.
      await hooks.event({ event: { type: 'session.created', properties: { info: { id: 'ses_child', parentID: 'ses_main' } } } });
      await hooks['chat.message']({ sessionID: 'ses_child' }, {});
      assert.equal(plugin.current(), null);
      // Mail before any session: nothing to give it to yet; it is given once a session is prompted.
      const first = await alice.send({ to: 'opencode', subject: 'the first', body: 'body text the prompt never carries' });
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(prompts.length, 0);
      await hooks['chat.message']({ sessionID: 'ses_main' }, {});
      assert.equal(plugin.current(), 'ses_main');
      await until('the first prompt', () => prompts.length === 1, 15_000);
      assert.equal(prompts[0]!.id, 'ses_main');
      assert.ok(prompts[0]!.text.startsWith('📬 You have new mail in mail4agent:'), prompts[0]!.text);
      assert.ok(prompts[0]!.text.includes(first.message_id) && prompts[0]!.text.includes('the first'));
      assert.ok(!prompts[0]!.text.includes('body text'), 'ids, senders and subjects only: no body');

      // The prompt fails (opencode busy shutting the session, say): kept for the next idle.
      failNext = true;
      const second = await alice.send({ to: 'opencode', subject: 'the second', body: 'b' });
      await until('the failed attempt', () => prompts.length === 2, 15_000);
      assert.equal(prompts[1]!.ok, false);
      await hooks.event({ event: { type: 'session.idle', properties: { sessionID: 'ses_child' } } });
      assert.equal(prompts.length, 2, "another session's idle gives nothing");
      await hooks.event({ event: { type: 'session.idle', properties: { sessionID: 'ses_main' } } });
      await until('the retried prompt', () => prompts.length === 3, 5_000);
      assert.deepEqual([prompts[2]!.id, prompts[2]!.ok, prompts[2]!.text.includes(second.message_id)], ['ses_main', true, true]);
      await hooks.event({ event: { type: 'session.idle', properties: { sessionID: 'ses_main' } } });
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(prompts.length, 3, 'given once');
    } finally {
      plugin.stop();
    }
  });
});
