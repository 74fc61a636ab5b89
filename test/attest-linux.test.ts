// Linux attestation against real sockets and real processes (no mocks). Linux only.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { createAttestor, createLinuxAttestor, deriveSessionId } from '../src/attest/index.js';
import type { AttestResult, Attestation, ConnectionTuple } from '../src/attest/types.js';
import { AGENT_SESSION_VARS } from '../src/wire/inherited-env.js';

const linux = process.platform === 'linux';
const NODE = process.execPath;
const hasIPv6 = linux && readFileSync('/proc/net/if_inet6', 'latin1').includes(' lo');
const hasPython = spawnSync('python3', ['-c', ''], { stdio: 'ignore' }).status === 0;
const isRoot = process.getuid?.() === 0;
const HOST = 'test-host';
const ROOT = realpathSync(join(import.meta.dirname, '..'));

const opt = { skip: !linux && 'Linux only' };
const needs = (ok: boolean, why: string) => ({ skip: (!linux && 'Linux only') || (!ok && why) });

function attestor(packageRoot = ROOT, allowedUids?: number[]) {
  return createLinuxAttestor({ hostId: HOST, packageRoot, ...(allowedUids ? { allowedUids } : {}) });
}

/** Start time (field 22) and ppid (field 4), read independently of the module under test. */
function stat(pid: number | 'self'): { startTime: number; ppid: number } {
  const text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), startTime: Number(f[19]) };
}

function ok(r: AttestResult): Attestation {
  if (!r.ok) assert.fail(`expected an attestation, got ${r.reason}`);
  return r.attestation;
}

function tuple(s: Socket): ConnectionTuple {
  return {
    localAddress: s.localAddress ?? '',
    localPort: s.localPort ?? 0,
    remoteAddress: s.remoteAddress ?? '',
    remotePort: s.remotePort ?? 0,
  };
}

interface TestServer {
  port: number;
  next(): Promise<Socket>;
}

/** A server on `host` port 0 handing out accepted sockets in order; closed after the test. */
async function serve(t: TestContext, host: string): Promise<TestServer> {
  const sockets: Socket[] = [];
  const waiters: Array<(s: Socket) => void> = [];
  let taken = 0;
  const server: Server = createServer((s) => {
    s.on('error', () => {});
    sockets.push(s);
    waiters.shift()?.(s);
  });
  await new Promise<void>((res) => server.listen({ host, port: 0 }, res));
  t.after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((res) => server.close(res));
  });
  const addr = server.address();
  assert.ok(addr !== null && typeof addr === 'object');
  return {
    port: addr.port,
    next: () => {
      const ready = sockets[taken++];
      return ready !== undefined ? Promise.resolve(ready) : new Promise((res) => waiters.push(res));
    },
  };
}

/** An in-process client connection, destroyed after the test. */
async function dial(t: TestContext, port: number, host: string): Promise<Socket> {
  const c = connect({ port, host });
  c.on('error', () => {});
  t.after(() => c.destroy());
  await new Promise((res) => c.once('connect', res));
  return c;
}

/** Spawns a child in its own process group (the group is killed after the test) and waits until it
 *  prints a line containing `word`; returns the child and that line. */
