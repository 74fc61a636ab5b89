// A hostile relay (a test peer speaking the protocol over TLS) against a real daemon's relay link:
// more calls in flight than the link runs, and frames the protocol does not name.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RELAY_LIMITS } from '../src/wire/relay-link.js';
import { makeTestTls, type TestTls } from './support/test-tls.js';
import { RelayTestPeer, type PeerConn } from './support/relay-test-peer.js';
import { startTestDaemon, raw, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

describe("a hostile relay against a node's link", () => {
  const TOKEN = 'node-token-0123456789abcdef-HOSTILE';
  const PEOPLE = ['alice', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8', 'p9'];
  let tls: TestTls;
  let peer: RelayTestPeer;
  let d: TestDaemon;
  let c: PeerConn;

  before(async () => {
    tls = makeTestTls();
    peer = await RelayTestPeer.start(tls, { token: TOKEN, nodeId: 'box' });
    d = await startTestDaemon({ relayLink: { heartbeatMs: 150, backoffBaseMs: 20, backoffCapMs: 200, resetAfterMs: 100 } });
    for (const m of PEOPLE) await d.account(m, { kind: 'human' });
    const admin = (op: string, body: unknown = {}) => raw(d.url, `/admin/connect/${op}`, { token: d.operatorToken, body: JSON.stringify(body) });
    assert.equal((await admin('configure', { server_url: peer.url, node_id: 'box', node_token: TOKEN, human_mailboxes: PEOPLE, ca_file: tls.caFile })).status, 200);
    assert.equal((await admin('start')).status, 200);
    c = await peer.live();
  });
  after(async () => {
    await d.stop();
    await peer.close();
    tls.remove();
  });

  it(`beyond ${RELAY_LIMITS.callsInFlight} calls in flight the node answers 429 at once, and runs calls again once they end`, async () => {
    // A mailbox parks at most 8 waits at once (the engine's per-session cap, its notice loop holds
    // one), so 64 reads are spread over 10 mailboxes. A first read (wait 0) after the cursor makes
    // every later one park.
    const cursors = new Map<string, string>();
    for (const m of PEOPLE) {
      const first = await peer.call(c, { id: `p0-${m}`, mailbox: m, name: 'inbox', body: {} });
      const cursor = (first.body as { next_cursor: string }).next_cursor;
      assert.equal((await peer.call(c, { id: `p1-${m}`, mailbox: m, name: 'inbox', body: { after: cursor, wait_secs: 0 } })).status, 200);
      cursors.set(m, cursor);
    }
    const base = d.engine.parkedWaits();
    const ids: string[] = [];
    for (let i = 0; i < RELAY_LIMITS.callsInFlight; i++) {
      const m = PEOPLE[i % PEOPLE.length]!;
      ids.push(`park-${i}`);
      c.send({ t: 'call', id: `park-${i}`, mailbox: m, name: 'inbox', body: { after: cursors.get(m), wait_secs: 30 } });
    }
    await until('all parked', () => d.engine.parkedWaits() === base + RELAY_LIMITS.callsInFlight);
    assert.equal(c.frames.filter((f) => f.t === 'answer' && f.id.startsWith('park')).length, 0, 'none answered yet');
    const over = await peer.call(c, { id: 'over', mailbox: 'alice', name: 'me', body: {} });
    assert.equal(over.status, 429);
    assert.equal((over.body as { error: { code: string; limit: number } }).error.code, 'rate_limited');
    assert.equal((over.body as { error: { limit: number } }).error.limit, RELAY_LIMITS.callsInFlight);
    for (const id of ids) c.send({ t: 'cancel', id });
    await until('every parked read answered', () => ids.every((id) => c.frames.some((f) => f.t === 'answer' && f.id === id)));
    assert.equal((await peer.call(c, { id: 'after', mailbox: 'alice', name: 'me', body: {} })).status, 200);
  });

  it('frames the protocol does not name are ignored: the link stays up and answers the next call', async () => {
    const junk = ['not json', '{"t":"call"}', '{"t":"nope","id":"x"}', JSON.stringify({ t: 'call', id: 'x'.repeat(65), mailbox: 'alice', name: 'me', body: {} }), '[]', 'null'];
    for (const j of junk) c.ws.send(j);
    c.ws.send(Buffer.from([0, 1, 2]), { binary: true });
    c.send({ t: 'welcome', cursors: {} });
    c.send({ t: 'ack', mailbox: 'nobody', cursor: 'c' });
    const ok = await peer.call(c, { id: 'still', mailbox: 'alice', name: 'me', body: {} });
    assert.equal(ok.status, 200);
    assert.equal(c.closed, false);
    assert.equal(peer.conns.filter((x) => !x.closed).length, 1, 'no reconnect happened');
    assert.equal(c.frames.filter((f) => f.t === 'answer' && f.id.startsWith('x')).length, 0, 'nothing answered the junk');
  });
});
