// Teams in the browser (docs/teams.md, docs/web.md): the operator page lists each team with its
// members, leaders, their grants and the latest recorded changes, read only; a person who is a
// member of a team is offered team:NAME and leader:NAME in compose (and no other team's), and after
// sending to one sees where the copies went (and whom a contact policy refused), the copies reaching the other members' inboxes.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import type { MailClient } from '../../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { chromiumMissing, launchChromium } from './browser.js';
import { PASSWORD, call, createPerson, login } from './web-helpers.js';

const skip = chromiumMissing() ?? false;
const T = { timeout: 30_000 };
// Callbacks below run in the page (this file is compiled without the DOM library).
type Page$ = any;

describe('teams in the browser', { skip, timeout: 150_000 }, () => {
  let d: TestDaemon;
  let codex: MailClient;
  let rex: MailClient;
  let zed: MailClient;
  let browser: Browser;

  async function loggedIn(account: string): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width: 1100, height: 720 } })).newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${d.url}/`);
    await page.getByLabel('Account').fill(account);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor();
    return page;
  }

  before(async () => {
    d = await startTestDaemon();
    await createPerson(d, 'olga', { operator: true });
    await createPerson(d, 'pia', { display_name: 'Pia' });
    codex = (await d.account('codex')).client;
    rex = (await d.account('rex')).client;
    zed = (await d.account('zed')).client;
    await d.operator.admin.teamCreate({ name: 'core', members: ['pia', 'codex', 'rex'] });
    await d.operator.admin.teamLeaderAdd('core', 'codex');
    await d.operator.admin.teamGrant({ team: 'core', leader: 'codex', capability: 'timer.schedule_team' });
    await d.operator.admin.teamCreate({ name: 'other', members: ['zed'] });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await d?.stop();
  });

  it("web.me names the person's teams; the overview has each team's leaders, grants and latest changes", T, async () => {
    assert.deepEqual((await call(d.url, await login(d.url, 'pia'), 'me')).json.teams, ['core']);
    const olga = await login(d.url, 'olga');
    assert.deepEqual((await call(d.url, olga, 'me')).json.teams, [], 'a member of no team');
    const o = (await call(d.url, olga, 'admin/overview')).json;
    const core = o.teams.find((t: { name: string }) => t.name === 'core');
    assert.deepEqual(core.members.slice().sort(), ['codex', 'pia', 'rex']);
    assert.deepEqual(core.leaders, [{ account: 'codex', grants: ['timer.schedule_team'] }]);
    assert.deepEqual(
      core.changes.slice(0, 2).map((c: { action: string; account?: string; capability?: string }) => [c.action, c.account, c.capability]),
      [
        ['grant', 'codex', 'timer.schedule_team'],
        ['leader.add', 'codex', undefined],
      ],
      'newest first',
    );
    assert.ok(core.changes.length <= 5, 'a few changes, not the whole history');
    assert.deepEqual(
      o.teams.map((t: { name: string }) => t.name),
      ['core', 'other'],
    );
  });

  it('the operator page lists the team, its leader with named grants and a recorded change, and offers no change', T, async () => {
    const page = await loggedIn('olga');
    await page.goto(`${d.url}/web/admin`);
    const row = page.locator('#teams tr[data-team="core"]');
    await row.waitFor();
    assert.deepEqual((await row.locator('.members li').allTextContents()).slice().sort(), ['codexleader', 'pia', 'rex']);
    assert.deepEqual(await row.locator('li[data-leader="codex"] .badge.grant').allTextContents(), ['timer.schedule_team']);
    const changes = await row.locator('.team-changes li').allTextContents();
    assert.ok(
      changes.some((c) => c.endsWith('granted codex timer.schedule_team')),
      changes.join(' | '),
    );
    for (const want of ['made codex a leader', 'created the team with rex'])
      assert.ok(
        changes.some((c) => c.endsWith(want)),
        `${want}: ${changes.join(' | ')}`,
      );
    assert.equal(await page.locator('#teams tr[data-team="other"] .team-leaders').count(), 0, 'a team without leaders says so');
    assert.match((await page.locator('#teams tr[data-team="other"]').textContent()) ?? '', /no leaders/);
    assert.match((await page.locator('#teams-panel').textContent()) ?? '', /Read only: teams are managed on the machine with m4a admin team/);
    assert.equal(await page.locator('#teams-panel button, #teams-panel form').count(), 0, 'nothing to click');
    await page.context().close();
  });

  it("compose offers team: and leader: for the person's team only; a team send shows its copies, which reach the members", T, async () => {
    const page = await loggedIn('pia');
    await page.getByRole('link', { name: 'Compose' }).click();
    await page.getByRole('heading', { name: 'Write a message' }).waitFor();
    await page.waitForFunction(() => (globalThis as Page$).document.querySelector('#addresses option[value="team:core"]') !== null);
    const options = await page.locator('#addresses option').evaluateAll((os) => os.map((o) => o.getAttribute('value') ?? ''));
    for (const want of ['team:core', 'leader:core', 'codex', '#core']) assert.ok(options.includes(want), `${want} is suggested (${options.join(', ')})`);
    for (const not of ['team:other', 'leader:other']) assert.ok(!options.includes(not), `${not} is not hers to write to`);

    await page.getByLabel('To').fill('team:core');
    await page.getByLabel('Subject').fill('Release at noon');
    await page.getByLabel('Message').fill('Freeze the branch.');
    await page.getByRole('button', { name: 'Send' }).click();
    const card = page.locator('#send-expansion');
    await card.waitFor();
    assert.equal(await card.getByRole('heading').first().textContent(), 'Sent to team:core');
    assert.match((await card.textContent()) ?? '', /2 copies were delivered/);
    assert.deepEqual((await card.locator('ul.expanded li').allTextContents()).slice().sort(), ['codex', 'rex']);
    assert.equal(await card.locator('ul.refused').count(), 0, 'nobody refused');
    for (const [who, client] of [
      ['codex', codex],
      ['rex', rex],
    ] as const) {
      const got = (await client.inbox()).messages.filter((m) => m.subject === 'Release at noon');
      assert.equal(got.length, 1, `${who} got one copy`);
      assert.equal(got[0]!.from, 'pia');
    }
    assert.equal((await zed.inbox()).messages.length, 0, 'not a member: nothing');

    // A copy's link opens its thread.
    await card.getByRole('link', { name: 'rex' }).click();
    await page.getByRole('heading', { name: 'Release at noon', level: 1 }).waitFor();

    // leader: reaches the leaders only.
    await page.getByRole('link', { name: 'Compose' }).click();
    await page.getByLabel('To').fill('leader:core');
    await page.getByLabel('Subject').fill('Sign-off?');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('#send-expansion', { hasText: 'Sent to leader:core' }).waitFor();
    assert.deepEqual(await page.locator('#send-expansion ul.expanded li').allTextContents(), ['codex']);
    assert.match((await page.locator('#send-expansion').textContent()) ?? '', /1 copy was delivered/);
    assert.equal((await rex.inbox()).messages.filter((m) => m.subject === 'Sign-off?').length, 0, 'rex leads nothing');
    assert.equal((await codex.inbox()).messages.filter((m) => m.subject === 'Sign-off?').length, 1);
    await page.context().close();
  });

  it('the expansion names the members a contact policy refused, as text', T, async () => {
    // A person's copies always pass a contact policy (docs/teams.md), so an agent's answer is drawn
    // here by the page's own module, with a name that would be markup if it were ever parsed.
    const page = await loggedIn('pia');
    const drawn = await page.evaluate(async () => {
      const w = globalThis as Page$;
      const url = '/web/assets/send-expansion.js';
      const m: Page$ = await import(url);
      const card = m.expansionCard('team:core', {
        message_id: 'm1',
        to: 'team:core',
        expanded: [{ to: 'rex', message_id: 'm1' }],
        refused: [{ recipient: '<img src=x onerror=alert(1)>', policy: 'block_all' }],
      });
      w.document.querySelector('main').appendChild(card);
      return { refused: [...card.querySelectorAll('ul.refused li')].map((li: Page$) => li.textContent), imgs: card.querySelectorAll('img').length, text: card.textContent };
    });
    assert.deepEqual(drawn.refused, ['<img src=x onerror=alert(1)> (block_all)']);
    assert.equal(drawn.imgs, 0, 'never markup');
    assert.match(drawn.text, /1 copy was delivered:rexRefused by their contact policy/);
    await page.context().close();
  });
});