async function spawnReady(
  t: TestContext,
  cmd: string,
  args: string[],
  opts: SpawnOptions = {},
  word = 'ready',
): Promise<{ child: ChildProcess; line: string; waitFor: (w: string) => Promise<string> }> {
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'], detached: true, ...opts });
  const exited = new Promise((res) => child.once('exit', res));
  t.after(async () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    if (child.exitCode === null && child.signalCode === null) await exited;
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  const waitFor = (w: string) =>
    new Promise<string>((res, rej) => {
      const check = () => {
        const l = out.split('\n').find((x) => x.includes(w));
        if (l !== undefined && out.includes('\n', out.indexOf(l))) res(l);
      };
      child.stdout?.on('data', check);
      // 'close' (all stdio closed), not 'exit': a background grandchild may still be writing.
      child.once('close', (code) => rej(new Error(`${cmd} exited (${code}) before printing ${w}`)));
      check();
    });
  const line = await waitFor(word);
  return { child, line, waitFor };
}

/** node code that opens `n` connections to port, prints ready, and holds them. */
function holder(port: number, host = '127.0.0.1', n = 1): string {
  return `const net=require('net');let k=0;const all=[];for(let i=0;i<${n};i++){all.push(net.connect(${port},'${host}',()=>{if(++k===${n})console.log('ready')}))}setInterval(()=>{},1e5)`;
}

function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  // An outer agent's ids (when the tests run inside one) must not reach the processes under test.
  for (const k of AGENT_SESSION_VARS) {
    if (!(k in extra)) delete env[k];
  }
  return env;
}

function waitForClose(s: Socket): Promise<void> {
  return s.closed ? Promise.resolve() : new Promise((res) => s.once('close', () => res()));
}

test('deriveSessionId: deterministic, and distinct per start time, host and boot', () => {
  const a = deriveSessionId('h', 'b', 42, 1000);
  assert.match(a, /^s-[0-9a-f]{64}$/);
  assert.equal(deriveSessionId('h', 'b', 42, 1000), a);
  assert.notEqual(deriveSessionId('h', 'b', 42, 1001), a, 'a reused pid is not the same session');
  assert.notEqual(deriveSessionId('h2', 'b', 42, 1000), a);
  assert.notEqual(deriveSessionId('h', 'b2', 42, 1000), a);
});

test('createAttestor: supported on Linux; the remote address must be loopback', opt, async () => {
  const a = createAttestor({ hostId: HOST, packageRoot: ROOT });
  assert.equal(a.supported, true);
  const r = await a.attest({ localAddress: '127.0.0.1', localPort: 1, remoteAddress: '10.1.2.3', remotePort: 2 });
  assert.deepEqual(r, { ok: false, reason: 'not_loopback' });
  const r6 = await a.attest({ localAddress: '::1', localPort: 1, remoteAddress: 'fe80::1', remotePort: 2 });
  assert.deepEqual(r6, { ok: false, reason: 'not_loopback' });
});

test('in-process IPv4 connection: attested as this test process', opt, async (t) => {
  const a = attestor();
  const srv = await serve(t, '127.0.0.1');
  await dial(t, srv.port, '127.0.0.1');
  const s1 = await srv.next();
  const first = ok(await a.attest(tuple(s1)));
  const me = stat('self');
  assert.equal(first.peer.pid, process.pid);
  assert.equal(first.session.pid, process.pid);
  assert.equal(first.session.startTime, me.startTime);
  assert.equal(first.session.ppid, me.ppid);
  assert.equal(first.session.uid, process.getuid?.());
  assert.equal(first.session.exe, realpathSync(NODE));
  const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
  assert.equal(first.sessionId, deriveSessionId(HOST, bootId, process.pid, me.startTime));
  assert.equal(first.corroborated.cwd, realpathSync(process.cwd()));

  const again = ok(await a.attest(tuple(s1)));
  assert.equal(again.sessionId, first.sessionId);
  await dial(t, srv.port, '127.0.0.1');
  const second = ok(await a.attest(tuple(await srv.next())));
  assert.equal(second.sessionId, first.sessionId, 'a second connection from the same process');
});

test('in-process IPv6 ::1 connection: attested as this test process', needs(hasIPv6, 'no IPv6 loopback'), async (t) => {
  const a = attestor();
  const srv = await serve(t, '::1');
  await dial(t, srv.port, '::1');
  const s = await srv.next();
  assert.equal(s.remoteAddress, '::1');
  const att = ok(await a.attest(tuple(s)));
  assert.equal(att.session.pid, process.pid);
  assert.equal(att.session.startTime, stat('self').startTime);
});

