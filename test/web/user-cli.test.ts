// m4a user create / passwd / revoke-sessions: the real CLI (built) against a daemon on its own data
// directory; the password comes from stdin and never from the command line.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { CLI } from '../support/shell-agents.js';
import { call, login, webPost } from './web-helpers.js';

describe('m4a user', () => {
  let d: TestDaemon;
  // Asynchronous: the daemon answers from this very process, so its event loop must keep running.
  const m4a = (args: string[], input = ''): Promise<{ status: number | null; stdout: string; stderr: string }> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, ...args, '--data-dir', d.dataDir], { timeout: 30_000 });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      child.on('error', reject);
      child.on('close', (status) => resolve({ status, stdout, stderr }));
      child.stdin.end(input);
    });

  before(async () => {
    d = await startTestDaemon();
  });
  after(() => d.stop());

  it('create makes a person who can log in in the browser', async () => {
    const r = await m4a(['user', 'create', 'alice', '--display-name', 'Alice Liddell', '--password-stdin', '--json'], 'through the looking glass\n');
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.account.kind, 'human');
    assert.equal(out.account.label, 'Alice Liddell');
    assert.deepEqual(out.account.permissions, { send: true, read: true, urgent: false, operator: false });
    assert.ok(!r.stdout.includes('through the looking glass'));
    assert.match((await login(d.url, 'alice', 'through the looking glass')).csrf, /^[A-Za-z0-9_-]{43}$/);
  });

  it('refuses without a password, and asks on a terminal only', async () => {
    const r = await m4a(['user', 'create', 'bob'], '');
    assert.equal(r.status, 2, 'stdin is no terminal: usage error, nothing created');
    assert.match(r.stderr, /--password-stdin/);
    const short = await m4a(['user', 'create', 'bob', '--password-stdin'], 'short\n');
    assert.equal(short.status, 1);
    assert.match(short.stderr, /malformed: password/);
  });

  it('passwd sets a new password and ends logins; revoke-sessions ends them too', async () => {
    const l = await login(d.url, 'alice', 'through the looking glass');
    const p = await m4a(['user', 'passwd', 'alice', '--password-stdin'], 'down the rabbit hole\n');
    assert.equal(p.status, 0, p.stderr);
    assert.equal((await call(d.url, l, 'me')).status, 401);
    assert.equal((await webPost(d.url, 'login', { body: { account: 'alice', password: 'through the looking glass' } })).status, 401);
    await new Promise((r) => setTimeout(r, 1100)); // the wrong password above started a 1 s delay
    const l2 = await login(d.url, 'alice', 'down the rabbit hole');
    const v = await m4a(['user', 'revoke-sessions', 'alice', '--json']);
    assert.equal(v.status, 0, v.stderr);
    assert.equal(JSON.parse(v.stdout).revoked, 1);
    assert.equal((await call(d.url, l2, 'me')).status, 401);
  });
});
