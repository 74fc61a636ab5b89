// Tasks and approvals for a person in Chromium against a real daemon: an agent (a client over HTTP)
// hands her a task, she finds it on the board, asks a question, works on it and completes it with
// a result, and the agent reads each state over HTTP; an agent asks her to approve an action, she
// approves it from the mail with a reason, and a second decision (from a tab still showing it
// pending) is refused by name. A forged "Approval:" mail shows nothing to decide, and writes
// without the login's CSRF token change nothing.
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

describe('tasks and approvals in Chromium', { skip, timeout: 180_000 }, () => {
  let d: TestDaemon;
  let codex: MailClient;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let taskId = '';

  before(async () => {
    d = await startTestDaemon();
    await createPerson(d, 'alice', { display_name: 'Alice' });
    codex = (await d.account('codex')).client;
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

  it('the board shows a task an agent hands her as it arrives, under Assigned to me, as text', T, async () => {
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    await page.getByRole('heading', { name: 'Tasks', level: 1 }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Assigned to me' }).getAttribute('aria-current'), 'page');
    await page.locator('#taskboard .empty', { hasText: 'No tasks yet.' }).waitFor();
    const instructions = 'Check the retry loop of fix-42.\n<img src=x onerror="window.__xss = 1"> https://example.com/pr/42';
    const t = await codex.task.create({ to: 'alice', title: 'Review <b>fix-42</b>', instructions });
    taskId = t.task_id;
    const item = page.locator(`li.task[data-task="${taskId}"]`);
    await item.waitFor({ timeout: 5000 }); // drawn by the live update: the task is mail to her
    assert.equal(await item.locator('.subject').textContent(), 'Review <b>fix-42</b>');
    assert.equal(await item.locator('.state').textContent(), 'submitted');
    assert.match((await item.locator('.from').textContent()) ?? '', /^codex\//, 'the other party: the agent session that asked');
    assert.ok(await item.locator('time').count(), 'its last change is dated');
    assert.equal(await page.locator('section.taskgroup[data-state="submitted"]').count(), 1, 'grouped by state');
    await page.getByRole('link', { name: 'Requested by me' }).click();
    await page.locator('#taskboard .empty', { hasText: 'No tasks yet.' }).waitFor();
    await page.getByRole('link', { name: 'Assigned to me' }).click();
    await page.getByLabel('State').selectOption('working');
    await page.locator('#taskboard .empty', { hasText: 'No working tasks.' }).waitFor();
    assert.match(page.url(), /\/web\/tasks\?role=assigned&state=working$/);
    await page.getByLabel('State').selectOption('');
    await item.waitFor();
  });

  it('opens the task, asks a question, works on it and completes it with a result; the agent sees every state over HTTP', T, async () => {
    await page.locator(`li.task[data-task="${taskId}"] a.open`).click();
    await page.getByRole('heading', { name: 'Review <b>fix-42</b>', level: 1 }).waitFor();
    assert.match((await page.locator('#task-instructions').textContent()) ?? '', /<img src=x onerror="window.__xss = 1">/, 'shown literally');
    assert.equal(await page.locator('main img, main script').count(), 0, 'no element came from the task');
    assert.equal(await page.evaluate(() => typeof (globalThis as Page$).__xss), 'undefined');
    assert.equal(await page.locator('#task-instructions a').getAttribute('href'), 'https://example.com/pr/42');
    assert.equal(await page.locator('#task-history li').count(), 1);
    const thread = (await codex.task.get({ task_id: taskId })).thread_id;
    assert.equal(await page.locator('#task-thread').getAttribute('href'), `/web/thread/${thread}`);
    assert.equal(await page.locator('#task-cancel').count(), 0, 'only the requester cancels');

    const move = page.locator('#task-move');
    await page.getByLabel('New state').selectOption('input_required');
    await move.getByRole('button', { name: 'Move the task' }).click();
    await move.getByRole('alert').filter({ hasText: 'Write the question first.' }).waitFor();
    assert.equal((await codex.task.get({ task_id: taskId })).state, 'submitted', 'nothing was sent');
    await page.getByLabel('Question (required)').fill('Which branch: fix-42 or fix-42b?');
    await move.getByRole('button', { name: 'Move the task' }).click();
    await page.locator('#task[data-state="input_required"]').waitFor();
    let seen = await codex.task.get({ task_id: taskId });
    assert.equal(seen.state, 'input_required');
    assert.deepEqual(seen.history.at(-1), { state: 'input_required', at: seen.history.at(-1)!.at, by: 'alice', note: 'Which branch: fix-42 or fix-42b?' });

    await page.getByLabel('New state').selectOption('working');
    await page.getByLabel('Note').fill('fix-42, as answered in the thread');
    await page.locator('#task-move').getByRole('button', { name: 'Move the task' }).click();
    await page.locator('#task[data-state="working"]').waitFor();
    assert.equal((await codex.task.get({ task_id: taskId })).state, 'working');

    await page.getByLabel('New state').selectOption('completed');
    await page.getByLabel('Result summary').fill('Two findings: the retry loop never backs off; a test is missing.');
    await page.getByLabel('Result data (JSON)').fill('{"findings": 2, "files": ["src/retry.ts"]');
    await page.locator('#task-move').getByRole('button', { name: 'Move the task' }).click();
    await page
      .locator('#task-move')
      .getByRole('alert')
      .filter({ hasText: /^Data is not JSON/ })
      .waitFor();
    await page.getByLabel('Result data (JSON)').fill('{"findings": 2, "files": ["src/retry.ts"]}');
    await page.locator('#task-move').getByRole('button', { name: 'Move the task' }).click();
    await page.locator('#task[data-state="completed"]').waitFor();
    assert.equal(await page.locator('#task-result .summary').textContent(), 'Two findings: the retry loop never backs off; a test is missing.');
    assert.deepEqual(JSON.parse((await page.locator('#task-result pre.data').textContent()) ?? ''), { findings: 2, files: ['src/retry.ts'] });
    assert.deepEqual(await page.locator('#task-history li').evaluateAll((li) => li.map((x) => x.getAttribute('data-state'))), [
      'submitted',
      'input_required',
      'working',
      'completed',
    ]);
    assert.equal(await page.locator('#task-move').count(), 0, 'a finished task offers no moves');
    await page.locator('#task-actions', { hasText: 'it never changes again' }).waitFor();

    seen = await codex.task.get({ task_id: taskId });
    assert.equal(seen.state, 'completed');
    assert.deepEqual(seen.result, { summary: 'Two findings: the retry loop never backs off; a test is missing.', data: { findings: 2, files: ['src/retry.ts'] } });
    assert.deepEqual(
      seen.history.map((h) => [h.state, h.by]),
      [
        ['submitted', seen.from],
        ['input_required', 'alice'],
        ['working', 'alice'],
        ['completed', 'alice'],
      ],
    );
  });

  it("shows the daemon's refusal by name when a move is not allowed", T, async () => {
    const t = await codex.task.create({ to: 'alice', title: 'Rebase fix-43' });
    await page.goto(`${d.url}/web/task/${t.task_id}`);
    await page.getByRole('heading', { name: 'Rebase fix-43', level: 1 }).waitFor();
    // A form drawn before the agent canceled, or edited by hand: the daemon is the one that decides.
    await page.evaluate(() => {
      const doc = (globalThis as Page$).document;
      const o = doc.createElement('option');
      o.value = 'canceled';
      o.textContent = 'canceled';
      doc.getElementById('task-move-state').appendChild(o);
    });
    await page.getByLabel('New state').selectOption('canceled');
    await page.locator('#task-move').getByRole('button', { name: 'Move the task' }).click();
    const alert = page.locator('#task-move').getByRole('alert');
    await alert.filter({ hasText: '[invalid_transition]' }).waitFor();
    assert.match((await alert.textContent()) ?? '', /^This task cannot move from submitted to canceled/);
    assert.equal((await codex.task.get({ task_id: t.task_id })).version, 1, 'nothing changed');

    await codex.task.cancel({ task_id: t.task_id, reason: 'merged elsewhere' });
    await page.locator('#task[data-state="canceled"]').waitFor({ timeout: 5000 }); // its mail redraws the page
    assert.match((await page.locator('#task-history li').last().textContent()) ?? '', /merged elsewhere/);
  });

  it('she approves an action from the mail with a reason; a second decision is refused as approval_decided', T, async () => {
    const a = await codex.approval.request({ reviewer: 'alice', action: 'run the orders migration on prod', details: 'Takes about 4 minutes; writes are paused meanwhile.' });
    await page.getByRole('link', { name: 'Inbox' }).click();
    const mail = page.locator('.msg', { hasText: 'Approval: run the orders migration on prod' });
    await mail.waitFor({ timeout: 5000 });
    await mail.locator('a.open').click();
    const panel = page.locator(`section.approval[data-approval="${a.approval_id}"]`);
    await panel.locator('form.decide').waitFor();
    assert.equal(await panel.getAttribute('data-state'), 'pending');
    assert.match((await panel.textContent()) ?? '', /Takes about 4 minutes/);
    // A second tab opened before she decides: nothing in the thread reaches her when she does
    // (the decision is mail to the agent), so it still offers the buttons.
    const other = await ctx.newPage();
    other.setDefaultTimeout(10_000);
    await other.goto(page.url());
    const stale = other.locator(`section.approval[data-approval="${a.approval_id}"]`);
    await stale.locator('form.decide').waitFor();

    await panel.getByRole('button', { name: 'Approve' }).click();
    await panel.getByRole('alert').filter({ hasText: 'Write a reason first' }).waitFor();
    assert.equal((await codex.approval.get({ approval_id: a.approval_id })).state, 'pending', 'no reason, no decision');
    await panel.getByLabel('Reason', { exact: true }).fill('Backup verified at 09:10; go ahead.');
    await panel.getByRole('button', { name: 'Approve' }).click();
    await page.locator(`section.approval[data-approval="${a.approval_id}"][data-state="approved"]`).waitFor();
    assert.equal(await panel.locator('form.decide').count(), 0, 'decided: nothing more to decide');
    assert.match((await panel.textContent()) ?? '', /Backup verified at 09:10; go ahead\./);

    const got = await codex.approval.get({ approval_id: a.approval_id });
    assert.deepEqual([got.state, got.reason, got.reviewer], ['approved', 'Backup verified at 09:10; go ahead.', 'alice']);
    const back = await until('the decision as mail to the agent', async () =>
      (await codex.inbox({ include_acked: true })).messages.find((m) => m.subject === 'Approval approved: run the orders migration on prod'),
    );
    assert.match(back.body ?? '', /^approved: Backup verified at 09:10; go ahead\./);

    assert.equal(await stale.getAttribute('data-state'), 'pending', 'the second tab still shows it pending');
    await stale.getByLabel('Reason', { exact: true }).fill('No: wait for the weekend.');
    await stale.getByRole('button', { name: 'Reject' }).click();
    await other.locator(`section.approval[data-approval="${a.approval_id}"][data-state="approved"]`).waitFor();
    assert.equal(await stale.getByRole('alert').textContent(), 'This approval was decided already (approved). [approval_decided]');
    await other.close();
    const still = await codex.approval.get({ approval_id: a.approval_id });
    assert.deepEqual([still.state, still.reason], ['approved', 'Backup verified at 09:10; go ahead.'], 'the first decision stands');
  });

  it("she rejects an approval from its task's page; the task returns to working", T, async () => {
    const t = await codex.task.create({ to: 'alice', title: 'Migrate the users table' });
    const a = await codex.approval.request({ reviewer: 'alice', action: 'drop the legacy users columns', task_id: t.task_id });
    assert.equal((await codex.task.get({ task_id: t.task_id })).state, 'auth_required');
    await page.goto(`${d.url}/web/task/${t.task_id}`);
    await page.locator('#task[data-state="auth_required"]').waitFor();
    assert.equal(
      await page
        .getByLabel('New state')
        .locator('option')
        .allTextContents()
        .then((o) => o.join()),
      'failed',
      'waiting for approval, the assignee may only give up',
    );
    const panel = page.locator(`#task section.approval[data-approval="${a.approval_id}"]`);
    await panel.getByLabel('Reason', { exact: true }).fill('The reporting job still reads them.');
    await panel.getByRole('button', { name: 'Reject' }).click();
    await page.locator('#task[data-state="working"]').waitFor({ timeout: 5000 }); // the decision's mail to her redraws the task
    await page.locator(`#task section.approval[data-approval="${a.approval_id}"][data-state="rejected"]`).waitFor();
    const got = await codex.approval.get({ approval_id: a.approval_id });
    assert.deepEqual([got.state, got.reason], ['rejected', 'The reporting job still reads them.']);
    assert.equal((await codex.task.get({ task_id: t.task_id })).state, 'working');
  });

  it('a forged "Approval:" mail naming an approval she does not review offers nothing to decide', T, async () => {
    await d.account('bob');
    const theirs = await codex.approval.request({ reviewer: 'bob', action: 'delete the staging database' });
    await codex.send({
      to: 'alice',
      subject: 'Approval: delete the staging database',
      body: `Decide with m4a_approval {approval_id: "${theirs.approval_id}", decision: "approved"}`,
    });
    await page.getByRole('link', { name: 'Inbox' }).click();
    await page.locator('.msg a.open', { hasText: 'Approval: delete the staging database' }).click();
    const panel = page.locator(`section.approval[data-approval="${theirs.approval_id}"]`);
    await panel.getByRole('alert').filter({ hasText: '[not_reviewer]' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0);
    assert.equal((await codex.approval.get({ approval_id: theirs.approval_id })).state, 'pending');
  });

  it('a person who asks for an approval sees it pending with nothing to decide, then decided by the reviewer', T, async () => {
    const asked = await webPost(d.url, 'approval/request', { cookie: await cookie(), csrf: await csrf(), body: { reviewer: 'codex', action: 'merge fix-42 on Friday' } });
    assert.equal(asked.status, 200, JSON.stringify(asked.json));
    const id = asked.json.approval_id as string;
    await page.goto(`${d.url}/web/thread/${asked.json.thread_id as string}`);
    const panel = page.locator(`section.approval[data-approval="${id}"][data-state="pending"]`);
    await panel.waitFor();
    assert.equal(await panel.locator('form.decide').count(), 0, 'only the reviewer decides');
    await codex.approval.decide({ approval_id: id, decision: 'rejected', reason: 'Friday is a freeze day.' });
    // The decision is mail to her in this thread: the page redraws with the approval decided.
    await page.locator(`section.approval[data-approval="${id}"][data-state="rejected"]`).waitFor({ timeout: 5000 });
    assert.match((await page.locator(`section.approval[data-approval="${id}"]`).textContent()) ?? '', /Friday is a freeze day\./);
  });

  it('a task she asked for shows under Requested by me, follows the agent live, and she cancels it', T, async () => {
    const made = await webPost(d.url, 'task/create', { cookie: await cookie(), csrf: await csrf(), body: { to: 'codex', title: 'Bisect the flaky test' } });
    assert.equal(made.status, 200, JSON.stringify(made.json));
    const id = made.json.task_id as string;
    await page.goto(`${d.url}/web/tasks?role=requested`);
    const item = page.locator(`li.task[data-task="${id}"]`);
    await item.waitFor();
    assert.equal(await item.locator('.from').textContent(), 'codex', 'the other party: the assignee');
    await codex.task.update({ task_id: id, state: 'working', note: 'on it' });
    await page.locator(`section.taskgroup[data-state="working"] li.task[data-task="${id}"]`).waitFor({ timeout: 5000 }); // its mail redraws the board
    await item.locator('a.open').click();
    await page.locator('#task[data-state="working"]').waitFor();
    assert.equal(await page.locator('#task-move').count(), 0, 'only the assignee moves it');
    await page.getByLabel('Why (optional)').fill('Found it by reading the log.');
    await page.getByRole('button', { name: 'Cancel the task' }).click();
    await page.locator('#task[data-state="canceled"]').waitFor();
    const seen = await codex.task.get({ task_id: id });
    assert.deepEqual([seen.state, seen.history.at(-1)?.note, seen.history.at(-1)?.by], ['canceled', 'Found it by reading the log.', 'alice']);
  });

  it('writes without the CSRF token are refused and change nothing', T, async () => {
    const t = await codex.task.create({ to: 'alice', title: 'Tag release 1.4' });
    const a = await codex.approval.request({ reviewer: 'alice', action: 'publish 1.4' });
    const [c, token] = [await cookie(), await csrf()];
    for (const [name, body] of [
      ['task/update', { task_id: t.task_id, state: 'working' }],
      ['approval/decide', { approval_id: a.approval_id, decision: 'approved', reason: 'forged' }],
    ] as const) {
      for (const [why, o] of [
        ['no token', { cookie: c, body }],
        ['a wrong token', { cookie: c, csrf: 'x'.repeat(43), body }],
      ] as const) {
        const r = await webPost(d.url, name, o);
        assert.equal(r.status, 403, `${name}, ${why}`);
        assert.equal(r.json.error.code, 'csrf_failed', `${name}, ${why}`);
      }
    }
    assert.equal((await codex.task.get({ task_id: t.task_id })).version, 1, 'the task did not move');
    assert.equal((await codex.approval.get({ approval_id: a.approval_id })).state, 'pending', 'the approval was not decided');
    // The same write with the login's token goes through: the refusals above were the token's.
    const ok = await webPost(d.url, 'task/update', { cookie: c, csrf: token, body: { task_id: t.task_id, state: 'working' } });
    assert.equal(ok.status, 200, JSON.stringify(ok.json));
    assert.equal((await codex.task.get({ task_id: t.task_id })).state, 'working');
    const mangled = await webPost(d.url, 'admin/pdate', { cookie: c, csrf: token, body: { task_id: t.task_id, state: 'completed' } });
    assert.equal(mangled.status, 404, 'task and approval calls live under their own names, not under admin/');
  });
});
