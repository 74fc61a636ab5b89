// One received message (RFC 5322 bytes) as the engine's InboundMail, less the account. Parsed by
// postal-mime (mailparser is in maintenance mode and points to it); a mail without a text part has
// its HTML converted by html-to-text, links kept as text ("Confirm [https://…]") so the engine's
// link extraction sees them.
import PostalMime, { type Email } from 'postal-mime';
import type { InboundMail } from '../../engine/email-book.js';
import { htmlToText } from './html-text.js';
import { HTML_INPUT_CHARS } from './html-convert.js';

export type ParsedMail = Omit<InboundMail, 'account' | 'envelopeFrom'>;

/** `<a@b> <c@d>` (References, In-Reply-To) as its ids, angle brackets kept as the headers have them. */
function messageIds(v: string | undefined): string[] {
  if (!v) return [];
  const ids = v.match(/<[^<>\s]+>/g);
  return ids ?? v.split(/\s+/).filter(Boolean);
}

const headerOf = (e: Email, key: string): string | null => e.headers.find((h) => h.key === key)?.value ?? null;

/** RFC 3834 and the common older headers: a mail a program sent by itself, never to be answered. */
export function isAutoSubmitted(e: Email): boolean {
  const auto = headerOf(e, 'auto-submitted');
  if (auto !== null && auto.split(';')[0]?.trim().toLowerCase() !== 'no') return true;
  const precedence = headerOf(e, 'precedence')?.trim().toLowerCase();
  if (precedence && ['bulk', 'junk', 'list', 'auto_reply'].includes(precedence)) return true;
  return e.headers.some((h) => h.key === 'x-autoreply' || h.key === 'x-autorespond');
}

export async function parseMail(raw: Uint8Array): Promise<ParsedMail> {
  const e = await PostalMime.parse(raw, { attachmentEncoding: 'arraybuffer' });
  const from = e.from && !e.from.group ? e.from.address.trim().toLowerCase() : '';
  const inReplyTo = messageIds(e.inReplyTo)[0] ?? null;
  return {
    from,
    subject: e.subject ?? '',
    text: e.text ?? (e.html ? await htmlToText(e.html.slice(0, HTML_INPUT_CHARS)) : ''),
    messageId: e.messageId?.trim() || null,
    inReplyTo,
    references: messageIds(e.references),
    autoSubmitted: isAutoSubmitted(e),
    attachments: e.attachments.map((a) => ({
      name: a.filename ?? '',
      type: a.mimeType,
      content: typeof a.content === 'string' ? new TextEncoder().encode(a.content) : a.content instanceof Uint8Array ? a.content : new Uint8Array(a.content),
    })),
  };
}
