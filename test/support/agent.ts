// Drives agent-proc.mjs: one child process = one attested session.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
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
  const child = spawn(process.execPath, [opts.script ?? AGENT_SCRIPT, ...(opts.args ?? [])], {
    env: { ...process.env, ...opts.env, M4A_URL: url, M4A_TOKEN: token },
    stdio: ['pipe', 'pipe', 'inherit'],
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
  });
  const lines = createInterface({ input: child.stdout! });
  const waiting = new Map<number, (v: { status: number; body: any }) => void>();
  let ready!: (pid: number) => void;
  const readyP = new Promise<number>((r) => (ready = r));
  lines.on('line', (l) => {
    const m = JSON.parse(l);
    if (m.ready) return ready(m.pid);
    waiting.get(m.id)?.(m);
    waiting.delete(m.id);
  });
  const pid = await readyP;
  let next = 1;
  return {
    pid,
    child,
    call(path, body) {
      const id = next++;
      return new Promise((resolve) => {
        waiting.set(id, resolve);
        child.stdin!.write(JSON.stringify({ id, path, body }) + '\n');
      });
    },
    async exit() {
      if (child.exitCode !== null) return;
      const done = new Promise((r) => child.once('exit', r));
      child.stdin!.write(JSON.stringify({ path: 'exit' }) + '\n');
      await done;
    },
  };
}
