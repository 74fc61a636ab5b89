// Search in Chromium against a real daemon: a person finds her own mail from the Search page, the
// matched words marked, a result opening its thread; the mail of another account is never listed,
// and a malformed query is said in the form rather than answered with an empty list.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { chromiumMissing, launchChromium } from './browser.js';
import { PASSWORD, createPerson } from './web-helpers.js';

const skip = chromiumMissing() ?? false;

describe('search in Chromium', { skip, timeout: 120_000 }, () => {
  let d: TestDaemon;
  let browser: Browser;
  let page: Page;

  before(async () => {
    d = await startTestDaemon();
    await createPerson(d, 'alice', { display_name: 'Alice' });
    const codex = (await d.account('codex')).client;
    await d.account('bob');
    await codex.send({ to: 'alice', subject: 'Quarterly numbers', body: 'The pangolin budget is ready for review.' });
    await codex.send({ to: 'alice', subject: 'lunch', body: 'nothing to see' });
    await codex.send({ to: 'bob', subject: 'Not for alice', body: 'the pangolin plan for bob' });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 720 } })).newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${d.url}/`);
    await page.getByLabel('Account').fill('alice');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await d?.stop();
  });

  it('finds her own mail with the word marked and opens its thread', async () => {
    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByRole('heading', { name: 'Search', level: 1 }).waitFor();
    await page.getByLabel('Search your mail').fill('pangolin');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const hits = page.locator('ol.hits li');
    await hits.first().waitFor();
    assert.equal(await hits.count(), 1, 'bob’s mail is not hers');
    assert.equal(await hits.first().locator('mark').textContent(), 'pangolin');
    assert.match((await hits.first().textContent()) ?? '', /Quarterly numbers/);
    assert.match(page.url(), /\/web\/search\?q=pangolin$/);
    await hits.first().getByRole('link', { name: 'Quarterly numbers' }).click();
    await page.waitForURL(/\/web\/thread\//);
  });

  it('says when nothing matches, and names a malformed query', async () => {
    await page.goto(`${d.url}/web/search?q=nomatchword`);
    // The status line, not the live region that announces the same words to screen readers.
    await page.locator('#search-status', { hasText: 'No mail matches.' }).waitFor();
    await page.getByLabel('Search your mail').fill('"unclosed');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match((await alert.textContent()) ?? '', /query/);
  });
});
