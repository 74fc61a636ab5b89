// Leases for a person in Chromium against a real daemon: she hands a task to a room she is in
// (max_attempts 2) and watches it on the board's "Pool #room": on offer, claimed by an agent (a
// client over HTTP) with attempt n of m, on its page with the claim's holder and expiry, back on
// offer when the agent releases the claim, and after the second release in "Dead letters" with
// the reason. The Reservations view lists an agent's file reservations by repository root (holder,
// glob, mode, reason, expiry) and the pooled-task claims; it drops a released reservation at its
// next read (every 15 s: a release is no mail) and a returned task's claim when that mail arrives.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import type { MailClient } from '../../src/client/http-client.js';
import type { LeaseOut } from '../../src/wire/leases.js';
import type { TaskClaimResponse, TaskListResponse, TaskOut } from '../../src/wire/tasks.js';
import { chromiumMissing, launchChromium } from './browser.js';
import { PASSWORD, call, createPerson, type Login } from './web-helpers.js';

const skip = chromiumMissing() ?? false;
const T = { timeout: 40_000 };
// Callbacks below run in the page (this file is compiled without the DOM library).
type Page$ = any;

describe('pools, dead letters and reservations in Chromium', { skip, timeout: 240_000 }, () => {
  let d: TestDaemon;
  let codex: MailClient;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;

  before(async () => {
    d = await startTestDaemon();
    await createPerson(d, 'alice', { display_name: 'Alice' });
    codex = (await d.account('codex')).client;
    await d.operator.admin.roomAdd('builders');
    await d.operator.admin.roomAdd('elsewhere');
    for (const m of ['alice', 'codex']) await d.operator.admin.memberAdd('builders', m);
    await d.operator.admin.memberAdd('elsewhere', 'codex');
    browser = await launchChromium();
    ctx = await browser.newContext({ viewport: { width: 1100, height: 720 } });
    page = await ctx.newPage();
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

  /** Her login as the page holds it, for calls the page itself does not offer (max_attempts). */
  const herLogin = async (): Promise<Login> => {
    const c = (await ctx.cookies(d.url)).find((x) => x.name.startsWith('m4a_session_'));
    assert.ok(c, 'logged in');
    const csrf = (await page.evaluate(() => (globalThis as Page$).localStorage.getItem('m4a.csrf'))) as string;
    return { cookie: `${c.name}=${c.value}`, csrf, setCookie: '' };
  };
  const poolTask = async (title: string): Promise<TaskOut> => {
    const r = await call(d.url, await herLogin(), 'task/create', { to: '#builders', title, instructions: 'All of it.', max_attempts: 2 });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return r.json as TaskOut;
  };
  const claim = (body: object): Promise<TaskClaimResponse> => codex.call<TaskClaimResponse>('/task/claim', { ttl_secs: 600, ...body });
  /** Counts page loads and history moves: a live update makes none. */
  const watchNavigations = (): { count: () => number; stop: () => void } => {
    let n = 0;
    const on = () => n++;
    page.on('framenavigated', on);
    return { count: () => n, stop: () => page.off('framenavigated', on) };
  };
  const inMinutes = /^in (9|10) min$/;

  it('a pooled task on offer, claimed by the agent (attempt 1 of 2), on its page with the claim, back on offer, claimed again and then a dead letter', T, async () => {
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    const pool = page.locator('section.pool[data-room="#builders"]');
    await pool.locator('.empty', { hasText: 'Nothing in the pool of #builders.' }).waitFor();
    assert.equal(await pool.locator('h2').textContent(), 'Pool #builders (0)');
    assert.equal(await page.locator('section.pool[data-room="#elsewhere"]').count(), 0, 'only the rooms she is a member of');
    await page.locator('#dead-letters .empty', { hasText: 'None.' }).waitFor();

    const t = await poolTask('Port the lexer');
    assert.deepEqual(t.pool, { room: '#builders', attempt: 0, max_attempts: 2 });
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    const item = (group: string) => pool.locator(`[data-group="${group}"] li.task[data-task="${t.task_id}"]`);
    await item('offer').waitFor();
    assert.equal(await item('offer').locator('.subject').textContent(), 'Port the lexer');
    assert.match((await item('offer').locator('.line1').textContent()) ?? '', /^from alice\s*submitted attempt 0 of 2/);

    const nav = watchNavigations();
    try {
      const first = await claim({ task_id: t.task_id });
      assert.ok(first.lease && first.task);
      const holder = first.lease.holder;
      assert.match(holder, /^codex\//, 'the holder is the agent session');
      await item('claimed').waitFor({ timeout: 5000 }); // drawn by the live update: the claim is mail to her
      assert.equal(await item('offer').count(), 0);
      assert.match((await item('claimed').locator('.line1').textContent()) ?? '', new RegExp(`^claimed by ${holder}\\s*working attempt 1 of 2`));
      assert.equal(await item('claimed').locator('.holder').textContent(), holder);
      assert.equal(nav.count(), 0, 'no reload');

      nav.stop();
      await item('claimed').locator('a.open').click();
      await page.locator(`#task[data-task="${t.task_id}"][data-state="working"]`).waitFor();
      assert.equal(await page.locator('#task-pool-room').textContent(), '#builders');
      assert.equal(await page.locator('#task-pool-attempt').textContent(), '1 of 2');
      assert.equal(await page.locator('#task-pool-holder').textContent(), holder);
      const until = page.locator(`#task-lease-expiry[data-lease="${first.lease.lease_id}"]`);
      await until.waitFor();
      assert.equal(await until.locator('time').getAttribute('datetime'), first.lease.expires_at, "the claim's expiry, absolute");
      assert.match((await until.locator('.rel').textContent()) ?? '', inMinutes, 'and relative');

      await codex.lease.release({ lease_id: first.lease.lease_id, epoch: first.lease.epoch });
      // The return is mail to the room in the task's thread: the open page redraws.
      await page.locator(`#task[data-task="${t.task_id}"][data-state="submitted"]`).waitFor({ timeout: 5000 });
      assert.equal(await page.locator('#task-pool-holder').textContent(), 'nobody: on offer');
      assert.equal(await page.locator('#task-lease-expiry').textContent(), 'no claim');
      assert.equal(await page.locator('#task-pool-attempt').textContent(), '1 of 2');
    } finally {
      nav.stop();
    }

    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    await item('offer').waitFor();
    assert.match((await item('offer').locator('.line1').textContent()) ?? '', /attempt 1 of 2/);
    const nav2 = watchNavigations();
    try {
      const second = await claim({ pool: '#builders' });
      assert.equal(second.task?.task_id, t.task_id, 'the oldest on offer');
      await item('claimed').waitFor({ timeout: 5000 });
      assert.match((await item('claimed').locator('.line1').textContent()) ?? '', /attempt 2 of 2/);
      await codex.lease.release({ lease_id: second.lease!.lease_id, epoch: second.lease!.epoch });
      const dead = page.locator(`#dead-letters li.task[data-task="${t.task_id}"]`);
      await dead.waitFor({ timeout: 5000 }); // the failure is mail to her, the requester
      assert.equal(await dead.locator('.subject').textContent(), 'Port the lexer');
      assert.equal(await dead.locator('.state').textContent(), 'failed');
      assert.equal(
        await dead.locator('.fail-reason').textContent(),
        'lease_exhausted · lease_exhausted: claimed 2 times without finishing (last: released)',
        'the reason, in the mailbox’s words',
      );
      assert.equal(await page.locator('#dead-letters h2').textContent(), 'Dead letters (1)');
      await item('failed').waitFor();
      assert.equal(await item('claimed').count(), 0);
      assert.equal(nav2.count(), 0, 'no reload');
    } finally {
      nav2.stop();
    }
    const listed = (await call(d.url, await herLogin(), 'task/list', { role: 'requested', state: 'failed', reason: 'lease_exhausted' })).json as TaskListResponse;
    assert.deepEqual(
      listed.tasks.map((x) => [x.task_id, x.fail_reason]),
      [[t.task_id, 'lease_exhausted']],
      'the daemon’s dead-letter list says the same',
    );
  });

  it('Reservations lists file reservations by root and pooled-task claims; a released reservation goes at the next 15 s read, a returned claim with its mail', T, async () => {
    const a = await codex.lease.claim({ resource: 'path:src/parser/**', root: '/srv/repo-a', reason: 'refactor the parser', ttl_secs: 600 });
    const b = await codex.lease.claim({ resource: 'path:docs/', root: '/srv/repo-b', mode: 'shared', reason: 'proofreading', ttl_secs: 600 });
    const t = await poolTask('Write the changelog');
    const held = await claim({ task_id: t.task_id });
    assert.ok(held.lease);

    await page.getByRole('link', { name: 'Reservations', exact: true }).click();
    await page.getByRole('heading', { name: 'Reservations', level: 1 }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Reservations', exact: true }).getAttribute('aria-current'), 'page');
    const row = (l: LeaseOut) => page.locator(`#reservations tr[data-lease="${l.lease_id}"]`);
    await row(a).waitFor();
    assert.deepEqual(await page.locator('section.leasegroup').evaluateAll((s) => s.map((x) => x.getAttribute('data-root'))), ['/srv/repo-a', '/srv/repo-b'], 'grouped by root');
    assert.equal(await page.locator('section.leasegroup[data-root="/srv/repo-a"] h3').textContent(), '/srv/repo-a');
    const cells = async (l: LeaseOut) => (await row(l).locator('td').allTextContents()).slice(0, 4);
    assert.deepEqual(await cells(a), [a.holder, 'src/parser/**', 'exclusive', 'refactor the parser']);
    assert.deepEqual(await cells(b), [b.holder, 'docs/', 'shared', 'proofreading']);
    assert.match(a.holder, /^codex\//);
    assert.equal(await row(a).locator('.expiry time').getAttribute('datetime'), a.expires_at);
    assert.match((await row(a).locator('.expiry .rel').textContent()) ?? '', inMinutes);
    const claimRow = page.locator(`#task-claims tr[data-task="${t.task_id}"]`);
    assert.deepEqual(
      await claimRow
        .locator('td')
        .allTextContents()
        .then((c) => c.slice(0, 4)),
      [t.task_id, held.lease.holder, '1', 'pooled task'],
    );
    assert.equal(await claimRow.locator('a').getAttribute('href'), `/web/task/${t.task_id}`);
    await page.setViewportSize({ width: 375, height: 720 });
    const width = await page.evaluate(() => (globalThis as Page$).document.documentElement.scrollWidth as number);
    assert.ok(width <= 375, `no sideways scrolling at phone width (${width} px)`);
    await page.setViewportSize({ width: 1100, height: 720 });

    const reads: number[] = [];
    const onReq = (r: { url(): string }) => r.url().endsWith('/web/api/lease/list') && reads.push(Date.now());
    page.on('request', onReq);
    const nav = watchNavigations();
    try {
      const t0 = Date.now();
      await codex.lease.release({ lease_id: a.lease_id, epoch: a.epoch });
      await row(a).waitFor({ state: 'detached', timeout: 20_000 });
      const took = Date.now() - t0;
      assert.ok(took <= 16_500, `gone at the next read, within 15 s (${took} ms)`);
      assert.equal(await page.locator('section.leasegroup[data-root="/srv/repo-a"]').count(), 0, 'a root without reservations goes');
      assert.equal(await row(b).count(), 1, 'the other root stays');
      assert.ok(reads.length <= 4, `one read (two lists) per 15 s, no faster polling (${reads.length} lists in ${took} ms)`);
      assert.equal(nav.count(), 0, 'no reload');

      // Just after a timed read, so the next is ~15 s away: only the return's mail can redraw it sooner.
      const t1 = Date.now();
      await codex.lease.release({ lease_id: held.lease.lease_id, epoch: held.lease.epoch });
      await claimRow.waitFor({ state: 'detached', timeout: 5000 });
      assert.ok(Date.now() - t1 < 5000);
      await page.locator('#reservations .empty', { hasText: 'No pooled task is claimed.' }).waitFor();
      assert.equal(nav.count(), 0, 'no reload');
    } finally {
      page.off('request', onReq);
      nav.stop();
    }
  });
});
