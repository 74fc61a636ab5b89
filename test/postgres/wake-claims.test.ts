// Two daemons on one PostgreSQL store both see every commit; each (message, recipient) is woken by
// exactly one of them (the first to claim it), and the chain set through one applies on both.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MailClient } from '../../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { freshSchema, noteFailure, pgSkip, sleep } from './support/pg.js';

const RECORDER = `require('node:fs').appendFileSync(process.argv[2], JSON.stringify({ ids: process.env.M4A_WAKE_MESSAGE_IDS, event: process.env.M4A_WAKE_EVENT_ID }) + '\\n');`;

describe('postgres: wake claims across daemons', { skip: pgSkip }, () => {
  it('every message wakes its recipient exactly once, whichever daemon saw it first', async (t) => {
    t.after(noteFailure);
    const { spec } = await freshSchema('wake_claims');
    const dir = mkdtempSync(join(tmpdir(), 'm4a-wake-claims-'));
    const daemons: TestDaemon[] = [];
    try {
      for (const name of ['d1', 'd2']) daemons.push(await startTestDaemon({ dataDir: join(dir, name), store: spec }));
      const [d1, d2] = daemons as [TestDaemon, TestDaemon];
      const script = join(dir, 'recorder.cjs');
      const out = join(dir, 'runs.jsonl');
      writeFileSync(script, RECORDER);
      await d1.account('bob');
      const { client: alice1, secret } = await d1.account('alice');
      const alice2 = new MailClient({ url: d2.url, token: secret });
      await d1.operator.admin.wakeSet({ account: 'bob', steps: [{ kind: 'command', argv: [process.execPath, script, out], timeout_secs: 30 }], debounce_ms: 0 });
      const sent: string[] = [];
      for (let i = 0; i < 12; i++) {
        const via = i % 2 === 0 ? alice1 : alice2;
        sent.push((await via.send({ to: 'bob', subject: `claim ${i}`, body: 'x' })).message_id);
        await sleep(150);
      }
      const runs = () =>
        existsSync(out)
          ? readFileSync(out, 'utf8')
              .trim()
              .split('\n')
              .filter(Boolean)
              .map((l) => JSON.parse(l) as { ids: string })
          : [];
      const deadline = Date.now() + 20_000;
      while (runs().flatMap((r) => r.ids.split(',')).length < sent.length && Date.now() < deadline) await sleep(50);
      await sleep(1500); // a second daemon's duplicate would show up here
      const woken = runs().flatMap((r) => r.ids.split(','));
      assert.deepEqual([...woken].sort(), [...sent].sort(), 'each message named in exactly one wake across both daemons');
      assert.ok(d1.wake.stats.runs + d2.wake.stats.runs >= 1);
      alice1.close();
      alice2.close();
    } finally {
      for (const d of daemons) await d.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
