// A person hands a task to an agent from the board's New task form, in Chromium against a real
// daemon: the agent (a client over HTTP with its own secret) finds it assigned to it and the page
// opens it; a refused form (an unknown recipient, a room, a bad field, a title over its limit) shows
// the daemon's error by name beside it and creates nothing; a double submit of one form makes one
// task and one mail; a POST without the login's CSRF token, or from another origin, is refused.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import type { MailClient } from '../../src/client/http-client.js';
import { until } from '../support/until.js';
import { chromiumMissing, launchChromium } from './browser.js';
import { PASSWORD, createPerson, webPost } from './web-helpers.js';

const skip = chromiumMissing() ?? false;
const T = { timeout: 30_000 };
// Callbacks below run in the page (this file is compiled without the DOM library).
type Page$ = any;

describe('the New task form in Chromium', { skip, timeout: 180_000 }, () => {
  let d: TestDaemon;
  let codex: MailClient;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let firstTask = '';

  before(async () => {
    d = await startTestDaemon();
    await createPerson(d, 'alice', { display_name: 'Alice' });
    codex = (await d.account('codex')).client;
    await d.operator.call('/admin/room/add', { name: 'reviewers' });
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

  const cookie = async (): Promise<string> => {
    const c = (await ctx.cookies(d.url)).find((x) => x.name.startsWith('m4a_session_'));
    assert.ok(c, 'logged in');
    return `${c.name}=${c.value}`;
  };
  const csrf = async (): Promise<string> => (await page.evaluate(() => (globalThis as Page$).localStorage.getItem('m4a.csrf'))) as string;
  /** The ids of the tasks alice asked for, as the daemon has them (with her login, like the page). */
  const requested = async (): Promise<string[]> => {
    const r = await webPost(d.url, 'task/list', { cookie: await cookie(), csrf: await csrf(), body: { role: 'requested', limit: 100 } });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return (r.json.tasks as { task_id: string }[]).map((t) => t.task_id);
  };
  const assignedToCodex = async (): Promise<{ task_id: string; title: string }[]> => (await codex.task.list({ role: 'assigned', limit: 100 })).tasks;
  const taskMails = async (title: string): Promise<number> =>
    (await codex.inbox({ include_acked: true, limit: 200 })).messages.filter((m) => m.subject === `Task: ${title}`).length;

  /** The board with the New task form open. */
  const openForm = async (): Promise<void> => {
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor();
    await page.locator('#new-task summary', { hasText: 'New task' }).click();
    await page.getByRole('form', { name: 'New task' }).waitFor();
  };
  const fillForm = async (f: { to: string; title: string; instructions?: string; parent?: string }): Promise<void> => {
    await page.getByLabel('To', { exact: true }).fill(f.to);
    await page.getByLabel('Title', { exact: true }).fill(f.title);
    await page.getByLabel('Instructions', { exact: true }).fill(f.instructions ?? '');
    await page.getByLabel('Parent task (optional)').fill(f.parent ?? '');
  };
  const submit = (): Promise<void> => page.getByRole('button', { name: 'Hand over the task' }).click();

  it('she hands a task to an agent; the agent finds it assigned to it, and its page opens', T, async () => {
    await openForm();
    const instructions = 'Bisect the flaky retry test.\nStart at 1.3.0; the log is in the thread.';
    await fillForm({ to: 'codex', title: 'Bisect the flaky test', instructions });
    await submit();
    await page.getByRole('heading', { name: 'Bisect the flaky test', level: 1 }).waitFor();
    const m = /\/web\/task\/(t-[0-9a-z]+)$/.exec(page.url());
    assert.ok(m?.[1], `the task's page: ${page.url()}`);
    firstTask = m[1];
    await page.locator(`#task[data-task="${firstTask}"][data-state="submitted"]`).waitFor();
    assert.equal(await page.locator('#task-instructions').textContent(), instructions);
    assert.deepEqual(await page.locator('#task .task-head dd .party').allTextContents(), ['alice', 'codex'], 'requester and assignee');

    const mine = await codex.task.list({ role: 'assigned' });
    assert.deepEqual(
      mine.tasks.map((t) => [t.task_id, t.from, t.to, t.title, t.instructions, t.state]),
      [[firstTask, 'alice', 'codex', 'Bisect the flaky test', instructions, 'submitted']],
      'the agent sees it under role assigned, from her',
    );
    const mail = await until('the task as mail to the agent', async () => (await codex.inbox({})).messages.find((x) => x.subject === 'Task: Bisect the flaky test'));
    assert.equal(mail.from, 'alice');
    assert.equal(mail.from_kind, 'human');

    await page.goto(`${d.url}/web/tasks?role=requested`);
    const item = page.locator(`li.task[data-task="${firstTask}"]`);
    await item.waitFor();
    assert.equal(await item.locator('.from').textContent(), 'codex', 'on the board under Requested by me');
  });

  it('a task with a parent names it, and the parent lists it as a child', T, async () => {
    await openForm();
    await fillForm({ to: 'codex', title: 'Find the first bad commit', parent: firstTask });
    await submit();
    await page.getByRole('heading', { name: 'Find the first bad commit', level: 1 }).waitFor();
    assert.equal(await page.locator('#task .task-head a', { hasText: firstTask }).getAttribute('href'), `/web/task/${firstTask}`);
    const parent = await codex.task.get({ task_id: firstTask });
    assert.deepEqual(
      parent.children?.map((c) => c.title),
      ['Find the first bad commit'],
    );
  });

  it('a refused form shows the named error beside it, stays on the board and creates nothing', T, async () => {
    const before = await requested();
    const agentBefore = (await assignedToCodex()).length;
    await openForm();
    const form = page.getByRole('form', { name: 'New task' });
    const alert = form.getByRole('alert');
    const cases: [string, { to: string; title: string; parent?: string }, RegExp][] = [
      ['nothing filled in', { to: '', title: '' }, /^A recipient and a title are needed\.$/],
      ['an unknown recipient', { to: 'nobody', title: 'Review fix-42' }, /^no account nobody \[unknown_participant\]$/],
      ['a malformed recipient', { to: 'Code X!', title: 'Review fix-42' }, /^to: .* \(to\) \[malformed\]$/],
      ['a room she is not in', { to: '#reviewers', title: 'Review fix-42' }, /not a member of #reviewers.*\[permission_denied\]$/],
      ['a malformed parent id', { to: 'codex', title: 'Review fix-42', parent: 'T 42' }, /\(parent_task_id\) \[malformed\]$/],
      ['an unknown parent', { to: 'codex', title: 'Review fix-42', parent: 't-zzz' }, /^There is no such task\. \[unknown_task\]$/],
      ['a title over its limit', { to: 'codex', title: 'x'.repeat(513) }, /\(title\) \[too_large\]$/],
    ];
    for (const [why, f, shown] of cases) {
      await fillForm(f);
      await submit();
      await alert.filter({ hasText: shown }).waitFor();
      assert.match(page.url(), /\/web\/tasks$/, `${why}: still on the board`);
      assert.equal(await page.getByRole('button', { name: 'Hand over the task' }).isEnabled(), true, `${why}: the form may be sent again`);
    }
    assert.deepEqual(await requested(), before, 'she asked for nothing new');
    assert.equal((await assignedToCodex()).length, agentBefore, 'the agent got nothing new');
    assert.equal(await taskMails('Review fix-42'), 0, 'no task mail went out');

    // The same form, corrected, goes through: the refusals above were the fields'.
    await fillForm({ to: 'codex', title: 'Review fix-42' });
    await submit();
    await page.getByRole('heading', { name: 'Review fix-42', level: 1 }).waitFor();
    assert.equal((await requested()).length, before.length + 1);
  });

  it('a double submit of one form makes one task and one mail; a resend with its key names the same task', T, async () => {
    await openForm();
    await fillForm({ to: 'codex', title: 'Tag release 1.4', instructions: 'After the changelog is merged.' });
    const key = await page.locator('#task-create input[type="hidden"][name="idempotency_key"]').inputValue();
    assert.match(key, /^web-task-[0-9a-z]+$/, 'each drawing of the form carries its key');
    let sent = 0;
    const count = (r: { url(): string }): void => void (r.url().endsWith('/web/api/task/create') && sent++);
    page.on('request', count);
    // Two submits in one go (a double click, Ctrl+Enter and a click), before any answer.
    await page.evaluate(() => {
      const form = (globalThis as Page$).document.getElementById('task-create');
      form.requestSubmit();
      form.requestSubmit();
    });
    await page.getByRole('heading', { name: 'Tag release 1.4', level: 1 }).waitFor();
    const id = /\/web\/task\/(t-[0-9a-z]+)$/.exec(page.url())?.[1];
    assert.ok(id);
    page.off('request', count);
    // Two requests with one key at once would each send the task's mail before either stored the
    // task, so the form sends one at a time.
    assert.equal(sent, 1, 'the page sent the form once');
    // The browser resends the form (its answer was lost): the key names the task it made.
    const again = await webPost(d.url, 'task/create', {
      cookie: await cookie(),
      csrf: await csrf(),
      body: { to: 'codex', title: 'Tag release 1.4', instructions: 'After the changelog is merged.', idempotency_key: key },
    });
    assert.equal(again.status, 200, JSON.stringify(again.json));
    assert.equal(again.json.task_id, id, 'the same task');
    assert.deepEqual(
      (await assignedToCodex()).filter((t) => t.title === 'Tag release 1.4').map((t) => t.task_id),
      [id],
      'one task',
    );
    await until('the task mail', async () => (await taskMails('Tag release 1.4')) > 0);
    assert.equal(await taskMails('Tag release 1.4'), 1, 'one mail');

    await openForm();
    const next = await page.locator('#task-create input[name="idempotency_key"]').inputValue();
    assert.notEqual(next, key, 'a new drawing of the form has a new key');
  });

  it('a POST without the CSRF token, with a wrong one or from another origin is refused and creates nothing', T, async () => {
    const [c, token] = [await cookie(), await csrf()];
    const before = await requested();
    const agentBefore = (await assignedToCodex()).length;
    const body = { to: 'codex', title: 'Forged task', idempotency_key: 'forged-1' };
    for (const [why, o, code] of [
      ['no token', { cookie: c, body }, 'csrf_failed'],
      ['a wrong token', { cookie: c, csrf: 'x'.repeat(43), body }, 'csrf_failed'],
      ['another origin', { cookie: c, csrf: token, body, origin: 'http://127.0.0.1:1' }, 'forbidden_origin'],
      ['no origin', { cookie: c, csrf: token, body, origin: null }, 'csrf_failed'],
      ['a cross-site fetch', { cookie: c, csrf: token, body, headers: { 'sec-fetch-site': 'cross-site' } }, 'csrf_failed'],
      ['a form post', { cookie: c, csrf: token, body: 'to=codex&title=Forged+task', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 'csrf_failed'],
    ] as const) {
      const r = await webPost(d.url, 'task/create', o);
      assert.equal(r.status, 403, `${why}: ${JSON.stringify(r.json)}`);
      assert.equal(r.json.error.code, code, why);
    }
    assert.deepEqual(await requested(), before, 'nothing was created');
    assert.equal((await assignedToCodex()).length, agentBefore);
    assert.equal(await taskMails('Forged task'), 0);
    // The same request with the login's token goes through: the refusals above were the checks'.
    const ok = await webPost(d.url, 'task/create', { cookie: c, csrf: token, body });
    assert.equal(ok.status, 200, JSON.stringify(ok.json));
    assert.equal((await requested()).length, before.length + 1);
  });
});