test('IPv4-mapped: dual-stack server, and an IPv6 client socket to an IPv4 server', needs(hasIPv6, 'no IPv6'), async (t) => {
  const a = attestor();
  const dual = await serve(t, '::');
  await dial(t, dual.port, '127.0.0.1'); // an AF_INET client: its row is in /proc/net/tcp
  const s1 = await dual.next();
  assert.equal(s1.remoteAddress, '::ffff:127.0.0.1');
  assert.equal(ok(await a.attest(tuple(s1))).peer.pid, process.pid);

  const v4 = await serve(t, '127.0.0.1');
  await dial(t, v4.port, '::ffff:127.0.0.1'); // an AF_INET6 client: its row is in /proc/net/tcp6
  const s2 = await v4.next();
  assert.equal(s2.remoteAddress, '127.0.0.1');
  assert.equal(ok(await a.attest(tuple(s2))).peer.pid, process.pid);
});

test('a child process holding the socket is attested as the child', opt, async (t) => {
  const a = attestor();
  const srv = await serve(t, '127.0.0.1');
  const { child } = await spawnReady(t, NODE, ['-e', holder(srv.port)]);
  const att = ok(await a.attest(tuple(await srv.next())));
  assert.equal(att.peer.pid, child.pid);
  assert.equal(att.session.pid, child.pid);
  assert.equal(att.session.ppid, process.pid);
  assert.equal(att.session.startTime, stat(child.pid ?? 0).startTime);
});

test('closed connection: connection_closed, never a wrong pid', opt, async (t) => {
  const a = attestor();
  const srv = await serve(t, '127.0.0.1');
  const c = await dial(t, srv.port, '127.0.0.1');
  const s = await srv.next();
  const tup = tuple(s);
  c.destroy();
  await waitForClose(s); // both ends closed: the client row is in TIME_WAIT (inode 0) or gone
  assert.deepEqual(await a.attest(tup), { ok: false, reason: 'connection_closed' });

  // A child that exits closes its socket with it.
  const { child } = await spawnReady(t, NODE, ['-e', holder(srv.port)]);
  const s2 = await srv.next();
  const tup2 = tuple(s2);
  assert.equal(ok(await a.attest(tup2)).peer.pid, child.pid);
  child.kill('SIGKILL');
  await waitForClose(s2);
  assert.deepEqual(await a.attest(tup2), { ok: false, reason: 'connection_closed' });

  // A tuple that never existed.
  const never = { ...tup, remotePort: tup.remotePort === 1 ? 2 : 1 };
  assert.deepEqual(await a.attest(never), { ok: false, reason: 'connection_closed' });
});

const forkPy = (port: number) => `
import socket, os, time
s = socket.create_connection(('127.0.0.1', ${port}))
if os.fork() == 0:
    time.sleep(60); os._exit(0)
print('ready', flush=True)
time.sleep(60)
`;

test('a socket inherited across fork: ambiguous', needs(hasPython, 'no python3'), async (t) => {
  const a = attestor();
  const srv = await serve(t, '127.0.0.1');
  await spawnReady(t, 'python3', ['-c', forkPy(srv.port)]);
  assert.deepEqual(await a.attest(tuple(await srv.next())), { ok: false, reason: 'ambiguous' });
});

// The parent puts the socket on an fd number the scanner has already cached as /dev/null, then
// forks: only the full re-read of the single holder's parent reveals the second holder.
const hiddenForkPy = (port: number) => `
import socket, os, sys, time
fd = os.open('/dev/null', os.O_RDONLY)
print('phase1', flush=True)
sys.stdin.readline()
s = socket.create_connection(('127.0.0.1', ${port}))
os.dup2(s.fileno(), fd)
s.close()
if os.fork() == 0:
    time.sleep(60); os._exit(0)
print('ready', flush=True)
time.sleep(60)
`;

