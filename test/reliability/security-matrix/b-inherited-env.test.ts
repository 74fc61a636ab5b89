// Finding B of the hardening issue: one account's secret leaked into another account's wake. A
// daemon auto-started by alice's `m4a` command inherited her M4A_TOKEN, M4A_CREDENTIALS (a file
// whose only account is hers) and API keys, and bob's command wake inherited the daemon's
// environment, so bob's resumed agent was told it is alice.
// Now the auto-started daemon starts from an allow-list, and a wake's program gets only that base,
// M4A_WAKE_* and the variables its chain names (also when a person ran `m4a serve` in a shell).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MailClient } from '../../../src/client/http-client.js';
import { MailError, detailText } from '../../../src/wire/errors.js';
import { CLI } from '../../support/shell-agents.js';
import { serveProcess, type ServedDaemon } from '../../support/serve-process.js';
import { until } from '../../support/until.js';
import { freePort } from '../helpers.js';

/** The woken program: records its whole environment and what `m4a whoami` says it is. */
const PROGRAM = `
const { spawnSync } = require('node:child_process');
const { writeFileSync } = require('node:fs');
const [out, cli] = process.argv.slice(2);
const who = spawnSync(process.execPath, [cli, 'whoami', '--json'], { encoding: 'utf8', timeout: 20000 });
writeFileSync(out, JSON.stringify({ env: process.env, whoami: { status: who.status, stdout: who.stdout, stderr: who.stderr } }));
`;

const API_KEY = 'sk-test-b-inherited-env-0123456789';

