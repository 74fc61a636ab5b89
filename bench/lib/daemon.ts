// A real daemon as its own process (`node dist/cli/main.js serve`) on a data dir of the bench, so its
// memory and CPU are its own; accounts and rooms through the operator credential.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, readFileSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { MailClient } from '../../src/client/http-client.js';
import { CLI, ROOT, freePort, sleep, stopChild, track } from './procs.js';

export interface Daemon {
  pid: number;
  port: number;
  url: string;
  dataDir: string;
  dbPath: string;
  operator: MailClient;
  child: ChildProcess;
  /** Creates accounts (concurrently, `parallel` at a time) and returns id -> secret. */
  accounts(ids: string[], parallel?: number, onDone?: (n: number) => void): Promise<Map<string, string>>;
  stop(): Promise<void>;
}

/** `cli`: another build's entry point (a probe comparing two builds side by side); `args`: more
 *  `serve` options (e.g. `--store postgres://…`). */
export async function startDaemon(dataDir: string, o: { nodeFlags?: string[]; port?: number; cli?: string; args?: string[] } = {}): Promise<Daemon> {
  const port = o.port ?? (await freePort());
  const logFd = openSync(join(dataDir, '..', `daemon-${port}.log`), 'a');
  const child = track(
    spawn(process.execPath, [...(o.nodeFlags ?? []), o.cli ?? CLI, 'serve', '--data-dir', dataDir, '--port', String(port), ...(o.args ?? [])], {
      cwd: ROOT,
      stdio: ['ignore', logFd, logFd],
      env: { ...process.env, M4A_LOG_LEVEL: process.env.M4A_LOG_LEVEL ?? 'warn' },
    }),
  );
  closeSync(logFd);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  const tokenPath = join(dataDir, 'operator.token');
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the daemon exited with ${child.exitCode} (log in ${join(dataDir, '..')})`);
    if (existsSync(join(dataDir, 'daemon.json')) && existsSync(tokenPath)) {
      try {
        const r = await fetch(`${url}/health`);
        if (r.ok) break;
      } catch {
        /* not yet */
      }
    }
    if (Date.now() > deadline) throw new Error('the daemon did not answer /health within 60 s');
    await sleep(25);
  }
  const operator = new MailClient({ url, token: readFileSync(tokenPath, 'utf8').trim(), timeoutMs: 120_000 });
  const pid = child.pid as number;
  return {
    pid,
    port,
    url,
    dataDir,
    dbPath: join(dataDir, 'mail.db'),
    operator,
    child,
    async accounts(ids, parallel = 8, onDone) {
      const out = new Map<string, string>();
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < ids.length) {
          const id = ids[next++] as string;
          const r = await operator.admin.accountAdd({ id });
          out.set(id, r.secret);
          onDone?.(out.size);
        }
      };
      await Promise.all(Array.from({ length: parallel }, worker));
      return out;
    },
    async stop() {
      operator.close();
      await stopChild(child, 30_000);
    },
  };
}
