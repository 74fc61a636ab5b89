// The CLI verbs of delivery chains, timers and receipts, run as a user runs them (the built CLI,
// a running daemon found through its data directory); every --json answer parsed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { CLI } from './support/shell-agents.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { parseDuration, parseStep } from '../src/cli/wake-commands.js';

describe('m4a wake / timer / receipts', () => {
  let d: TestDaemon;
  let home: string;
  let env: Record<string, string>;
  // Asynchronous: the daemon runs in this test process and must keep answering meanwhile.
  const cli = (args: string[]) =>
    new Promise<{ status: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );
  const json = async (args: string[]) => {
    const r = await cli([...args, '--json']);
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return JSON.parse(r.stdout);
  };

  before(async () => {
    d = await startTestDaemon();
    home = mkdtempSync(join(tmpdir(), 'm4a-wake-cli-'));
    const secret = (await d.account('bob')).secret;
    mkdirSync(join(home, 'mail4agent'));
    writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { bob: { secret } } }), { mode: 0o600 });
    env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir };
  });
  after(async () => {
    await d.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('wake set / list / clear, steps in the order given', async () => {
    const set = await json([
      'wake',
      'set',
      'bob',
      '--step',
      'hooks',
      '--step',
      'command=["/usr/bin/env","{account}"]',
      '--timeout-secs',
      '2m',
      '--step',
      'webhook=http://127.0.0.1:9/h',
      '--rooms',
    ]);
    assert.deepEqual(set.chain.steps, [
      { kind: 'hooks' },
      { kind: 'command', argv: ['/usr/bin/env', '{account}'], timeout_secs: 120 },
      { kind: 'webhook', url: 'http://127.0.0.1:9/h' },
    ]);
    assert.equal(set.chain.rooms, true);
    assert.match(set.webhook_signing_key, /^m4a_whsec_/, 'the first webhook chain shows the key once');
    const list = await json(['wake', 'list']);
    assert.equal(list.chains.length, 1);
    const human = await cli(['wake', 'list']);
    assert.match(human.stdout, /hooks → command=.* → webhook=http:\/\/127\.0\.0\.1:9\/h/);
    const bad = await cli(['wake', 'set', 'bob', '--step', 'command=["sh","-c","{subject}"]', '--json']);
    assert.notEqual(bad.status, 0);
    assert.equal(JSON.parse(bad.stderr).error.code, 'malformed');
    const named = await json(['wake', 'set', 'bob', '--step', 'command=["/usr/bin/env"]', '--env', 'ANTHROPIC_API_KEY', '--env', 'M4A_URL']);
    assert.deepEqual(named.chain.steps, [{ kind: 'command', argv: ['/usr/bin/env'], env: ['ANTHROPIC_API_KEY', 'M4A_URL'] }], 'names only, never values');
    assert.match((await cli(['wake', 'list'])).stdout, /env=ANTHROPIC_API_KEY,M4A_URL/);
    const token = await cli(['wake', 'set', 'bob', '--step', 'command=["/usr/bin/env"]', '--env', 'M4A_TOKEN', '--json']);
    assert.equal(JSON.parse(token.stderr).error.field, 'env[0]', "the starter's secret cannot be named");
    await json(['wake', 'clear', 'bob']);
    assert.deepEqual((await json(['wake', 'list'])).chains, []);
  });

  it('timer set / list / snooze / clear, and receipts of a message', async () => {
    const t = await json(['timer', 'set', '--in', '45m', '--note', 're-check the audit', '--account', 'bob', '--for-account']);
    assert.equal(t.to, 'bob');
    assert.equal((await json(['timer', 'list', '--account', 'bob'])).timers[0].id, t.id);
    const s = await json(['timer', 'snooze', t.id, '--in', '2h', '--account', 'bob']);
    assert.ok(Date.parse(s.due_at) > Date.parse(t.due_at));
    await json(['timer', 'clear', t.id, '--account', 'bob']);
    assert.deepEqual((await json(['timer', 'list', '--account', 'bob'])).timers, []);

    const alice = (await d.account('alice')).client;
    const sent = await alice.send({ to: 'bob', subject: 'hi', body: 'x' });
    const r = await json(['receipts', sent.message_id, '--account', 'bob']);
    assert.equal(r.receipts[0].recipient, 'bob');
    assert.equal(r.receipts[0].acked_at, null);
  });

  it('parses durations and steps, refusing what it cannot read', () => {
    assert.equal(parseDuration('90'), 90);
    assert.equal(parseDuration('45m'), 2700);
    assert.equal(parseDuration('1d'), 86_400);
    assert.throws(() => parseDuration('soon'), /not a duration/);
    assert.throws(() => parseDuration('0'), /at least one second/);
    assert.deepEqual(parseStep('codex=ws://127.0.0.1:4500', {}), { kind: 'codex-app-server', listen: 'ws://127.0.0.1:4500' });
    assert.throws(() => parseStep('command=rm -rf /', {}), /JSON array/);
    assert.throws(() => parseStep('pager', {}), /unknown step/);
  });
});
