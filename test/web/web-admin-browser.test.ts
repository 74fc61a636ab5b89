// The operator page in Chromium: removing an account or a room deletes its mail, and the page says
// so before (in the confirmation) and after (how many messages went).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { chromiumMissing, launchChromium } from './browser.js';
import { PASSWORD, createPerson } from './web-helpers.js';

const skip = chromiumMissing() ?? false;

describe('operator page in Chromium: removals say what they delete', { skip, timeout: 90_000 }, () => {
  let d: TestDaemon;
  let browser: Browser;
  let page: Page;
  const dialogs: string[] = [];

  before(async () => {
    d = await startTestDaemon();
    await createPerson(d, 'olga', { operator: true });
    const codex = (await d.account('codex')).client;
    const rex = (await d.account('rex')).client;
    for (const n of [1, 2, 3]) await rex.send({ to: 'codex', subject: `for codex ${n}`, body: 'x' });
    await d.operator.admin.roomAdd('ops');
    await d.operator.admin.memberAdd('ops', 'rex');
    await d.operator.admin.memberAdd('ops', 'codex');
    for (const n of [1, 2]) await codex.send({ to: '#ops', subject: `to ops ${n}`, body: 'y' });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 720 } })).newPage();
    page.setDefaultTimeout(10_000);
    page.on('dialog', (dlg) => {
      dialogs.push(dlg.message());
      void dlg.accept();
    });
    await page.goto(`${d.url}/`);
    await page.getByLabel('Account').fill('olga');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await d?.stop();
  });

  it('removing an account: the confirmation says its mail is deleted, the page shows how much', async () => {
    await page.goto(`${d.url}/web/admin`);
    await page.getByRole('button', { name: 'Remove account codex' }).click();
    const note = page.locator('#admin-note');
    await note.waitFor();
    assert.match(dialogs.at(-1) ?? '', /^Remove account codex\? Every message delivered to it is deleted with it; this cannot be undone/);
    assert.doesNotMatch(dialogs.at(-1) ?? '', /stays stored/);
    assert.equal(await note.textContent(), 'Account codex removed; 3 messages deleted with it.');
    assert.equal(await d.store.getAccount('codex'), null);
  });

  it('removing a room: the confirmation says its mail is deleted, the page shows how much', async () => {
    await page.getByRole('button', { name: 'Remove room ops' }).click();
    await page.locator('#admin-note', { hasText: 'Room #ops' }).waitFor();
    assert.match(dialogs.at(-1) ?? '', /^Remove room #ops\? Its memberships and every message posted to it are deleted with it; this cannot be undone/);
    assert.equal(await page.locator('#admin-note').textContent(), 'Room #ops removed; 2 messages deleted with it.');
  });
});
