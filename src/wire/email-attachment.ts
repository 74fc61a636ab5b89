// attachment (docs/email.md): one kept attachment of a mail from outside, as the SMTP door
// received it. Its bytes are untrusted like the mail: the daemon never opens or runs them.
import { z } from 'zod';
import { MessageId } from './fields.js';

/** A mail keeps at most 100 attachments (engine/email-book.ts), numbered from 0. */
export const ATTACHMENT_N_MAX = 99;

export const AttachmentRequest = z.strictObject({
  message_id: MessageId,
  n: z.number().int().min(0).max(ATTACHMENT_N_MAX).describe("its number in get's attachments, from 0"),
});

export const AttachmentResponse = z.object({
  name: z.string().describe('the file name the mail gave, made safe (no / or \\)'),
  type: z.string().describe('its MIME type as the mail said; application/octet-stream when unusable'),
  size: z.number().int().describe('bytes'),
  data: z.string().describe('the bytes, base64'),
});

export type AttachmentRequest = z.output<typeof AttachmentRequest>;
export type AttachmentResponse = z.infer<typeof AttachmentResponse>;
