// One webhook POST, as the outbox makes it (webhook-outbox.ts): to the address the URL rule checked,
// never re-resolved, no keep-alive pool, no redirects, a timeout, the response body discarded.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { CheckedWebhookUrl } from './remote-url.js';

export interface PostRequest {
  url: CheckedWebhookUrl;
  /** The address checked by resolveWebhookTarget: connect here, never re-resolve. */
  address: string;
  family: 4 | 6;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  signal: AbortSignal;
}
export interface PostResponse {
  status: number;
  retryAfter?: string | null;
}
/** One HTTP POST; rejects on network errors and timeouts. Injectable for tests. */
export type WebhookPost = (r: PostRequest) => Promise<PostResponse>;

/** The real POST: node:http(s) to the checked address (the Host header and TLS name stay the URL's
 *  host), no keep-alive pool, no redirects, a timeout, the response body discarded. */
export const httpPost: WebhookPost = (r) =>
  new Promise<PostResponse>((resolve, reject) => {
    const lookup: LookupFunction = (_host, options, cb) => {
      if ((options as { all?: boolean }).all) (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address: r.address, family: r.family }]);
      else cb(null, r.address, r.family);
    };
    const send = r.url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send({
      host: r.url.hostname,
      port: r.url.port,
      path: r.url.path,
      method: 'POST',
      agent: false,
      lookup,
      signal: r.signal,
      timeout: r.timeoutMs,
      headers: { ...r.headers, host: r.url.hostHeader, 'content-length': String(Buffer.byteLength(r.body)) },
    });
    req.on('response', (res) => {
      res.resume();
      // node keeps the first of repeated Retry-After headers, so it is one string.
      resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] ?? null });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${r.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(r.body);
  });