test('fork-inherited socket behind a reused fd number: still ambiguous', needs(hasPython, 'no python3'), async (t) => {
  const a = attestor();
  const srv = await serve(t, '127.0.0.1');
  const { child, waitFor } = await spawnReady(t, 'python3', ['-c', hiddenForkPy(srv.port)], {}, 'phase1');
  // Fill the scanner's cache while the python parent's fd still holds /dev/null.
  await dial(t, srv.port, '127.0.0.1');
  assert.equal(ok(await a.attest(tuple(await srv.next()))).peer.pid, process.pid);
  child.stdin?.write('go\n');
  await waitFor('ready');
  assert.deepEqual(await a.attest(tuple(await srv.next())), { ok: false, reason: 'ambiguous' });
});

// The parent hands its socket to a forked child, then reuses that fd number for /dev/null: the
// scanner's cache still maps the parent's fd to the socket, and only a fresh readlink tells.
const handOverPy = (port: number) => `
import socket, os, sys, time
s = socket.create_connection(('127.0.0.1', ${port}))
print('phase1', flush=True)
sys.stdin.readline()
pid = os.fork()
if pid == 0:
    time.sleep(60); os._exit(0)
os.dup2(os.open('/dev/null', os.O_RDONLY), s.fileno())
print('ready', pid, flush=True)
time.sleep(60)
`;

test('a cached holder that let go of the socket is not counted', needs(hasPython, 'no python3'), async (t) => {
  const a = attestor();
  const srv = await serve(t, '127.0.0.1');
  const { child, waitFor } = await spawnReady(t, 'python3', ['-c', handOverPy(srv.port)], {}, 'phase1');
  const s = await srv.next();
  assert.equal(ok(await a.attest(tuple(s))).peer.pid, child.pid);
  child.stdin?.write('go\n');
  const line = await waitFor('ready');
  const att = ok(await a.attest(tuple(s)));
  assert.equal(att.peer.pid, Number(line.split(' ')[1]));
  assert.equal(att.peer.ppid, child.pid);
});

test('reused fd numbers in a cached process still resolve to it', opt, async (t) => {
  const a = attestor();
  const srv = await serve(t, '127.0.0.1');
  const code = `const net=require('net');let open=[];
const dialN=(n,cb)=>{let k=0;for(let i=0;i<n;i++)open.push(net.connect(${srv.port},'127.0.0.1',()=>{if(++k===n)cb()}))};
dialN(5,()=>console.log('ready1'));
process.stdin.on('data',()=>{for(const c of open)c.destroy();open=[];setTimeout(()=>dialN(5,()=>console.log('ready2')),50)});
setInterval(()=>{},1e5)`;
  const { child, waitFor } = await spawnReady(t, NODE, ['-e', code], {}, 'ready1');
  const first = await Promise.all([0, 1, 2, 3, 4].map(() => srv.next()));
  for (const r of await Promise.all(first.map((s) => a.attest(tuple(s))))) assert.equal(ok(r).peer.pid, child.pid);
  child.stdin?.write('x\n');
  await Promise.all(first.map(waitForClose));
  await waitFor('ready2');
  const second = await Promise.all([0, 1, 2, 3, 4].map(() => srv.next()));
  for (const r of await Promise.all(second.map((s) => a.attest(tuple(s))))) assert.equal(ok(r).peer.pid, child.pid);
});

test('200 concurrent lookups from one client share a few scans', opt, async (t) => {
  const a = attestor();
  const srv = await serve(t, '127.0.0.1');
  const { child } = await spawnReady(t, NODE, ['-e', holder(srv.port, '127.0.0.1', 200)]);
  const socks = await Promise.all(Array.from({ length: 200 }, () => srv.next()));
  const before = a.stats();
  const results = await Promise.all(socks.map((s) => a.attest(tuple(s))));
  const after = a.stats();
  for (const r of results) assert.equal(ok(r).peer.pid, child.pid);
  assert.ok(after.netScans - before.netScans <= 4, `net scans: ${after.netScans - before.netScans}`);
  assert.ok(after.fdScans - before.fdScans <= 2, `fd scans: ${after.fdScans - before.fdScans}`);
});

