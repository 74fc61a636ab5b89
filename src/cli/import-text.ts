// Text from another mailbox made to fit ours (one-line subjects and notes, bounded bodies, no
// invisible or control characters), every change noted so the import can say what it changed.
import { LIMITS } from '../wire/limits.js';
import { isWellFormed, neutralise, unsafeChar, utf8Bytes } from '../wire/text.js';
import type { Note } from './import-mail-run.js';

const wellFormed = (s: string): string => (isWellFormed(s) ? s : (s as unknown as { toWellFormed(): string }).toWellFormed());

/** The longest prefix of `s` within `bytes` UTF-8 bytes that does not split a character. */
export function cutBytes(s: string, bytes: number): string {
  let n = 0;
  let i = 0;
  for (const ch of s) {
    const b = utf8Bytes(ch);
    if (n + b > bytes) break;
    n += b;
    i += ch.length;
  }
  return s.slice(0, i);
}

export class TextFitter {
  readonly notes: Note[] = [];

  constructor(private tool: string) {}

  note(where: string, what: string): void {
    this.notes.push({ where, what });
  }

  /** One line: line breaks as spaces, other invisible characters as \u escapes, cut to `limit`. */
  line(s: string, limit: number, where: string, field: string): string {
    let v = wellFormed(s);
    if (v !== s) this.note(where, `${field}: lone surrogates replaced by U+FFFD`);
    if (/[\r\n]/.test(v)) {
      v = v.replace(/\r?\n|\r/g, ' ');
      this.note(where, `${field}: line breaks as spaces`);
    }
    const bad = unsafeChar(v, 'line');
    if (bad) {
      v = neutralise(v);
      this.note(where, `${field}: ${bad.reason}: shown as \\u escapes`);
    }
    if (utf8Bytes(v) > limit) {
      v = `${cutBytes(v, limit - 3)}…`;
      this.note(where, `${field}: cut to ${limit} bytes`);
    }
    return v;
  }

  body(s: string, where: string): string {
    let v = wellFormed(s);
    if (v !== s) this.note(where, 'body: lone surrogates replaced by U+FFFD');
    if (v.includes('\r')) {
      v = v.replace(/\r\n?/g, '\n');
      this.note(where, 'body: CR line ends as LF');
    }
    const bad = unsafeChar(v, 'body');
    if (bad) {
      v = v.replace(/(?![\n\t])\p{Cc}/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      if (unsafeChar(v, 'body')) v = neutralise(v, true);
      this.note(where, `body: ${bad.reason}: shown as \\u escapes`);
    }
    const size = utf8Bytes(v);
    if (size > LIMITS.bodyBytes) {
      const tail = neutralise(`\n\n[cut by m4a import ${this.tool}: the body was ${size} bytes; all of it is in ${where}]`, true);
      v = cutBytes(v, LIMITS.bodyBytes - utf8Bytes(tail)) + tail;
      this.note(where, `body: cut to ${LIMITS.bodyBytes} bytes (it was ${size})`);
    }
    return v;
  }
}
