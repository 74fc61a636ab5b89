// Our marked block inside someone else's text file (Codex config.toml, AGENTS.md, GEMINI.md):
// appended at the end between two marker lines, so it can be found, replaced and removed exactly.
import { Refusal } from './refusal.js';

export interface Markers {
  start: string;
  end: string;
}

export const TOML_MARKERS: Markers = { start: '# >>> mail4agent (managed by m4a setup; m4a unsetup removes it) >>>', end: '# <<< mail4agent <<<' };
export const MD_MARKERS: Markers = { start: '<!-- >>> mail4agent >>> -->', end: '<!-- <<< mail4agent <<< -->' };

interface Found {
  start: number;
  end: number;
}

const lineRe = (s: string): RegExp => new RegExp(`^${s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\r?$`, 'gm');
export const eolOf = (text: string): string => (text.includes('\r\n') ? '\r\n' : '\n');

export function findBlock(text: string, m: Markers, file: string): Found | null {
  const starts = [...text.matchAll(lineRe(m.start))];
  const ends = [...text.matchAll(lineRe(m.end))];
  if (starts.length === 0 && ends.length === 0) return null;
  const s = starts[0]?.index;
  const e = ends[0]?.index;
  if (starts.length !== 1 || ends.length !== 1 || s === undefined || e === undefined || e < s)
    throw new Refusal(`the mail4agent block in ${file} is damaged (its marker lines are missing, repeated or out of order); fix it by hand`, file);
  const nl = text.indexOf('\n', e);
  return { start: s, end: nl === -1 ? text.length : nl + 1 };
}

export function blockText(m: Markers, body: string, eol: string): string {
  const b = body.replace(/\r?\n/g, eol);
  return `${m.start}${eol}${b}${b === '' || b.endsWith(eol) ? '' : eol}${m.end}${eol}`;
}

/** The text with our block in it (replacing the one there, else appended after a blank line). */
export function putBlock(text: string, m: Markers, body: string, file: string): { text: string; prefix: string | null } {
  const eol = eolOf(text);
  const block = blockText(m, body, eol);
  const found = findBlock(text, m, file);
  if (found) return { text: text.slice(0, found.start) + block + text.slice(found.end), prefix: null };
  const prefix = text === '' ? '' : text.endsWith('\n') ? eol : eol + eol;
  return { text: text + prefix + block, prefix };
}

/** The text without our block, and without the separator setup put before it. */
export function dropBlock(text: string, m: Markers, prefix: string, file: string): string {
  const found = findBlock(text, m, file);
  if (!found) return text;
  let start = found.start;
  if (prefix && text.slice(start - prefix.length, start) === prefix) start -= prefix.length;
  return text.slice(0, start) + text.slice(found.end);
}
