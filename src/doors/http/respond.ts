// Writing JSON answers and the error envelope. An unknown failure is a 500 that leaks nothing.
import type { ServerResponse } from 'node:http';
import { MailError } from '../../wire/errors.js';
import type { Logger } from '../../engine/log.js';

const BASE_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

export function sendJson(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const s = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { ...BASE_HEADERS, 'content-length': String(Buffer.byteLength(s)), ...extra });
  res.end(s);
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
  if (e.code === 'rate_limited') extra['retry-after'] = String(e.details.retry_after ?? 1);
  // After a refused oversized body the rest of the request is unread; close the connection.
  if (e.code === 'too_large' && e.details.field === '(body)') extra.connection = 'close';
  sendJson(res, e.httpStatus, e.toBody(), extra);
}
