// The built m4a over the stream door of a real daemon: send, inbox, a parked inbox and `m4a mcp`
// reach the door (its request count rises; HTTP is not asked), and with M4A_NO_STREAM=1 the same
// commands go over HTTP and the door sees nothing. Where the CLI finds the socket: daemon.json.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { daemonTarget } from '../src/cli/daemon-target.js';
import { CLI } from './support/shell-agents.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

describe('m4a over the stream door (built CLI)', () => {
  let d: TestDaemon;
  let home: string;
  let env: Record<string, string>;
  // Asynchronous: the daemon runs in this test process and must keep answering meanwhile.
  const cli = (args: string[], extra: Record<string, string> = {}) =>
    new Promise<Run>((resolve) =>
      execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env, ...extra }, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );
  const ok = async (args: string[], extra: Record<string, string> = {}) => {
    const r = await cli([...args, '--json'], extra);
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  const requests = () => d.streamDoor!.stats().requests;

  before(async () => {
    d = await startTestDaemon();
    home = mkdtempSync(join(tmpdir(), 'm4a-stream-cli-'));
    const accounts: Record<string, { secret: string }> = {};
    for (const id of ['alice', 'bob']) accounts[id] = { secret: (await d.account(id)).secret };
    mkdirSync(join(home, 'mail4agent'));
    writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts }), { mode: 0o600 });
    env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir };
    delete process.env.M4A_URL;
    delete process.env.M4A_NO_STREAM;
  });
  after(async () => {
    await d.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('finds the socket in daemon.json, unless M4A_NO_STREAM=1 or M4A_URL names another daemon', () => {
    const info = JSON.parse(readFileSync(join(d.dataDir, 'daemon.json'), 'utf8')) as { url: string; socket: string };
    assert.equal(info.socket, d.socketPath);
    assert.deepEqual(daemonTarget(d.dataDir, {}), { url: d.url, socket: d.socketPath });
    assert.equal(daemonTarget(d.dataDir, { M4A_NO_STREAM: '1' }).socket, undefined);
    assert.deepEqual(daemonTarget(d.dataDir, { M4A_URL: 'http://127.0.0.1:9' }), { url: 'http://127.0.0.1:9', socket: undefined });
    assert.equal(daemonTarget(d.dataDir, { M4A_URL: d.url }).socket, d.socketPath, 'M4A_URL naming this very daemon');
  });

  it('m4a send and m4a inbox go over the socket', async () => {
    const r0 = requests();
    const sent = await ok(['send', 'bob', 'by socket', 'hello', '--account', 'alice']);
    assert.equal(requests() - r0, 2, 'hello and send reached the stream door');
    const page = await ok(['inbox', '--account', 'bob']);
    assert.equal(requests() - r0, 4);
    assert.deepEqual(
      (page.messages as { message_id: string; body: string }[]).map((m) => [m.message_id, m.body]),
      [[sent.message_id, 'hello']],
    );
    await ok(['ack', sent.message_id as string, '--account', 'bob']);
  });

  it('with M4A_NO_STREAM=1 the same commands go over HTTP', async () => {
    const r0 = requests();
    const plain = { M4A_NO_STREAM: '1' };
    const sent = await ok(['send', 'bob', 'by http', 'hello', '--account', 'alice'], plain);
    const page = await ok(['inbox', '--account', 'bob'], plain);
    assert.deepEqual(
      (page.messages as { message_id: string }[]).map((m) => m.message_id),
      [sent.message_id],
    );
    await ok(['ack', sent.message_id as string, '--account', 'bob'], plain);
    assert.equal(requests(), r0, 'the stream door saw none of it');
  });

  it('a parked m4a inbox --wait is answered over the socket', async () => {
    const r0 = requests();
    const waiting = ok(['inbox', '--wait', '20', '--account', 'bob']);
    await until('the wait parked', () => d.engine.parkedWaits() === 1, 20_000);
    assert.equal(requests() - r0, 2);
    const sent = await ok(['send', 'bob', 'wakes it', 'x', '--account', 'alice']);
    const page = await waiting;
    assert.deepEqual(
      (page.messages as { message_id: string }[]).map((m) => m.message_id),
      [sent.message_id],
    );
    await ok(['ack', sent.message_id as string, '--account', 'bob']);
  });

  it('m4a mcp forwards JSON-RPC over the socket', async () => {
    const r0 = requests();
    const bridge = spawn(process.execPath, [CLI, 'mcp', '--account', 'alice'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: bridge.stdout });
    const answers: { id: number; result?: { tools?: unknown[]; content?: { text: string }[] } }[] = [];
    lines.on('line', (l) => answers.push(JSON.parse(l) as (typeof answers)[number]));
    const exited = new Promise((r) => bridge.on('exit', r));
    try {
      const write = (m: unknown) => bridge.stdin.write(`${JSON.stringify(m)}\n`);
      write({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'stream-cli-test', version: '1' } } });
      await until('initialize answered', () => answers.length === 1, 20_000);
      write({ jsonrpc: '2.0', method: 'notifications/initialized' });
      write({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'm4a_mail_whoami', arguments: {} } });
      await until('whoami answered', () => answers.find((a) => a.id === 2));
      const who = JSON.parse(answers.find((a) => a.id === 2)!.result!.content![0]!.text) as { account: string; card: { attested: { pid: number } } };
      assert.equal(who.account, 'alice');
      assert.equal(who.card.attested.pid, process.pid, 'the bridge is transparent to attestation over the socket too');
      assert.equal(requests() - r0, 4, 'hello, initialize, the notification and the call');
    } finally {
      bridge.stdin.end();
      await exited;
    }
  });
});
