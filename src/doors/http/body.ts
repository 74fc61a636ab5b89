// Request bodies: capped before parsing, strict UTF-8, JSON only.
import type { IncomingMessage } from 'node:http';
import { MailError } from '../../wire/errors.js';
import { LIMITS } from '../../wire/limits.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

export async function readJsonBody(req: IncomingMessage, cap: number = LIMITS.requestBodyBytes): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > cap) throw new MailError('too_large', 'request body over the limit', { field: '(body)', limit: cap, actual: declared });
  const bytes = await readAll(req, cap);
  if (bytes === null) return {};
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new MailError('malformed', 'the body is not valid UTF-8', { field: '(body)', reason: 'invalid UTF-8' });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new MailError('malformed', 'the body is not JSON', { field: '(body)', reason: 'not JSON' });
  }
}

/** The body's bytes (null when empty). Listeners, removed once settled, not `for await`: the stream's
 *  async iterator leaves its generator and end-of-stream closures on the request when the loop ends,
 *  and a parked wait keeps its request for up to a minute (about 1 KiB each). */
function readAll(req: IncomingMessage, cap: number): Promise<Buffer | null> {
  if (req.readableEnded) return Promise.resolve(null);
  if (req.destroyed) return Promise.reject(prematureClose());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > cap) {
        settle();
        req.pause(); // the refusal closes the connection; the rest is never read
        reject(new MailError('too_large', 'request body over the limit', { field: '(body)', limit: cap, actual: size }));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      settle();
      resolve(size === 0 ? null : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (err: Error): void => {
      settle();
      reject(err);
    };
    const onClose = (): void => {
      settle();
      reject(prematureClose());
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** What a stream reports when it closed before its end (isClientGone knows the code). */
function prematureClose(): NodeJS.ErrnoException {
  return Object.assign(new Error('premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}
