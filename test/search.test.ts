// Search on the real daemon: only the mail the caller may read (its account, its own session
// lineage, its rooms while a member; never a sibling session's mail), newest first, with «marked»
// snippets and a cursor; a person in the browser door searches its own mail; a malformed query is
// malformed {field: query} and a bad cursor malformed {field: cursor}.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { startAgent, type AgentProc } from './support/agent.js';
import { call, createPerson, login } from './web/web-helpers.js';
import type { MailClient } from '../src/client/http-client.js';
import { SEARCH_LIMITS, type SearchResponse } from '../src/wire/search.js';
import { keyOfAccount, type NewMessage } from '../src/store/types.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const subjects = (r: SearchResponse) => r.results.map((h) => h.subject);

describe('search', { timeout: 60_000 }, () => {
  let d: TestDaemon;
  let alice: MailClient;
  let bobSecret: string;
  const agents: AgentProc[] = [];

  before(async () => {
    d = await startTestDaemon();
    alice = (await d.account('alice')).client;
    bobSecret = (await d.account('bob')).secret;
    await d.operator.admin.roomAdd('ops');
    for (const m of ['alice', 'bob']) await d.operator.admin.memberAdd('ops', m);
  });
  after(async () => {
    for (const a of agents) await a.exit();
    await d?.stop();
  });

  const search = async (a: AgentProc, body: Record<string, unknown>) => {
    const r = await a.call('/mail/search', body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as SearchResponse;
  };

  it("finds the caller's own session mail, direct and room mail, never a sibling session's", async () => {
    const one = await startAgent(d.url, bobSecret);
    const two = await startAgent(d.url, bobSecret);
    agents.push(one, two);
    const addrOne = (await one.call('/mail/whoami')).body.address as string;
    const addrTwo = (await two.call('/mail/whoami')).body.address as string;
    assert.notEqual(addrOne, addrTwo);
    await alice.send({ to: addrOne, subject: 'zebra for one', body: 'only the first session reads this' });
    await alice.send({ to: addrTwo, subject: 'zebra for two', body: 'only the second session reads this' });
    await alice.send({ to: 'bob', subject: 'zebra for bob', body: 'the account' });
    await alice.send({ to: '#ops', subject: 'zebra in ops', body: 'the room' });
    await alice.send({ to: 'alice', subject: 'zebra for alice', body: 'not bob' });
    assert.deepEqual(subjects(await search(one, { query: 'zebra' })), ['zebra in ops', 'zebra for bob', 'zebra for one']);
    assert.deepEqual(subjects(await search(two, { query: 'zebra' })), ['zebra in ops', 'zebra for bob', 'zebra for two']);
    assert.deepEqual(subjects(await search(one, { query: 'zebra', to: '#ops' })), ['zebra in ops']);
    assert.deepEqual(subjects(await search(one, { query: 'zebra', from: 'carol' })), []);
  });

  it('no longer searches a room the caller left', async () => {
    const bob = agents[0]!;
    await alice.send({ to: '#ops', subject: 'outage report', body: 'the database fell over' });
    assert.deepEqual(subjects(await search(bob, { query: 'database' })), ['outage report']);
    await d.operator.admin.memberRemove('ops', 'bob');
    assert.deepEqual(subjects(await search(bob, { query: 'database' })), []);
    await d.operator.admin.memberAdd('ops', 'bob');
    assert.deepEqual(subjects(await search(bob, { query: 'database' })), ['outage report'], 'a member again reads it again');
  });

  it('marks the matched words in the snippet and pages newest first with a cursor', async () => {
    const bob = agents[0]!;
    for (let i = 1; i <= 5; i++)
      await alice.send({ to: 'bob', subject: `page ${i}`, body: `a long preamble that says nothing much, then the keyword quokka number ${i} and more` });
    const first = await search(bob, { query: 'quokka', limit: 2 });
    assert.deepEqual(subjects(first), ['page 5', 'page 4']);
    assert.match(first.results[0]!.snippet, /«quokka»/);
    assert.ok(first.results[0]!.snippet.length <= 130, first.results[0]!.snippet);
    assert.match(first.results[0]!.from, /^alice(\/|$)/);
    assert.ok(first.next_cursor);
    const second = await search(bob, { query: 'quokka', limit: 2, cursor: first.next_cursor });
    assert.deepEqual(subjects(second), ['page 3', 'page 2']);
    const last = await search(bob, { query: 'quokka', limit: 2, cursor: second.next_cursor });
    assert.deepEqual(subjects(last), ['page 1']);
    assert.equal(last.next_cursor, undefined);
    assert.deepEqual(subjects(await search(bob, { query: '"keyword quokka" quok*', limit: 1 })), ['page 5']);
  });

  it('refuses a malformed query or cursor by name, and changes nothing', async () => {
    const bob = agents[0]!;
    for (const [query, status] of [
      ['"unclosed', 400],
      ['!!! ???', 400],
      ['', 400],
      ['x'.repeat(257), 413],
    ] as const) {
      const r = await bob.call('/mail/search', { query });
      assert.equal(r.status, status, query);
      assert.equal(r.body.error.field, 'query', JSON.stringify(r.body));
    }
    for (const cursor of ['nope', 'c1.5', 's1.3.5', 's1.1.']) {
      const c = await bob.call('/mail/search', { query: 'zebra', cursor });
      assert.equal(c.status, 400, cursor);
      assert.deepEqual([c.body.error.code, c.body.error.field], ['malformed', 'cursor'], `${cursor} (an inbox cursor, the order before the tiers, too)`);
    }
    const t = await bob.call('/mail/search', { query: 'zebra', after: 'yesterday' });
    assert.deepEqual([t.status, t.body.error.field], [400, 'after']);
  });

  it('examines at most the window of index matches a page, however many only others may read', async () => {
    const bob = agents[0]!;
    // Others' mail matching the word, more than the window, with bob's at the oldest, the middle and the newest.
    const total = SEARCH_LIMITS.window + 500;
    const mineAt = new Map([
      [0, 'wombat oldest'],
      [1000, 'wombat middle'],
      [total - 1, 'wombat newest'],
    ]);
    const mail = (i: number): NewMessage => {
      const id = `m-wombat${i}x${Math.random().toString(36).slice(2, 8)}`;
      const to = mineAt.has(i) ? 'bob' : 'dave';
      const m = { id, threadId: id, fromAccount: 'alice', fromSession: null, fromKind: 'agent' as const, toAddress: to, toKey: keyOfAccount(to) };
      return {
        ...m,
        subject: mineAt.get(i) ?? `wombat ${i}`,
        body: 'x',
        replyTo: null,
        correlation: null,
        refs: [],
        priority: 'normal',
        createdAt: Date.now(),
        idempotencyKey: null,
        fingerprint: null,
      };
    };
    for (let i = 0; i < total; i += 250) await Promise.all(Array.from({ length: Math.min(250, total - i) }, (_, j) => d.store.appendMessage(mail(i + j), 0)));
    const first = await search(bob, { query: 'wombat', limit: 20 });
    // The window (the newest 2,000 matches) ends above the oldest: two found, and a cursor.
    assert.deepEqual(subjects(first), ['wombat newest', 'wombat middle']);
    assert.ok(first.next_cursor, 'fewer results than limit and still a next_cursor');
    const second = await search(bob, { query: 'wombat', limit: 20, cursor: first.next_cursor });
    assert.deepEqual(subjects(second), ['wombat oldest']);
    assert.equal(second.next_cursor, undefined, 'the last window was not full');
    const small = await search(bob, { query: 'wombat', limit: 1 });
    assert.deepEqual(subjects(small), ['wombat newest']);
    const rest = await search(bob, { query: 'wombat', limit: 1, cursor: small.next_cursor });
    assert.deepEqual(subjects(rest), ['wombat middle'], 'the limit within the window pages on below the last shown');
  });

  it('refuses a prefix shorter than 2 characters and too many terms or prefixes by name', async () => {
    const bob = agents[0]!;
    for (const query of ['w*', 'wombat a*', '"big w"*', 'a b c d e f g h i', 'ab* cd* ef*']) {
      const r = await bob.call('/mail/search', { query });
      assert.equal(r.status, 400, query);
      assert.deepEqual([r.body.error.code, r.body.error.field], ['malformed', 'query'], JSON.stringify(r.body));
    }
    assert.equal((await bob.call('/mail/search', { query: 'wo* ab* a b c d e f' })).status, 200, '8 terms, 2 prefixes of 2');
  });

  it('is the MCP tool m4a_mail_search: query and cursor only, the same scope', async () => {
    const client = new Client({ name: 'search-test', version: '0.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', d.url), { requestInit: { headers: { Authorization: `Bearer ${bobSecret}` } } }));
    try {
      const tool = (await client.listTools()).tools.find((t) => t.name === 'm4a_mail_search');
      assert.deepEqual(Object.keys((tool?.inputSchema.properties ?? {}) as object).sort(), ['cursor', 'query']);
      assert.equal(tool?.annotations?.readOnlyHint, true);
      const r = (await client.callTool({ name: 'm4a_mail_search', arguments: { query: 'zebra' } })) as { isError?: boolean; content: { text: string }[] };
      assert.notEqual(r.isError, true, r.content[0]?.text);
      const found = JSON.parse(r.content[0]!.text) as SearchResponse;
      // This process is a new session of bob: the account's and the room's mail, no session's.
      assert.deepEqual(subjects(found), ['zebra in ops', 'zebra for bob']);
      const bad = (await client.callTool({ name: 'm4a_mail_search', arguments: { query: '"open' } })) as { isError?: boolean; content: { text: string }[] };
      assert.equal(bad.isError, true);
      assert.match(bad.content[0]!.text, /malformed/);
    } finally {
      await client.close();
    }
  });

  it('lets a person in the browser door search its own mail only', async () => {
    await createPerson(d, 'carol');
    await alice.send({ to: 'carol', subject: 'narwhal for carol', body: 'hello carol' });
    await alice.send({ to: 'bob', subject: 'narwhal for bob', body: 'hello bob' });
    const l = await login(d.url, 'carol');
    const r = await call(d.url, l, 'search', { query: 'narwhal' });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual(
      (r.json as SearchResponse).results.map((h) => h.subject),
      ['narwhal for carol'],
    );
  });
});
