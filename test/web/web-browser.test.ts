// A person in Chromium against a real daemon: log in (after wrong passwords and their growing
// delay), watch an agent's mail arrive live, read a thread and reply, write to a room with
// completion, acknowledge, see the directory's cards, survive a stored XSS attempt and a
// cross-site form, log out. With M4A_SCREENSHOTS=1 the main pages are saved under docs/screenshots.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { slugFromCwd } from '../../src/engine/names.js';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import type { MailClient } from '../../src/client/http-client.js';
import { chromiumMissing, launchChromium, screenshot } from './browser.js';
import { PASSWORD, createPerson, webPost } from './web-helpers.js';
import { webFrom } from './web-peer.js';

const skip = chromiumMissing() ?? false;
/** The stand-in agent is this test process: its slug comes from the working directory's name. */
const SLUG = slugFromCwd(process.cwd()) ?? 'session';
const T = { timeout: 30_000 };
// Callbacks below run in the page, where globalThis is the window (this file is compiled without
// the DOM library, and string predicates would need eval, which the door's CSP forbids).
type Page$ = any;

describe('browser mailbox in Chromium', { skip, timeout: 180_000 }, () => {
  let d: TestDaemon;
  let codex: MailClient;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let evil: Server | undefined;

  before(async () => {
    d = await startTestDaemon({ web: { throttle: { baseMs: 400, maxMs: 5000, forgetMs: 60_000 } } });
    await createPerson(d, 'alice', { display_name: 'Alice' });
    codex = (await d.account('codex')).client;
    await codex.status({ working_on: 'reviewing branch fix-42', role: 'reviewer' });
    await d.operator.admin.roomAdd('reviewers');
    await d.operator.admin.memberAdd('reviewers', 'alice');
    await d.operator.admin.memberAdd('reviewers', 'codex');
    await codex.send({
      to: 'alice',
      subject: 'review done',
      body: 'Two findings on fix-42:\n1. the retry loop never backs off\n2. a test is missing\nDetails: https://example.com/review/42',
    });
    browser = await launchChromium();
    ctx = await browser.newContext({ viewport: { width: 1100, height: 720 } });
    page = await ctx.newPage();
    page.setDefaultTimeout(10_000);
  });
  after(async () => {
    await browser?.close();
    await new Promise<void>((r) => (evil ? evil.close(() => r()) : r()));
    await d?.stop();
  });

  it('logs in after wrong passwords, each followed by a longer delay', T, async (t) => {
    const t0 = Date.now();
    await page.goto(`${d.url}/`);
    await page.getByLabel('Account').waitFor();
    t.diagnostic(`first page (shell, script, styles, login form drawn): ${Date.now() - t0} ms`);
    await screenshot(page, 'login');
    const delays: number[] = [];
    for (let i = 0; i < 2; i++) {
      await page.getByLabel('Account').fill('alice');
      await page.getByLabel('Password').fill('not the password');
      const [res] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/web/api/login')), page.getByRole('button', { name: 'Log in' }).click()]);
      assert.equal(res.status(), 401);
      delays.push((await res.json()).error.retry_after_ms);
      await page.getByRole('alert').filter({ hasText: 'Wrong account or password' }).waitFor();
      const button = page.locator('#login-form button[type=submit]');
      assert.match((await button.textContent()) ?? '', /^Wait \d s$/);
      assert.equal(await button.isDisabled(), true, 'the form waits out the delay');
      await page.waitForFunction(() => !(globalThis as Page$).document.querySelector('#login-form button[type=submit]').disabled, null, { timeout: 5000 });
    }
    assert.deepEqual(delays, [400, 800]);
    await page.getByLabel('Account').fill('alice');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/web/inbox');
    await page.locator('.msg', { hasText: 'review done' }).waitFor();
    assert.equal(await page.locator('#unread-count').textContent(), '1');
  });

  it("shows an agent's mail as it arrives, without reloading and without polling", T, async () => {
    const inboxCalls: number[] = [];
    const onReq = (r: { url(): string }) => r.url().endsWith('/web/api/inbox') && inboxCalls.push(Date.now());
    page.on('request', onReq);
    let navigations = 0;
    const onNav = () => navigations++;
    page.on('framenavigated', onNav);
    try {
      await new Promise((r) => setTimeout(r, 2500));
      assert.ok(inboxCalls.length <= 1, `an idle page parks one request instead of polling (saw ${inboxCalls.length} in 2.5 s)`);
      const t0 = Date.now();
      await codex.send({ to: 'alice', subject: 'build is green', body: 'CI passed on fix-42.' });
      await page.locator('.msg', { hasText: 'build is green' }).waitFor({ timeout: 5000 });
      assert.ok(Date.now() - t0 < 3000, 'mail shows within moments of its commit');
      assert.equal(await page.locator('.msg').first().locator('.subject').textContent(), 'build is green', 'newest first');
      assert.equal(await page.locator('#unread-count').textContent(), '2');
      assert.equal(navigations, 0, 'no reload');
      await screenshot(page, 'inbox');
    } finally {
      page.off('request', onReq);
      page.off('framenavigated', onNav);
    }
  });

  it("renders a stored XSS attempt in an agent's message as inert text", T, async () => {
    const body = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> javascript:window.__xss=3 https://user:pw@example.com/secret and http://example.com/ok.';
    const sent = await codex.send({ to: 'alice', subject: '<img src=x onerror="window.__xss = 4">', body });
    await page.locator('.msg', { hasText: '<img src=x' }).waitFor();
    await page.goto(`${d.url}/web/thread/${sent.message_id}`);
    const article = page.locator(`#msg-${sent.message_id}`);
    await article.waitFor();
    assert.equal(await article.locator('.body').textContent(), body, 'shown literally, every character');
    assert.equal(await page.locator('h1').textContent(), '<img src=x onerror="window.__xss = 4">');
    assert.equal(await page.locator('main script, main img, main iframe').count(), 0, 'no element came from the message');
    assert.equal(await page.evaluate(() => typeof (globalThis as Page$).__xss), 'undefined', 'no script ran');
    const links = article.locator('.body a');
    assert.equal(await links.count(), 1, 'only the plain http link is a link (not javascript:, not one with a password)');
    assert.equal(await links.getAttribute('href'), 'http://example.com/ok');
    assert.equal(await links.getAttribute('rel'), 'noopener noreferrer nofollow');
    assert.equal(await links.getAttribute('target'), '_blank');
    assert.equal(await links.getAttribute('referrerpolicy'), 'no-referrer');
  });

  it('reads a thread and replies; the agent sees the reply came from a person', T, async () => {
    await page.getByRole('link', { name: 'Inbox' }).click();
    await page.locator('.msg a.open', { hasText: 'review done' }).click();
    await page.getByRole('heading', { name: 'review done', level: 1 }).waitFor();
    assert.match((await page.locator('article.message .body').first().textContent()) ?? '', /the retry loop never backs off/);
    await page.getByLabel(/^Reply to codex\//).fill('Thanks. Please add the missing test first.');
    await screenshot(page, 'thread');
    await page.getByRole('button', { name: 'Send reply' }).click();
    await page.locator('article.message.mine').waitFor();
    assert.equal(await page.locator('article.message').count(), 2);
    const mine = (await codex.inbox()).messages.find((m) => m.body === 'Thanks. Please add the missing test first.');
    assert.ok(mine, 'the agent got the reply');
    assert.equal(mine.from, 'alice');
    assert.equal(mine.from_kind, 'human');
    assert.equal(mine.subject, 'Re: review done');
    assert.ok(mine.reply_to, 'threaded');
  });

  it('writes to a room with addresses completed from the directory', T, async () => {
    await page.getByRole('link', { name: 'Compose' }).click();
    await page.getByRole('heading', { name: 'Write a message' }).waitFor();
    await page.waitForFunction(() => (globalThis as Page$).document.querySelectorAll('#addresses option').length > 0);
    const options = await page.locator('#addresses option').evaluateAll((os) => os.map((o) => o.getAttribute('value') ?? ''));
    for (const want of ['#reviewers', 'codex', `codex/${SLUG}`]) assert.ok(options.includes(want), `${want} is suggested (${options.join(', ')})`);
    assert.ok(!options.includes('alice'), 'not herself');
    await page.getByLabel('To').fill('#reviewers');
    await page.getByLabel('Subject').fill('Standup');
    await page.getByLabel('Message').fill('Who takes the flaky test?');
    await screenshot(page, 'compose');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('heading', { name: 'Standup', level: 1 }).waitFor();
    const got = (await codex.inbox()).messages.find((m) => m.subject === 'Standup');
    assert.ok(got);
    assert.equal(got.to, '#reviewers');
    assert.equal(got.from_kind, 'human');
  });

  it('acknowledges mail; the mark stays after a reload', T, async () => {
    await page.getByRole('link', { name: 'Inbox' }).click();
    await page.locator('.msg', { hasText: 'build is green' }).waitFor();
    const before = Number(await page.locator('#unread-count').textContent());
    await page
      .locator('.msg', { hasText: 'build is green' })
      .getByRole('button', { name: /^Acknowledge/ })
      .click();
    await page.locator('.msg', { hasText: 'build is green' }).locator('.acked').waitFor();
    assert.equal(Number(await page.locator('#unread-count').textContent()), before - 1);
    await page.reload();
    await page.locator('.msg', { hasText: 'build is green' }).locator('.acked').waitFor();
    await page.getByLabel('Unread only').check();
    assert.equal(await page.locator('.msg', { hasText: 'build is green' }).count(), 0);
    await page.getByLabel('Unread only').uncheck();
    await page.setViewportSize({ width: 375, height: 720 });
    await screenshot(page, 'inbox-phone');
    const width = await page.evaluate(() => (globalThis as Page$).document.documentElement.scrollWidth as number);
    assert.ok(width <= 375, `no sideways scrolling at phone width (${width} px)`);
    await page.setViewportSize({ width: 1100, height: 720 });
  });

  it('shows the directory with attested, corroborated and declared kept apart', T, async () => {
    await page.getByRole('link', { name: 'Directory' }).click();
    const card = page.locator('article.session', { hasText: `codex/${SLUG}` });
    await card.waitFor();
    assert.equal(await card.locator('.fact.attested h5').textContent(), 'Attested');
    assert.match((await card.locator('.fact.attested dl').textContent()) ?? '', /pid\d+/);
    assert.equal(await card.locator('.fact.corroborated h5').textContent(), 'Corroborated');
    assert.equal(await card.locator('.fact.declared h5').textContent(), 'Declared');
    assert.match((await card.locator('.fact.declared').textContent()) ?? '', /reviewing branch fix-42/);
    assert.doesNotMatch((await card.locator('.fact.attested').textContent()) ?? '', /reviewing/, 'declared words never appear as attested');
    assert.equal(await page.locator('.rooms a', { hasText: '#reviewers' }).count(), 1);
    await screenshot(page, 'directory');
  });

  it('a page on another port cannot post as the logged-in person', T, async () => {
    // Another port of the same host is the same *site* (the SameSite cookie goes along) but another
    // origin: the exact-origin check and the missing CSRF token must stop it.
    const target = `${d.url}/web/api/send`;
    const html = `<!doctype html><form id=f method=POST action="${target}" enctype="text/plain"><input name='{"to":"codex","subject":"forged","body":"x","pad":"' value='"}'></form>
<script>fetch(${JSON.stringify(target)}, { method: 'POST', credentials: 'include', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ to: 'codex', subject: 'forged', body: 'y' }) }).finally(() => document.getElementById('f').submit());</script>`;
    evil = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
    await new Promise<void>((r) => evil!.listen(0, '127.0.0.1', () => r()));
    const evilUrl = `http://127.0.0.1:${(evil.address() as { port: number }).port}/`;
    const statuses: number[] = [];
    const attacker = await ctx.newPage();
    attacker.on('response', (r) => r.url() === target && statuses.push(r.status()));
    await attacker.goto(evilUrl);
    await attacker.waitForURL(target, { timeout: 5000 });
    await attacker.close();
    assert.ok(statuses.length >= 1 && statuses.every((s) => s === 403), `refused (${statuses.join(', ')})`);
    assert.equal((await codex.inbox({ include_acked: true })).messages.filter((m) => m.subject === 'forged').length, 0, 'nothing was sent');
  });

  it('tells the person someone is guessing their password, and clears the delays with one click', T, async () => {
    // Every loopback address is one client (this browser's too): two guesses, one delay apart.
    const first = await webFrom(d.url, 'login', { from: '127.0.0.2', body: { account: 'alice', password: 'a guess' } });
    assert.equal(first.status, 401);
    await new Promise((r) => setTimeout(r, first.json.error.retry_after_ms + 30));
    assert.equal((await webFrom(d.url, 'login', { from: '127.0.0.6', body: { account: 'alice', password: 'a guess' } })).status, 401);
    await page.getByRole('link', { name: 'Inbox' }).click();
    const notice = page.locator('#login-throttle .notice');
    await notice.waitFor();
    assert.match((await notice.textContent()) ?? '', /2 wrong passwords for your account recently, from 1 address\./);
    await page.getByRole('button', { name: 'Clear login delays' }).click();
    await page.locator('#login-throttle .notice', { hasText: 'Login delays cleared: your account takes logins again.' }).waitFor();
    assert.deepEqual(await d.store.listRecords('web_throttle_addr', 'alice/', 10), [], 'the delay of the address she cleared from (loopback) ended');
  });

  it('logs out; the old cookie and token open nothing', T, async () => {
    await page.getByRole('link', { name: 'Inbox' }).click();
    const cookie = (await ctx.cookies(d.url)).find((c) => c.name.startsWith('m4a_session_'));
    assert.ok(cookie, 'logged in');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.equal(await page.evaluate(() => (globalThis as Page$).document.cookie), '', "the page's script cannot read the cookie");
    const csrf = (await page.evaluate(() => (globalThis as Page$).localStorage.getItem('m4a.csrf'))) as string | null;
    await page.getByRole('button', { name: 'Log out', exact: true }).click();
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
    assert.equal(await page.evaluate(() => (globalThis as Page$).localStorage.getItem('m4a.csrf')), null);
    const r = await webPost(d.url, 'me', { cookie: `${cookie.name}=${cookie.value}`, csrf: csrf ?? '' });
    assert.equal(r.status, 401);
    await page.goto(`${d.url}/web/inbox`);
    await page.getByRole('heading', { name: 'Log in' }).waitFor();
  });
});
