// One connection budget shared by every listener: connections to one door count against the others,
// a connection past the budget is closed at once, and a closed one frees its place.
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { after, it } from 'node:test';
import { ConnectionBudget } from '../src/doors/connection-budget.js';
import { until } from './support/until.js';

const budget = new ConnectionBudget(3);
const held: Socket[] = [];
const raw = createServer((s) => held.push(s));
const web = createHttpServer((_req, res) => res.end('ok'));
budget.attach(raw);
budget.attach(web);
await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
const port = (s: { address(): unknown }): number => (s.address() as AddressInfo).port;
after(async () => {
  for (const s of held) s.destroy();
  web.closeAllConnections();
  await Promise.all([new Promise((r) => raw.close(r)), new Promise((r) => web.close(r))]);
});

/** Opens a client connection and resolves once it is connected, with whether the server dropped it. */
function open(p: number): Promise<{ sock: Socket; dropped: Promise<boolean> }> {
  return new Promise((resolve, reject) => {
    const sock = connect(p, '127.0.0.1');
    const dropped = new Promise<boolean>((r) => {
      sock.once('close', () => r(true));
      setTimeout(() => r(false), 300).unref();
    });
    sock.once('connect', () => resolve({ sock, dropped }));
    sock.once('error', reject);
  });
}

it('counts the connections of every listener against one budget', async () => {
  const a = await open(port(raw));
  const b = await open(port(raw));
  const c = await open(port(web));
  await until('three admitted', () => budget.size === 3);
  const d = await open(port(web));
  assert.equal(await d.dropped, true, 'the fourth connection, to the other listener, is closed at once');
  assert.equal(await a.dropped, false, 'the admitted ones stay');
  assert.equal(budget.size, 3);
  a.sock.destroy();
  await until('a place freed', () => budget.size === 2);
  const e = await open(port(web));
  assert.equal(await e.dropped, false, 'a closed connection frees its place');
  const res = await new Promise<string>((resolve) => {
    e.sock.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    let text = '';
    e.sock.on('data', (chunk: Buffer) => (text += chunk.toString()));
    e.sock.on('close', () => resolve(text));
  });
  assert.match(res, /\r\n\r\nok$/, 'an admitted HTTP connection is served');
  for (const x of [b, c]) x.sock.destroy();
});
