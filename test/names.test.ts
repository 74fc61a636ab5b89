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
    const e = await p.then(() => assert.fail(`expected ${code}`), (x: unknown) => x);
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
    assert.equal(s.to, b.address);
  });

  it('aliases: written with @, set, resolved, a taken name refused, never shared, never a slug', async () => {
    const p = await agent('api');
    const me = await who(p);
    const set = await p.call('/mail/status', { alias: 'reviewer' });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(set.body.aliases, ['@reviewer'], 'the @ is added');
    assert.equal((await p.call('/mail/status', { alias: '@reviewer' })).status, 200, 'asked with its @: the same alias');
    assert.equal((await codex.send({ to: 'claude/@reviewer', subject: 'by alias', body: '' })).to, me.address);
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
    const dir = await codex.directory();
    assert.deepEqual(dir.accounts.find((x) => x.id === 'claude')?.sessions.find((x) => x.address === me.address)?.aliases, ['@reviewer']);
    await p.call('/mail/status', { unalias: 'reviewer' });
    await refused(codex.send({ to: 'claude/@reviewer', subject: 'x', body: '' }), 'unknown_session');
  });

  it('id prefixes of six or more characters, unique or refused with candidates', async () => {
    const p = await agent('web-ui');
    const me = await who(p);
    const prefix = me.session.slice(2, 14);
    assert.equal((await codex.send({ to: `claude/${prefix}`, subject: 'by prefix', body: '' })).to, me.address);
    assert.equal((await codex.send({ to: `claude/s-${prefix}`, subject: 'by prefix', body: '' })).to, me.address);
    const unknown = await refused(codex.send({ to: 'claude/nobody-here', subject: 'x', body: '' }), 'unknown_session');
    assert.ok(Array.isArray(unknown.details.candidates) && (unknown.details.candidates as string[]).includes('claude/web-ui'), JSON.stringify(unknown.details));
    await refused(codex.send({ to: 'claude/abc', subject: 'x', body: '' }), 'unknown_session');
  });

  it('a successor keeps its predecessor\'s slug and aliases', async () => {
    const first = await agent('web-ui', ['--resume', 'conv-names'], join(tmp, 'claude'));
    const me1 = await who(first);
    await first.call('/mail/status', { alias: '@lead' });
    await first.exit();
    const second = await agent('web-ui', ['--resume', 'conv-names'], join(tmp, 'claude'));
    const me2 = await who(second);
    assert.notEqual(me2.address, me1.address);
    assert.equal(me2.slug, me1.slug);
    assert.deepEqual(me2.aliases, ['@lead']);
    assert.equal((await codex.send({ to: 'claude/@lead', subject: 'to the successor', body: '' })).to, me2.address);
  });

  it('broadcast only through an everyone-room the operator creates', async () => {
    await d.operator.admin.roomAdd('all', { everyone: true });
    const late = (await d.account('gemini')).client;
    const s = await codex.send({ to: '#all', subject: 'hello everyone', body: '' });
    assert.ok((await late.inbox()).messages.some((m) => m.id === s.message_id), 'an account added later is a member too');
    assert.ok((await late.whoami()).rooms.includes('#all'));
    const e = await d.operator.admin.memberRemove('all', 'gemini').catch((x: unknown) => x);
    assert.ok(e instanceof MailError && e.code === 'malformed');
    const list = await d.operator.admin.roomList();
    assert.equal(list.rooms.find((r) => r.name === 'all')?.everyone, true);
  });
});
