// m4a relay node|user … through the built CLI (npm run build first), against the data directory
// of a relay serving in this process: what the commands change applies to the running relay.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import https from 'node:https';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../src/engine/log.js';
import { RelayState } from '../src/relay/relay-store.js';
import { startRelay, type RunningRelay } from '../src/relay/relay-server.js';
import { makeTestTls, type TestTls } from './support/test-tls.js';
import { TestBrowser, TestNode, dial, type Refusal } from './support/relay-test-node.js';
import { until } from './support/until.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const PW = 'correct horse battery';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('relay admin commands', () => {
  let tls: TestTls;
  let dir: string;
  let data: string;
  let state: RelayState;
  let relay: RunningRelay;

  const m4a = (args: string[], stdin?: string): Promise<Run> =>
    new Promise((resolve) => {
      const child = execFile(process.execPath, [CLI, 'relay', ...args, '--data-dir', data], { env: { ...process.env, M4A_RELAY_DIR: '' } }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin?.end(stdin ?? '');
    });

  before(async () => {
    tls = makeTestTls();
    dir = mkdtempSync(join(tmpdir(), 'm4a-relay-admin-'));
    data = join(dir, 'relay');
    state = await RelayState.open({ dataDir: data });
    relay = await startRelay({ state, log: silentLogger, host: '127.0.0.1', port: 0, tls: { cert: tls.certFile, key: tls.keyFile }, hub: { heartbeatMs: 200 } });
  });
  after(async () => {
    await relay.close();
    await state.close();
    rmSync(dir, { recursive: true, force: true });
    tls.remove();
  });

  it('node add writes the token 0600 to a new file (refusing one that exists), and the node connects with it', async () => {
    assert.equal(statSync(data).mode & 0o777, 0o700);
    const file = join(dir, 'n1.token');
    const r = await m4a(['node', 'add', 'n1', '--token-file', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const token = readFileSync(file, 'utf8').trim();
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    assert.ok(!r.stdout.includes(token));
    const n = await TestNode.connect(relay.origin, { node: 'n1', token, caFile: tls.caFile, mailboxes: ['alice'] });
    n.auto = (c) => ({ status: 200, body: { account: c.mailbox } });

    writeFileSync(join(dir, 'taken'), 'x');
    const refused = await m4a(['node', 'add', 'n2', '--token-file', join(dir, 'taken')]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /already_exists/);
    assert.equal(readFileSync(join(dir, 'taken'), 'utf8'), 'x');
    assert.equal((await state.listNodes()).length, 1, 'a refused file adds no node');
    await n.close();
  });

  it('node add without a file prints the token once; node list never shows tokens', async () => {
    const r = await m4a(['node', 'add', 'n2']);
    assert.equal(r.code, 0, r.stderr);
    const token = r.stdout.trim();
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    for (const args of [
      ['node', 'list'],
      ['node', 'list', '--json'],
    ]) {
      const l = await m4a(args);
      assert.equal(l.code, 0);
      assert.match(l.stdout, /n1/);
      assert.match(l.stdout, /n2/);
      assert.ok(!l.stdout.includes(token), 'no token in the list');
      assert.ok(!/digest/.test(l.stdout), 'no digest in the list');
    }
    const json = JSON.parse((await m4a(['node', 'list', '--json'])).stdout) as { nodes: { id: string }[] };
    assert.deepEqual(
      json.nodes.map((x) => x.id),
      ['n1', 'n2'],
    );
    assert.match((await m4a(['node', 'add', 'Bad Name'])).stderr, /malformed/);
  });

  it('user add from a password file or stdin, grant, and revoke ending the login at the running relay', async () => {
    const pwFile = join(dir, 'pw');
    writeFileSync(pwFile, `${PW}\n`, { mode: 0o600 });
    assert.equal((await m4a(['user', 'add', 'alice', '--password-file', pwFile])).code, 0);
    assert.equal((await m4a(['user', 'add', 'dave'], `${PW}\n`)).code, 0);
    const short = await m4a(['user', 'add', 'eve'], 'short\n');
    assert.equal(short.code, 1);
    assert.match(short.stderr, /malformed/);
    const badRole = await m4a(['user', 'grant', 'alice', '--node', 'n1', '--mailbox', 'alice', '--role', 'boss']);
    assert.equal(badRole.code, 1);
    assert.match(badRole.stderr, /malformed/);
    assert.equal((await m4a(['user', 'grant', 'alice', '--node', 'n1', '--mailbox', 'alice', '--role', 'owner'])).code, 0);
    assert.equal((await m4a(['user', 'grant', 'dave', '--node', 'n1', '--mailbox', 'alice', '--role', 'delegate'])).code, 0);
    const list = JSON.parse((await m4a(['user', 'list', '--json'])).stdout) as { users: { user: string; grant: { role: string } | null }[] };
    assert.deepEqual(
      list.users.map((u) => [u.user, u.grant?.role]),
      [
        ['alice', 'owner'],
        ['dave', 'delegate'],
      ],
    );

    const token = readFileSync(join(dir, 'n1.token'), 'utf8').trim();
    const n = await TestNode.connect(relay.origin, { node: 'n1', token, caFile: tls.caFile, mailboxes: ['alice'] });
    n.auto = (c) => ({ status: 200, body: { account: c.mailbox } });
    const b = new TestBrowser(relay.origin, tls.caFile);
    const login = await b.login('dave', PW);
    assert.equal(login.status, 200);
    assert.deepEqual(login.body.relay, { user: 'dave', node: 'n1', role: 'delegate' });
    assert.equal((await b.post('me', {})).status, 200);

    const revoked = await m4a(['user', 'revoke', 'dave']);
    assert.equal(revoked.code, 0, revoked.stderr);
    const after = await b.post('me', {});
    assert.equal(after.status, 401);
    assert.equal(after.body.error?.code, 'unauthenticated');
    assert.equal((await b.login('dave', PW)).body.error?.code, 'not_relayed');
    await n.close();
  });

  it('node remove drops the connected node at its next heartbeat and refuses it after', async () => {
    const token = readFileSync(join(dir, 'n1.token'), 'utf8').trim();
    const n = await TestNode.connect(relay.origin, { node: 'n1', token, caFile: tls.caFile, mailboxes: ['alice'] });
    assert.equal((await m4a(['node', 'remove', 'n1'])).code, 0);
    await until('the removed node dropped', () => n.closed !== null);
    const r = (await dial(relay.origin, { node: 'n1', token, caFile: tls.caFile })) as Refusal;
    assert.equal(r.status, 401);
    const again = await m4a(['node', 'remove', 'n1']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /malformed/);
  });

  it('relay serve refuses plain HTTP unless behind a proxy on loopback, and serves the pages over TLS until SIGTERM', async () => {
    for (const args of [[], ['--behind-proxy', '--listen', '0.0.0.0:0', '--public-url', 'https://relay.example'], ['--behind-proxy']]) {
      const r = await m4a(['serve', ...args]);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, /malformed/);
    }
    const served = join(dir, 'served');
    const child = spawn(process.execPath, [CLI, 'relay', 'serve', '--listen', '127.0.0.1:0', '--tls-cert', tls.certFile, '--tls-key', tls.keyFile, '--data-dir', served], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    child.stderr.on('data', (c: Buffer) => (log += c.toString('utf8')));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const port = await until('the relay listening', () => /"code":"relay_listening".*?"port":(\d+)/.exec(log)?.[1]);
    const page = await new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
      https
        .get(`https://127.0.0.1:${port}/`, { ca: readFileSync(tls.caFile), agent: false }, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, headers: res.headers });
        })
        .on('error', reject);
    });
    assert.equal(page.status, 200);
    assert.equal(page.headers['x-frame-options'], 'DENY');
    assert.equal(page.headers['cache-control'], 'no-store');
    const b = new TestBrowser(`https://127.0.0.1:${port}`, tls.caFile);
    assert.equal((await b.login('nobody', PW)).body.error?.code, 'bad_credentials');
    assert.equal(statSync(served).mode & 0o777, 0o700);
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});
