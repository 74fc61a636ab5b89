// Friendly addresses: slugs from the working directory, aliases, id prefixes; resolution order and
// refusals that list the candidates; the operator's everyone-room as the only broadcast.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MailError } from '../src/wire/errors.js';
import type { MailClient } from '../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { AGENT_SCRIPT, startAgent, type AgentProc } from './support/agent.js';
import { systemClock, type Clock } from '../src/engine/clock.js';
import type * as W from '../src/wire/ops.js';

describe('friendly addresses', () => {
  let d: TestDaemon;
  let codex: MailClient;
  let secret: string;
  let tmp: string;
  const procs: AgentProc[] = [];

  before(async () => {
    d = await startTestDaemon();
    codex = (await d.account('codex')).client;
    secret = (await d.account('claude')).secret;
    tmp = mkdtempSync(join(tmpdir(), 'm4a-names-'));
    writeFileSync(join(tmp, 'package.json'), '{"type":"module"}');
    copyFileSync(AGENT_SCRIPT, join(tmp, 'claude'));
    for (const dir of ['web-ui', 'other/web-ui', 'api']) mkdirSync(join(tmp, dir), { recursive: true });
  });
  after(async () => {
    for (const p of procs) await p.exit();
    await d.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  const agent = async (cwd: string, args: string[] = [], script?: string) => {
    const p = await startAgent(d.url, secret, { cwd: join(tmp, cwd), args, ...(script ? { script } : {}) });
    procs.push(p);
    return p;
  };
  const who = async (p: AgentProc) => (await p.call('/mail/whoami')).body;
  const refused = async (p: Promise<unknown>, code: string): Promise<MailError> => {
    const e = await p.then(
      () => assert.fail(`expected ${code}`),
      (x: unknown) => x,
    );
    assert.ok(e instanceof MailError && e.code === code, String(e));
    return e;
  };

  it('slugs come from the working directory and are deduplicated per account', async () => {
    const a = await who(await agent('web-ui'));
    const b = await who(await agent('other/web-ui'));
    const c = await who(await agent('api'));
    assert.equal(a.slug, 'web-ui');
    assert.equal(b.slug, 'web-ui-2');
    assert.equal(c.slug, 'api');
    const s = await codex.send({ to: 'claude/web-ui-2', subject: 'by slug', body: '' });
    assert.equal(s.to, 'claude/web-ui-2', 'answers print the session by its slug');
    assert.equal(s.redirected, false);
  });

  it('aliases: written with @, set, resolved, a taken name refused, never shared, never a slug', async () => {
    const p = await agent('api');
    const me = await who(p);
    const set = await p.call('/mail/status', { alias: 'reviewer' });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(set.body.aliases, ['@reviewer'], 'the @ is added');
    assert.equal((await p.call('/mail/status', { alias: '@reviewer' })).status, 200, 'asked with its @: the same alias');
    assert.equal((await codex.send({ to: 'claude/@reviewer', subject: 'by alias', body: '' })).to, `claude/${me.slug}`, 'printed by its slug, which stays with it');
    await refused(codex.send({ to: 'claude/reviewer', subject: 'x', body: '' }), 'unknown_session');
    const other = await agent('api');
    const taken = await other.call('/mail/status', { alias: 'reviewer' });
    assert.equal(taken.body.error.code, 'already_exists');
    const slugName = await other.call('/mail/status', { alias: 'web-ui' });
    assert.deepEqual(slugName.body.aliases, ['@web-ui'], 'an alias lives beside the slugs, never in their place');
    const slugOwner = (await codex.send({ to: 'claude/web-ui', subject: 'by slug', body: '' })).to;
    assert.notEqual(slugOwner, (await who(other)).address, 'claude/web-ui is still the slug');
    for (const bad of ['deadbeef', '@@x', '@']) {
      const r = await other.call('/mail/status', { alias: bad });
      assert.equal(r.body.error.code, 'malformed', `alias ${bad}`);
    }
    // The directory shows names; an alias can be removed.
    const dir = await codex.directory({ detail: true, include_ended: true });
    assert.deepEqual(dir.accounts.find((x) => x.id === 'claude')?.sessions.find((x) => x.address === me.address)?.aliases, ['@reviewer']);
    await p.call('/mail/status', { unalias: 'reviewer' });
    await refused(codex.send({ to: 'claude/@reviewer', subject: 'x', body: '' }), 'unknown_session');
  });

  it('id prefixes of six or more characters, unique or refused with candidates', async () => {
    const p = await agent('web-ui');
    const me = await who(p);
    const prefix = me.session.slice(2, 14);
    assert.equal((await codex.send({ to: `claude/${prefix}`, subject: 'by prefix', body: '' })).to, `claude/${me.slug}`);
    assert.equal((await codex.send({ to: `claude/s-${prefix}`, subject: 'by prefix', body: '' })).to, `claude/${me.slug}`);
    const unknown = await refused(codex.send({ to: 'claude/nobody-here', subject: 'x', body: '' }), 'unknown_session');
    assert.ok(Array.isArray(unknown.details.candidates) && (unknown.details.candidates as string[]).includes('claude/web-ui'), JSON.stringify(unknown.details));
    await refused(codex.send({ to: 'claude/abc', subject: 'x', body: '' }), 'unknown_session');
  });

  it("a successor keeps its predecessor's slug and aliases", async () => {
    const first = await agent('web-ui', ['--resume', 'conv-names'], join(tmp, 'claude'));
    const me1 = await who(first);
    await first.call('/mail/status', { alias: '@lead' });
    await first.exit();
    const second = await agent('web-ui', ['--resume', 'conv-names'], join(tmp, 'claude'));
    const me2 = await who(second);
    assert.notEqual(me2.address, me1.address);
    assert.equal(me2.slug, me1.slug);
    assert.deepEqual(me2.aliases, ['@lead']);
    const sent = await codex.send({ to: 'claude/@lead', subject: 'to the successor', body: '' });
    assert.equal(sent.to, `claude/${me2.slug}`);
    const own = (await second.call('/mail/inbox', { limit: 256 })).body.messages.find((m: { message_id: string }) => m.message_id === sent.message_id);
    assert.equal(own?.to, `claude/${me2.slug}`, 'it reached the successor');
  });

  it('broadcast only through an everyone-room the operator creates', async () => {
    await d.operator.admin.roomAdd('all', { everyone: true });
    const late = (await d.account('gemini')).client;
    const s = await codex.send({ to: '#all', subject: 'hello everyone', body: '' });
    assert.ok(
      (await late.inbox()).messages.some((m) => m.message_id === s.message_id),
      'an account added later is a member too',
    );
    assert.ok((await late.whoami()).rooms.includes('#all'));
    const e = await d.operator.admin.memberRemove('all', 'gemini').catch((x: unknown) => x);
    assert.ok(e instanceof MailError && e.code === 'malformed');
    const list = await d.operator.admin.roomList();
    assert.equal(list.rooms.find((r) => r.name === 'all')?.everyone, true);
  });
});

// What answers print (account/slug, account/s-…) is accepted back as `to`, and never comes to name
// another lineage: not while the old one is in the directory (a newcomer in its directory gets
// slug-2), and not after it was pruned (a reply by the freed name is refused like one by the id).
describe('printed addresses', () => {
  const RETENTION_MS = 60_000;
  let shift = 0;
  const clock: Clock = { now: () => Date.now() + shift, timer: (ms, fn) => systemClock.timer(ms, fn) };
  let d: TestDaemon;
  let codex: MailClient;
  let secret: string;
  let tmp: string;
  const procs: AgentProc[] = [];

  before(async () => {
    d = await startTestDaemon({ clock, sessionRetentionMs: RETENTION_MS });
    codex = (await d.account('codex')).client;
    secret = (await d.account('claude')).secret;
    tmp = mkdtempSync(join(tmpdir(), 'm4a-printed-'));
    mkdirSync(join(tmp, 'reuse'));
  });
  after(async () => {
    for (const p of procs) await p.exit();
    await d.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  const agent = async () => {
    const p = await startAgent(d.url, secret, { cwd: join(tmp, 'reuse') });
    procs.push(p);
    return { p, me: (await p.call('/mail/whoami')).body };
  };
  const code = (p: Promise<unknown>): Promise<{ code: string; details: unknown }> =>
    p.then(
      () => assert.fail('expected a refusal'),
      (e: unknown) => (e instanceof MailError ? { code: e.code, details: e.details } : assert.fail(String(e))),
    );

  it('a reply to the printed sender goes where a reply to its full id goes, after its session ended and after it was pruned', async () => {
    const old = await agent();
    assert.equal(old.me.slug, 'reuse');
    const q = (await old.p.call('/mail/send', { to: 'codex', subject: 'question', body: '?' })).body;
    assert.equal(q.from, 'claude/reuse', 'the send answer prints the sender short');
    const seen = (await codex.inbox({ limit: 256 })).messages.find((m) => m.message_id === q.message_id)!;
    assert.equal(seen.from, 'claude/reuse');
    const got = await codex.get(q.message_id, true);
    assert.equal(got.message.from, 'claude/reuse');
    assert.equal(got.message.from_session, old.me.session, 'get keeps the full id');
    assert.equal(got.thread?.[0]?.from, 'claude/reuse');

    // The session ends; a new lineage starts in the same directory while the old one is listed.
    await old.p.exit();
    const newcomer = await agent();
    assert.equal(newcomer.me.slug, 'reuse-2', 'the old lineage keeps its slug while it is in the directory');
    const byName = await codex.send({ to: seen.from, subject: 'Re: question', body: 'a', reply_to: q.message_id });
    const byId = await codex.send({ to: old.me.address, subject: 'Re: question', body: 'b', reply_to: q.message_id });
    assert.deepEqual([byName.to, byName.redirected], [byId.to, byId.redirected]);
    assert.deepEqual([byName.to, byName.redirected], ['claude', true], 'a reply to an ended sender goes to its account');
    assert.deepEqual(await code(codex.send({ to: seen.from, subject: 'x', body: '' })), await code(codex.send({ to: old.me.address, subject: 'x', body: '' })));
    assert.equal((await code(codex.send({ to: seen.from, subject: 'x', body: '' }))).code, 'session_ended');
    const newcomers = (await newcomer.p.call('/mail/inbox', { limit: 256 })).body.messages as W.MessageOut[];
    assert.ok(!newcomers.some((m) => m.to === 'claude/reuse-2'), 'nothing was session mail of the newcomer');

    // Past the retention time the old lineage is pruned and its slug is free: a third one takes it.
    shift += RETENTION_MS + 60_000;
    await d.engine.sweepSessions();
    const third = await agent();
    assert.equal(third.me.slug, 'reuse', 'the freed slug is given again');
    const viaName = await code(codex.send({ to: seen.from, subject: 'Re: question', body: 'c', reply_to: q.message_id }));
    const viaId = await code(codex.send({ to: old.me.address, subject: 'Re: question', body: 'd', reply_to: q.message_id }));
    assert.equal(viaName.code, 'unknown_session', 'refused, never delivered to the lineage that now holds the name');
    assert.equal(viaId.code, 'unknown_session');
    const thirds = (await third.p.call('/mail/inbox', { limit: 256 })).body.messages as W.MessageOut[];
    assert.ok(!thirds.some((m) => m.reply_to === q.message_id && m.to !== undefined), 'no reply reached the third as session mail');
    // The old message now prints its sender by an id prefix, which names nobody else.
    const now = (await codex.get(q.message_id)).message;
    assert.equal(now.from, `claude/${old.me.session.slice(0, 10)}`);
    assert.equal((await code(codex.send({ to: now.from, subject: 'x', body: '' }))).code, 'unknown_session');
    assert.equal((await codex.send({ to: `claude/${third.me.slug}`, subject: 'hi', body: '' })).to, 'claude/reuse', "the name is the third's now");
  });
});
