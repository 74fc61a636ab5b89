// A hostile local process for the idle-flood scenario: holds `count` TCP connections to the daemon
// open without sending a byte, re-opening each one the daemon closes (after `reopenMs`), until it
// reads a line on stdin or `maxSecs` pass. With `churn` 1 it closes each connection as soon as it
// is open instead (an open-and-close loop, `count` at a time). Prints `held N`, then `stats` at the end.
import { connect, type Socket } from 'node:net';

const [port, count, reopenMs, maxSecs, churn = 0] = process.argv.slice(2).map(Number) as [number, number, number, number, number?];
let open = 0;
let opened = 0;
let stopping = false;
let announced = false;
const socks = new Set<Socket>();

function one(): void {
  if (stopping) return;
  const s = connect(port, '127.0.0.1');
  opened++;
  socks.add(s);
  let connected = false;
  s.on('connect', () => {
    connected = true;
    open++;
    if (churn) s.destroy();
    if (!announced && (open >= count || (churn && opened >= count))) {
      announced = true;
      console.log(`held ${open}`);
    }
  });
  s.on('error', () => undefined);
  s.on('close', () => {
    socks.delete(s);
    if (connected) open--;
    setTimeout(one, reopenMs);
  });
}

function stop(): void {
  stopping = true;
  console.log(`stats ${JSON.stringify({ open, opened })}`);
  for (const s of socks) s.destroy();
  process.exit(0);
}

for (let i = 0; i < count; i++) one();
process.stdin.on('data', stop);
setTimeout(stop, maxSecs * 1000).unref();
