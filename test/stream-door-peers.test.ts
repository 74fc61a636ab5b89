// Who may use the stream door: the kernel's peer (SO_PEERCRED) through the attestor's walk (pid
// reuse, a process gone, another OS user and allowedUids), a second OS user end to end (as root,
// a child that drops to `nobody`), and the daemon without the door (no addon, --no-stream, a socket
// path too long, a file in the way, a live listener) or with a stale socket a dead daemon left.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLinuxAttestor } from '../src/attest/index.js';
import { hrMs } from '../src/attest/batch.js';
import type { AttestResult } from '../src/attest/types.js';
import { startTestDaemon } from './support/test-daemon.js';
import { helloRaw } from './support/stream-raw.js';
import { recordingLogger, type LogLine } from './support/recording-logger.js';
import { until } from './support/until.js';

const linux = process.platform === 'linux';
const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;
const ROOT = join(import.meta.dirname, '..');
const uid = process.getuid?.() ?? 0;

const reason = (r: AttestResult): string => (r.ok ? 'ok' : r.reason);

describe('attestPeer: the walk from the kernel-attested pid', { skip: !linux && 'Linux only' }, () => {
  const att = createLinuxAttestor({ hostId: 'test-host', packageRoot: ROOT });
  const allowing = createLinuxAttestor({ hostId: 'test-host', packageRoot: ROOT, allowedUids: [NOBODY] });
  after(async () => {
    await att.close?.();
    await allowing.close?.();
  });

  it('attests a live process with no /proc/net read and no fd scan', async () => {
    const r = await att.attestPeer!({ pid: process.pid, uid, acceptedAtHrMs: hrMs() });
    assert.equal(reason(r), 'ok');
    assert.equal(r.ok && r.attestation.session.pid, process.pid);
    assert.match(r.ok ? r.attestation.sessionId : '', /^s-[0-9a-f]{64}$/);
    const st = att.stats();
    assert.equal(st.netScans + st.fdScans, 0);
    assert.equal(st.mode, 'worker', 'on the worker thread, off the event loop');
  });

  it('a process that exited after connecting is process_gone', async () => {
    const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    const at = hrMs();
    await new Promise((r) => child.once('exit', r));
    assert.equal(reason(await att.attestPeer!({ pid: child.pid!, uid, acceptedAtHrMs: at })), 'process_gone');
  });

  it('a pid reused by a process that started after the accept is process_gone', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)'], { stdio: 'ignore' });
    try {
      await until('the child runs', () => existsSync(`/proc/${child.pid}/stat`));
      assert.equal(reason(await att.attestPeer!({ pid: child.pid!, uid, acceptedAtHrMs: hrMs() })), 'ok', 'started before this accept');
      assert.equal(reason(await att.attestPeer!({ pid: child.pid!, uid, acceptedAtHrMs: hrMs() - 60_000 })), 'process_gone', 'started after an accept a minute ago');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('the uid the kernel recorded decides foreign_user; allowedUids lets it in; /proc must agree with it', async () => {
    const r = await att.attestPeer!({ pid: process.pid, uid: NOBODY, acceptedAtHrMs: hrMs() });
    assert.equal(reason(r), 'foreign_user');
    assert.equal(!r.ok && r.foreignUid, NOBODY);
    // Allowed, but this pid runs as another uid than the kernel recorded: not the peer.
    assert.equal(reason(await allowing.attestPeer!({ pid: process.pid, uid: NOBODY, acceptedAtHrMs: hrMs() })), 'process_gone');
  });

  it('a process of another user: foreign_user, or attested when its uid is allowed', { skip: !isRoot && 'needs root to start a process as nobody' }, async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)'], { stdio: 'ignore', uid: NOBODY, gid: NOBODY, cwd: '/' });
    try {
      await until('the child runs as nobody', () => /^Uid:\s+65534/m.test(readFileSync(`/proc/${child.pid}/status`, 'utf8')));
      const q = { pid: child.pid!, uid: NOBODY, acceptedAtHrMs: hrMs() };
      assert.equal(reason(await att.attestPeer!(q)), 'foreign_user');
      const r = await allowing.attestPeer!(q);
      assert.equal(reason(r), 'ok');
      assert.equal(r.ok && r.attestation.session.uid, NOBODY);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

/** A node child that drops to nobody, connects to the socket and says hello; prints what happened. */
async function asNobody(sock: string, token: string): Promise<{ connectError?: string; frame?: any }> {
  const script = `
    process.setgroups([]); process.setgid(${NOBODY}); process.setuid(${NOBODY});
    const s = require('node:net').connect(process.env.SOCK);
    const out = (v) => { process.stdout.write(JSON.stringify(v)); process.exit(0); };
    s.on('error', (e) => out({ connectError: e.code }));
    s.on('connect', () => s.write(JSON.stringify({ id: 1, op: 'hello', input: { token: process.env.TOKEN } }) + '\\n'));
    let buf = '';
    s.on('data', (c) => { buf += c; const i = buf.indexOf('\\n'); if (i >= 0) out({ frame: JSON.parse(buf.slice(0, i)) }); });
    setTimeout(() => out({ connectError: 'timeout' }), 5000);`;
  // Not spawnSync: the daemon runs in this process and must answer meanwhile.
  const child = spawn(process.execPath, ['-e', script], { env: { SOCK: sock, TOKEN: token, PATH: process.env.PATH ?? '' }, cwd: '/', stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  await new Promise((r) => child.once('exit', r));
  return JSON.parse(out || '{}');
}

describe('a second OS user', { skip: (!linux && 'Linux only') || (!isRoot && 'needs root to run a child as nobody') }, () => {
  it('cannot connect (the data directory is 0700, the socket 0600); let in by the modes, its hello is foreign_user', async () => {
    const d = await startTestDaemon();
    try {
      const { secret } = await d.account('claude');
      assert.equal((await asNobody(d.socketPath!, secret)).connectError, 'EACCES');
      // Were the modes wrong, the kernel's uid still keeps it out.
      chmodSync(d.dataDir, 0o711);
      chmodSync(d.socketPath!, 0o666);
      const r = await asNobody(d.socketPath!, secret);
      assert.equal(r.frame?.error?.code, 'foreign_user', JSON.stringify(r));
    } finally {
      chmodSync(d.dataDir, 0o700);
      await d.stop();
    }
  });

  it('with its uid allowed (allowedUids), its hello attests its own process', async () => {
    const d = await startTestDaemon({ allowedUids: [NOBODY] });
    try {
      const { secret } = await d.account('claude');
      chmodSync(d.dataDir, 0o711);
      chmodSync(d.socketPath!, 0o666);
      const r = await asNobody(d.socketPath!, secret);
      assert.equal(r.frame?.result?.account, 'claude', JSON.stringify(r));
      assert.match(r.frame.result.session, /^s-/);
    } finally {
      chmodSync(d.dataDir, 0o700);
      await d.stop();
    }
  });
});

describe('the daemon without the stream door', () => {
  const warned = (lines: LogLine[]) => lines.filter((l) => l.level === 'warn' && l.msg?.includes('stream door'));

  it('without the addon: one warning, HTTP served, no socket, no socket in daemon.json', async () => {
    const lines: LogLine[] = [];
    const d = await startTestDaemon({ streamAddon: false, log: recordingLogger(lines) });
    try {
      assert.equal(d.socketPath, null);
      assert.equal(existsSync(join(d.dataDir, 'm4a.sock')), false);
      assert.equal(JSON.parse(readFileSync(join(d.dataDir, 'daemon.json'), 'utf8')).socket, undefined);
      assert.ok((await d.operator.whoami()).account, 'HTTP answers');
      assert.equal(warned(lines).length, 1);
    } finally {
      await d.stop();
    }
  });

  it('serve --no-stream: HTTP only, no warning', async () => {
    const lines: LogLine[] = [];
    const d = await startTestDaemon({ stream: false, log: recordingLogger(lines) });
    try {
      assert.equal(d.socketPath, null);
      assert.equal(existsSync(join(d.dataDir, 'm4a.sock')), false);
      assert.ok((await d.operator.whoami()).account);
      assert.equal(warned(lines).length, 0);
    } finally {
      await d.stop();
    }
  });

  it('a data directory whose socket path is over 107 bytes: one warning, HTTP only', async () => {
    const base = mkdtempSync(join(tmpdir(), 'm4a-long-'));
    const dataDir = join(base, 'd'.repeat(Math.max(1, 108 - base.length - '/m4a.sock'.length)));
    mkdirSync(dataDir, { mode: 0o700 });
    assert.ok(Buffer.byteLength(join(dataDir, 'm4a.sock')) > 107);
    const lines: LogLine[] = [];
    const d = await startTestDaemon({ dataDir, log: recordingLogger(lines) });
    try {
      assert.equal(d.socketPath, null);
      assert.ok((await d.operator.whoami()).account);
      assert.match(String((warned(lines)[0]?.obj as { why?: string })?.why), /107/);
    } finally {
      await d.stop();
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('a file that is not a socket is left alone (door off); a live listener is not taken over', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'm4a-test-'));
    const path = join(dataDir, 'm4a.sock');
    writeFileSync(path, 'mine', { mode: 0o600 });
    const lines: LogLine[] = [];
    let d = await startTestDaemon({ dataDir, log: recordingLogger(lines) });
    assert.equal(d.socketPath, null);
    assert.equal(readFileSync(path, 'utf8'), 'mine');
    assert.equal(warned(lines).length, 1);
    await d.stop();
    rmSync(path);
    const other = createServer((s) => s.on('error', () => undefined).end('not a daemon\n'));
    await new Promise<void>((r) => other.listen(path, r));
    try {
      d = await startTestDaemon({ dataDir, log: recordingLogger(lines) });
      assert.equal(d.socketPath, null);
      assert.match(String((warned(lines)[1]?.obj as { why?: string })?.why), /another process listens/);
      await d.stop();
    } finally {
      await new Promise((r) => other.close(r));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a stale socket a killed daemon left is replaced', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'm4a-test-'));
    const path = join(dataDir, 'm4a.sock');
    const holder = spawn(process.execPath, ['-e', `require('node:net').createServer().listen(${JSON.stringify(path)}, () => console.log('up'))`], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    await new Promise((r) => holder.stdout.once('data', r));
    holder.kill('SIGKILL');
    await new Promise((r) => holder.once('exit', r));
    assert.ok(existsSync(path), 'the killed listener left its socket file');
    assert.equal(await new Promise((r) => connect(path).once('error', (e: NodeJS.ErrnoException) => r(e.code))), 'ECONNREFUSED');
    const d = await startTestDaemon({ dataDir });
    try {
      assert.equal(d.socketPath, path);
      const { secret } = await d.account('claude');
      const s = await helloRaw(path, secret);
      assert.equal(s.hello.account, 'claude');
      s.close();
    } finally {
      await d.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
