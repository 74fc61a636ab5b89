// What a verification mail asks of its reader: the one-time codes and the links in it. Pure and
// bounded: every pattern here is a single character class or a literal alternation, scanned once
// (no nested quantifiers), so a 64 KiB body costs one linear pass per pattern.
//
// Codes (docs/email.md, "Codes and links"):
// - a candidate is a run of 4-8 ASCII digits, or 4-8 ASCII letters and digits with at least one
//   digit and its letters in one case (`A1B2C3`, `x7k9q2`, never `OAuth2`); `123 456`, `123-456`,
//   `ABCD-1234` count as one code without the separator; `G-123456` gives `123456`;
// - it is near a key word (code, verification, verify, OTP, passcode, one-time, PIN, 2FA,
//   two-factor, código, codice, kode, Bestätigungscode, 验证码, 認証コード, 인증번호, код …):
//   within 120 characters, or anywhere in a subject that has one (and then anywhere in a body
//   that has none), or alone on its line of a mail that has one; "zip/postal/area/promo/coupon/discount code" is not a key word;
// - refused: a year (1900-2099), a date (YYYYMMDD, or parts joined by - / . :), a time (12:30,
//   1230 UTC, 10 pm), a price ($, €, £, ¥, USD, EUR …), a hex colour (#a1b2c3), a number in a
//   URL or an e-mail address, a part of a longer number (phone numbers: digit groups with spaces,
//   dots or dashes), a number labelled order, invoice, ticket, ref, account, phone, tel, zip …;
// - at most 5, subject first, then in order, deduplicated.
//
// Links: http and https URLs of the text (subject and body), trailing punctuation and unmatched
// closing brackets stripped, `&amp;` decoded, deduplicated, each at most 2,048 characters (longer
// ones are dropped, never cut); the verification-looking ones (a path or query with verify,
// confirm, activate, token, magic, login, sign-in, auth, reset, signup, invite, otp …, but not an
// unsubscribe link) first, the rest after, each group in order; at most 20.

export interface Extracted {
  codes: string[];
  links: string[];
}

export const EXTRACT_LIMITS = { codes: 5, links: 20, linkChars: 2048, near: 120, scanLinks: 400 } as const;

const KEY = new RegExp(
  [
    '\\b(?:zip|postal|post|area|promo|promotional|coupon|discount|source|qr|country|bar|dress|tax|error|status|color|colour|reference)[ -]?codes?\\b',
    '\\b(?:codes?|verification|verify|verifying|otp|passcode|one[- ]time|pin|2fa|two[- ]factor|2[- ]step|c[oó]digo|codice|kode|kod|bestätigungscode|sicherheitscode|anmeldecode|verifizierungscode|verificatiecode)\\b',
    '验证码|驗證碼|校验码|认证码|動態碼|確認碼|認証コード|確認コード|ワンタイム|인증번호|인증 코드|код',
  ].join('|'),
  'giu',
);
/** Words that label a number as something other than a code, just before it. */
const LABEL =
  /\b(?:order|invoice|ticket|ref|reference|account|acct|phone|tel|fax|zip|postal|id|no|number|usd|eur|gbp|jpy|cad|aud|chf|total|price|amount|room|flight|booking|case|tracking|item|sku|suite|apt|street|box)\W{0,3}$/i;
