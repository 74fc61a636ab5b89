// The daemon of the crash tests as its own process (`m4a serve`, SQLite in its data directory or
// PostgreSQL with --store), restarted on the same data directory and port after a kill, and the
// accounts and room the senders and readers use.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MailClient } from '../../src/client/http-client.js';
import { BUILT_CLI, serveProcess } from '../support/serve-process.js';

export const CLI = BUILT_CLI;

export interface Daemon {
  child: ChildProcess;
  pid: number;
  exited: Promise<number | null>;
  stderr: () => string;
}

/** Starts `m4a serve` on a fixed port (a restart takes the same one); `store` is a --store spec. */
export async function serve(dataDir: string, port: number, store?: string): Promise<Daemon> {
  const args = ['--data-dir', dataDir, '--port', String(port), ...(store ? ['--store', store] : [])];
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('serve did not start within 20 s')), 20_000)));
  try {
    const d = await Promise.race([serveProcess(args, { ...process.env, M4A_LOG_LEVEL: 'warn' }), late]);
    return { child: d.child, pid: d.child.pid!, exited: d.exited, stderr: d.stderr };
  } catch (err) {
    throw new Error(`${(err as Error).message} (the killed daemon's lock blocked the restart?)`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
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
