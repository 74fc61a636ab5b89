// Cursors are opaque to callers; inside they carry a store sequence number, never a timestamp.
import { MailError } from '../wire/errors.js';
import type { SearchTier } from '../store/types.js';

export function encodeCursor(seq: number): string {
  return `c1.${seq.toString(36)}`;
}

export function decodeCursor(s: string): number {
  const m = /^c1\.([0-9a-z]{1,12})$/.exec(s);
  const n = m?.[1] ? parseInt(m[1], 36) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) throw new MailError('malformed', 'after: not a cursor from next_cursor', { field: 'after', reason: 'not a cursor' });
  return n;
}

/** A search's position: the tier and a seq in it (`s1.<tier>.<seq>`). The inbox's cursors (`c1.`,
 *  one seq: the order before the tiers) are refused, as any other text is. */
export function encodeSearchCursor(tier: SearchTier, seq: number): string {
  return `s1.${tier}.${seq.toString(36)}`;
}

export function decodeSearchCursor(s: string): { tier: SearchTier; seq: number } {
  const m = /^s1\.([12])\.([0-9a-z]{1,11})$/.exec(s);
  const seq = m?.[2] ? parseInt(m[2], 36) : NaN;
  if (!m || !Number.isSafeInteger(seq)) throw new MailError('malformed', 'cursor: not a cursor from next_cursor', { field: 'cursor', reason: 'not a cursor from next_cursor' });
  return { tier: m[1] === '1' ? 1 : 2, seq };
}
