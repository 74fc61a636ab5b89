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

// C0 controls, DEL and C1 controls.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROL_EXCEPT_NL_TAB = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

export function hasControl(s: string): boolean {
  return CONTROL.test(s);
}

export function hasControlExceptNlTab(s: string): boolean {
  return CONTROL_EXCEPT_NL_TAB.test(s);
}

/** Lone surrogates are valid in JSON text but are not Unicode text; refuse them. */
export function isWellFormed(s: string): boolean {
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}
