// Our own Redis and NATS instances for the comparison, on free loopback ports in temp dirs (never the
// machine's own): Redis with every write fsynced (appendonly yes, appendfsync always) and at its
// defaults; NATS JetStream as strict as its version allows. Ended with the run.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort, sleep, stopChild, tempDir, track } from '../lib/procs.js';

export interface ServerHandle {
  name: string;
  label: string;
  port: number;
  pid: number;
  command: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

export function versionOf(cmd: string): string {
  const r = spawnSync(cmd, ['--version'], { encoding: 'utf8' });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n')[0] ?? 'unknown';
}

/** Resolves once the port answers with a first line matching `greeting` (after writing `probe`). */
async function waitFor(port: number, probe: string, greeting: RegExp, child: ChildProcess, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server on port ${port} exited with ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      let buf = '';
      const done = (v: boolean): void => {
        s.destroy();
        resolve(v);
      };
      s.on('connect', () => probe && s.write(probe));
      s.on('data', (c) => {
        buf += c.toString('utf8');
        if (greeting.test(buf)) done(true);
      });
      s.on('error', () => done(false));
      setTimeout(() => done(false), 500);
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`server on port ${port} did not answer`);
}

function started(name: string, label: string, port: number, args: string[], cmd: string, child: ChildProcess): ServerHandle {
  return { name, label, port, pid: child.pid as number, command: `${cmd} ${args.map((a) => (a === '' ? '""' : a)).join(' ')}`, child, stop: () => stopChild(child, 5000) };
}

export async function startRedis(durable: boolean): Promise<ServerHandle> {
  const dir = tempDir(durable ? 'redis-aof' : 'redis-default');
  const port = await freePort();
  const args = durable
    ? ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--logfile', join(dir, 'redis.log')]
    : ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--logfile', join(dir, 'redis.log')];
  const child = track(spawn('redis-server', args, { stdio: 'ignore' }));
  await waitFor(port, 'PING\r\n', /\+PONG/, child);
  return started(
    durable ? 'redis-aof-always' : 'redis-default',
    durable
      ? 'Redis Streams, appendonly yes + appendfsync always (fsync before every reply)'
      : 'Redis Streams at its defaults (no AOF; RDB snapshots at most every 60 s): not durable per write',
    port,
    args,
    'redis-server',
    child,
  );
}

export async function startNats(): Promise<ServerHandle> {
  const dir = tempDir('nats');
  const port = await freePort();
  const conf = join(dir, 'nats.conf');
  // nats-server 2.9.x has no sync setting (sync_interval arrived in 2.10; `sync_interval: always`
  // is refused here as an unknown field): the file store flushes writes to the OS at once and
  // fsyncs in the background, so this is as strict as this version can be configured.
  writeFileSync(conf, `listen: "127.0.0.1:${port}"\njetstream {\n  store_dir: "${join(dir, 'js')}"\n}\n`);
  const args = ['-c', conf, '-l', join(dir, 'nats.log')];
  const child = track(spawn('nats-server', args, { stdio: 'ignore' }));
  await waitFor(port, '', /^INFO /, child);
  return started('nats-jetstream', 'NATS JetStream (file storage), nats-server default sync: no per-write fsync available in 2.9.x', port, args, 'nats-server', child);
}
