// Request bodies: capped before parsing, strict UTF-8, JSON only.
import type { IncomingMessage } from 'node:http';
import { MailError } from '../../wire/errors.js';
import { LIMITS } from '../../wire/limits.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

export async function readJsonBody(req: IncomingMessage, cap: number = LIMITS.requestBodyBytes): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > cap) throw new MailError('too_large', 'request body over the limit', { field: '(body)', limit: cap, actual: declared });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > cap) throw new MailError('too_large', 'request body over the limit', { field: '(body)', limit: cap, actual: size });
    chunks.push(chunk);
  }
  if (size === 0) return {};
  let text: string;
  try {
    text = utf8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
  } catch {
    throw new MailError('malformed', 'the body is not valid UTF-8', { field: '(body)', reason: 'invalid UTF-8' });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new MailError('malformed', 'the body is not JSON', { field: '(body)', reason: 'not JSON' });
  }
}
