// Prefix searches as key ranges, shared by the SQL stores.

/** The least string above every string that starts with `prefix`, in code point order (which is
 *  SQLite's BINARY order of UTF-8 text), or null when none exists (an empty prefix). */
export function prefixUpperBound(prefix: string): string | null {
  const cps = Array.from(prefix);
  for (let last = cps.pop(); last !== undefined; last = cps.pop()) {
    let next = (last.codePointAt(0) as number) + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000; // surrogates never occur in text
    if (next <= 0x10ffff) return cps.join('') + String.fromCodePoint(next);
  }
  return null;
}