test('shells: a node under bash is the session; a shell holding the socket is passed', opt, async (t) => {
  const a = attestor();
  const srv = await serve(t, '127.0.0.1');
  const { child } = await spawnReady(t, 'bash', ['-c', `"${NODE}" -e "${holder(srv.port)}"; true`]);
  const att = ok(await a.attest(tuple(await srv.next())));
  assert.equal(att.session.pid, att.peer.pid);
  assert.equal(att.peer.ppid, child.pid, 'the node process is the shell child');

  const script = `exec 3<>/dev/tcp/127.0.0.1/${srv.port}; echo ready; read -r l <&3`;
  const { child: sh } = await spawnReady(t, 'bash', ['-c', script]);
  const viaShell = ok(await a.attest(tuple(await srv.next())));
  assert.equal(viaShell.peer.pid, sh.pid);
  assert.equal(viaShell.session.pid, process.pid);
});

/** A fake package root with its CLI, and an "agent" (a script, claude.js unless named) that runs
 *  the CLI through bash -c and waits. HELPER_ENV (JSON) is added to the CLI's environment only;
 *  with `helpers` 2, a second CLI starts, with SECOND_HELPER_ENV, once a line comes on stdin
 *  (Gemini's bridge, then a hook). */
function agentSetup(t: TestContext, port: number, script = 'claude.js', helpers = 1) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'm4a-attest-')));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const root = join(dir, 'pkg');
  const cli = join(root, 'dist', 'cli', 'main.js');
  mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
  writeFileSync(cli, holder(port));
  const work = join(dir, 'work');
  mkdirSync(work);
  const agent = join(dir, script);
  mkdirSync(join(agent, '..'), { recursive: true });
  writeFileSync(
    agent,
    `const { spawn } = require('child_process');
const run = (extra) => {
  const env = { ...process.env, ...JSON.parse(extra || '{}') };
  delete env.HELPER_ENV;
  delete env.SECOND_HELPER_ENV;
  spawn('bash', ['-c', ${JSON.stringify(`"${NODE}" "${cli}"; true`)}], { stdio: 'inherit', env });
};
run(process.env.HELPER_ENV);
if (${helpers} > 1) process.stdin.once('data', () => run(process.env.SECOND_HELPER_ENV));
setInterval(() => {}, 1e5);`,
  );
  return { root, work, agent };
}

test('own CLI under bash under an agent: the session is the agent', opt, async (t) => {
  const srv = await serve(t, '127.0.0.1');
  const { root, work, agent } = agentSetup(t, srv.port);
  const args = [agent, '--model', 'test-model-1', '--resume', 'sess-123'];
  const { child } = await spawnReady(t, NODE, args, { cwd: work, env: childEnv() });
  const s = await srv.next();
  const att = ok(await attestor(root).attest(tuple(s)));
  assert.equal(att.session.pid, child.pid);
  assert.notEqual(att.peer.pid, child.pid);
  assert.equal(stat(stat(att.peer.pid).ppid).ppid, child.pid, 'peer -> bash -> agent');
  assert.deepEqual(att.corroborated, {
    cwd: work,
    provider: 'claude',
    model: 'test-model-1',
    provider_session_id: 'sess-123',
  });

  // Under another package root the same CLI is not ours: it is the session itself.
  const other = ok(await attestor(join(root, 'elsewhere')).attest(tuple(s)));
  assert.equal(other.session.pid, other.peer.pid);
});

