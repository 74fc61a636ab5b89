// Finding G of the hardening issue: a sibling session could squat another session's name. A
// session set alias `billing-service`; the real session started in a `billing-service` directory
// then got slug `billing-service-2`, and mail to `account/billing-service` went to the squatter.
// The rule now: an alias is always written with a leading @ (`account/@billing-service`) and a slug
// never starts with one, so no alias can take or shadow a name a working directory gives.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MailClient } from '../../../src/client/http-client.js';
import { slugFromCwd } from '../../../src/engine/names.js';
import { startTestDaemon, type TestDaemon } from '../../support/test-daemon.js';
import { startAgent, type AgentProc } from '../../support/agent.js';
import { assertUnchanged, storeSnapshot } from '../helpers.js';

describe("security matrix G: an alias cannot squat a session's name", () => {
  let d: TestDaemon;
  let codex: MailClient;
  let secret: string;
  let tmp: string;
  const procs: AgentProc[] = [];

  before(async () => {
    d = await startTestDaemon();
    codex = (await d.account('codex')).client;
    secret = (await d.account('claude')).secret;
    tmp = mkdtempSync(join(tmpdir(), 'm4a-g-'));
    for (const dir of ['elsewhere', 'billing-service', 'other/billing-service', '@billing-service']) mkdirSync(join(tmp, dir), { recursive: true });
  });
  after(async () => {
    for (const p of procs) await p.exit();
    await d.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  const agent = async (cwd: string): Promise<{ p: AgentProc; address: string; slug: string | null }> => {
    const p = await startAgent(d.url, secret, { cwd: join(tmp, cwd) });
    procs.push(p);
    const me = (await p.call('/mail/whoami')).body as { address: string; slug: string | null };
    return { p, address: me.address, slug: me.slug };
  };

  it('a session aliased billing-service before the real one starts: account/billing-service still reaches the session in that directory', async () => {
    const squatter = await agent('elsewhere');
    const set = await squatter.p.call('/mail/status', { alias: 'billing-service' });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    // Aliases for the names later sessions of that directory would get are no squat either.
    for (const name of ['billing-service-2', 'billing-service-3']) assert.equal((await squatter.p.call('/mail/status', { alias: name })).status, 200);

    const real = await agent('billing-service');
    assert.equal(real.slug, 'billing-service', "the real session gets its directory's name, not billing-service-2");
    const second = await agent('other/billing-service');
    assert.equal(second.slug, 'billing-service-2');
    const sent = await codex.send({ to: 'claude/billing-service', subject: 'invoice run', body: 'for the billing service' });
    assert.equal(sent.to, `claude/${real.slug}`, 'mail to the slug goes to the real session (printed by its slug)');
    assert.equal((await codex.send({ to: 'claude/billing-service-2', subject: 'x', body: '' })).to, `claude/${second.slug}`);
    assert.equal(
      (await codex.send({ to: 'claude/@billing-service', subject: 'x', body: '' })).to,
      `claude/${squatter.slug}`,
      'the alias is reached only by its own, visibly different, name',
    );
    assert.deepEqual(set.body.aliases, ['@billing-service'], 'the alias carries its @');
    const inbox = (await squatter.p.call('/mail/inbox', {})).body as { messages: { message_id: string }[] };
    assert.ok(!inbox.messages.some((m) => m.message_id === sent.message_id), "the squatter never sees the slug's mail");
  });

  it('no working directory gives a slug that looks like an alias, and a taken alias is refused without a change', async () => {
    assert.equal(slugFromCwd('/x/@billing-service'), 'billing-service');
    assert.equal(slugFromCwd('/x/@@'), 'session');
    const dirOfAt = await agent('@billing-service');
    assert.ok(dirOfAt.slug !== null && !dirOfAt.slug.startsWith('@'), `slug ${dirOfAt.slug}`);
    const before = await storeSnapshot(d.engine.store);
    const taken = await dirOfAt.p.call('/mail/status', { alias: '@billing-service', working_on: 'squatting' });
    assert.equal(taken.body.error.code, 'already_exists');
    assert.equal(taken.body.error.field, 'alias');
    await assertUnchanged(d.engine.store, before, 'a refused alias');
  });
});
