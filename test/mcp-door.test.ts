// The MCP door against a real daemon: the official SDK client end to end (every tool), refusals as
// tool results, raw JSON-RPC framing, Host/Origin/credential refusals, the inbox byte budget and waits.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { MCP_TOOL_NAMES } from '../src/wire/operation-facts.js';
import { raw, startTestDaemon, type TestDaemon } from './support/test-daemon.js';

interface Mcp {
  client: Client;
  transport: StreamableHTTPClientTransport;
}

async function connect(url: string, secret: string, name: string): Promise<Mcp> {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', url), {
    requestInit: { headers: { Authorization: `Bearer ${secret}` } },
  });
  const client = new Client({ name, version: '0.0.0' });
  await client.connect(transport);
  return { client, transport };
}

interface ToolResult {
  isError?: boolean;
  content: { type: string; text?: string }[];
}

function textOf(r: unknown): string {
  const res = r as ToolResult;
  assert.ok(Array.isArray(res.content) && res.content.length >= 1, 'a tool result has content');
  const first = res.content[0]!;
  assert.equal(first.type, 'text');
  assert.equal(typeof first.text, 'string');
  return first.text!;
}

/** Calls a tool that must succeed and returns its parsed JSON. */
async function call(c: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = (await c.callTool({ name, arguments: args })) as ToolResult;
  const text = textOf(r);
  assert.notEqual(r.isError, true, `${name} refused: ${text}`);
  return JSON.parse(text);
}

/** Calls a tool that must be refused and returns the parsed error object. */
async function refused(c: Client, name: string, args: Record<string, unknown>): Promise<any> {
  const r = (await c.callTool({ name, arguments: args })) as ToolResult;
  assert.equal(r.isError, true, `${name} was expected to be refused`);
  const body = JSON.parse(textOf(r));
  assert.equal(typeof body.error?.code, 'string');
  assert.equal(typeof body.error?.message, 'string');
  return body.error;
}

const rpc = (id: number | string, method: string, params?: unknown) => ({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });

