// Two relay processes' worth of relays (in this process) on one PostgreSQL store: users, grants,
// logins and nodes are shared; a node's socket is not, so a browser request reaching the relay
// that does not hold the node's socket is relay_unavailable (docs/relay.md).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../src/engine/log.js';
import { RelayState } from '../../src/relay/relay-store.js';
import { startRelay, type RunningRelay } from '../../src/relay/relay-server.js';
import { makeTestTls, type TestTls } from '../support/test-tls.js';
import { TestBrowser, TestNode } from '../support/relay-test-node.js';
import { freshSchema, kept, pgSkip } from './support/pg.js';

const PW = 'correct horse battery';

describe('postgres: two relays on one store', { skip: pgSkip }, () => {
  let tls: TestTls;
  let a: { state: RelayState; relay: RunningRelay };
  let b: { state: RelayState; relay: RunningRelay };
  let token: string;

  const relayOn = async (spec: string): Promise<{ state: RelayState; relay: RunningRelay }> => {
    const state = await RelayState.open({ store: spec, dataDir: tls.dir });
    const relay = await startRelay({ state, log: silentLogger, host: '127.0.0.1', port: 0, tls: { cert: tls.certFile, key: tls.keyFile } });
    return { state, relay };
  };

  before(async () => {
    tls = makeTestTls();
    const { spec } = await freshSchema('relay_shared');
    a = await relayOn(spec);
    b = await relayOn(spec);
    token = await a.state.addNode('laptop');
    await a.state.addUser('alice', PW);
    await a.state.grant('alice', { node: 'laptop', mailbox: 'alice', role: 'owner' });
  });
  after(async () => {
    for (const x of [a, b]) {
      await x?.relay.close();
      await x?.state.close();
    }
    tls?.remove();
  });

  it(
    'a login made at one relay works at the other; the node answers only through the relay holding its socket',
    kept(async () => {
      // The node was added through relay A's store and dials relay B.
      const n = await TestNode.connect(b.relay.origin, { node: 'laptop', token, caFile: tls.caFile, mailboxes: ['alice'] });
      n.auto = (c) => ({ status: 200, body: { account: c.mailbox } });
      const atA = new TestBrowser(a.relay.origin, tls.caFile);
      assert.equal((await atA.login('alice', PW)).status, 200);
      const refused = await atA.post('me', {});
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error?.code, 'relay_unavailable');
      // The same login, as a load balancer sending it to B would present it (B's cookie name).
      const atB = new TestBrowser(b.relay.origin, tls.caFile);
      atB.cookie = atA.cookie!.replace(`_${a.relay.port}=`, `_${b.relay.port}=`);
      atB.csrf = atA.csrf;
      const r = await atB.post('me', {});
      assert.equal(r.status, 200);
      assert.equal(r.body.account, 'alice');
      // A revoke through either store ends the login everywhere.
      await b.state.revoke('alice');
      assert.equal((await atB.post('me', {})).body.error?.code, 'unauthenticated');
      await n.close();
    }),
  );
});
