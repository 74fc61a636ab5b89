// Cursors are opaque to callers; inside they carry a store sequence number, never a timestamp.
import { MailError } from '../wire/errors.js';

export function encodeCursor(seq: number): string {
  return `c1.${seq.toString(36)}`;
}

export function decodeCursor(s: string): number {
  const m = /^c1\.([0-9a-z]{1,12})$/.exec(s);
  const n = m?.[1] ? parseInt(m[1], 36) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) throw new MailError('malformed', 'after: not a cursor from next_cursor', { field: 'after', reason: 'not a cursor' });
  return n;
}
