// The browser mailbox with a keyboard only, and what a screen reader and low vision need: every
// control has an accessible name, focus is visible, text has contrast (WCAG AA 4.5:1).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { chromiumMissing, launchChromium } from './browser.js';
import { PASSWORD, createPerson } from './web-helpers.js';

const skip = chromiumMissing() ?? false;
type Page$ = any;

/** Controls of the current page without an accessible name (label, aria-label(ledby), or text). */
const unnamed = (page: Page): Promise<string[]> =>
  page.evaluate(() => {
    const doc = (globalThis as Page$).document;
    const out: string[] = [];
    for (const el of doc.querySelectorAll('input, select, textarea, button, a[href]')) {
      if (el.type === 'hidden' || el.closest('[hidden]')) continue;
      const named =
        (el.labels && el.labels.length > 0) ||
        (el.getAttribute('aria-label') ?? '').trim() !== '' ||
        (el.getAttribute('aria-labelledby') ?? '') !== '' ||
        (el.tagName !== 'INPUT' && el.tagName !== 'SELECT' && el.tagName !== 'TEXTAREA' && (el.textContent ?? '').trim() !== '');
      if (!named) out.push(el.outerHTML.slice(0, 120));
    }
    return out;
  });

/** Contrast ratios (WCAG) of text against its nearest opaque background, for the worst elements. */
const lowContrast = (page: Page): Promise<string[]> =>
  page.evaluate(() => {
    const win = globalThis as Page$;
    const parse = (c: string): number[] | null => {
      const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(c);
      if (!m) return null;
      return [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])];
    };
    const lum = (rgb: number[]): number => {
      const [r, g, b] = rgb.slice(0, 3).map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
    };
    const bgOf = (el: Page$): number[] => {
      for (let e = el; e; e = e.parentElement) {
        const c = parse(win.getComputedStyle(e).backgroundColor);
        if (c && c[3]! >= 0.99) return c;
      }
      return [255, 255, 255, 1];
    };
    const bad: string[] = [];
    for (const el of win.document.querySelectorAll('body *')) {
      const own = [...el.childNodes].some((n: Page$) => n.nodeType === 3 && n.textContent.trim() !== '');
      if (!own || el.closest('[hidden]') || el.offsetParent === null) continue;
      const box = el.getBoundingClientRect();
      if (box.width <= 1 && box.height <= 1) continue; // visually hidden, for screen readers only
      const fg = parse(win.getComputedStyle(el).color);
      if (!fg) continue;
      const [a, b] = [lum(fg), lum(bgOf(el))];
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < 4.5) bad.push(`${el.tagName.toLowerCase()}.${el.className} "${el.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}:1`);
    }
    return bad;
  });

const focused = (page: Page) =>
  page.evaluate(() => {
    const win = globalThis as Page$;
    const el = win.document.activeElement;
    const cs = win.getComputedStyle(el);
    return {
      tag: el.tagName,
      text: (el.textContent ?? '').trim(),
      label: el.labels?.[0]?.textContent ?? '',
      outline: cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) > 0,
      shadow: cs.boxShadow !== 'none',
    };
  });

describe('browser mailbox: keyboard and accessibility', { skip, timeout: 120_000 }, () => {
  let d: TestDaemon;
  let browser: Browser;
  let page: Page;

  before(async () => {
    d = await startTestDaemon();
    await createPerson(d, 'alice', { display_name: 'Alice' });
    const codex = (await d.account('codex')).client;
    await codex.send({ to: 'alice', subject: 'keyboard check', body: 'Read me with the keyboard only.' });
    const task = await codex.task.create({ to: 'alice', title: 'contrast check', instructions: 'Every control named.' });
    await codex.approval.request({ reviewer: 'alice', action: 'publish the contrast report', task_id: task.task_id });
    browser = await launchChromium();
    const ctx = await browser.newContext({ viewport: { width: 1100, height: 720 } });
    // tsx keeps function names with a __name helper that the page lacks; give it a no-op one.
    await ctx.addInitScript({ content: 'globalThis.__name = (f) => f;' });
    page = await ctx.newPage();
    page.setDefaultTimeout(10_000);
  });
  after(async () => {
    await browser?.close();
    await d?.stop();
  });

  it('logs in, opens a message and reads it with the keyboard alone, focus always visible', async () => {
    await page.goto(`${d.url}/`);
    await page.getByLabel('Account').waitFor();
    assert.deepEqual(await unnamed(page), [], 'every control of the login page has a name');
    assert.deepEqual(await lowContrast(page), [], 'login page text contrast ≥ 4.5:1');
    // Tab from the top of the page to the account field, type, tab, type, Enter.
    let f = await focused(page);
    for (let i = 0; i < 10 && f.label !== 'Account'; i++) {
      await page.keyboard.press('Tab');
      f = await focused(page);
    }
    assert.equal(f.label, 'Account', 'the account field is reachable by Tab');
    assert.ok(f.outline || f.shadow, 'the focused field shows it');
    await page.keyboard.type('alice');
    await page.keyboard.press('Tab');
    assert.equal((await focused(page)).label, 'Password');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor();
    await page.locator('.msg', { hasText: 'keyboard check' }).waitFor();
    assert.deepEqual(await unnamed(page), [], 'every control of the inbox has a name');
    assert.deepEqual(await lowContrast(page), [], 'inbox text contrast ≥ 4.5:1');

    // Tab to the message and open it with Enter.
    let reached = false;
    for (let i = 0; i < 30 && !reached; i++) {
      await page.keyboard.press('Tab');
      f = await focused(page);
      reached = f.tag === 'A' && f.text.includes('keyboard check');
      if (f.tag !== 'BODY') assert.ok(f.outline || f.shadow, `focus is visible on ${f.tag} "${f.text.slice(0, 20)}"`);
    }
    assert.ok(reached, 'the message is reachable by Tab');
    await page.keyboard.press('Enter');
    await page.getByText('Read me with the keyboard only.').waitFor();
    assert.deepEqual(await unnamed(page), [], 'every control of the thread page has a name');
    assert.deepEqual(await lowContrast(page), [], 'thread page text contrast ≥ 4.5:1');
  });

  it('tasks, reservations, compose and directory pages: every control named, text with contrast', async () => {
    for (const name of ['Tasks', 'Reservations', 'Compose', 'Directory']) {
      await page.getByRole('link', { name, exact: true }).first().click();
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      await page.waitForLoadState('networkidle').catch(() => undefined);
      assert.deepEqual(await unnamed(page), [], `every control of ${name} has a name`);
      assert.deepEqual(await lowContrast(page), [], `${name} text contrast ≥ 4.5:1`);
    }
  });

  it("the board's New task form, open and refused: every control named, text with contrast", async () => {
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    await page.locator('#new-task summary').click();
    await page.getByRole('button', { name: 'Hand over the task' }).click();
    await page.locator('#task-create').getByRole('alert').filter({ hasText: 'A recipient and a title are needed.' }).waitFor();
    assert.deepEqual(await unnamed(page), [], 'every control of the New task form has a name');
    assert.deepEqual(await lowContrast(page), [], 'New task form text contrast ≥ 4.5:1');
  });

  it('the task page with its approval: every control named, text with contrast', async () => {
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    await page.locator('li.task a.open', { hasText: 'contrast check' }).click();
    await page.locator('#task section.approval form.decide').waitFor();
    assert.deepEqual(await unnamed(page), [], 'every control of the task page has a name');
    assert.deepEqual(await lowContrast(page), [], 'task page text contrast ≥ 4.5:1');
  });
});
