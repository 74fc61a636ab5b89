// The daemon as users run it: `m4a serve` in its own process, `m4a admin` from another,
// one daemon per data directory, SIGTERM answers parked waits, data survives a restart.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MailClient } from '../src/client/http-client.js';
import { serveProcess, type ServedDaemon } from './support/serve-process.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

function m4a(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const serve = (dataDir: string): Promise<ServedDaemon> => serveProcess(['--data-dir', dataDir, '--port', '0']);

describe('daemon lifecycle (built CLI, separate processes)', () => {
  let dir: string;
  before(() => {
    assert.ok(existsSync(CLI), 'run `npm run build` first (npm test does)');
    dir = mkdtempSync(join(tmpdir(), 'm4a-life-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('serves, registers accounts from the CLI, refuses a second daemon, stops cleanly, keeps mail', async () => {
    const d1 = await serve(dir);
    try {
      assert.equal(statSync(dir).mode & 0o777, 0o700, 'data directory is private');
      assert.equal(statSync(join(dir, 'operator.token')).mode & 0o777, 0o600, 'operator credential is 0600');

      const human = m4a(['admin', 'account', 'add', 'claude', '--data-dir', dir]);
      assert.equal(human.status, 0, human.stderr);
      const secret = /\n(m4a_\S+)/.exec(human.stdout)?.[1];
      assert.ok(secret, 'the secret is printed once');
      const json = m4a(['admin', 'account', 'add', 'codex', '--data-dir', dir, '--json']);
      assert.equal(json.status, 0, json.stderr);
      const codexSecret = JSON.parse(json.stdout).secret as string;
      const dup = m4a(['admin', 'account', 'add', 'codex', '--data-dir', dir]);
      assert.equal(dup.status, 1);
      assert.match(dup.stderr, /already_exists/);
      const list = m4a(['admin', 'account', 'list', '--data-dir', dir, '--json']);
      assert.ok(!list.stdout.includes(secret) && !list.stdout.includes(codexSecret) && !/digest/i.test(list.stdout));
      assert.equal(m4a(['admin', 'room', 'add', 'reviewers', '--data-dir', dir]).status, 0);
      assert.equal(m4a(['admin', 'room', 'member', 'add', 'reviewers', 'codex', '--data-dir', dir]).status, 0);
      assert.equal(m4a(['admin', 'room', 'member', 'add', 'reviewers', 'claude', '--data-dir', dir]).status, 0, 'members only may post');

      const second = m4a(['serve', '--data-dir', dir, '--port', '0']);
      assert.equal(second.status, 4);
      assert.match(second.stderr, /already using/);

      const claude = new MailClient({ url: d1.url, token: secret });
      const codex = new MailClient({ url: d1.url, token: codexSecret });
      const sent = await claude.send({ to: '#reviewers', subject: 'durable', body: 'kept across restarts' });
      const me = await claude.whoami();
      const parked = codex.inbox({ wait_secs: 30, after: (await codex.inbox({ include_acked: true })).next_cursor! });
      await new Promise((r) => setTimeout(r, 100));
      const t0 = Date.now();
      d1.child.kill('SIGTERM');
      assert.deepEqual((await parked).messages, [], 'SIGTERM answers parked waits');
      assert.equal(await d1.exited, 0);
      assert.ok(Date.now() - t0 < 10_000);
      assert.ok(!existsSync(join(dir, 'daemon.lock')), 'the lock is released');
      claude.close();
      codex.close();

      const d2 = await serve(dir);
      try {
        const c2 = new MailClient({ url: d2.url, token: codexSecret });
        const page = await c2.inbox();
        assert.deepEqual(
          page.messages.map((m) => m.message_id),
          [sent.message_id],
          'acknowledged mail survives a restart',
        );
        const cl2 = new MailClient({ url: d2.url, token: secret });
        assert.equal((await cl2.whoami()).address, me.address, 'the same process is the same session across daemon restarts');
        c2.close();
        cl2.close();
      } finally {
        d2.child.kill('SIGTERM');
        await d2.exited;
      }
    } finally {
      if (d1.child.exitCode === null) d1.child.kill('SIGKILL');
    }
  });

  it('reports an unreachable daemon with its own exit code', () => {
    const empty = mkdtempSync(join(tmpdir(), 'm4a-none-'));
    try {
      // With M4A_URL set nothing is auto-started: the daemon named there must answer.
      const r = m4a(['admin', 'account', 'list', '--data-dir', empty], { M4A_URL: 'http://127.0.0.1:9' });
      assert.equal(r.status, 3, r.stderr);
      assert.match(r.stderr, /no mail4agent daemon/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('operator credentials with a shared store', () => {
  it('a second data directory on the same store gets its own operator, never rotating the first', async () => {
    const { startDaemon } = await import('../src/daemon/daemon.js');
    const { silentLogger } = await import('../src/engine/log.js');
    const root = mkdtempSync(join(tmpdir(), 'm4a-ops-'));
    const store = `sqlite:${join(root, 'shared.db')}`;
    try {
      const a = await startDaemon({ dataDir: join(root, 'a'), store, port: 0, log: silentLogger });
      const tokenA = a.operatorToken;
      await a.close();
      const b = await startDaemon({ dataDir: join(root, 'b'), store, port: 0, log: silentLogger });
      assert.notEqual(b.operatorToken, tokenA);
      const list = await new MailClient({ url: b.url, token: b.operatorToken }).admin.accountList();
      assert.deepEqual(
        list.accounts
          .filter((x) => x.permissions.operator)
          .map((x) => x.id)
          .sort(),
        ['operator', `operator-${b.hostId.slice(0, 12)}`],
      );
      await b.close();
      const a2 = await startDaemon({ dataDir: join(root, 'a'), store, port: 0, log: silentLogger });
      assert.equal(a2.operatorToken, tokenA, "the first data directory's credential still works");
      await a2.close();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
