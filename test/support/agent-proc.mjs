// A separate OS process acting as one agent session: reads JSON lines {id, path, body} on stdin,
// calls the daemon over one keep-alive connection, writes {id, status, body} lines on stdout.
import { execFile } from 'node:child_process';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';

const url = new URL(process.env.M4A_URL);
const token = process.env.M4A_TOKEN;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
// A stand-in for an agent that rewrites its command line (pi shows only `pi`).
if (process.env.M4A_TEST_TITLE) process.title = process.env.M4A_TEST_TITLE;
/** Headers sent with every call, set by a {path: "headers"} line (a pi/omp extension's conversation). */
let extra = {};

function call(path, body) {
  return new Promise((resolve) => {
    const payload = JSON.stringify(body ?? {});
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path,
        method: 'POST',
        headers: { host: url.host, authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...extra },
      },
      (res) => {
        let data = '';
        res.on('data', (c) => (data += c));
        res.on('end', () => resolve({ status: res.statusCode, body: data ? JSON.parse(data) : null }));
      },
    );
    req.on('error', (e) => resolve({ status: 0, body: { error: { code: 'transport', message: e.message } } }));
    req.end(payload);
  });
}

process.stdout.write(JSON.stringify({ ready: true, pid: process.pid }) + '\n');
const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const { id, path, body } = JSON.parse(line);
  if (path === 'headers') {
    extra = body;
    return process.stdout.write(JSON.stringify({ id, status: 0, body: null }) + '\n');
  }
  if (path === 'bash') {
    // A helper the agent runs (its bash tool): a shell, which attestation passes through.
    execFile('bash', ['-c', body.script], { env: { ...process.env, ...body.env }, timeout: 10_000 }, (err, stdout) =>
      process.stdout.write(JSON.stringify({ id, status: err ? 1 : 0, body: stdout }) + '\n'),
    );
    return;
  }
  if (path === 'exit') {
    agent.destroy();
    process.exit(0);
  }
  // Lines are answered as they complete; call() never rejects (a transport failure is status 0).
  void call(path, body).then((r) => process.stdout.write(JSON.stringify({ id, ...r }) + '\n'));
});
rl.on('close', () => process.exit(0));