test('a helper environment names the agent session; nothing else from environ leaks', opt, async (t) => {
  const srv = await serve(t, '127.0.0.1');
  const { root, work, agent } = agentSetup(t, srv.port);
  const secret = 'very-secret-value-93127';
  const helperEnv = JSON.stringify({ CLAUDE_CODE_SESSION_ID: 'abc', SECRET_TOKEN: secret });
  const { child } = await spawnReady(t, NODE, [agent, '--resume', 'from-argv'], {
    cwd: work,
    env: childEnv({ HELPER_ENV: helperEnv }),
  });
  const result = await attestor(root).attest(tuple(await srv.next()));
  const att = ok(result);
  assert.equal(att.session.pid, child.pid);
  assert.equal(att.corroborated.provider, 'claude');
  assert.equal(att.corroborated.provider_session_id, 'abc', 'the environment wins over argv');
  assert.ok(!JSON.stringify(result).includes(secret));
  assert.ok(!JSON.stringify(result).includes('SECRET_TOKEN'));
});

/** The program at `exe` (a copy of bash, so its kernel exe path is that path) runs the CLI of a
 *  fake package root, with `cliEnv` added to the CLI's environment only, and waits. */
async function nativeAgent(t: TestContext, port: number, exe: string, args: string[], cliEnv: Record<string, string>) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'm4a-attest-')));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const root = join(dir, 'pkg');
  mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
  const cli = join(root, 'dist', 'cli', 'main.js');
  writeFileSync(cli, holder(port));
  const work = join(dir, 'work');
  mkdirSync(work);
  const path = join(dir, exe);
  mkdirSync(join(path, '..'), { recursive: true });
  copyFileSync('/bin/bash', path);
  chmodSync(path, 0o755);
  const exports = Object.entries(cliEnv)
    .map(([k, v]) => `export ${k}=${v}; `)
    .join('');
  // `; true`: bash would exec a last command in place of itself.
  const { child } = await spawnReady(t, path, ['-c', `${exports}"${NODE}" "${cli}"; true`, 'agent', ...args], { cwd: work, env: childEnv() });
  return { root, work, child };
}

test('Qwen Code, opencode and Copilot: each known by its path shape, its id from its helper or its argv', opt, async (t) => {
  const srv = await serve(t, '127.0.0.1');
  const id = '0cb916db-26aa-40f2-86b5-1ba81b225fd2';
  // Qwen Code: node running …/@qwen-code/qwen-code/cli.js; its MCP servers get QWEN_CODE_SESSION_ID.
  const q = agentSetup(t, srv.port, 'node_modules/@qwen-code/qwen-code/cli.js');
  const { child: qwen } = await spawnReady(t, NODE, ['--expose-gc', q.agent, '-p', 'hi', '--yolo'], {
    cwd: q.work,
    env: childEnv({ HELPER_ENV: JSON.stringify({ QWEN_CODE_SESSION_ID: id }) }),
  });
  const qa = ok(await attestor(q.root).attest(tuple(await srv.next())));
  assert.equal(qa.session.pid, qwen.pid);
  assert.deepEqual(qa.corroborated, { cwd: q.work, provider: 'qwen', provider_session_id: id });

  // opencode: a compiled binary named opencode.exe; no variable names its session, `-s` does.
  const o = await nativeAgent(t, srv.port, 'node_modules/opencode-ai/bin/opencode.exe', ['run', '-s', 'ses_2f1a9c', 'go on'], { OPENCODE: '1' });
  const oa = ok(await attestor(o.root).attest(tuple(await srv.next())));
  assert.equal(oa.session.pid, o.child.pid);
  assert.deepEqual(oa.corroborated, { cwd: o.work, provider: 'opencode', provider_session_id: 'ses_2f1a9c' });

  // Copilot: its native binary; its MCP servers get COPILOT_AGENT_SESSION_ID (= the --resume id).
  const c = await nativeAgent(t, srv.port, 'node_modules/@github/copilot-linux-x64/copilot', ['-p', 'hi', '--model', 'scripted'], { COPILOT_AGENT_SESSION_ID: id });
  const ca = ok(await attestor(c.root).attest(tuple(await srv.next())));
  assert.equal(ca.session.pid, c.child.pid);
  assert.deepEqual(ca.corroborated, { cwd: c.work, provider: 'copilot', model: 'scripted', provider_session_id: id });
});

