// Security matrix I (the doors' smaller ones): a client that aborts mid-body is a debug line, not an
// error with a stack; an unparsable HTTP request gets the error envelope; an MCP batch is capped and
// its calls run together (a wait in a batch does not hold up the calls after it).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { recordingLogger, type LogLine } from '../../support/recording-logger.js';
import { LIMITS } from '../../../src/wire/limits.js';
import { startTestDaemon, type TestDaemon } from '../../support/test-daemon.js';
import { until } from '../../support/until.js';
import { assertUnchanged, http, storeSnapshot } from '../helpers.js';

/** Raw bytes on a fresh connection; the whole answer once the daemon closes it. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(bytes));
    let data = '';
    const timer = setTimeout(() => s.destroy(new Error('no answer (a hang)')), 10_000);
    s.on('data', (c: Buffer) => (data += c.toString('utf8')));
    s.on('error', reject);
    s.on('close', () => {
      clearTimeout(timer);
      resolve(data);
    });
  });
}

const bodyOf = (answer: string): any => JSON.parse(answer.split('\r\n\r\n').slice(1).join('\r\n\r\n'));

describe('security matrix I: the doors', () => {
  const lines: LogLine[] = [];
  let d: TestDaemon;
  let secret: string;

  before(async () => {
    d = await startTestDaemon({ log: recordingLogger(lines) });
    secret = (await d.account('alice')).secret;
    await http(d.url, '/mail/whoami', { token: secret, body: '{}' });
  });
  after(() => d.stop());

  it('a client that aborts mid-body is logged at debug without a stack, and nothing is stored', async () => {
    const before = await storeSnapshot(d.engine.store);
    const errorsBefore = lines.filter((l) => l.level === 'error').length;
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((resolve) => {
        // A first, whole request attests the connection; the second is cut mid-body, so the door is
        // reading its body (not still waiting on attestation) when the client goes away.
        const s = connect(d.port, '127.0.0.1', () => {
          s.write(`POST /mail/whoami HTTP/1.1\r\nhost: 127.0.0.1:${d.port}\r\nauthorization: Bearer ${secret}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`);
        });
        let seen = '';
        s.on('data', (c: Buffer) => {
          seen += c.toString('utf8');
          if (!seen.includes('"account"') || seen.includes('#cut')) return;
          seen += '#cut';
          s.write(
            `POST /mail/send HTTP/1.1\r\nhost: 127.0.0.1:${d.port}\r\nauthorization: Bearer ${secret}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"to":"alice",`,
          );
          setTimeout(() => s.destroy(), 100);
        });
        s.on('close', () => resolve());
        s.on('error', () => undefined);
      });
    }
    await until('five debug lines', () => lines.filter((l) => l.msg === 'client closed the connection mid-request').length >= 5, 5_000);
    assert.equal(lines.filter((l) => l.level === 'error').length, errorsBefore, 'no error-level line');
    for (const l of lines.filter((x) => x.level === 'debug')) assert.ok(!JSON.stringify(l.obj).includes('    at '), 'no stack');
    await assertUnchanged(d.engine.store, before, 'an aborted send stores nothing');
    assert.equal((await http(d.url, '/health', { method: 'GET' })).status, 200);
  });

  it('an unparsable request, or headers over the limit, get the error envelope', async () => {
    const garbage = await rawExchange(d.port, 'NOT HTTP AT ALL\r\n\r\n');
    assert.match(garbage, /^HTTP\/1\.1 400 /);
    const g = bodyOf(garbage);
    assert.equal(g.error.code, 'malformed');
    assert.equal(g.error.field, '(request)');
    assert.equal(typeof g.error.reason, 'string');

    const huge = await rawExchange(d.port, `GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.match(huge, /^HTTP\/1\.1 431 /);
    const h = bodyOf(huge);
    assert.equal(h.error.code, 'too_large');
    assert.equal(h.error.field, '(headers)');
    assert.equal(h.error.limit, 16_384);
  });

  const rpc = (id: number, name: string, args: object) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

  it(`an MCP batch over ${LIMITS.mcpBatchMessages} messages is refused by name and runs none of them`, async () => {
    const before = await storeSnapshot(d.engine.store);
    const batch = Array.from({ length: LIMITS.mcpBatchMessages + 1 }, (_, i) => rpc(i + 1, 'm4a_mail_send', { to: 'alice', subject: `s${i}`, body: 'b' }));
    const r = await http(d.url, '/mcp', { token: secret, body: JSON.stringify(batch), headers: { accept: 'application/json, text/event-stream' } });
    assert.equal(r.status, 200);
    assert.equal(r.json.error.code, -32600);
    assert.deepEqual(r.json.error.data, { code: 'too_large', field: '(batch)', limit: LIMITS.mcpBatchMessages, actual: LIMITS.mcpBatchMessages + 1 });
    await assertUnchanged(d.engine.store, before, 'a refused batch sends nothing');
  });

  it('the calls of a batch run together: a wait first in the batch is answered by the send after it', async () => {
    const head = (await http(d.url, '/mail/inbox', { token: secret, body: '{}' })).json.next_cursor as string;
    const batch = [rpc(1, 'm4a_mail_inbox', { after: head, wait_secs: 30 }), rpc(2, 'm4a_mail_send', { to: 'alice', subject: 'wakes the wait', body: 'b' })];
    // Run one after the other, the wait would hold the batch for 30 s: past this 10 s deadline.
    const r = await http(d.url, '/mcp', { token: secret, body: JSON.stringify(batch), headers: { accept: 'application/json, text/event-stream' }, timeoutMs: 10_000 });
    assert.equal(r.status, 200);
    const [wait, send] = r.json as { id: number; result: { content: { text: string }[] } }[];
    assert.equal(wait?.id, 1);
    assert.equal(send?.id, 2);
    assert.match(wait?.result.content[0]?.text ?? '', /wakes the wait/);
  });
});
