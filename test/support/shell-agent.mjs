// A stand-in agent process with a bash tool: reads JSON lines {id, cmd, input?} on stdin, runs each
// command with `bash -c` as its own child (as an agent's bash tool does), and answers
// {id, code, stdout, stderr}. Its pid is the session the daemon should attribute `m4a` calls to.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

process.stdout.write(JSON.stringify({ ready: true, pid: process.pid }) + '\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, cmd, input } = JSON.parse(line);
  const child = spawn('bash', ['-c', cmd], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  child.on('close', (code) => process.stdout.write(JSON.stringify({ id, code, stdout, stderr }) + '\n'));
  // A command that exits without reading its input (git refusing before it reads) closes the pipe:
  // that EPIPE is the command's business, not a crash of the agent.
  child.stdin.on('error', () => undefined);
  child.stdin.end(input ?? '');
});
