// The fd scanner's cache (fd-scan.ts: per pid, its start time and fd number -> socket inode, kept
// across batches and updated in place) must never make an attestation name the wrong process: a
// closed fd number is forgotten at the next scan, a reused pid is a new process, and a socket that
// moved to another process is found there; what a batch shares per process keeps every per
// connection check. Real processes and sockets; Linux only.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { createBatchAttestor, hrMs } from '../src/attest/batch.js';
import { createLinuxAttestor } from '../src/attest/index.js';
import type { AttestResult, Attestation, ConnectionTuple } from '../src/attest/types.js';

const linux = process.platform === 'linux';
const hasPython = linux && spawnSync('python3', ['-c', ''], { stdio: 'ignore' }).status === 0;
const canSetPid = linux && process.getuid?.() === 0;
const ROOT = realpathSync(join(import.meta.dirname, '..'));
const needs = (ok: boolean, why: string) => ({ skip: (!linux && 'Linux only') || (!ok && why) });

const attestor = () => createLinuxAttestor({ hostId: 'test-host', packageRoot: ROOT, inline: true });
const tuple = (s: Socket): ConnectionTuple => ({
  localAddress: s.localAddress ?? '',
  localPort: s.localPort ?? 0,
  remoteAddress: s.remoteAddress ?? '',
  remotePort: s.remotePort ?? 0,
});
const startTime = (pid: number): number => {
  const t = readFileSync(`/proc/${pid}/stat`, 'latin1');
  return Number(t.slice(t.lastIndexOf(')') + 2).split(' ')[19]);
};

function ok(r: AttestResult): Attestation {
  if (!r.ok) assert.fail(`expected an attestation, got ${r.reason}`);
  return r.attestation;
}

