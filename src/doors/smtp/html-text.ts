// HTML-only mail as text, off the event loop: one worker thread per mail (HTML-only mail is rare;
// a spawn costs tens of ms), at most HTML_WORKERS at once, each ended after HTML_BUDGET_MS. A mail
// whose HTML does not convert in time keeps its text with the tags removed in one linear pass.
import { Worker } from 'node:worker_threads';

export const HTML_BUDGET_MS = 5_000;
const HTML_WORKERS = 2;
/** Worker heap: the input is at most HTML_INPUT_CHARS (parse-mail.ts); its DOM stays far below. */
const WORKER_HEAP = { maxYoungGenerationSizeMb: 16, maxOldGenerationSizeMb: 128 };

let running = 0;
const queue: (() => void)[] = [];

function spawn(html: string): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./html-worker.js', import.meta.url), { workerData: html, resourceLimits: WORKER_HEAP });
  // From TypeScript sources (tests under tsx) the worker registers tsx first: a worker thread does
  // not inherit the parent's module hooks.
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./html-worker.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { eval: true, workerData: html, resourceLimits: WORKER_HEAP });
}

/** The tags removed, the common entities decoded, each link's address kept beside its text: one
 *  pass over the pieces between `<`, each tag read once (this runs on the event loop). */
export function strippedText(html: string): string {
  const out: string[] = [];
  let hidden: string | null = null; // inside <script> or <style>: until its closing tag
  for (const [i, piece] of html.split('<').entries()) {
    const close = i === 0 ? -1 : piece.indexOf('>');
    if (i > 0 && close === -1) continue; // an unclosed tag: dropped with the rest of its piece
    const tag = piece.slice(0, Math.max(0, close));
    const name = /^\/?([a-z]+)/i.exec(tag)?.[1]?.toLowerCase();
    if (hidden) {
      if (tag.startsWith('/') && name === hidden) hidden = null;
      continue;
    }
    if ((name === 'script' || name === 'style') && !tag.startsWith('/')) {
      hidden = name;
      continue;
    }
    const href = /^a\s/i.test(tag) ? /href\s*=\s*["']?([^"'\s>]+)/i.exec(tag)?.[1] : undefined;
    if (href) out.push(` [${href}] `);
    out.push(piece.slice(close + 1), i > 0 ? ' ' : '');
  }
  return out
    .join('')
    .replace(/&(amp|lt|gt|quot|#39|nbsp);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", nbsp: ' ' })[e] ?? '')
    .replace(/[ \t]+/g, ' ');
}

export async function htmlToText(html: string): Promise<string> {
  if (running >= HTML_WORKERS) await new Promise<void>((go) => queue.push(go));
  running++;
  try {
    return await new Promise<string>((resolve) => {
      const worker = spawn(html);
      const done = (text: string): void => {
        clearTimeout(timer);
        void worker.terminate();
        resolve(text);
      };
      const timer = setTimeout(() => done(strippedText(html)), HTML_BUDGET_MS);
      // html-to-text drops what lies deeper than its depth limit: a text much shorter than the
      // tags' text alone lost words, so the linear one stands instead.
      worker.once('message', (text: string) => {
        const plain = strippedText(html);
        done(text.trim().length * 2 < plain.trim().length ? plain : text);
      });
      worker.once('error', () => done(strippedText(html)));
      worker.once('exit', () => done(strippedText(html)));
    });
  } finally {
    running--;
    queue.shift()?.();
  }
}
