// Drives shell-agent.mjs processes: each one is an agent session with a bash tool.
import type { ChildProcess } from 'node:child_process';
import { startLineChild } from './line-child.js';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./shell-agent.mjs', import.meta.url));
export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

export interface ShellAgent {
  pid: number;
  run(cmd: string, input?: string): Promise<{ code: number; stdout: string; stderr: string }>;
  stop(): void;
  child: ChildProcess;
}

export async function startShellAgent(env: Record<string, string>, script = SCRIPT): Promise<ShellAgent> {
  const c = await startLineChild([script], { env: { ...process.env, ...env } });
  return {
    pid: c.pid,
    child: c.child,
    run: (cmd, input) => c.request({ cmd, input }),
    stop() {
      c.child.kill('SIGKILL');
    },
  };
}

/** `node <built cli>` as a shell word, for commands the shell agents run. */
export const m4a = `'${process.execPath}' '${CLI}'`;
