// Byte-level checks shared by the schemas: limits are in UTF-8 bytes, not UTF-16 code units.

export function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** `s` cut to at most `maxBytes` of UTF-8, never inside a character; `…` marks a cut. */
export function clipUtf8(s: string, maxBytes: number): string {
  if (utf8Bytes(s) <= maxBytes) return s;
  let out = '';
  let bytes = utf8Bytes('…');
  for (const ch of s) {
    bytes += utf8Bytes(ch);
    if (bytes > maxBytes) break;
    out += ch;
  }
  return `${out}…`;
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

// Characters that let text fake structure or hide data where a model or a person reads it, from
// Unicode properties rather than a hand-kept list: controls (Cc: C0, DEL, C1; U+0085 NEL ends a
// line), format characters (Cf: bidi controls, zero-width space, BOM, the prepended concatenation
// marks, tags that smuggle hidden ASCII to models …), the line and paragraph separators, and the
// default-ignorable characters, which render as nothing: variation selectors (a run of them hides
// bytes; the Mongolian ones too), the Hangul fillers, U+034F and the reserved ignorable ranges.
// Kept: ZWNJ and ZWJ (U+200C, U+200D; emoji sequences like 👩‍💻 and several scripts need them)
// and U+FE0F, the emoji presentation selector that follows many everyday emoji (❤️, ☀️): one fixed
// value hides next to nothing, whereas the 255 selectors U+FE00–U+FE0E and U+E0100–U+E01EF encode
// a byte each. None of the three kept breaks a line or reorders text.
const KEPT = '\\u200c\\u200d\\ufe0f';
const REFUSED = '\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Default_Ignorable_Code_Point}';
/** The refused set minus KEPT and `alsoKept` (a character class body), as one regex source. */
const refused = (alsoKept = ''): string => `(?![${KEPT}${alsoKept}])[${REFUSED}]`;
const UNSAFE_LINE = new RegExp(refused(), 'u');
const UNSAFE_LINE_G = new RegExp(refused(), 'gu');
const CONTROL_IN_BODY = /(?![\n\t])\p{Cc}/u;
const UNSAFE_SHOWN_G = new RegExp(refused('\\n\\t'), 'gu');
// JSON.stringify escapes C0 itself (and indents with raw \n); what it leaves raw is the rest.
const UNSAFE_IN_JSON_G = new RegExp(refused('\\u0000-\\u001f'), 'gu');

const BIDI = new Set([0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]);
const HANGUL_FILLERS = new Set([0x115f, 0x1160, 0x3164, 0xffa0]);
const VARIATION_SELECTOR = /\p{Variation_Selector}/u;

export const codePointName = (cp: number): string => `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;

function kindOf(cp: number): string {
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return 'a control character';
  if (cp === 0x2028) return 'the line separator';
  if (cp === 0x2029) return 'the paragraph separator';
  if (BIDI.has(cp)) return 'a bidirectional control';
  if (cp >= 0xe0000 && cp <= 0xe007f) return 'a tag character';
  if (VARIATION_SELECTOR.test(String.fromCodePoint(cp))) return 'a variation selector';
  if (HANGUL_FILLERS.has(cp)) return 'a Hangul filler';
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