/** A loopback server handing out accepted sockets in order. */
async function serve(t: TestContext): Promise<{ port: number; next(): Promise<Socket> }> {
  const ready: Socket[] = [];
  const waiting: ((s: Socket) => void)[] = [];
  const all: Socket[] = [];
  const server = createServer((s) => {
    s.on('error', () => undefined);
    all.push(s);
    const w = waiting.shift();
    if (w) w(s);
    else ready.push(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => {
    for (const s of all) s.destroy();
    await new Promise((r) => server.close(r));
  });
  const addr = server.address();
  assert.ok(addr !== null && typeof addr === 'object');
  return { port: addr.port, next: () => (ready.length > 0 ? Promise.resolve(ready.shift() as Socket) : new Promise((r) => waiting.push(r))) };
}

/** A child in its own process group (killed after the test), with a way to wait for its lines. */
function child(t: TestContext, cmd: string, args: string[]): { proc: ChildProcess; line(word: string): Promise<string> } {
  const proc = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  const exited = new Promise((r) => proc.once('exit', r));
  t.after(async () => {
    try {
      if (proc.pid !== undefined) process.kill(-proc.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    if (proc.exitCode === null && proc.signalCode === null) await exited;
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  const line = (word: string) =>
    new Promise<string>((res, rej) => {
      const check = () => {
        const l = out.split('\n').find((x) => x.startsWith(word));
        if (l !== undefined && out.includes(`${l}\n`)) res(l);
      };
      proc.stdout?.on('data', check);
      proc.once('close', (code) => rej(new Error(`${cmd} exited (${code}) before ${word}`)));
      check();
    });
  return { proc, line };
}

/** One attestation of an unrelated connection of this process: makes the scanner read every
 *  process's fds (and so refresh its cache) now. */
async function scanNow(t: TestContext, a: ReturnType<typeof attestor>, srv: { port: number; next(): Promise<Socket> }): Promise<void> {
  const c = connect(srv.port, '127.0.0.1');
  c.on('error', () => undefined);
  t.after(() => c.destroy());
  const s = await srv.next();
  assert.equal(ok(await a.attest(tuple(s))).peer.pid, process.pid);
}

// The grandparent caches fd X as /dev/null, closes X (a scan sees it gone), then puts a socket on X
// and forks; the child forks a grandchild and lets go of its copy. Holders: the grandparent and the
// grandchild, two processes that are not parent and child, so only a cache that forgot X sees both.
const closedThenReusedPy = (port: number) => `
import socket, os, sys, time
fd = os.open('/dev/null', os.O_RDONLY)
print('cached', flush=True)
sys.stdin.readline()
os.close(fd)
print('closed', flush=True)
sys.stdin.readline()
s = socket.create_connection(('127.0.0.1', ${port}))
n = s.detach()
if n != fd:
    os.dup2(n, fd); os.close(n)
if os.fork() == 0:
    if os.fork() == 0:
        time.sleep(60); os._exit(0)
    os.close(fd)
    time.sleep(60); os._exit(0)
time.sleep(0.3)
print('ready', flush=True)
time.sleep(60)
`;

test('an fd number closed before a scan and reused after it is read again: a shared socket is ambiguous', needs(hasPython, 'no python3'), async (t) => {
  const a = attestor();
  const srv = await serve(t);
  const py = child(t, 'python3', ['-c', closedThenReusedPy(srv.port)]);
  await py.line('cached');
  await scanNow(t, a, srv);
  py.proc.stdin?.write('go\n');
  await py.line('closed');
  await scanNow(t, a, srv);
  py.proc.stdin?.write('go\n');
  await py.line('ready');
  assert.deepEqual(await a.attest(tuple(await srv.next())), { ok: false, reason: 'ambiguous' });
});

// A socket handed to another process (SCM_RIGHTS) and closed by its first holder is found at its new
// holder, never at the old one, though the old one's cache still maps that fd number to it.
const handOverPy = (port: number) => `
import socket, os, sys, time, array
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
if os.fork() == 0:
    a.close()
    msg, anc, flags, addr = b.recvmsg(1, socket.CMSG_LEN(4))
    fds = array.array('i'); fds.frombytes(anc[0][2])
    print('taken', os.getpid(), flush=True)
    time.sleep(60); os._exit(0)
b.close()
s = socket.create_connection(('127.0.0.1', ${port}))
print('held', flush=True)
sys.stdin.readline()
a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [s.fileno()]).tobytes())])
time.sleep(0.3)
s.close()
os.open('/dev/null', os.O_RDONLY)
print('moved', flush=True)
time.sleep(60)
`;

test('a socket moved to another process is attested as its new holder', needs(hasPython, 'no python3'), async (t) => {
  const a = attestor();
  const srv = await serve(t);
  const py = child(t, 'python3', ['-c', handOverPy(srv.port)]);
  await py.line('held');
  const s = await srv.next();
  assert.equal(ok(await a.attest(tuple(s))).peer.pid, py.proc.pid);
  py.proc.stdin?.write('go\n');
  const taker = Number((await py.line('taken')).split(' ')[1]);
  await py.line('moved');
  const att = ok(await a.attest(tuple(s)));
  assert.equal(att.peer.pid, taker);
  assert.notEqual(att.peer.pid, py.proc.pid);
});

/** Sets the pid the kernel hands out next (root; the next fork gets last + 1). */
const setLastPid = (pid: number): void => writeFileSync('/proc/sys/kernel/ns_last_pid', String(pid));

const holderJs = (port: number) => `const c=require('net').connect(${port},'127.0.0.1',()=>console.log('ready'));setInterval(()=>{},1e5)`;

test('a reused pid is a new process: its socket is attested with its own start time, the old one is closed', needs(canSetPid, 'needs root to choose the next pid'), async (t) => {
  const a = attestor();
  const srv = await serve(t);
  const first = child(t, process.execPath, ['-e', holderJs(srv.port)]);
  await first.line('ready');
  const pid = first.proc.pid as number;
  const s1 = await srv.next();
  const was = ok(await a.attest(tuple(s1)));
  assert.equal(was.peer.pid, pid);
  first.proc.kill('SIGKILL');
  await new Promise((r) => first.proc.once('exit', r));
  // Other processes on the machine fork too: try a few times to get the same pid again.
  let second: ReturnType<typeof child> | null = null;
  for (let i = 0; i < 20 && second === null; i++) {
    setLastPid(pid - 1);
    const c = child(t, process.execPath, ['-e', holderJs(srv.port)]);
    if (c.proc.pid === pid) second = c;
    else c.proc.kill('SIGKILL');
  }
  if (second === null) return t.skip('the pid was taken by another process each time');
  await second.line('ready');
  // The server may hand out a socket of a killed try first: take the one of this pid.
  let s2: Socket | null = null;
  for (let i = 0; i < 40 && s2 === null; i++) {
    const s = await srv.next();
    const r = await a.attest(tuple(s));
    if (r.ok && r.attestation.peer.pid === pid) s2 = s;
  }
  assert.ok(s2 !== null, 'the second holder was attested');
  const now = ok(await a.attest(tuple(s2)));
  assert.equal(now.peer.startTime, startTime(pid));
  assert.notEqual(now.peer.startTime, was.peer.startTime);
  assert.notEqual(now.sessionId, was.sessionId);
  assert.deepEqual(await a.attest(tuple(s1)), { ok: false, reason: 'connection_closed' });
});

test('peers of one process in one batch share one walk; the accept-time check stays per connection', { skip: !linux && 'Linux only' }, () => {
  const batch = createBatchAttestor({ hostId: 'test-host', packageRoot: ROOT });
  const uid = process.getuid?.() ?? 0;
  const now = hrMs();
  const live = { pid: process.pid, uid, acceptedAtHrMs: now };
  // Accepted before this process started: that connection was some earlier holder's of the pid.
  const before = { pid: process.pid, uid, acceptedAtHrMs: now - process.uptime() * 1000 - 5_000 };
  const [a, b, c, d] = batch.run([], [live, live, before, live]);
  assert.ok(a?.ok && a.attestation.peer.pid === process.pid);
  assert.equal(b, a, 'one result shared');
  assert.equal(d, a);
  assert.deepEqual(c, { ok: false, reason: 'process_gone' });
});
