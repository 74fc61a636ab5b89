// Byte-level checks shared by the schemas: limits are in UTF-8 bytes, not UTF-16 code units.

export function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

const SELECTOR = /^[A-Za-z0-9._@+-]+$/;

/** Why a selector (account id, room name, idempotency key, ref kind) is refused, or null. */
export function selectorProblem(s: string): string | null {
  if (s.length === 0) return 'must not be empty';
  if (!SELECTOR.test(s)) return 'only letters, digits and . _ @ + - are allowed';
  if (s.startsWith('-') || s.startsWith('.')) return 'must not start with - or .';
  if (s.includes('..')) return 'must not contain ..';
  return null;
}

// Characters that let text fake structure where a model or a person reads it: C0 and C1 controls
// (U+0085 NEL ends a line), the Unicode line and paragraph separators, the bidirectional controls
// that reorder what is shown, and invisible characters: zero-width space, word joiner and the
// invisible operators, BOM, interlinear annotations, and the tag characters (which smuggle hidden
// ASCII to models). ZWNJ and ZWJ (U+200C, U+200D) are kept: emoji sequences and several scripts
// need them, and they neither break a line nor reorder text.
const FORMAT = '\\u061c\\u180e\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u206f\\ufeff\\ufff9-\\ufffb\\u{e0000}-\\u{e007f}';
const C1 = '\\u007f-\\u009f';
const UNSAFE_LINE = new RegExp(`[\\u0000-\\u001f${C1}${FORMAT}]`, 'u');
const UNSAFE_LINE_G = new RegExp(UNSAFE_LINE.source, 'gu');
const CONTROL_IN_BODY = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f${C1}]`, 'u');
const UNSAFE_SHOWN_G = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f${C1}${FORMAT}]`, 'gu');
// JSON.stringify escapes C0 itself; what it leaves raw inside strings is C1 and the format set.
const UNSAFE_IN_JSON_G = new RegExp(`[${C1}${FORMAT}]`, 'gu');

const BIDI = new Set([0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]);

export const codePointName = (cp: number): string => `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;

function kindOf(cp: number): string {
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return 'a control character';
  if (cp === 0x2028) return 'the line separator';
  if (cp === 0x2029) return 'the paragraph separator';
  if (BIDI.has(cp)) return 'a bidirectional control';
  if (cp >= 0xe0000) return 'a tag character';
  return 'an invisible format character';
}

/** Why a string is refused, naming its first offending character, or null. A single line (subject,
 *  label, name …) refuses all of the above; a body refuses controls other than \n and \t and keeps
 *  format characters (right-to-left writing needs the marks), neutralised wherever it is shown. */
export function unsafeChar(s: string, kind: 'line' | 'body'): { codePoint: string; reason: string } | null {
  const m = (kind === 'line' ? UNSAFE_LINE : CONTROL_IN_BODY).exec(s);
  if (!m) return null;
  const cp = m[0].codePointAt(0) ?? 0;
  const only = kind === 'body' && kindOf(cp) === 'a control character' ? '; only \\n and \\t are' : '';
  return { codePoint: codePointName(cp), reason: `${codePointName(cp)} (${kindOf(cp)}) is not allowed${only}` };
}

const hex4 = (unit: number): string => `\\u${unit.toString(16).padStart(4, '0')}`;

/** Text for a model or a terminal: every such character becomes visible `\u2028`-style text, so
 *  it can neither start a line nor reorder or hide what follows. `multiline` keeps \n and \t. */
export function neutralise(s: string, multiline = false): string {
  return s.replace(multiline ? UNSAFE_SHOWN_G : UNSAFE_LINE_G, (c) => {
    const cp = c.codePointAt(0) ?? 0;
    return cp > 0xffff ? `\\u{${cp.toString(16)}}` : hex4(cp);
  });
}

/** JSON.stringify with those characters written as \u escapes: the same value to a parser, but a
 *  model reading the text sees the escape, not a line break, a reordering or hidden text. */
export function safeJson(v: unknown, space?: number): string {
  return JSON.stringify(v, null, space).replace(UNSAFE_IN_JSON_G, (c) => hex4(c.charCodeAt(0)) + (c.length > 1 ? hex4(c.charCodeAt(1)) : ''));
}

/** A string quoted so it can neither close its quotes nor fake a line: JSON string quoting, then
 *  the characters above escaped. */
export const quoteForModel = (s: string): string => safeJson(s);

/** Lone surrogates are valid in JSON text but are not Unicode text; refuse them. */
export function isWellFormed(s: string): boolean {
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}
