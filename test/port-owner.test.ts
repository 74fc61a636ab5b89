// The client's check of who listens on the daemon's port (src/client/port-owner.ts) against the
// kernel's real socket table: it reads only the listening rows, which the kernel prints first, and
// must still find a listener opened after thousands of connections, and still name another user's.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { portOwner } from '../src/client/port-owner.js';

const linux = process.platform === 'linux';
const NOBODY = 65534;
const asOther = linux && process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;

async function listen(): Promise<{ server: Server; port: number }> {
  const server = createServer((s) => s.on('error', () => undefined));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as { port: number }).port };
}

describe('port owner', { skip: linux ? false : 'reads /proc/net/tcp (Linux)' }, () => {
  const servers: Server[] = [];
  const sockets: Socket[] = [];
  before(async () => {
    // 1,500 established pairs (3,000 rows, well past one 64 KiB read of the table) before the
    // listener under test exists.
    const { server, port } = await listen();
    servers.push(server);
    for (let i = 0; i < 1500; i++) {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      sockets.push(s);
    }
    await Promise.all(sockets.map((s) => once(s, 'connect')));
  });
  after(() => {
    for (const s of sockets) s.destroy();
    for (const s of servers) s.close();
  });

  it('finds our listener opened after thousands of connections, as the full table does', async () => {
    const { server, port } = await listen();
    servers.push(server);
    const rows = readFileSync('/proc/net/tcp', 'latin1').split('\n').length;
    // Far past one 64 KiB read (about 430 rows of ~150 bytes) is what matters; under load some of
    // the 3,000 rows can be missing for a moment (seen: 2,846), so the bound is the read, not 3,000.
    assert.ok(rows > 1500, `the table has ${rows} rows`);
    assert.deepEqual(portOwner('127.0.0.1', port), { kind: 'same' });
    assert.deepEqual(portOwner('localhost', port), { kind: 'same' });
  });

  it('a port nobody listens on is none, even with connections to and from other ports', async () => {
    const { server, port } = await listen();
    await new Promise<void>((r) => server.close(() => r()));
    assert.deepEqual(portOwner('127.0.0.1', port), { kind: 'none' });
  });

  it("another user's listener is named with its uid", { skip: asOther ? false : 'needs root and setpriv to listen as another user' }, async () => {
    const script = "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => process.stdout.write(String(s.address().port) + '\\n'));";
    const child: ChildProcess = spawn('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
      const port = Number(chunk.toString().trim());
      assert.deepEqual(portOwner('127.0.0.1', port), { kind: 'other', uid: NOBODY });
    } finally {
      child.kill('SIGTERM');
    }
  });
});
