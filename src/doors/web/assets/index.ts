// The web door's static files, built once at start: content, type and an ETag for revalidation.
import { createHash } from 'node:crypto';
import { APP_CSS } from './app-css.js';
import { JS_CORE } from './js-core.js';
import { JS_PAGES } from './js-pages.js';
import { JS_DIRECTORY } from './js-directory.js';
import { ICON_SVG, SHELL_HTML } from './shell-html.js';

export interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const APP_JS = `// mail4agent browser mailbox (served by the daemon; no framework, no CDN)\n(function () {\n'use strict';\n${JS_CORE}\n${JS_PAGES}\n${JS_DIRECTORY}\nboot();\n})();\n`;

function asset(text: string, type: string): Asset {
  const body = Buffer.from(text, 'utf8');
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
}

export const SHELL = asset(SHELL_HTML, 'text/html; charset=utf-8');

export const ASSETS: ReadonlyMap<string, Asset> = new Map([
  ['/web/assets/app.js', asset(APP_JS, 'text/javascript; charset=utf-8')],
  ['/web/assets/app.css', asset(APP_CSS, 'text/css; charset=utf-8')],
  ['/web/assets/icon.svg', asset(ICON_SVG, 'image/svg+xml')],
  ['/favicon.ico', asset(ICON_SVG, 'image/svg+xml')],
]);
