// m4a connect … as a person types it (the built CLI, the daemon found through its data directory),
// against a TLS relay peer on 127.0.0.1: the token only from a 0600 file and never printed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { CLI } from './support/shell-agents.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { makeTestTls, type TestTls } from './support/test-tls.js';
import { RelayTestPeer } from './support/relay-test-peer.js';
import { until } from './support/until.js';

const TOKEN = 'cli-node-token-abcdef0123456789';

describe('m4a connect', () => {
  let tls: TestTls;
  let peer: RelayTestPeer;
  let d: TestDaemon;
  let home: string;
  let tokenFile: string;
  let env: Record<string, string>;
  const cli = (args: string[]) =>
    new Promise<{ status: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );
  const ok = async (args: string[]) => {
    const r = await cli(args);
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    assert.ok(!(r.stdout + r.stderr).includes(TOKEN), 'the token is never printed');
    return r;
  };
  const json = async (args: string[]) => JSON.parse((await ok([...args, '--json'])).stdout);
  const refused = async (args: string[], what: RegExp) => {
    const r = await cli(args);
    assert.notEqual(r.status, 0, `${args.join(' ')} should fail`);
    assert.match(r.stderr, what);
    assert.ok(!(r.stdout + r.stderr).includes(TOKEN));
  };

  before(async () => {
    tls = makeTestTls();
    peer = await RelayTestPeer.start(tls, { token: TOKEN, nodeId: 'laptop' });
    d = await startTestDaemon({ relayLink: { heartbeatMs: 200, backoffBaseMs: 20, backoffCapMs: 200, resetAfterMs: 100 } });
    await d.account('alice', { kind: 'human' });
    await d.account('bob', { kind: 'human' });
    await d.account('agent1');
    home = mkdtempSync(join(tmpdir(), 'm4a-connect-cli-'));
    tokenFile = join(home, 'node-token');
    writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir };
  });
  after(async () => {
    await d.stop();
    await peer.close();
    tls.remove();
    rmSync(home, { recursive: true, force: true });
  });

  const configure = (extra: string[] = []) => [
    'connect',
    'configure',
    '--server-url',
    peer.url,
    '--node-id',
    'laptop',
    '--node-token-file',
    tokenFile,
    '--human-mailbox',
    'alice',
    '--ca-file',
    tls.caFile,
    ...extra,
  ];

  it('refuses a token file others may read, unknown or non-human mailboxes, and ws:// off this machine', async () => {
    const loose = join(home, 'loose-token');
    writeFileSync(loose, `${TOKEN}\n`);
    chmodSync(loose, 0o644);
    const args = configure();
    args[args.indexOf(tokenFile)] = loose;
    await refused(args, /chmod 600/);
    await refused([...configure(), '--human-mailbox', 'nobody'], /unknown_participant/);
    await refused([...configure(), '--human-mailbox', 'agent1'], /malformed: agent1 is not a human account/);
    const ws = configure();
    ws[ws.indexOf(peer.url)] = 'ws://relay.example.com';
    await refused(ws, /malformed: server_url: ws:\/\/ only to a loopback host/);
    await refused(['connect', 'configure', '--node-id', 'laptop'], /needs --server-url, --node-token-file/);
    assert.equal((await json(['connect', 'status'])).configured, false);
  });

  it('configure, start, status: connected with a round trip; the settings file is 0600', async () => {
    const c = await json(configure());
    assert.equal(c.token, 'set');
    assert.equal(c.enabled, false);
    assert.deepEqual(c.human_mailboxes, ['alice']);
    const file = join(d.dataDir, 'relay-link.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).node_token, TOKEN);

    const started = await ok(['connect', 'start']);
    assert.match(started.stdout, /relay link: /);
    const conn = await peer.live();
    assert.equal(conn.headers.authorization, `Bearer ${TOKEN}`);
    await until('connected with a round trip', async () => {
      const s = await json(['connect', 'status']);
      return s.connected && s.rtt_ms !== null;
    });
    const text = (await ok(['connect', 'status'])).stdout;
    assert.match(text, /relay link: connected since \S+ \(round trip \d+ ms\)/);
    assert.match(text, /node +laptop/);
    assert.match(text, /token +set/);
  });

  it('status says the last error while the relay is away', async () => {
    await peer.kill();
    await until('disconnected', async () => !(await json(['connect', 'status'])).connected);
    const text = (await ok(['connect', 'status'])).stdout;
    assert.match(text, /not connected since \S+, dialling again/);
    assert.match(text, /last error +\S/);
    await peer.restart();
    await until('connected again', async () => (await json(['connect', 'status'])).connected);
  });

  it('update keeps what is not given; --no-ca-file forgets the CA file', async () => {
    const u = await json(['connect', 'update', '--human-mailbox', 'alice', '--human-mailbox', 'bob']);
    assert.deepEqual(u.human_mailboxes, ['alice', 'bob']);
    assert.equal(u.node_id, 'laptop');
    assert.equal(u.ca_file, tls.caFile);
    assert.equal(u.server_url, new URL(peer.url).href);
    assert.equal(u.token, 'set');
    const n = await json(['connect', 'update', '--no-ca-file']);
    assert.equal(n.ca_file, null);
    assert.deepEqual(n.human_mailboxes, ['alice', 'bob']);
    // The system's CAs do not know the test CA: the relay is refused until the CA file is back.
    await until('a TLS refusal', async () => /certificate|verify/i.test(String((await json(['connect', 'status'])).last_error)));
    assert.equal((await json(['connect', 'update', '--ca-file', tls.caFile])).ca_file, tls.caFile);
    await until('connected again', async () => (await json(['connect', 'status'])).connected);
  });

  it('removeuser, stop and start', async () => {
    assert.deepEqual((await json(['connect', 'removeuser', '--human-mailbox', 'bob'])).human_mailboxes, ['alice']);
    await refused(['connect', 'removeuser', '--human-mailbox', 'bob'], /unknown_participant/);
    const live = await peer.live();
    assert.match((await ok(['connect', 'stop'])).stdout, /stopped/);
    await until('closed', () => live.closed);
    assert.equal((await json(['connect', 'status'])).enabled, false);
    const n = peer.conns.length;
    await ok(['connect', 'start']);
    await until('dialled again', () => peer.conns.length > n);
  });
});