test('Gemini: its bridge names no session, a hook under it does; each connection is read afresh', opt, async (t) => {
  const srv = await serve(t, '127.0.0.1');
  const g = agentSetup(t, srv.port, 'node_modules/@google/gemini-cli/bundle/gemini.js', 2);
  const id = '53dddd9d-c249-453a-a7c7-83f005431f1d';
  const { child } = await spawnReady(t, NODE, ['--max-old-space-size=4096', g.agent, '-p', 'hi'], {
    cwd: g.work,
    env: childEnv({ HELPER_ENV: JSON.stringify({ GEMINI_CLI: '1' }), SECOND_HELPER_ENV: JSON.stringify({ GEMINI_SESSION_ID: id }) }),
  });
  const a = attestor(g.root);
  const bridge = ok(await a.attest(tuple(await srv.next())));
  assert.equal(bridge.session.pid, child.pid);
  assert.deepEqual(bridge.corroborated, { cwd: g.work, provider: 'gemini' });
  child.stdin?.write('hook\n');
  const hook = ok(await a.attest(tuple(await srv.next())));
  assert.equal(hook.sessionId, bridge.sessionId, 'the same session');
  assert.deepEqual(hook.corroborated, { cwd: g.work, provider: 'gemini', provider_session_id: id });
});

test('orphaned: a transparent holder whose parent is pid 1', opt, async (t) => {
  const srv = await serve(t, '127.0.0.1');
  // The subshell outlives its parent and is reparented.
  const script = `(exec 3<>/dev/tcp/127.0.0.1/${srv.port}; echo ready $BASHPID; read -r l <&3) & exit 0`;
  const { line } = await spawnReady(t, 'bash', ['-c', script]);
  const pid = Number(line.split(' ')[1]);
  t.after(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  });
  const s = await srv.next();
  for (let i = 0; i < 200 && stat(pid).ppid !== 1; i++) await new Promise((r) => setTimeout(r, 10));
  if (stat(pid).ppid !== 1) return t.skip('orphans are reparented to a subreaper here, not pid 1');
  assert.deepEqual(await attestor().attest(tuple(s)), { ok: false, reason: 'orphaned' });
});

test('another OS user: foreign_user, or foreign_chain once that uid is allowed', needs(isRoot, 'needs root to run a child as nobody'), async (t) => {
  const srv = await serve(t, '127.0.0.1');
  const script = `exec 3<>/dev/tcp/127.0.0.1/${srv.port}; echo ready; read -r l <&3`;
  await spawnReady(t, '/bin/bash', ['-c', script], { uid: 65534, gid: 65534, cwd: '/' });
  const s = await srv.next();
  assert.deepEqual(await attestor().attest(tuple(s)), { ok: false, reason: 'foreign_user', foreignUid: 65534 });
  // Allowed, the bash holder is transparent and its parent (this process, root) is another uid.
  assert.deepEqual(await attestor(ROOT, [65534]).attest(tuple(s)), {
    ok: false,
    reason: 'foreign_chain',
    foreignUid: 0,
  });
});

test('isAlive: this process yes; a wrong start time or a dead child no', opt, async () => {
  const a = attestor();
  const me = stat('self').startTime;
  assert.equal(a.isAlive(process.pid, me), true);
  assert.equal(a.isAlive(process.pid, me + 1), false);
  const child = spawn(NODE, ['-e', 'process.stdin.resume()'], { stdio: ['pipe', 'ignore', 'inherit'] });
  const exited = new Promise((res) => child.once('exit', res));
  await new Promise((res) => child.once('spawn', res));
  const pid = child.pid ?? 0;
  const st = stat(pid).startTime;
  assert.equal(a.isAlive(pid, st), true);
  child.kill('SIGKILL');
  await exited;
  assert.equal(a.isAlive(pid, st), false);
});
