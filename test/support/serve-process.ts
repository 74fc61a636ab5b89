// `m4a serve` as its own process, resolved once it prints the address it listens on.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BUILT_CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface ServedDaemon {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
  stderr: () => string;
  /** Everything it printed on stdout so far. */
  stdout: () => string;
}

export async function serveProcess(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<ServedDaemon> {
  const child = spawn(process.execPath, [BUILT_CLI, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let err = '';
  let out = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    void exited.then((code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  return { child, url, exited, stderr: () => err, stdout: () => out };
}
