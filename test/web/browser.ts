// Chromium for the browser tests: the Debian package driven by playwright-core (no download).
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.M4A_CHROMIUM ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or null. CI sets M4A_REQUIRE_CHROMIUM so a missing
 *  browser fails there instead of skipping. */
export function chromiumMissing(): string | null {
  if (existsSync(CHROMIUM)) return null;
  const why = `no Chromium at ${CHROMIUM} (apt-get install chromium, or set M4A_CHROMIUM)`;
  if (process.env.M4A_REQUIRE_CHROMIUM) throw new Error(why);
  return why;
}

/** `args` adds flags (the relay's test: trust exactly one certificate by its key's SPKI digest). */
export function launchChromium(args: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...args],
    timeout: 30_000,
  });
}

const SHOTS_DIR = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));

/** With M4A_SCREENSHOTS=1 (npm run screenshots) the main pages are saved for the README. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.M4A_SCREENSHOTS !== '1') return;
  mkdirSync(SHOTS_DIR, { recursive: true });
  await page.screenshot({ path: `${SHOTS_DIR}${name}.png`, fullPage: false });
}
