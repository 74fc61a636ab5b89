// The A2A fuzz's checks of one answer: a JSON-RPC result, a documented JSON-RPC error with the HTTP
// status a2a-errors.ts gives it, a stream of events answering the request's id, or (for a route
// refused before JSON-RPC) the named envelope.
import assert from 'node:assert/strict';
import { ERROR_TABLE, isErrorCode } from '../../src/wire/errors.js';
import { assertEnvelope, type RawAnswer } from '../reliability/helpers.js';

/** JSON-RPC's and A2A's codes this door documents (a2a-errors.ts); -32603 (internal) is a bug. */
const DOCUMENTED = new Set<unknown>([-32700, -32600, -32601, -32602, -32000, -32001, -32002, -32003, -32004, -32005, -32009]);
const AUTH_CODES = new Set(['unauthenticated', 'unattested', 'foreign_user', 'permission_denied']);
function checkRpcError(e: any, status: number, where: string): void {
  assert.ok(e && typeof e === 'object', `${where}: error is an object`);
  assert.ok(DOCUMENTED.has(e.code), `${where}: undocumented JSON-RPC error code ${e.code}: ${JSON.stringify(e).slice(0, 300)}`);
  assert.equal(typeof e.message, 'string', `${where}: error message`);
  if (e.code === -32000) {
    const code: unknown = e.data?.[0]?.metadata?.code;
    assert.ok(typeof code === 'string' && isErrorCode(code) && code !== 'internal', `${where}: -32000 names a code of ours: ${JSON.stringify(e).slice(0, 300)}`);
    assert.equal(status, AUTH_CODES.has(code) ? ERROR_TABLE[code as keyof typeof ERROR_TABLE].http : 200, `${where}: ${code} came with HTTP ${status}`);
  } else assert.equal(status, 200, `${where}: JSON-RPC error ${e.code} with HTTP ${status}`);
}

/** Checks one answer; 'refused' when it is an error (nothing may have changed). */
export function checkAnswer(r: RawAnswer, where: string, sentId: unknown): 'ok' | 'refused' {
  assert.ok(r.status < 500, `${where}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  const echo = typeof sentId === 'string' || (typeof sentId === 'number' && Number.isInteger(sentId)) ? sentId : null;
  if (String(r.headers['content-type']).startsWith('text/event-stream')) {
    assert.equal(r.status, 200, where);
    const events = r.text
      .split('\n\n')
      .filter((b) => b.startsWith('data: '))
      .map((b) => JSON.parse(b.slice(6)));
    assert.ok(events.length > 0, `${where}: a stream with no event`);
    assert.ok(events[0].result?.task, `${where}: a stream opens with the task`);
    for (const ev of events) {
      assert.equal(ev.jsonrpc, '2.0', where);
      assert.equal(ev.id, echo, `${where}: each event answers the request's id`);
      if (ev.error) checkRpcError(ev.error, 200, `${where} (stream)`);
    }
    return 'ok';
  }
  if (r.json?.jsonrpc !== '2.0') {
    assertEnvelope(r, where);
    return 'refused';
  }
  assert.notEqual(Object.hasOwn(r.json, 'result'), Object.hasOwn(r.json, 'error'), `${where}: exactly one of result or error`);
  if (r.json.error) {
    checkRpcError(r.json.error, r.status, where);
    // A refused bearer is answered before the body is read, so with id null (as a parse error is).
    if (r.json.error.code !== -32700 && r.json.error.code !== -32600 && r.status === 200) assert.deepEqual(r.json.id, echo, `${where}: the answer names the request's id`);
    return 'refused';
  }
  assert.equal(r.status, 200, where);
  assert.deepEqual(r.json.id, echo, `${where}: the answer names the request's id`);
  return 'ok';
}
