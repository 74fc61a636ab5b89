// An inbox page within a byte budget (MCP results must stay far under clients' caps): bodies that
// do not fit are cut with a marker telling the reader to fetch the message with get; if even the
// headers do not fit, the page ends earlier and its cursor says so. Nothing is ever skipped.
import type { MessageOut } from '../wire/ops.js';
import { safeJson } from '../wire/text.js';
import { fenceClose } from './email-fence.js';

const marker = (id: string, cut: number): string => `\n…[${cut} more bytes cut; call m4a_mail_get with message_id ${id} for the whole body]`;
// Measured as the MCP door writes it (safeJson: some characters as \u escapes).
const bytes = (v: unknown): number => Buffer.byteLength(safeJson(v));

function cutTo(m: MessageOut, max: number): MessageOut {
  const body = m.body;
  if (body === undefined) return m;
  const buf = Buffer.from(body, 'utf8');
  if (buf.length <= max) return m;
  // Decoding a truncated buffer turns a partial last character into U+FFFD; drop it.
  const kept = new TextDecoder().decode(buf.subarray(0, Math.max(0, max))).replace(/\uFFFD$/, '');
  // A fenced body keeps its closing fence line (email-fence.ts) when its middle is cut.
  const close = m.from_kind === 'external' ? `\n${fenceClose(m.message_id)}` : '';
  return { ...m, body: kept + marker(m.message_id, buf.length - Buffer.byteLength(kept)) + close, body_truncated: true };
}

/** How many of `messages` to keep and their (possibly cut) form, so the page fits `budget` bytes
 *  given `overhead` bytes for the rest of the response. At least one message is always kept. */
export function fitToBudget(messages: MessageOut[], budget: number, overhead: number): MessageOut[] {
  if (overhead + bytes(messages) <= budget) return messages;
  const bare = messages.map((m) => cutTo(m, 0));
  let n = bare.length;
  let size = overhead + bytes(bare);
  while (n > 1 && size > budget) {
    size -= bytes(bare[n - 1]) + 1;
    n--;
  }
  const kept = messages.slice(0, n);
  const spare = budget - overhead - bytes(bare.slice(0, n));
  const share = Math.max(0, Math.floor(spare / n) - 16);
  return kept.map((m) => cutTo(m, share));
}
