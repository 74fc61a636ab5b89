// Drives shell-agent.mjs processes: each one is an agent session with a bash tool.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
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
  const child = spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map<number, (v: { code: number; stdout: string; stderr: string }) => void>();
  let ready!: (pid: number) => void;
  const readyP = new Promise<number>((r) => (ready = r));
  createInterface({ input: child.stdout! }).on('line', (l) => {
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
    run(cmd, input) {
      const id = next++;
      return new Promise((resolve) => {
        waiting.set(id, resolve);
        child.stdin!.write(JSON.stringify({ id, cmd, input }) + '\n');
      });
    },
    stop() {
      child.kill('SIGKILL');
    },
  };
}

/** `node <built cli>` as a shell word, for commands the shell agents run. */
export const m4a = `'${process.execPath}' '${CLI}'`;
