// html-to-text's settings for mail: scripts, styles and images dropped, links kept as text
// ("confirm [https://…]") so the engine's link extraction sees them. Run on a worker (html-text.ts).
import { convert } from 'html-to-text';

/** HTML read for the text: the engine keeps 64 KiB of body, so more input only costs time. */
export const HTML_INPUT_CHARS = 256 * 1024;

const HTML_OPTIONS = {
  wordwrap: false as const,
  limits: { maxInputLength: HTML_INPUT_CHARS, maxDepth: 200, maxChildNodes: 10_000 },
  selectors: [
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true, linkBrackets: ['[', ']'] as [string, string] } },
    { selector: 'img', format: 'skip' },
  ],
};

/** Text of an HTML body: scripts, styles and images dropped, links visible. */
export function htmlText(html: string): string {
  return convert(html, HTML_OPTIONS);
}