describe('MCP door', () => {
  let d: TestDaemon;
  let claudeSecret: string;
  let codexSecret: string;
  let claude: Mcp;
  let codex: Mcp;

  before(async () => {
    d = await startTestDaemon();
    claudeSecret = (await d.account('claude')).secret;
    codexSecret = (await d.account('codex')).secret;
    claude = await connect(d.url, claudeSecret, 'test-claude');
    codex = await connect(d.url, codexSecret, 'test-codex');
  });

  after(async () => {
    try {
      await claude?.client.close();
      await codex?.client.close();
    } finally {
      await d?.stop();
    }
  });

  /** Acknowledge everything codex has, so later checks start from an empty queue. */
  async function drainCodex(): Promise<void> {
    const page = await call(codex.client, 'm4a_mail_inbox', { include_bodies: false, limit: 256 });
    const ids = page.messages.map((m: { message_id: string }) => m.message_id);
    if (ids.length) await call(codex.client, 'm4a_mail_ack', { message_ids: ids });
    assert.equal((await call(codex.client, 'm4a_mail_unread')).unread, 0);
  }

  test('the SDK negotiates with the daemon: version, server info, instructions, capabilities', () => {
    assert.equal(claude.transport.protocolVersion, '2025-11-25');
    const info = claude.client.getServerVersion();
    assert.equal(info?.name, 'mail4agent');
    assert.equal(typeof info?.version, 'string');
    assert.ok(info.version.length > 0);
    const instructions = claude.client.getInstructions();
    assert.equal(typeof instructions, 'string');
    assert.match(instructions!, /m4a_mail_inbox/);
    assert.match(instructions!, /m4a_mail_reply/);
    assert.ok(claude.client.getServerCapabilities()?.tools, 'tools capability is offered');
  });

  test('listTools returns exactly the nine mail tools, each with an object input schema', async () => {
    const { tools } = await claude.client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      [...MCP_TOOL_NAMES],
      "the SDK sees the operation table's tools, in its order",
    );
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', `${t.name} inputSchema.type`);
      assert.equal(typeof t.description, 'string', `${t.name} has a description`);
      assert.ok(t.description!.length > 0);
    }
    const send = tools.find((t) => t.name === 'm4a_mail_send')!;
    const props = send.inputSchema.properties as Record<string, unknown>;
    for (const f of ['to', 'subject', 'body']) assert.ok(f in props, `send schema has ${f}`);
    assert.ok(!('from' in props), 'send schema has no from field');
    // The schemas say what the door enforces, once, and every parameter says what it is.
    for (const t of tools)
      for (const [k, p] of Object.entries((t.inputSchema.properties ?? {}) as Record<string, { description?: string }>))
        assert.ok(p.description, `${t.name}.${k} has a description`);
    assert.deepEqual(props.to, { type: 'string', description: (props.to as { description: string }).description }, 'to is a plain string over MCP');
    assert.match((props.priority as { description: string }).description, /urgent permission/);
    const inbox = tools.find((t) => t.name === 'm4a_mail_inbox')!.inputSchema.properties as Record<string, { maximum?: number; description?: string }>;
    assert.equal(inbox.limit?.maximum, 256, 'the inbox limit is the real one');
    assert.match(inbox.wait_secs?.description ?? '', /50 s/);
    assert.ok(!('verbose' in inbox), 'verbose is for scripts over HTTP');
  });

  test('every tool works through the SDK', async () => {
    // whoami
    const me = await call(claude.client, 'm4a_mail_whoami');
    assert.match(me.address, /^claude\/s-/);
    assert.equal(me.account, 'claude');
    assert.equal(me.session, me.address.slice('claude/'.length));
    const codexMe = await call(codex.client, 'm4a_mail_whoami');
    assert.match(codexMe.address, /^codex\/s-/);

    // send, compact `to`
    const sent = await call(claude.client, 'm4a_mail_send', { to: 'codex', subject: 'hello over mcp', body: 'first body' });
    assert.match(sent.message_id, /^m-/);
    assert.equal(sent.from, `claude/${me.slug}`, 'answers print the session short');
    assert.equal(sent.to, 'codex');
    assert.equal(sent.redirected, false);
    assert.equal(sent.duplicate, false);
    assert.equal(sent.thread_id, sent.message_id);

    // the codex client's inbox sees it
    const page = await call(codex.client, 'm4a_mail_inbox');
    const seen = page.messages.find((m: { message_id: string }) => m.message_id === sent.message_id);
    assert.ok(seen, 'codex inbox has the message');
    assert.equal(seen.subject, 'hello over mcp');
    assert.equal(seen.body, 'first body');
    assert.equal(seen.from, `claude/${me.slug}`);
    assert.equal(seen.acked_at, undefined, 'lean: no acked_at until acknowledged');
    assert.equal(typeof page.next_cursor, 'string');
    assert.ok(page.unread >= 1);

    // get
    const got = await call(codex.client, 'm4a_mail_get', { message_id: sent.message_id });
    assert.equal(got.message.message_id, sent.message_id);
    assert.equal(got.message.body, 'first body');
    assert.equal(got.message.subject, 'hello over mcp');
    assert.equal(got.message.from_session, me.session, 'get names the sender session in full');

    // unread, ack, unread goes down
    const before = (await call(codex.client, 'm4a_mail_unread')).unread;
    assert.ok(before >= 1);
    const acked = await call(codex.client, 'm4a_mail_ack', { message_id: sent.message_id });
    assert.equal(acked.acked.length, 1);
    assert.equal(acked.acked[0].message_id, sent.message_id);
    assert.equal(typeof acked.acked[0].acked_at, 'string');
    assert.equal(acked.unread, before - 1);
    assert.equal((await call(codex.client, 'm4a_mail_unread')).unread, before - 1);
    const after = await call(codex.client, 'm4a_mail_inbox');
    assert.ok(!after.messages.some((m: { message_id: string }) => m.message_id === sent.message_id), 'an acknowledged message stops showing');

    // status → whoami card.declared
    const st = await call(claude.client, 'm4a_mail_status', { working_on: 'testing the MCP door', role: 'tester' });
    assert.equal(st.address, me.address);
    assert.equal(st.card.declared.working_on, 'testing the MCP door');
    const me2 = await call(claude.client, 'm4a_mail_whoami');
    assert.equal(me2.card.declared.working_on, 'testing the MCP door');
    assert.equal(me2.card.declared.role, 'tester');

    // peers: both accounts, never a secret or its digest
    const r = await claude.client.callTool({ name: 'm4a_mail_peers', arguments: {} });
    const text = textOf(r);
    assert.notEqual((r as ToolResult).isError, true, text);
    const peers = JSON.parse(text);
    const ids = peers.accounts.map((a: { id: string }) => a.id);
    assert.ok(ids.includes('claude') && ids.includes('codex'), `peers lists both accounts: ${ids.join(', ')}`);
    const claudeEntry = peers.accounts.find((a: { id: string }) => a.id === 'claude');
    assert.ok(
      claudeEntry.sessions.some((s: { address: string }) => s.address === `claude/${me.slug}`),
      'peers shows the calling session by its printed address',
    );
    const detailed = await call(claude.client, 'm4a_mail_peers', { detail: true });
    const mine = detailed.accounts.find((a: { id: string }) => a.id === 'claude');
    assert.ok(
      mine.sessions.some((s: { address: string }) => s.address === me.address),
      'with detail, the full address',
    );
    assert.ok(Array.isArray(peers.rooms));
    for (const needle of ['secretDigest', 'secret_digest', claudeSecret, codexSecret]) assert.ok(!text.includes(needle), `peers JSON contains ${needle.slice(0, 12)}…`);
  });

  test('refusals are tool results with isError and the error object; an unknown tool is -32602', async () => {
    const from = await refused(claude.client, 'm4a_mail_send', { to: 'codex', subject: 's', body: 'b', from: 'codex/s-forged' });
    assert.equal(from.code, 'malformed');
    assert.equal(from.field, 'from');

    const big = await refused(claude.client, 'm4a_mail_send', { to: 'codex', subject: 'x'.repeat(513), body: 'b' });
    assert.equal(big.code, 'too_large');
    assert.equal(big.field, 'subject');
    assert.equal(big.limit, 512);
    assert.equal(big.actual, 513);

    // 512 bytes exactly is accepted (the refusal above is about the limit, not the subject).
    const ok = await call(claude.client, 'm4a_mail_send', { to: 'codex', subject: 'x'.repeat(512), body: 'b' });
    assert.match(ok.message_id, /^m-/);

    const nobody = await refused(claude.client, 'm4a_mail_send', { to: 'nobody', subject: 's', body: 'b' });
    assert.equal(nobody.code, 'unknown_participant');
    assert.equal(nobody.participant, 'nobody');

    await assert.rejects(
      () => claude.client.callTool({ name: 'm4a_no_such_tool', arguments: {} }),
      (err: unknown) => {
        assert.ok(err instanceof McpError, `expected McpError, got ${String(err)}`);
        assert.equal(err.code, -32602);
        return true;
      },
    );
  });

  test('initialize echoes every supported protocol version and answers the latest otherwise', async () => {
    for (const v of ['2025-03-26', '2025-06-18', '2025-11-25']) {
      const r = await raw(d.url, '/mcp', {
        token: claudeSecret,
        body: JSON.stringify(rpc(1, 'initialize', { protocolVersion: v, capabilities: {}, clientInfo: { name: 'raw', version: '0' } })),
      });
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(r.json.jsonrpc, '2.0');
      assert.equal(r.json.id, 1);
      assert.equal(r.json.result.protocolVersion, v);
      assert.equal(r.json.result.serverInfo.name, 'mail4agent');
    }
    const r = await raw(d.url, '/mcp', {
      token: claudeSecret,
      body: JSON.stringify(rpc('x', 'initialize', { protocolVersion: '1999-01-01', capabilities: {}, clientInfo: { name: 'raw', version: '0' } })),
    });
    assert.equal(r.status, 200);
    assert.equal(r.json.id, 'x');
    assert.equal(r.json.result.protocolVersion, '2025-11-25');
  });

  test('JSON-RPC framing: batches, notifications, unknown methods', async () => {
    const batch = await raw(d.url, '/mcp', { token: claudeSecret, body: JSON.stringify([rpc(7, 'ping'), rpc('list', 'tools/list')]) });
    assert.equal(batch.status, 200);
    assert.ok(Array.isArray(batch.json), 'a batch answers an array');
    assert.equal(batch.json.length, 2);
    const byId = new Map(batch.json.map((m: { id: unknown }) => [m.id, m]));
    assert.deepEqual((byId.get(7) as any)?.result, {});
    assert.equal((byId.get('list') as any)?.result?.tools?.length, MCP_TOOL_NAMES.length);

    const withInit = await raw(d.url, '/mcp', {
      token: claudeSecret,
      body: JSON.stringify([rpc(1, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } }), rpc(2, 'ping')]),
    });
    assert.equal(withInit.status, 200);
    assert.ok(Array.isArray(withInit.json));
    const init = withInit.json.find((m: { id: unknown }) => m.id === 1);
    assert.equal(init?.error?.code, -32600);
    assert.equal(init?.result, undefined);
    assert.deepEqual(withInit.json.find((m: { id: unknown }) => m.id === 2)?.result, {});

    for (const body of [
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      [
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      ],
    ]) {
      const n = await raw(d.url, '/mcp', { token: claudeSecret, body: JSON.stringify(body) });
      assert.equal(n.status, 202, JSON.stringify(body));
      assert.equal(n.json, null, 'a 202 has an empty body');
      assert.equal(n.headers.get('content-length'), '0');
    }

    const unknown = await raw(d.url, '/mcp', { token: claudeSecret, body: JSON.stringify(rpc(3, 'resources/list')) });
    assert.equal(unknown.status, 200);
    assert.equal(unknown.json.id, 3);
    assert.equal(unknown.json.error.code, -32601);
  });

  test('HTTP-level refusals: GET, no bearer, bad JSON, foreign Origin and Host', async () => {
    const get = await raw(d.url, '/mcp', { token: claudeSecret, method: 'GET' });
    assert.equal(get.status, 405);
    assert.equal(get.json.error.code, 'method_not_allowed');
    assert.equal(get.headers.get('allow'), 'POST');

    const anon = await raw(d.url, '/mcp', { body: JSON.stringify(rpc(1, 'ping')) });
    assert.equal(anon.status, 401);
    assert.equal(anon.json.error.code, 'unauthenticated');

    const wrong = await raw(d.url, '/mcp', { token: 'not-a-secret', body: JSON.stringify(rpc(1, 'ping')) });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.json.error.code, 'unauthenticated');

    const bad = await raw(d.url, '/mcp', { token: claudeSecret, body: '{"jsonrpc":"2.0",' });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.code, 'malformed');

    const origin = await raw(d.url, '/mcp', { token: claudeSecret, body: JSON.stringify(rpc(1, 'ping')), headers: { Origin: 'http://127.0.0.1:1' } });
    assert.equal(origin.status, 403);
    assert.equal(origin.json.error.code, 'forbidden_origin');
    assert.equal(origin.json.error.field, 'origin');

    // The daemon's own origin is accepted (so the refusal above is about the port, not the header).
    const own = await raw(d.url, '/mcp', { token: claudeSecret, body: JSON.stringify(rpc(1, 'ping')), headers: { Origin: d.url } });
    assert.equal(own.status, 200);

    const host = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const body = JSON.stringify(rpc(1, 'ping'));
      const u = new URL(d.url);
      const req = httpRequest(
        {
          host: u.hostname,
          port: Number(u.port),
          path: '/mcp',
          method: 'POST',
          headers: {
            host: `evil.example:${d.port}`,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            authorization: `Bearer ${claudeSecret}`,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(host.status, 403);
    const hostErr = JSON.parse(host.body);
    assert.equal(hostErr.error.code, 'forbidden_origin');
    assert.equal(hostErr.error.field, 'host');
  });

  test('an MCP inbox page stays within its byte budget; get returns the whole body', async () => {
    await drainCodex();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const body = `${i}`.repeat(60_000);
      const s = await call(claude.client, 'm4a_mail_send', { to: 'codex', subject: `big ${i}`, body });
      ids.push(s.message_id);
    }
    const r = await codex.client.callTool({ name: 'm4a_mail_inbox', arguments: {} });
    assert.notEqual((r as ToolResult).isError, true);
    const text = textOf(r);
    const bytes = Buffer.byteLength(text);
    assert.ok(bytes <= 20_000 + 256, `inbox result is ${bytes} bytes`);
    const page = JSON.parse(text);
    assert.deepEqual(
      page.messages.map((m: { message_id: string }) => m.message_id),
      ids,
      'every message is on the page, oldest first',
    );
    for (const [i, m] of (page.messages as { message_id: string; body: string; body_truncated?: boolean }[]).entries()) {
      assert.equal(m.body_truncated, true, `message ${i} is marked truncated`);
      assert.ok(m.body.length < 60_000);
      assert.ok(m.body.startsWith(`${i}`.repeat(100)), `message ${i} keeps the start of its body`);
      assert.match(m.body, /m4a_mail_get/);
      assert.ok(m.body.includes(m.message_id), 'the marker names the message id');
    }

    const full = await call(codex.client, 'm4a_mail_get', { message_id: ids[2]! });
    assert.equal(full.message.body, '2'.repeat(60_000));
    assert.equal(full.message.body_truncated, undefined);

    await call(codex.client, 'm4a_mail_ack', { message_ids: ids });
  });

  test('a page whose headers alone exceed the budget ends earlier, and its cursor loses nothing', async () => {
    await drainCodex();
    const ids: string[] = [];
    for (let i = 0; i < 120; i++) ids.push((await call(claude.client, 'm4a_mail_send', { to: 'codex', subject: `${i} `.padEnd(500, 'x'), body: 'b' })).message_id);
    const seen: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 20 && seen.length < ids.length; pages++) {
      const r = await codex.client.callTool({ name: 'm4a_mail_inbox', arguments: { limit: 256, include_acked: true, ...(after ? { after } : {}) } });
      const text = textOf(r);
      assert.ok(Buffer.byteLength(text) <= 20_000 + 256, `page is ${Buffer.byteLength(text)} bytes`);
      const page = JSON.parse(text);
      assert.ok(page.messages.length > 0 && page.messages.length < 120, `a shortened page (${page.messages.length})`);
      seen.push(...page.messages.map((m: { message_id: string }) => m.message_id).filter((id: string) => ids.includes(id)));
      after = page.next_cursor;
    }
    assert.deepEqual(seen, ids, 'paging through shortened pages sees every message once, in order');
    await call(codex.client, 'm4a_mail_ack', { message_ids: ids });
  });

  test('wait_secs over MCP parks and wakes when another client sends', async () => {
    await drainCodex();
    const start = await call(codex.client, 'm4a_mail_inbox', { include_acked: false });
    assert.equal(start.messages.length, 0);
    const cursor = start.next_cursor;
    assert.equal(typeof cursor, 'string');

    const t0 = Date.now();
    const waiting = call(codex.client, 'm4a_mail_inbox', { wait_secs: 5, after: cursor });
    // Give the wait time to park before the send commits.
    await new Promise((r) => setTimeout(r, 300));
    const sent = await call(claude.client, 'm4a_mail_send', { to: 'codex', subject: 'wake up', body: 'you were waiting' });
    const page = await waiting;
    const elapsed = Date.now() - t0;
    assert.ok(elapsed >= 250, `the wait parked (${elapsed} ms)`);
    assert.ok(elapsed < 3000, `the wait answered in ${elapsed} ms`);
    assert.deepEqual(
      page.messages.map((m: { message_id: string }) => m.message_id),
      [sent.message_id],
    );
    assert.notEqual(page.next_cursor, cursor);
  });
});
