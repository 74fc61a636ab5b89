// The daemon's log for a support report: only its tail is read (a bounded number of bytes), and
// of each line only its level and its message, sanitized; other fields (which may hold addresses,
// paths or errors with anything in them) are never shown. The daemon logs as pino does, one JSON
// object a line; a line that is not one (a stack trace, `m4a serve`'s own words) counts as "text".
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import type { Sanitizer } from './report-sanitize.js';

export const LOG_TAIL_BYTES = 256 * 1024;
const TEMPLATES_SHOWN = 15;
const TEMPLATE_CHARS = 120;
const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

export interface LogStats {
  /** Bytes read from the end of the file, and the file's size. */
  read: number;
  size: number;
  lines: number;
  byLevel: Record<string, number>;
  /** The most frequent messages, with numbers as N, most frequent first. */
  templates: { level: string; template: string; count: number }[];
}

function tail(path: string, max: number): { text: string; size: number } {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const len = Math.min(size, max);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    let text = buf.toString('utf8');
    // A cut line at the start is not a line of its own.
    if (len < size) text = text.slice(text.indexOf('\n') + 1);
    return { text, size };
  } finally {
    closeSync(fd);
  }
}

export function logStats(path: string, s: Sanitizer, max = LOG_TAIL_BYTES): LogStats | null {
  if (!existsSync(path)) return null;
  const { text, size } = tail(path, max);
  const byLevel: Record<string, number> = {};
  const counts = new Map<string, { level: string; template: string; count: number }>();
  let lines = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    lines++;
    let level = 'text';
    let msg = line;
    try {
      const v = JSON.parse(line) as { level?: unknown; msg?: unknown };
      if (v && typeof v === 'object') {
        level = typeof v.level === 'number' ? (LEVELS[v.level] ?? String(v.level)) : typeof v.level === 'string' ? v.level : 'json';
        msg = typeof v.msg === 'string' ? v.msg : '(no message)';
      }
    } catch {
      /* not JSON: a text line */
    }
    byLevel[level] = (byLevel[level] ?? 0) + 1;
    const template = s
      .clean(msg.slice(0, 16_384))
      .replace(/(?<![A-Za-z]-|[A-Za-z0-9_])\d+(?:\.\d+)?/g, 'N')
      .slice(0, TEMPLATE_CHARS);
    const key = `${level}\u0000${template}`;
    const had = counts.get(key);
    if (had) had.count++;
    else counts.set(key, { level, template, count: 1 });
  }
  const templates = [...counts.values()].sort((a, b) => b.count - a.count || a.template.localeCompare(b.template)).slice(0, TEMPLATES_SHOWN);
  return { read: Math.min(size, max), size, lines, byLevel, templates };
}
