// `m4a mcp` under the official SDK's stdio client: every tool through the bridge, attributed to the
// process that spawned the bridge (here, this test process).
import { MCP_TOOL_NAMES } from '../src/wire/operation-facts.js';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI } from './support/shell-agents.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

describe('stdio MCP bridge', () => {
  let d: TestDaemon;
  let home: string;
  let client: Client;
  let codexSecret: string;

  before(async () => {
    d = await startTestDaemon();
    const claude = await d.account('claude');
    codexSecret = (await d.account('codex')).secret;
    home = mkdtempSync(join(tmpdir(), 'm4a-bridge-'));
    mkdirSync(join(home, 'mail4agent'), { recursive: true });
    writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { claude: { secret: claude.secret, provider: 'claude' } } }), {
      mode: 0o600,
    });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp', '--account', 'claude'],
      env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir },
      stderr: 'inherit',
    });
    client = new Client({ name: 'bridge-test', version: '1.0.0' });
    await client.connect(transport);
  });
  after(async () => {
    await client?.close();
    await d.stop();
    rmSync(home, { recursive: true, force: true });
  });

  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const r = (await client.callTool({ name, arguments: args })) as { content: { text: string }[]; isError?: boolean };
    return { isError: r.isError === true, body: JSON.parse(r.content[0]!.text) };
  };

  it("initializes and lists the operation table's tools", async () => {
    assert.equal(client.getServerVersion()?.name, 'mail4agent');
    assert.match(client.getInstructions() ?? '', /the sender is always your own session/);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.deepEqual(names, [...MCP_TOOL_NAMES]);
  });

  it('speaks as the process that spawned the bridge, and mail flows both ways', async () => {
    const me = await call('m4a_mail_whoami');
    assert.equal(me.body.account, 'claude');
    assert.equal(me.body.card.attested.pid, process.pid, 'the bridge is transparent: its parent is the session');
    const sent = await call('m4a_mail_send', { to: 'codex', subject: 'via bridge', body: 'hello' });
    assert.equal(sent.isError, false);
    assert.equal(sent.body.from, `claude/${me.body.slug}`, 'answers print the session short');
    const r = await fetch(`${d.url}/mail/inbox`, { method: 'POST', headers: { authorization: `Bearer ${codexSecret}`, 'content-type': 'application/json' }, body: '{}' });
    const page = (await r.json()) as { messages: { message_id: string; from: string }[] };
    assert.ok(page.messages.some((m) => m.message_id === sent.body.message_id && m.from === sent.body.from));
    // The reverse direction, with a parked wait through the bridge.
    const head = (await call('m4a_mail_inbox', { include_acked: true })).body.next_cursor;
    const waiting = call('m4a_mail_inbox', { wait_secs: 10, after: head });
    await new Promise((res) => setTimeout(res, 200));
    await fetch(`${d.url}/mail/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${codexSecret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: me.body.address, subject: 'back', body: '' }),
    });
    const woke = await waiting;
    assert.deepEqual(
      woke.body.messages.map((m: { subject: string }) => m.subject),
      ['back'],
    );
    for (const tool of ['m4a_mail_unread', 'm4a_mail_peers']) assert.equal((await call(tool)).isError, false, tool);
    assert.equal((await call('m4a_mail_get', { message_id: sent.body.message_id })).body.message.subject, 'via bridge');
    assert.equal((await call('m4a_mail_ack', { message_id: woke.body.messages[0].message_id })).isError, false);
    assert.equal((await call('m4a_mail_status', { working_on: 'bridging' })).body.card.declared.working_on, 'bridging');
  });

  it('passes named refusals through as tool errors', async () => {
    const r = await call('m4a_mail_send', { to: 'nobody', subject: 'x', body: '' });
    assert.equal(r.isError, true);
    assert.equal(r.body.error.code, 'unknown_participant');
  });
});
