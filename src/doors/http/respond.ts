// Writing JSON answers and the error envelope. An unknown failure is a 500 that leaks nothing.
import type { ServerResponse } from 'node:http';
import { MailError, detailText } from '../../wire/errors.js';
import type { Logger } from '../../engine/log.js';
import { textOrBytes } from '../../engine/shared-page.js';

const BASE_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

/** Answers may hold values many answers share (a woken room's page): those are serialised once and
 *  equal answers written one Buffer (engine/shared-page.ts). */
export function sendJson(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const b = body === undefined ? '' : textOrBytes(body);
  res.writeHead(status, { ...BASE_HEADERS, 'content-length': String(typeof b === 'string' ? Buffer.byteLength(b) : b.length), ...extra });
  res.end(b);
}

export function toMailError(err: unknown, log: Logger): MailError {
  if (err instanceof MailError) return err;
  log.error({ err: err instanceof Error ? (err.stack ?? err.message) : String(err) }, 'unexpected failure');
  return new MailError('internal', 'internal error');
}

export function sendError(res: ServerResponse, err: unknown, log: Logger): void {
  const e = toMailError(err, log);
  const extra: Record<string, string> = {};
  if (e.code === 'unauthenticated') extra['www-authenticate'] = 'Bearer';
  if (e.code === 'rate_limited') extra['retry-after'] = detailText(e.details.retry_after ?? 1);
  // After a refused oversized body the rest of the request is unread; close the connection.
  if (e.code === 'too_large' && e.details.field === '(body)') extra.connection = 'close';
  sendJson(res, e.httpStatus, e.toBody(), extra);
}

/** Raw bytes answering a request node's parser refused (no request object exists to answer), in
 *  the same error envelope as every other refusal. Null when there is nobody left to tell. */
export function clientErrorBytes(err: NodeJS.ErrnoException): string | null {
  if (err.code === 'ECONNRESET' || err.code === 'EPIPE') return null;
  let e: MailError;
  let status: number;
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    e = new MailError('too_large', 'the request headers are over the limit', { field: '(headers)', limit: 16_384 });
    status = 431;
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    e = new MailError('malformed', 'the request did not arrive in time', { field: '(request)', reason: 'timeout' });
    status = 408;
  } else {
    e = new MailError('malformed', 'the request is not valid HTTP/1.1', { field: '(request)', reason: err.code ?? 'unparsable' });
    status = e.httpStatus;
  }
  const body = JSON.stringify(e.toBody());
  const reason = status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncache-control: no-store\r\nx-content-type-options: nosniff\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The client closed its connection before its request was read: nobody to answer, nothing wrong. */
export function isClientGone(err: unknown, req: { destroyed: boolean; complete: boolean }): boolean {
  if (!req.destroyed || req.complete) return false;
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || (err instanceof Error && err.message === 'aborted');
}

const goneOf = new WeakMap<ServerResponse, AbortController>();

function onResponseClose(this: ServerResponse): void {
  if (!this.writableFinished) goneOf.get(this)?.abort();
}

/** Aborts when the client closes its connection before its answer was written. One shared
 *  listener, not a closure and a once-wrapper per request: a parked wait holds it for a minute. */
export function clientGoneSignal(res: ServerResponse): AbortSignal {
  let ac = goneOf.get(res);
  if (ac === undefined) {
    goneOf.set(res, (ac = new AbortController()));
    res.on('close', onResponseClose);
  }
  return ac.signal;
}
