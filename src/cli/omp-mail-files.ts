// Reading omp-mail's directory (~/.omp/mail) for `m4a import omp-mail`: agents.json (the registry:
// session id → name, slug, aliases, cwd, pid, lastSeen, alive, cursor), one <sessionId>.jsonl
// mailbox per session (append-only; a line is {id, seq, from, fromName?, fromSlug?, to, subject,
// body, ts}; a broadcast is the same id in every mailbox) and <sessionId>.cursor (the extension's
// cursor: the highest seq it put in front of the model). Every file is read and checked before
// anything is sent: a damaged line is refused with its file and line number, and nothing changes.
// What mail4agent's rules refuse but a person can still read (invisible characters in a subject,
// a body over 64 KiB) is adjusted visibly and listed, never dropped in silence.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import { isWellFormed, neutralise, unsafeChar, utf8Bytes } from '../wire/text.js';
import { AGENT_SESSION_ID } from '../wire/capabilities.js';
import { IMPORT_LIMITS } from '../wire/import-limits.js';
import type { OmpMessageIn, OmpSessionIn } from '../wire/import-omp-mail.js';

export const FILE_LIMITS = { registryBytes: 8 << 20, mailboxBytes: 64 << 20, totalBytes: 512 << 20, cursorBytes: 64 } as const;

export interface Adjusted {
  file: string;
  line: number;
  field: string;
  change: string;
}

interface RegistryEntry {
  slug?: string;
  aliases?: string[];
  cwd?: string;
  lastSeen?: number;
  cursor: number;
}

export interface OmpMailDir {
  sessions: OmpSessionIn[];
  /** Oldest first (omp-mail's time, then mailbox and seq), as they are to arrive here. */
  messages: OmpMessageIn[];
  adjusted: Adjusted[];
}

// The file's name and the reason (a parser's message quotes the input) may hold control characters:
// the message shows them as \u escapes wherever it is printed (the details stay as they are).
const fail = (file: string, line: number, reason: string): MailError =>
  new MailError('malformed', `${neutralise(file)}${line ? `:${line}` : ''}: ${neutralise(reason)}; nothing was imported`, { field: 'file', file, line, reason });

const utf8 = new TextDecoder('utf-8', { fatal: true });
const wellFormed = (s: string): string => (isWellFormed(s) ? s : (s as unknown as { toWellFormed(): string }).toWellFormed());

