// Drives agent-proc.mjs: one child process = one attested session.
import type { ChildProcess } from 'node:child_process';
import { startLineChild } from './line-child.js';
import { fileURLToPath } from 'node:url';

export const AGENT_SCRIPT = fileURLToPath(new URL('./agent-proc.mjs', import.meta.url));

export interface AgentProc {
  pid: number;
  call(path: string, body?: unknown): Promise<{ status: number; body: any }>;
  exit(): Promise<void>;
  child: ChildProcess;
}

/** Starts `node <script> ...args` (script defaults to agent-proc.mjs) with the daemon URL and token. */
export async function startAgent(url: string, token: string, opts: { script?: string; args?: string[]; env?: Record<string, string>; cwd?: string } = {}): Promise<AgentProc> {
  const c = await startLineChild([opts.script ?? AGENT_SCRIPT, ...(opts.args ?? [])], {
    env: { ...process.env, ...opts.env, M4A_URL: url, M4A_TOKEN: token },
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
  });
  return {
    pid: c.pid,
    child: c.child,
    call: (path, body) => c.request({ path, body }),
    async exit() {
      if (c.child.exitCode !== null) return;
      const done = new Promise((r) => c.child.once('exit', r));
      c.tell({ path: 'exit' });
      await done;
    },
  };
}
