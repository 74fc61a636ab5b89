// Mail from outside in Chromium (issue #19): a person sees it badged "external e-mail · untrusted"
// in the inbox and the thread, its fenced body as literal text (an HTML mail's markup never becomes
// elements), and its codes and attachments listed as text; /web/api/attachment returns a kept one.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { fenceClose, fenceOpen } from '../../src/engine/email-fence.js';
import { chromiumMissing, launchChromium } from './browser.js';
import { PASSWORD, call, createPerson, login } from './web-helpers.js';

const skip = chromiumMissing() ?? false;
type Page$ = any;

describe('mail from outside in Chromium', { skip, timeout: 120_000 }, () => {
  let d: TestDaemon;
  let browser: Browser;
  let page: Page;
  let id: string;
  const body = '<img src=x onerror="window.__xss = 1"><b>Your code is 402817</b> https://shop.example/verify?t=9';

  before(async () => {
    d = await startTestDaemon({ mailDomain: 'agents.example.com' });
    await createPerson(d, 'alice', { display_name: 'Alice' });
    const codex = (await d.account('codex')).client;
    await codex.send({ to: 'alice', subject: 'from an agent', body: 'hello' });
    assert.equal(await d.engine.email.recipient('Alice@agents.example.com'), 'alice');
    id = (
      await d.engine.email.receive({
        account: 'alice',
        from: 'orders@shop.example',
        envelopeFrom: 'orders@shop.example',
        subject: '<script>window.__xss = 2</script> verification code',
        text: body,
        messageId: '<o-1@shop.example>',
        inReplyTo: null,
        references: [],
        autoSubmitted: false,
        attachments: [{ name: 'receipt.txt', type: 'text/plain', content: Buffer.from('paid') }],
      })
    ).message_id;
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

  it('the inbox badges the external mail, and only it', async () => {
    const ext = page.locator(`.msg[data-id="${id}"]`);
    await ext.waitFor();
    assert.equal(await ext.locator('.badge.kind-external').textContent(), 'external e-mail · untrusted');
    const agent = page.locator('.msg', { hasText: 'from an agent' });
    assert.equal(await agent.locator('.kind-external').count(), 0);
  });

  it('the thread shows the fenced body as text, with its codes and attachments, and runs nothing', async () => {
    await page.goto(`${d.url}/web/thread/${id}`);
    const article = page.locator(`#msg-${id}`);
    await article.waitFor();
    assert.match((await article.getAttribute('class')) ?? '', /\bexternal\b/);
    assert.equal(await article.locator('header .badge.kind-external').textContent(), 'external e-mail · untrusted');
    assert.equal(await article.locator('.body').textContent(), `${fenceOpen(id)}\n${body}\n${fenceClose(id)}`, 'every character literally');
    assert.equal(await page.locator('main img, main script, main b').count(), 0, 'no element came from the mail');
    assert.equal(await page.evaluate(() => typeof (globalThis as Page$).__xss), 'undefined');
    const extras = await article.locator('.email-extras li').allTextContents();
    assert.deepEqual(extras, ['code: 402817', 'attachment 0: receipt.txt (text/plain, 4 bytes)']);
  });

  it('a person fetches a kept attachment through /web/api/attachment', async () => {
    const l = await login(d.url, 'alice');
    const r = await call(d.url, l, 'attachment', { message_id: id, n: 0 });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(Buffer.from(r.json.data, 'base64').toString(), 'paid');
    const none = await call(d.url, l, 'attachment', { message_id: id, n: 5 });
    assert.equal(none.json.error.code, 'unknown_attachment');
  });
});