const AFTER_UNIT = /^\s?(?:usd|eur|gbp|jpy|cad|aud|chf|utc|gmt|cet|est|pst|am|pm|h|hrs|hours|min|mins|minutes|sec|secs|seconds|days|km|mi|kb|mb|gb|px|%|€|\$|£|¥)(?![A-Za-z])/i;
const CURRENCY_BEFORE = /[$€£¥₹]\s?$/;
const URLISH = /https?:\/\/[^\s<>"'`]+|www\.[^\s<>"'`]+/gi;
const RUN = /[A-Za-z0-9]+/g;
const URL_RE = /https?:\/\/[^\s<>"'`]+/gi;
const VERIFYISH = /verif|confirm|activat|token|magic|login|log-in|signin|sign-in|sign_in|auth|reset|signup|sign-up|register|invite|otp|passw|one-time|onetime|validate/i;

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const isAlnum = (c: string | undefined): boolean => c !== undefined && /[A-Za-z0-9]/.test(c);

/** Positions of key words, sorted; the excluded phrases ("zip code") are matched first and skipped. */
function keyPositions(text: string): number[] {
  const out: number[] = [];
  KEY.lastIndex = 0;
  for (let m = KEY.exec(text); m; m = KEY.exec(text)) {
    if (!/^(?:zip|postal|post|area|promo|promotional|coupon|discount|source|qr|country|bar|dress|tax|error|status|color|colour|reference)[ -]?codes?$/i.test(m[0]))
      out.push(m.index, m.index + m[0].length);
  }
  return out;
}

function near(keys: number[], start: number, end: number): boolean {
  // Binary search for the first key position at or after start - near.
  let lo = 0;
  let hi = keys.length;
  const from = start - EXTRACT_LIMITS.near;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (keys[mid]! < from) lo = mid + 1;
    else hi = mid;
  }
  return lo < keys.length && keys[lo]! <= end + EXTRACT_LIMITS.near;
}

function looksLikeCode(s: string): boolean {
  if (s.length < 4 || s.length > 8) return false;
  if (/^\d+$/.test(s)) {
    if (s.length === 4 && /^(?:19|20)\d\d$/.test(s)) return false;
    if (s.length === 8 && /^(?:19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])$/.test(s)) return false;
    return true;
  }
  if (!/\d/.test(s)) return false;
  return !(/[a-z]/.test(s) && /[A-Z]/.test(s));
}

/** The codes of one text, in order; `keys` and `anywhere` say what counts as near a key word. */
function codesIn(raw: string, keys: number[], anywhere: boolean, standalone: boolean, out: string[]): void {
  // URLs and e-mail addresses become blanks of the same length: positions stay, their digits go.
  const text = blankAddresses(raw.replace(URLISH, (u) => ' '.repeat(u.length)));
  const runs: { s: number; e: number }[] = [];
  RUN.lastIndex = 0;
  for (let m = RUN.exec(text); m; m = RUN.exec(text)) runs.push({ s: m.index, e: m.index + m[0].length });
  for (let i = 0; i < runs.length && out.length < EXTRACT_LIMITS.codes; i++) {
    const r = runs[i]!;
    let code = text.slice(r.s, r.e);
    let end = r.e;
    const next = runs[i + 1];
    const sep = text[r.e];
    // 123 456, 123-456, ABCD-1234: two halves of 3-4 that make one code.
    if (next && next.s === r.e + 1 && (sep === '-' || (sep === ' ' && /^\d+$/.test(code))) && code.length >= 3 && code.length <= 4) {
      const second = text.slice(next.s, next.e);
      const joined = code + second;
      const digitsBoth = /^\d+$/.test(joined);
      if (second.length === code.length && (digitsBoth || (sep === '-' && /^[A-Z0-9]+$/.test(joined))) && looksLikeCode(joined) && !isDigit(afterSep(text, next.e))) {
        code = joined;
        end = next.e;
        i++;
      }
    }
    const before = text[r.s - 1];
    const after = text[end];
    const after2 = text[end + 1];
    // G-123456: a short uppercase prefix and a dash.
    const prefixed = before === '-' && /(?:^|[^A-Za-z0-9])[A-Z]{1,3}$/.test(text.slice(Math.max(0, r.s - 5), r.s - 1));
    if (!looksLikeCode(code)) continue;
    if (!prefixed && before !== undefined && '$€£¥#+:/.,-@=&?_%\\'.includes(before)) continue;
    if (after !== undefined && ':/.,-@_\\'.includes(after) && isAlnum(after2)) continue;
    if (after === '%' || (after === '-' && isAlnum(after2))) continue;
    // Part of a longer number: digit groups on either side across one space, dot or dash.
    if (isDigit(code[0]) && isDigit(beforeSep(text, r.s)) && !prefixed) continue;
    if (isDigit(code[code.length - 1]) && isDigit(afterSep(text, end))) continue;
    const head = text.slice(Math.max(0, r.s - 24), r.s);
    if (LABEL.test(head) || CURRENCY_BEFORE.test(head)) continue;
    if (AFTER_UNIT.test(text.slice(end, end + 9))) continue;
    const alone = standalone && lineIs(text, r.s, end);
    if (!anywhere && !alone && !near(keys, r.s, end)) continue;
    if (!out.includes(code)) out.push(code);
  }
}

