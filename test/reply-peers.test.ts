// The reply operation (HTTP /mail/reply, MCP m4a_mail_reply) and the lean peers list, on a running
// daemon with the official MCP SDK as the model's client.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MailError } from '../src/wire/errors.js';
import type { MailClient } from '../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

async function mcp(url: string, secret: string): Promise<Client> {
  const client = new Client({ name: 'reply-test', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { requestInit: { headers: { Authorization: `Bearer ${secret}` } } }));
  return client;
}

async function tool(c: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; json: any }> {
  const r = (await c.callTool({ name, arguments: args })) as { isError?: boolean; content: { text: string }[] };
  return { isError: r.isError === true, json: JSON.parse(r.content[0]!.text) };
}

async function refused(p: Promise<unknown>, code: string): Promise<void> {
  const err = await p.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof MailError && err.code === code, `expected ${code}, got ${String(err)}`);
}

describe('reply', () => {
  let d: TestDaemon;
  let claude: MailClient;
  let codex: MailClient;
  let gemini: MailClient;
  let codexMcp: Client;

  before(async () => {
    d = await startTestDaemon();
    claude = (await d.account('claude')).client;
    const cx = await d.account('codex');
    codex = cx.client;
    gemini = (await d.account('gemini')).client;
    codexMcp = await mcp(d.url, cx.secret);
    await d.operator.admin.roomAdd('crew');
    await d.operator.admin.memberAdd('crew', 'claude');
    await d.operator.admin.memberAdd('crew', 'codex');
  });
  after(async () => {
    await codexMcp?.close();
    await d?.stop();
  });

  it('over MCP the round trip is inbox, reply: to the sender, in the thread, Re: once, the original acknowledged', async () => {
    const me = await claude.whoami();
    const s = await claude.send({ to: 'codex', subject: 'review please', body: 'branch fix-42' });
    const page = await tool(codexMcp, 'm4a_mail_inbox', { include_bodies: false });
    assert.ok(page.json.messages.some((m: { message_id: string }) => m.message_id === s.message_id));
    const before = (await codex.unread()).unread;
    const r = await tool(codexMcp, 'm4a_mail_reply', { message_id: s.message_id, body: 'LGTM' });
    assert.equal(r.isError, false, JSON.stringify(r.json));
    assert.equal(r.json.acked, true);
    assert.equal(r.json.thread_id, s.message_id);
    assert.equal((await codex.unread()).unread, before - 1, 'the original is acknowledged');
    const got = (await claude.get(r.json.message_id)).message;
    assert.equal(got.subject, 'Re: review please');
    assert.equal(got.reply_to, s.message_id);
    const mine = await claude.inbox();
    assert.ok(
      mine.messages.some((m) => m.message_id === r.json.message_id),
      `the reply reached ${me.address}`,
    );
    // A reply to the reply keeps one Re:.
    const rr = await claude.reply({ message_id: r.json.message_id, body: 'thanks for the review, merging' });
    assert.equal((await codex.get(rr.message_id)).message.subject, 'Re: review please');
  });

  it('ack: false leaves the original unacknowledged', async () => {
    const s = await claude.send({ to: 'codex', subject: 'later', body: 'no rush' });
    const r = await codex.reply({ message_id: s.message_id, body: 'will do tomorrow', ack: false });
    assert.equal(r.acked, false);
    const page = await codex.inbox();
    assert.ok(
      page.messages.some((m) => m.message_id === s.message_id),
      'still unacknowledged',
    );
    await codex.ack(s.message_id);
  });

  it('room mail: the reply goes to the room, or to its sender alone with to_sender', async () => {
    const s = await claude.send({ to: '#crew', subject: 'standup', body: 'status?' });
    const toRoom = await codex.reply({ message_id: s.message_id, body: 'on fix-42' });
    assert.equal(toRoom.to, '#crew');
    const toSender = await codex.reply({ message_id: s.message_id, body: 'also: can you look at 43', to_sender: true });
    assert.notEqual(toSender.to, '#crew');
    assert.ok(toSender.to.startsWith('claude'), toSender.to);
  });

  it('refuses what it may not answer, and changes nothing', async () => {
    const s = await claude.send({ to: 'codex', subject: 'private', body: 'for codex only' });
    const head = await d.engine.store.headSeq();
    await refused(gemini.reply({ message_id: s.message_id, body: 'me too' }), 'not_addressed_to_you');
    await refused(codex.reply({ message_id: 'm-doesnotexist', body: 'x' }), 'unknown_message');
    assert.equal(await d.engine.store.headSeq(), head, 'nothing was stored');
    assert.ok(
      (await codex.inbox()).messages.some((m) => m.message_id === s.message_id),
      'and nothing acknowledged',
    );
    const noTo = await tool(codexMcp, 'm4a_mail_send', { subject: 'Re: private', body: 'x', reply_to: s.message_id });
    assert.equal(noTo.isError, true);
    assert.deepEqual([noTo.json.error.code, noTo.json.error.field], ['malformed', 'to']);
    assert.match(noTo.json.error.reason, /m4a_mail_reply/, 'a send without to says how to reply');
    const bad = await tool(codexMcp, 'm4a_mail_reply', { message_id: s.message_id, body: 'x', from: 'claude' });
    assert.equal(bad.isError, true);
    assert.equal(bad.json.error.code, 'malformed');
  });

  it("never answers a removed sender's mail to a new account of the name", async () => {
    await d.account('dora', { kind: 'human' });
    // As the browser door sends for a person: a caller with no session, so the reply goes to the account.
    const dora = (await d.engine.store.getAccount('dora'))!;
    await d.engine.send({ account: dora, session: null }, { to: { kind: 'direct', participant: 'codex' }, subject: 'from the browser', body: 'sent without a session' });
    const s = (await codex.inbox()).messages.find((m) => m.subject === 'from the browser')!;
    await d.operator.admin.accountRemove('dora');
    const again = await d.account('dora', { kind: 'human' });
    const head = await d.engine.store.headSeq();
    await refused(codex.reply({ message_id: s.message_id, body: 'meant for the first dora' }), 'unknown_participant');
    assert.equal(await d.engine.store.headSeq(), head, 'nothing was stored');
    assert.equal((await again.client.inbox()).messages.length, 0, 'the new account of the name got nothing');
  });

  it('a retry with the same idempotency key returns the first reply', async () => {
    const s = await claude.send({ to: 'codex', subject: 'retry', body: 'x' });
    const a = await codex.reply({ message_id: s.message_id, body: 'once', idempotency_key: 'reply-1' });
    const b = await codex.reply({ message_id: s.message_id, body: 'once', idempotency_key: 'reply-1' });
    assert.equal(b.message_id, a.message_id);
    assert.equal(b.duplicate, true);
  });
});

describe('peers', () => {
  let d: TestDaemon;
  let claude: MailClient;

  before(async () => {
    d = await startTestDaemon();
    claude = (await d.account('claude')).client;
    await d.account('codex');
  });
  after(() => d?.stop());

  it('lists live sessions by address by default; detail gives ids and cards', async () => {
    await claude.status({ working_on: 'fix-42' });
    const me = await claude.whoami();
    const lean = await claude.directory();
    const entry = lean.accounts.find((a) => a.id === 'claude');
    assert.ok(entry, 'claude is listed');
    assert.equal(entry.kind, undefined, 'kind is left out for agents');
    const s = entry.sessions[0]!;
    assert.deepEqual(Object.keys(s).sort(), ['address', 'working_on']);
    assert.equal((s as { working_on?: string }).working_on, 'fix-42');
    assert.ok(!JSON.stringify(lean).includes(me.session!), 'no full session id without detail');
    const full = await claude.directory({ detail: true });
    const fs = full.accounts.find((a) => a.id === 'claude')!.sessions[0]!;
    assert.ok('card' in fs && fs.card.attested?.pid === process.pid, 'detail has the card');
    assert.ok(JSON.stringify(fs).includes(me.session!), 'detail names the full session id');
  });
});
