// The daemon of the crash tests as its own process (`m4a serve`, SQLite in its data directory or
// PostgreSQL with --store), restarted on the same data directory and port after a kill, and the
// accounts and room the senders and readers use.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MailClient } from '../../src/client/http-client.js';

export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface Daemon {
  child: ChildProcess;
  pid: number;
  exited: Promise<number | null>;
  stderr: () => string;
}

/** Starts `m4a serve` on a fixed port (a restart takes the same one); `store` is a --store spec. */
export async function serve(dataDir: string, port: number, store?: string): Promise<Daemon> {
  const args = [CLI, 'serve', '--data-dir', dataDir, '--port', String(port), ...(store ? ['--store', store] : [])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, M4A_LOG_LEVEL: 'warn' } });
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start within 20 s: ${err}`)), 20_000);
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (/listening on http:\/\//.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited ${code} (the killed daemon's lock blocked the restart?): ${err}`));
    });
  });
  return { child, pid: child.pid!, exited, stderr: () => err };
}

/** Ends a daemon that is still running (SIGTERM, then SIGKILL after 10 s). */
export async function stop(d: Daemon | null): Promise<void> {
  if (!d || d.child.exitCode !== null || d.child.signalCode !== null) return;
  d.child.kill('SIGTERM');
  const t = setTimeout(() => d.child.kill('SIGKILL'), 10_000);
  await d.exited;
  clearTimeout(t);
}

export const SENDERS = ['s1', 's2', 's3'];
export const READERS = ['ra', 'rb'];
export const TARGETS = ['ra', 'rb', '#crash'];

/** Adds the senders and readers (secrets by account) and the open room both readers are in. */
export async function addAccounts(url: string, dataDir: string): Promise<Map<string, string>> {
  const op = new MailClient({ url, token: readFileSync(join(dataDir, 'operator.token'), 'utf8').trim() });
  const secrets = new Map<string, string>();
  try {
    for (const id of [...SENDERS, ...READERS]) secrets.set(id, (await op.admin.accountAdd({ id })).secret);
    await op.admin.roomAdd('crash', { open: true }); // the senders post without being members
    for (const r of READERS) await op.admin.memberAdd('crash', r);
  } finally {
    op.close();
  }
  assert.equal(secrets.size, SENDERS.length + READERS.length);
  return secrets;
}
