// A hook's stdin is the program's JSON for the event, and Copilot's postToolUse (copilot-tool) and
// Claude's PostToolUse carry the tool's result: as big as whatever the model made a tool print.
// The hook uses a few small fields of it, so it keeps at most a bounded prefix and drains the rest
// (the program never sees a broken pipe): 256 MiB on stdin must not make it hold 256 MiB.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const MIB = 1024 * 1024;

/** The process's peak resident size (VmHWM) in MiB, or null once it is gone. */
function peakMib(pid: number): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

describe('hook stdin', { skip: process.platform === 'linux' ? false : 'reads /proc/PID/status' }, () => {
  it('copilot-tool with 256 MiB of tool result on stdin: read to the end, not held (peak under 200 MiB), exits 0', async () => {
    const home = mkdtempSync(join(tmpdir(), 'm4a-hook-stdin-'));
    try {
      const env = { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: join(home, 'data'), M4A_PORT: '1' };
      const child = spawn(process.execPath, ['--import', 'tsx', MAIN, 'hook', 'copilot-tool'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (d: string) => (stderr += d));
      child.stdout.resume();
      let peak = 0;
      const poll = setInterval(() => {
        const p = peakMib(child.pid!);
        if (p !== null) peak = Math.max(peak, p);
      }, 20);
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      child.stdin.on('error', () => undefined);
      child.stdin.write('{"toolName":"bash","toolResult":{"resultType":"success","textResultForLlm":"');
      const chunk = Buffer.alloc(MIB, 'x');
      let broken = false;
      for (let i = 0; i < 256 && !broken; i++) {
        if (!child.stdin.write(chunk)) await new Promise<void>((r) => child.stdin.once('drain', () => r()));
        if (child.stdin.destroyed) broken = true;
      }
      child.stdin.end('"}}');
      const code = await exited;
      clearInterval(poll);
      assert.equal(broken, false, 'the hook read its stdin to the end');
      assert.equal(code, 0, stderr);
      assert.ok(peak > 0, 'the peak was read');
      assert.ok(peak < 200, `the hook held ${peak.toFixed(0)} MiB for 256 MiB of stdin`);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