describe('security matrix B: the secret of whoever started the daemon reaches no wake', () => {
  let home: string;
  let dataDir: string;
  let env: Record<string, string>;
  let program: string;
  let alice: string;
  let aliceFile: string;
  let served: ServedDaemon | null = null;
  const cli = (args: string[], extra: Record<string, string> = {}) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...env, ...extra }, timeout: 30_000 });
  const operator = (url: string) => new MailClient({ url, token: readFileSync(join(dataDir, 'operator.token'), 'utf8').trim() });
  const daemonPid = (): number => (JSON.parse(readFileSync(join(dataDir, 'daemon.json'), 'utf8')) as { pid: number }).pid;
  const environ = (pid: number): Record<string, string> =>
    Object.fromEntries(
      readFileSync(`/proc/${pid}/environ`, 'utf8')
        .split('\0')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
  /** Alice's mail to bob wakes bob's command chain; returns what the woken program recorded. */
  const wakeBob = async (url: string, out: string): Promise<{ env: Record<string, string>; whoami: { status: number; stdout: string } }> => {
    const c = new MailClient({ url, token: alice });
    try {
      await c.send({ to: 'bob', subject: 'wake up', body: 'x' });
    } finally {
      c.close();
    }
    await until('the command wake ran', () => existsSync(out) && readFileSync(out, 'utf8').length > 0, 30_000);
    return JSON.parse(readFileSync(out, 'utf8'));
  };
  const assertNoSecret = (got: Record<string, string>, where: string): void => {
    for (const [k, v] of Object.entries(got)) {
      assert.ok(!v.includes(alice), `${where}: ${k} carries alice's secret`);
      assert.ok(!v.includes(API_KEY), `${where}: ${k} carries the API key`);
    }
    for (const k of ['M4A_TOKEN', 'M4A_ACCOUNT', 'M4A_CREDENTIALS', 'OPENAI_API_KEY']) assert.equal(got[k], undefined, `${where}: ${k} is not inherited`);
    assert.ok(!Object.values(got).some((v) => v.includes(aliceFile)), `${where}: no variable points at alice's credentials file`);
  };

  before(async () => {
    home = mkdtempSync(join(tmpdir(), 'm4a-sec-b-'));
    dataDir = join(home, 'data');
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => v !== undefined && !k.startsWith('M4A_'))) as Record<string, string>;
    env = { ...clean, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), M4A_DATA_DIR: dataDir, M4A_PORT: String(await freePort()) };
    program = join(home, 'woken.cjs');
    writeFileSync(program, PROGRAM);
    mkdirSync(join(home, 'out'));
    // A first daemon (started by a clean command) makes the two accounts; then it stops, and
    // alice's agent, holding her secret and a model API key, is the one whose command starts the next.
    const a = cli(['admin', 'account', 'add', 'alice', '--json']);
    assert.equal(a.status, 0, a.stderr);
    alice = JSON.parse(a.stdout).secret;
    assert.equal(cli(['admin', 'account', 'add', 'bob', '--json']).status, 0);
    assert.equal(cli(['daemon', 'stop']).status, 0);
    // Her own credentials file: `m4a` with no flag and no token would take its only account.
    aliceFile = join(home, 'alice-secrets.json');
    writeFileSync(aliceFile, JSON.stringify({ version: 1, accounts: { alice: { secret: alice } } }), { mode: 0o600 });
    const only = cli(['whoami', '--json'], { M4A_CREDENTIALS: aliceFile });
    assert.equal(JSON.parse(only.stdout).account, 'alice', 'the file alone makes a command alice');
    const who = cli(['whoami', '--json'], { M4A_TOKEN: alice, M4A_ACCOUNT: 'alice', M4A_CREDENTIALS: aliceFile, OPENAI_API_KEY: API_KEY });
    assert.equal(who.status, 0, who.stderr);
    assert.equal(JSON.parse(who.stdout).account, 'alice', 'the command that auto-started the daemon is alice');
  });
  after(async () => {
    if (served) {
      served.child.kill('SIGTERM');
      await served.exited;
    }
    cli(['daemon', 'stop']);
    rmSync(home, { recursive: true, force: true });
  });

  it('the auto-started daemon has no M4A_TOKEN, M4A_CREDENTIALS or API key in its environment, only the allow-list', () => {
    const got = environ(daemonPid());
    assertNoSecret(got, 'the auto-started daemon');
    assert.equal(got.M4A_DATA_DIR, dataDir, "the daemon's own settings are kept");
    assert.equal(got.M4A_PORT, env.M4A_PORT);
    assert.equal(got.HOME, home);
    assert.equal(got.PATH, env.PATH);
  });

  it("bob's command wake has neither alice's secret, her credentials file nor the API key, and `m4a whoami` there is not alice", async () => {
    const url = `http://127.0.0.1:${env.M4A_PORT}`;
    const op = operator(url);
    const out = join(home, 'out', 'autostarted.json');
    try {
      await op.admin.wakeSet({ account: 'bob', steps: [{ kind: 'command', argv: [process.execPath, program, out, CLI], timeout_secs: 60 }], debounce_ms: 0 });
      const got = await wakeBob(url, out);
      assertNoSecret(got.env, "bob's command wake");
      assert.equal(got.env.M4A_WAKE_ACCOUNT, 'bob');
      assert.equal(got.env.M4A_DATA_DIR, dataDir, 'the woken program can find the daemon');
      assert.notEqual(got.whoami.status, 0, `whoami in bob's wake must not answer as anyone: ${got.whoami.stdout}`);
      assert.ok(!got.whoami.stdout.includes('"alice"'));
    } finally {
      await op.admin.wakeClear('bob').catch(() => {});
      op.close();
    }
  });

  it('`m4a serve` run in a shell holding the secret: a wake gets only the allow-list and the names its chain gives; naming M4A_TOKEN or M4A_CREDENTIALS is refused', async () => {
    assert.equal(cli(['daemon', 'stop']).status, 0);
    const port = await freePort();
    served = await serveProcess(['--data-dir', dataDir, '--port', String(port)], {
      ...env,
      M4A_PORT: String(port),
      M4A_TOKEN: alice,
      M4A_ACCOUNT: 'alice',
      M4A_CREDENTIALS: aliceFile,
      OPENAI_API_KEY: API_KEY,
      KEEP_ME: 'named by the chain',
      NOT_NAMED: 'x',
    });
    const op = operator(served.url);
    const out = join(home, 'out', 'served.json');
    try {
      const before = await op.admin.wakeList();
      for (const name of ['M4A_TOKEN', 'M4A_CREDENTIALS']) {
        const refused = await op.admin.wakeSet({ account: 'bob', steps: [{ kind: 'command', argv: [process.execPath, program, out, CLI], env: ['KEEP_ME', name] }] }).then(
          () => null,
          (e: unknown) => e,
        );
        assert.ok(refused instanceof MailError, `${name}: ${String(refused)}`);
        assert.equal(refused.code, 'malformed');
        assert.equal(refused.details.field, 'env[1]');
        assert.match(detailText(refused.details.reason), new RegExp(`^${name} belongs to whoever started the daemon`));
        assert.deepEqual(await op.admin.wakeList(), before, `the chain naming ${name} changed nothing`);
      }

      await op.admin.wakeSet({ account: 'bob', steps: [{ kind: 'command', argv: [process.execPath, program, out, CLI], env: ['KEEP_ME'], timeout_secs: 60 }], debounce_ms: 0 });
      const got = await wakeBob(served.url, out);
      assertNoSecret(got.env, 'a wake of a daemon run in a shell');
      assert.equal(got.env.KEEP_ME, 'named by the chain', 'a variable the chain names is passed');
      assert.equal(got.env.NOT_NAMED, undefined, 'a variable the chain does not name is not');
      assert.equal(got.env.M4A_WAKE_ACCOUNT, 'bob');
      assert.notEqual(got.whoami.status, 0);
      assert.ok(!got.whoami.stdout.includes('"alice"'));
      // The daemon itself still holds what its shell gave it; only its children are cleaned.
      assert.equal(environ(served.child.pid!).M4A_TOKEN, alice);
      assert.equal(environ(served.child.pid!).M4A_CREDENTIALS, aliceFile);
    } finally {
      op.close();
    }
  });
});