/** Each word holding an `@` (an e-mail address) as blanks; one pass, each character looked at
 *  at most twice (a regex for it would retry from every start: quadratic on a long word). */
function blankAddresses(text: string): string {
  if (!text.includes('@')) return text;
  const out = text.split('');
  const blank = (c: string | undefined): boolean => c === undefined || /\s/.test(c);
  let done = -1;
  for (let i = text.indexOf('@'); i >= 0; i = text.indexOf('@', i + 1)) {
    if (i <= done) continue;
    let s = i;
    while (s > 0 && s - 1 > done && !blank(text[s - 1])) s--;
    let e = i + 1;
    while (e < text.length && !blank(text[e])) e++;
    for (let k = s; k < e; k++) out[k] = ' ';
    done = e;
  }
  return out.join('');
}

/** The character after one separator (space, dot, dash, paren) following `end`, if any. */
function afterSep(text: string, end: number): string | undefined {
  const c = text[end];
  return c === ' ' || c === '.' || c === '-' || c === ')' ? text[end + 1] : undefined;
}

function beforeSep(text: string, start: number): string | undefined {
  const c = text[start - 1];
  return c === ' ' || c === '.' || c === '-' || c === '(' ? text[start - 2] : undefined;
}

/** Whether [s, e) is all of its line but blanks. */
function lineIs(text: string, s: number, e: number): boolean {
  for (let i = s - 1; i >= 0 && text[i] !== '\n'; i--) if (text[i] !== ' ' && text[i] !== '\t' && text[i] !== '\r') return false;
  for (let i = e; i < text.length && text[i] !== '\n'; i++) if (text[i] !== ' ' && text[i] !== '\t' && text[i] !== '\r') return false;
  return true;
}

/** A URL's trailing punctuation and unmatched closing brackets are the sentence's, not the URL's. */
function trimUrl(u: string): string {
  let s = u.replace(/&amp;/g, '&');
  for (;;) {
    const last = s[s.length - 1];
    if (last === undefined) return s;
    if ('.,;:!?\'"*'.includes(last)) s = s.slice(0, -1);
    else if (last === ')' && count(s, '(') < count(s, ')')) s = s.slice(0, -1);
    else if (last === ']' && count(s, '[') < count(s, ']')) s = s.slice(0, -1);
    else if (last === '}' && count(s, '{') < count(s, '}')) s = s.slice(0, -1);
    else return s;
  }
}

function count(s: string, c: string): number {
  let n = 0;
  for (const x of s) if (x === c) n++;
  return n;
}

function linksIn(text: string): string[] {
  const seen = new Set<string>();
  const first: string[] = [];
  const rest: string[] = [];
  URL_RE.lastIndex = 0;
  for (let m = URL_RE.exec(text); m && seen.size < EXTRACT_LIMITS.scanLinks; m = URL_RE.exec(text)) {
    if (m[0].length > EXTRACT_LIMITS.linkChars + 8) continue;
    const u = trimUrl(m[0]);
    if (u.length > EXTRACT_LIMITS.linkChars || seen.has(u)) continue;
    let url: URL;
    try {
      url = new URL(u);
    } catch {
      continue;
    }
    if (!url.hostname) continue;
    seen.add(u);
    const tail = url.pathname + url.search;
    (VERIFYISH.test(tail) && !/unsubscribe|opt-?out/i.test(tail) ? first : rest).push(u);
  }
  return [...first, ...rest].slice(0, EXTRACT_LIMITS.links);
}

/** The codes and links of a mail's subject and body (rules above). */
export function extractCodesAndLinks(subject: string, body: string): Extracted {
  const subjectKeys = keyPositions(subject);
  const bodyKeys = keyPositions(body);
  const any = subjectKeys.length > 0 || bodyKeys.length > 0;
  const codes: string[] = [];
  codesIn(subject, subjectKeys, subjectKeys.length > 0, false, codes);
  // A body with no key word of its own is read whole when its subject has one.
  codesIn(body, bodyKeys, subjectKeys.length > 0 && bodyKeys.length === 0, any, codes);
  return { codes, links: linksIn(`${subject}\n${body}`) };
}
