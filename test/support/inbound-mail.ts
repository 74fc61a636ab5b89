// A mail from outside as the SMTP door hands it to EmailBook.receive, for the engine's e-mail tests:
// a plain note to bob unless the test says otherwise.
import type { InboundMail } from '../../src/engine/email-book.js';
import { MailError } from '../../src/wire/errors.js';

export const mail = (o: Partial<InboundMail> = {}): InboundMail => ({
  account: 'bob',
  // Mixed case: the book normalises the sender.
  from: 'Alice@Example.COM',
  envelopeFrom: 'bounce@example.com',
  subject: 'Hello',
  text: 'Hi Bob',
  messageId: null,
  inReplyTo: null,
  references: [],
  autoSubmitted: false,
  attachments: [],
  ...o,
});

/** For assert.rejects: the engine refused with this code. */
export const refused = (code: string) => (err: unknown) => err instanceof MailError && err.code === code;
