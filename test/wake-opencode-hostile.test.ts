// The opencode step against a hostile server on the loopback port it names: another OS user who
// took the port (opencode not running) must get neither the password (it opens opencode's API:
// shell commands as the user) nor the wake text (senders and subjects); a server that answers a
// byte at a time must not hold the recipient's wakes past the step's timeout.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpencodeAdapter } from '../src/wake/opencode-server.js';
import { createCodexAdapter } from '../src/wake/codex-app-server.js';
import { portOwner } from '../src/client/port-owner.js';
import type { WakeRequest } from '../src/wake/types.js';

const NOBODY = 65534;
const asOther = process.platform === 'linux' && process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;

const wakeReq: WakeRequest = {
  eventId: 'ev-1',
  account: 'opencode',
  session: { id: 'sess-1', lineage: 'lin-1', slug: 'proj', pid: 1, live: true, provider: 'opencode', providerSessionId: 'ses_abc', cwd: '/work/proj', listening: false },
  mail: [{ message_id: 'm1', from: 'claude', subject: 'secret plans', priority: 'normal', thread_id: 't1' }],
  urgent: false,
  text: 'You have 1 new message in mail4agent: secret plans',
};

describe('opencode step: a hostile server on the port', () => {
  // `::` (node's listen(port) with no host): a dual-stack socket that takes 127.0.0.1's connections too.
  for (const host of ['127.0.0.1', '::']) {
    it(
      `another user's listener on ${host} gets no request: no password, no wake text`,
      { skip: asOther ? false : 'needs root and setpriv to listen as another user' },
      async () => {
        // Answers every request 204 (as opencode would) and prints each request's head and body.
        const script = `const s = require('node:http').createServer((q, r) => { let b = ''; q.on('data', (c) => (b += c)); q.on('end', () => { process.stdout.write(JSON.stringify({ auth: q.headers.authorization ?? null, url: q.url, body: b }) + '\\n'); r.writeHead(q.method === 'GET' ? 200 : 204, { 'content-type': 'application/json' }); r.end(q.method === 'GET' ? JSON.stringify({ id: 'ses_abc', directory: '/work/proj' }) : undefined); }); }).listen(0, '${host}', () => process.stdout.write('port ' + s.address().port + '\\n'));`;
        const child = spawn('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (d: string) => (out += d));
        const dir = mkdtempSync(join(tmpdir(), 'm4a-oc-hostile-'));
        try {
          while (!/port \d+\n/.test(out)) await once(child.stdout, 'data');
          const port = Number(/port (\d+)/.exec(out)![1]);
          const file = join(dir, 'opencode-password');
          writeFileSync(file, 'pw-of-the-real-server\n', { mode: 0o600 });
          const a = createOpencodeAdapter({ kind: 'opencode', url: `http://127.0.0.1:${port}`, password_file: file }, { listenerOwner: portOwner });
          const r = await a.wake(wakeReq, AbortSignal.timeout(5_000));
          await new Promise((res) => setTimeout(res, 200));
          assert.equal(r.ok, false, r.detail);
          assert.match(r.detail, new RegExp(`uid ${NOBODY}`));
          assert.doesNotMatch(out, /auth|secret plans/, `the other user's server got: ${out}`);
          assert.deepEqual(portOwner('127.0.0.1', port), { kind: 'other', uid: NOBODY }, 'the client checks the daemon port the same way');
        } finally {
          child.kill('SIGTERM');
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );
  }

  it(
    "codex ws://: another user's listener on the port gets no handshake, so no token_file bearer",
    { skip: asOther ? false : 'needs root and setpriv to listen as another user' },
    async () => {
      // Prints the head of every connection it gets (a WebSocket upgrade carries the Authorization header).
      const script = `const s = require('node:net').createServer((c) => c.on('data', (d) => process.stdout.write(d.toString('latin1')))).listen(0, '127.0.0.1', () => process.stdout.write('port ' + s.address().port + '\\n'));`;
      const child = spawn('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (d: string) => (out += d));
      const dir = mkdtempSync(join(tmpdir(), 'm4a-codex-hostile-'));
      const adapter = await (async () => {
        while (!/port \d+\n/.test(out)) await once(child.stdout, 'data');
        const file = join(dir, 'codex-token');
        writeFileSync(file, 'codex-capability-token\n', { mode: 0o600 });
        const port = Number(/port (\d+)/.exec(out)![1]);
        return createCodexAdapter({ kind: 'codex-app-server', listen: `ws://127.0.0.1:${port}`, token_file: file }, { connectTimeoutMs: 1_000, listenerOwner: portOwner });
      })();
      try {
        const r = await adapter.wake(
          { ...wakeReq, account: 'codex', session: { ...wakeReq.session!, provider: 'codex', providerSessionId: '0199a000-0000-7000-8000-000000000001' } },
          AbortSignal.timeout(5_000),
        );
        await new Promise((res) => setTimeout(res, 200));
        assert.equal(r.ok, false, r.detail);
        assert.match(r.detail, new RegExp(`uid ${NOBODY}`));
        assert.doesNotMatch(out, /capability-token|Authorization/i, `the other user's listener got: ${out}`);
      } finally {
        await adapter.close();
        child.kill('SIGTERM');
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('a server that answers without end (a body past 1 MiB) is cut off and the wake settles, not delivered', async () => {
    const server = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const more = (): void => {
        while (res.write(Buffer.alloc(64 * 1024, 0x20)));
      };
      res.on('drain', more);
      more();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const port = (server.address() as { port: number }).port;
      const a = createOpencodeAdapter({ kind: 'opencode', url: `http://127.0.0.1:${port}` }, { timeoutMs: 4_000 });
      const stop = new AbortController();
      const t0 = Date.now();
      const r = await Promise.race([
        a.wake(wakeReq, stop.signal),
        new Promise<{ ok: boolean; detail: string }>((res) => setTimeout(() => res({ ok: true, detail: 'still waiting after 6 s' }), 6_000)),
      ]);
      stop.abort();
      assert.equal(r.ok, false, r.detail);
      assert.ok(Date.now() - t0 < 3_000, `settled after ${Date.now() - t0} ms, not at the 4 s timeout`);
      assert.match(r.detail, /over 1048576 bytes/);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('a server that answers one byte at a time is given up at the timeout, not followed forever', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const server: Server = createServer((s) => {
      sockets.add(s);
      s.on('error', () => undefined);
      s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n');
      // A byte every 100 ms: never idle for the socket timeout, never done.
      const t = setInterval(() => s.write(' '), 100);
      s.on('close', () => clearInterval(t));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const port = (server.address() as { port: number }).port;
      const a = createOpencodeAdapter({ kind: 'opencode', url: `http://127.0.0.1:${port}` }, { timeoutMs: 1_000 });
      const t0 = Date.now();
      // The dispatcher's signal lives as long as the daemon: only the step's own timeout ends it.
      const stop = new AbortController();
      const r = await Promise.race([
        a.wake(wakeReq, stop.signal),
        new Promise<{ ok: boolean; detail: string }>((res) => setTimeout(() => res({ ok: true, detail: 'still waiting after 6 s' }), 6_000)),
      ]);
      stop.abort();
      const took = Date.now() - t0;
      assert.equal(r.ok, false, r.detail);
      assert.ok(took < 3_000, `the wake took ${took} ms against a 1 s timeout`);
    } finally {
      for (const s of sockets) s.destroy();
      server.close();
    }
  });
});