/** The longest prefix of `s` within `bytes` UTF-8 bytes that does not split a character. */
function cut(s: string, bytes: number): string {
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

function readBounded(path: string, limit: number): Buffer {
  const st = statSync(path);
  if (!st.isFile()) throw fail(path, 0, 'not a regular file');
  if (st.size > limit)
    throw new MailError('too_large', `${path} is ${st.size} bytes, over the limit of ${limit}; nothing was imported`, { field: 'file', file: path, limit, actual: st.size });
  return readFileSync(path);
}

/** 1-based lines of character offsets into one text: its line starts are found once, then each
 *  offset is a binary search (a registry of 20,000 sessions runs to some 240,000). */
class LineIndex {
  private starts: number[] | null = null;
  constructor(private text: string) {}

  at(offset: number): number {
    if (!this.starts) {
      this.starts = [0];
      for (let i = this.text.indexOf('\n'); i !== -1; i = this.text.indexOf('\n', i + 1)) this.starts.push(i + 1);
    }
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Where each session's key is in the registry's text, looked for only when a line is to be named.
 *  Keys come in the text's order, so each search starts where the last one ended. */
class KeyLines {
  private lines: LineIndex;
  private from = 0;
  constructor(private text: string) {
    this.lines = new LineIndex(text);
  }

  lineOf(id: string): number {
    const key = new RegExp(`${escapeRegExp(JSON.stringify(id))}\\s*:`, 'g');
    key.lastIndex = this.from;
    let m = key.exec(this.text);
    if (!m) {
      key.lastIndex = 0;
      m = key.exec(this.text);
    }
    if (!m) return 1;
    this.from = m.index + m[0].length;
    return this.lines.at(m.index);
  }
}

/** A line number found when first asked for. */
type LineOf = number | (() => number);
const lineNo = (l: LineOf): number => (typeof l === 'number' ? l : l());

class Reader {
  adjusted: Adjusted[] = [];
  constructor(private dir: string) {}

  note(file: string, line: LineOf, field: string, change: string): void {
    this.adjusted.push({ file, line: lineNo(line), field, change });
  }

  /** A one-line text field: invisible and control characters shown as \u escapes, cut to `limit`. */
  line(s: string, limit: number, file: string, line: LineOf, field: string): string {
    let v = wellFormed(s);
    if (v !== s) this.note(file, line, field, 'lone surrogates replaced by U+FFFD');
    const bad = unsafeChar(v, 'line');
    if (bad) {
      v = neutralise(v);
      this.note(file, line, field, `${bad.reason}: shown as \\u escapes`);
    }
    if (utf8Bytes(v) > limit) {
      v = `${cut(v, limit - 3)}…`;
      this.note(file, line, field, `cut to ${limit} bytes`);
    }
    return v;
  }

  body(s: string, file: string, line: number): string {
    let v = wellFormed(s);
    if (v !== s) this.note(file, line, 'body', 'lone surrogates replaced by U+FFFD');
    if (v.includes('\r\n')) {
      v = v.replace(/\r\n/g, '\n');
      this.note(file, line, 'body', 'CRLF line ends as LF');
    }
    const bad = unsafeChar(v, 'body');
    if (bad) {
      v = v.replace(/(?![\n\t])\p{Cc}/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      this.note(file, line, 'body', `${bad.reason}: control characters shown as \\u escapes`);
    }
    const size = utf8Bytes(v);
    if (size > LIMITS.bodyBytes) {
      const tail = `\n\n[cut by m4a import omp-mail: the body was ${size} bytes; all of it is line ${line} of ${file}]`;
      v = cut(v, LIMITS.bodyBytes - utf8Bytes(neutralise(tail, true))) + neutralise(tail, true);
      this.note(file, line, 'body', `cut to ${LIMITS.bodyBytes} bytes (it was ${size})`);
    }
    return v;
  }

  registry(): Map<string, RegistryEntry> {
    const file = join(this.dir, 'agents.json');
    const out = new Map<string, RegistryEntry>();
    let buf: Buffer;
    try {
      buf = readBounded(file, FILE_LIMITS.registryBytes);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
      throw err;
    }
    const text = this.decode(buf, file);
    let reg: unknown;
    try {
      reg = JSON.parse(text);
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      const pos = /position (\d+)/.exec(msg);
      throw fail(file, pos ? new LineIndex(text).at(Number(pos[1])) : text.split('\n').length, `not JSON (${msg})`);
    }
    if (!reg || typeof reg !== 'object' || Array.isArray(reg)) throw fail(file, 1, 'not a JSON object of sessions');
    const keys = new KeyLines(text);
    for (const [id, v] of Object.entries(reg as Record<string, unknown>)) {
      let line = 0;
      const at = (): number => (line ||= keys.lineOf(id));
      if (!AGENT_SESSION_ID.test(id)) throw fail(file, at(), `${JSON.stringify(id.slice(0, 80))} is not an omp session id`);
      if (!v || typeof v !== 'object' || Array.isArray(v)) throw fail(file, at(), `session ${id}: not an object`);
      const a = v as Record<string, unknown>;
      const kind = (k: string, t: string): boolean => a[k] === undefined || a[k] === null || typeof a[k] === t;
      for (const [k, t] of [
        ['slug', 'string'],
        ['cwd', 'string'],
        ['name', 'string'],
        ['lastSeen', 'number'],
        ['cursor', 'number'],
        ['pid', 'number'],
        ['alive', 'boolean'],
      ] as const)
        if (!kind(k, t)) throw fail(file, at(), `session ${id}: "${k}" must be a ${t}`);
      if (a.aliases !== undefined && a.aliases !== null && !(Array.isArray(a.aliases) && a.aliases.every((x) => typeof x === 'string')))
        throw fail(file, at(), `session ${id}: "aliases" must be a list of strings`);
      const rec: RegistryEntry = { cursor: typeof a.cursor === 'number' ? a.cursor : 0 };
      if (typeof a.slug === 'string' && a.slug) rec.slug = this.line(a.slug, IMPORT_LIMITS.nameBytes, file, at, `${id}.slug`);
      if (typeof a.cwd === 'string' && a.cwd) {
        if (unsafeChar(a.cwd, 'line') || !isWellFormed(a.cwd) || utf8Bytes(a.cwd) > IMPORT_LIMITS.cwdBytes)
          this.note(file, at, `${id}.cwd`, 'left out: not a path mail4agent keeps');
        else rec.cwd = a.cwd;
      }
      if (typeof a.lastSeen === 'number' && Number.isFinite(a.lastSeen) && a.lastSeen >= 0) rec.lastSeen = Math.min(Math.floor(a.lastSeen), 8.64e15);
      const aliases = ((a.aliases as string[] | undefined) ?? []).filter((x) => x);
      if (aliases.length > IMPORT_LIMITS.aliases) this.note(file, at, `${id}.aliases`, `only the first ${IMPORT_LIMITS.aliases} kept`);
      if (aliases.length) rec.aliases = aliases.slice(0, IMPORT_LIMITS.aliases).map((x, i) => this.line(x, IMPORT_LIMITS.nameBytes, file, at, `${id}.aliases[${i}]`));
      out.set(id, rec);
    }
    return out;
  }

  decode(buf: Buffer, file: string, firstLine = 1): string {
    try {
      return utf8.decode(buf);
    } catch {
      // Name the line: decode line by line until one fails.
      let line = firstLine;
      let start = 0;
      for (let i = 0; i <= buf.length; i++) {
        if (i < buf.length && buf[i] !== 0x0a) continue;
        try {
          utf8.decode(buf.subarray(start, i));
        } catch {
          throw fail(file, line, 'not UTF-8 text');
        }
        line++;
        start = i + 1;
      }
      throw fail(file, firstLine, 'not UTF-8 text');
    }
  }

  cursor(id: string): number {
    const file = join(this.dir, `${id}.cursor`);
    try {
      const raw = readBounded(file, FILE_LIMITS.cursorBytes).toString('utf8');
      // As omp-mail's extension reads it.
      return Number(raw) || 0;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
  }

  mailbox(id: string, cursor: number, into: (OmpMessageIn & { seq: number; line: number })[]): void {
    const file = join(this.dir, `${id}.jsonl`);
    const text = this.decode(readBounded(file, FILE_LIMITS.mailboxBytes), file);
    const seen = new Map<string, number>();
    text.split('\n').forEach((raw, i) => {
      const line = i + 1;
      if (!raw.trim()) return;
      let v: unknown;
      try {
        v = JSON.parse(raw);
      } catch (err) {
        throw fail(file, line, `not JSON (${err instanceof Error ? err.message : String(err)})`);
      }
      if (!v || typeof v !== 'object' || Array.isArray(v)) throw fail(file, line, 'not a JSON object');
      const m = v as Record<string, unknown>;
      const str = (k: string): string => {
        if (typeof m[k] !== 'string') throw fail(file, line, `"${k}" must be a string`);
        return m[k];
      };
      const num = (k: string): number => {
        const n = m[k];
        if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw fail(file, line, `"${k}" must be a number, 0 or more`);
        return n;
      };
      const mid = str('id');
      const from = str('from');
      for (const [k, s] of [
        ['id', mid],
        ['from', from],
      ] as const)
        if (!s || utf8Bytes(s) > IMPORT_LIMITS.nameBytes || unsafeChar(s, 'line') || !isWellFormed(s))
          throw fail(file, line, `"${k}" must be one line of 1 to ${IMPORT_LIMITS.nameBytes} bytes`);
      const seq = num('seq');
      const ts = Math.min(Math.floor(num('ts')), 8.64e15);
      const subject = this.line(str('subject'), LIMITS.subjectBytes, file, line, 'subject');
      const body = this.body(str('body'), file, line);
      const first = seen.get(mid);
      if (first !== undefined) return this.note(file, line, 'id', `the same id as line ${first}: left out`);
      seen.set(mid, line);
      into.push({ mailbox: id, id: mid, from, subject, body, ts, delivered: seq <= cursor, seq, line });
    });
  }
}

/** Reads and checks the whole directory; throws a MailError naming the file (and line) at fault. */
export function readOmpMailDir(dir: string): OmpMailDir {
  let names: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new MailError('malformed', `${dir} is not a directory`, { field: 'dir', reason: 'not a directory' });
    names = readdirSync(dir).sort();
  } catch (err) {
    if (err instanceof MailError) throw err;
    throw new MailError('malformed', `no omp-mail directory at ${dir} (${(err as NodeJS.ErrnoException).code ?? String(err)})`, { field: 'dir', reason: 'missing' });
  }
  const r = new Reader(dir);
  const registry = r.registry();
  const mailboxes: string[] = [];
  let total = 0;
  for (const n of names.filter((x) => x.endsWith('.jsonl'))) {
    const id = n.slice(0, -'.jsonl'.length);
    if (!AGENT_SESSION_ID.test(id)) {
      r.note(join(dir, n), 0, 'file', 'left out: its name is not <omp session id>.jsonl');
      continue;
    }
    total += statSync(join(dir, n)).size;
    if (total > FILE_LIMITS.totalBytes)
      throw new MailError('too_large', `the mailboxes in ${dir} are over ${FILE_LIMITS.totalBytes} bytes together; nothing was imported`, {
        field: 'dir',
        limit: FILE_LIMITS.totalBytes,
        actual: total,
      });
    mailboxes.push(id);
  }
  if (registry.size === 0 && mailboxes.length === 0 && !names.includes('agents.json'))
    throw new MailError('malformed', `no omp-mail files in ${dir} (agents.json, <session id>.jsonl)`, { field: 'dir', reason: 'empty' });

  const lines: (OmpMessageIn & { seq: number; line: number })[] = [];
  for (const id of mailboxes) {
    // Delivered: at or below the registry's cursor (replayed at the last register) or the
    // extension's own (written as each message reached the model, live ones too).
    r.mailbox(id, Math.max(registry.get(id)?.cursor ?? 0, r.cursor(id)), lines);
  }
  lines.sort((a, b) => a.ts - b.ts || (a.mailbox < b.mailbox ? -1 : a.mailbox > b.mailbox ? 1 : 0) || a.seq - b.seq || a.line - b.line);

  const sessions: OmpSessionIn[] = [];
  for (const [id, a] of registry)
    sessions.push({
      id,
      ...(a.slug !== undefined ? { slug: a.slug } : {}),
      ...(a.aliases !== undefined ? { aliases: a.aliases } : {}),
      ...(a.cwd !== undefined ? { cwd: a.cwd } : {}),
      ...(a.lastSeen !== undefined ? { last_seen: a.lastSeen } : {}),
    });
  for (const id of mailboxes) if (!registry.has(id)) sessions.push({ id });
  return {
    sessions,
    messages: lines.map(({ mailbox, id, from, subject, body, ts, delivered }) => ({ mailbox, id, from, subject, body, ts, delivered })),
    adjusted: r.adjusted,
  };
}
