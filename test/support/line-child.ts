// A child process spoken to in JSON lines: it prints {ready, pid} first, then answers each
// {id, …} request with {id, …}. The stand-in agents (agent-proc.mjs, shell-agent.mjs) use it.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface LineChild {
  pid: number;
  child: ChildProcess;
  request<T>(msg: Record<string, unknown>): Promise<T>;
  /** Writes a line that gets no answer. */
  tell(msg: Record<string, unknown>): void;
}

export async function startLineChild(args: string[], opts: SpawnOptions): Promise<LineChild> {
  const child = spawn(process.execPath, args, { ...opts, stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map<number, (v: unknown) => void>();
  let ready!: (pid: number) => void;
  const readyP = new Promise<number>((r) => (ready = r));
  createInterface({ input: child.stdout }).on('line', (l) => {
    const m = JSON.parse(l) as { ready?: boolean; pid?: number; id?: number };
    if (m.ready) return ready(m.pid ?? 0);
    if (m.id === undefined) return;
    waiting.get(m.id)?.(m);
    waiting.delete(m.id);
  });
  const pid = await readyP;
  let next = 1;
  return {
    pid,
    child,
    request<T>(msg: Record<string, unknown>) {
      const id = next++;
      return new Promise<T>((resolve) => {
        waiting.set(id, resolve as (v: unknown) => void);
        child.stdin.write(JSON.stringify({ ...msg, id }) + '\n');
      });
    },
    tell(msg) {
      child.stdin.write(JSON.stringify(msg) + '\n');
    },
  };
}
