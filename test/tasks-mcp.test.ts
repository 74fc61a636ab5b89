// Tasks over MCP through the official SDK client: one m4a_task tool whose action's own schema
// checks the fields (errors name them as over HTTP), m4a_task_get, and m4a_approval.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

async function mcp(url: string, secret: string): Promise<Client> {
  const client = new Client({ name: 'tasks-mcp', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { requestInit: { headers: { Authorization: `Bearer ${secret}` } } }));
  return client;
}

const text = (r: Awaited<ReturnType<Client['callTool']>>): any => JSON.parse((r.content as { text: string }[])[0]!.text);

describe('tasks over MCP', () => {
  let d: TestDaemon;
  let alice: Client;
  let bob: Client;
  before(async () => {
    d = await startTestDaemon();
    alice = await mcp(d.url, (await d.account('alice')).secret);
    bob = await mcp(d.url, (await d.account('bob')).secret);
    await d.account('carol');
  });
  after(async () => {
    await alice.close();
    await bob.close();
    await d.stop();
  });

  it('creates, moves and reads a task with m4a_task and m4a_task_get, and approvals with m4a_approval', async () => {
    const t = text(await alice.callTool({ name: 'm4a_task', arguments: { action: 'create', to: 'bob', title: 'run the tests', instructions: 'npm test' } }));
    assert.equal(t.state, 'submitted');
    const bad = await bob.callTool({ name: 'm4a_task', arguments: { action: 'update', task_id: t.task_id } });
    assert.equal(bad.isError, true);
    assert.equal(text(bad).error.code, 'malformed');
    assert.equal(text(bad).error.field, 'state', 'the action’s own schema names the missing field');
    const w = text(await bob.callTool({ name: 'm4a_task', arguments: { action: 'update', task_id: t.task_id, state: 'working' } }));
    assert.equal(w.version, 2);
    const mine = text(await bob.callTool({ name: 'm4a_task', arguments: { action: 'list' } }));
    assert.deepEqual(
      mine.tasks.map((x: { task_id: string }) => x.task_id),
      [t.task_id],
    );
    const a = text(await bob.callTool({ name: 'm4a_approval', arguments: { action: 'request', reviewer: 'carol', what: 'merge to main', task_id: t.task_id } }));
    assert.equal(a.state, 'pending');
    const g = text(await alice.callTool({ name: 'm4a_task_get', arguments: { task_id: t.task_id } }));
    assert.equal(g.state, 'auth_required');
    const stranger = await alice.callTool({ name: 'm4a_approval', arguments: { action: 'decide', approval_id: a.approval_id, decision: 'approved', reason: 'x' } });
    assert.equal(text(stranger).error.code, 'not_reviewer');
  });
});
