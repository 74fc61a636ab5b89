// The only `fetch` the A2A client gets: every URL it asks for (the agent card, and the JSON-RPC
// interface the card names, which could point anywhere) passes the webhook URL rule first
// (remote-url.ts: loopback only unless allow_remote, remote only https, never link-local or
// metadata addresses), and the connection goes to the address that was checked (never
// re-resolved). No redirects are followed, every request has a timeout, and a body is bounded
// (an event stream too, over its whole life: the SDK bounds only each event).
import { readFile } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { MailError } from '../wire/errors.js';
import { checkWebhookUrl, resolveWebhookTarget, WebhookUrlRefused, type Resolver } from './remote-url.js';

export interface GuardOptions {
  allowRemote: boolean;
  /** Until the response's headers (a blocking SendMessage answers only when the task settles). */
  headersTimeoutMs: number;
  /** Longest silence inside a body; an event stream that stays quiet longer is closed (the
   *  follower subscribes again). */
  idleTimeoutMs: number;
  /** A body (other than an event stream) larger than this is cut off with an error. */
  maxBodyBytes: number;
  /** An event stream that delivers more than this in all is cut off (A2aStreamOverLimit). */
  maxStreamBytes: number;
  /** The bearer secret's file and the one origin it is sent to (the card's). */
  token?: { file: string; origin: string };
  resolver?: Resolver;
}

/** The URL rule refused the URL (or what its name resolves to): retrying will not help. */
export class A2aUrlRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'A2aUrlRefused';
  }
}

/** An event stream delivered more than its cap: the round ends, the follower subscribes again. */
export class A2aStreamOverLimit extends Error {
  constructor(readonly limit: number) {
    super(`the remote agent's event stream went over ${limit} bytes: closed`);
    this.name = 'A2aStreamOverLimit';
  }
}

const NO_BODY = new Set([101, 204, 205, 304]);

/** A URL as it may appear in a detail: no query or fragment (they can carry secrets). */
export const shownUrl = (href: string): string => {
  try {
    const u = new URL(href);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(not a URL)';
  }
};

/** Why the URL rule refused a URL (its MailError's reason). */
export const refusalReason = (err: unknown): string =>
  err instanceof MailError ? (typeof err.details.reason === 'string' ? err.details.reason : err.message) : err instanceof Error ? err.message : String(err);

/** Reads the bearer secret (trimmed) at each call: a rotated file takes effect at once. */
export async function readToken(file: string): Promise<string> {
  let token: string;
  try {
    token = (await readFile(file, 'utf8')).trim();
  } catch (err) {
    throw new Error('token_file: cannot read it', { cause: err });
  }
  if (!token || /[\r\n]/.test(token)) throw new Error('token_file: empty, or more than one line');
  return token;
}

function urlOf(input: string | URL | Request): string {
  if (typeof input === 'string') return input;
  if (input instanceof URL) return input.href;
  return input.url;
}

function bodyOf(body: RequestInit['body']): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  throw new Error('the A2A client sent a body of a kind this fetch does not send');
}

function headersOf(res: IncomingMessage): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(res.headers)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) h.append(k, one);
  }
  return h;
}

/** The response's body as a web stream: paused while the reader is behind, cut off when it grows
 *  past its cap (an event stream's is larger: it lives long) or stays silent too long. */
function bodyStream(res: IncomingMessage, o: GuardOptions, stream: boolean): ReadableStream<Uint8Array> {
  let idle: NodeJS.Timeout | undefined;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      let total = 0;
      let done = false;
      const fail = (err: Error): void => {
        if (done) return;
        done = true;
        clearTimeout(idle);
        res.destroy();
        controller.error(err);
      };
      const arm = (): void => {
        clearTimeout(idle);
        idle = setTimeout(() => fail(new Error(`the remote agent sent nothing for ${o.idleTimeoutMs} ms`)), o.idleTimeoutMs);
      };
      arm();
      res.on('data', (chunk: Buffer) => {
        if (done) return;
        total += chunk.length;
        if (stream && total > o.maxStreamBytes) return fail(new A2aStreamOverLimit(o.maxStreamBytes));
        if (!stream && total > o.maxBodyBytes) return fail(new Error(`the remote agent's answer is over ${o.maxBodyBytes} bytes`));
        arm();
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
        if ((controller.desiredSize ?? 1) <= 0) res.pause();
      });
      res.on('end', () => {
        if (done) return;
        done = true;
        clearTimeout(idle);
        controller.close();
      });
      res.on('error', (err) => fail(err));
      res.on('close', () => fail(new Error('the remote agent closed the connection')));
    },
    pull() {
      res.resume();
    },
    cancel() {
      clearTimeout(idle);
      res.destroy();
    },
  });
}

/** A `fetch` for the A2A SDK that only reaches URLs the step allows. */
export function guardedFetch(o: GuardOptions): typeof fetch {
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const href = urlOf(input);
    let url: ReturnType<typeof checkWebhookUrl>;
    try {
      url = checkWebhookUrl(href, o.allowRemote);
    } catch (err) {
      throw new A2aUrlRefused(`${shownUrl(href)} refused: ${refusalReason(err)}`);
    }
    let target: { address: string; family: 4 | 6 };
    try {
      target = await resolveWebhookTarget(url, o.resolver);
    } catch (err) {
      if (err instanceof WebhookUrlRefused) throw new A2aUrlRefused(`${shownUrl(href)} refused: ${err.reason}`);
      throw err;
    }
    const headers = new Headers(init?.headers);
    if (o.token && new URL(url.href).origin === o.token.origin) headers.set('authorization', `Bearer ${await readToken(o.token.file)}`);
    headers.set('host', url.hostHeader);
    const body = bodyOf(init?.body);
    if (body !== undefined) headers.set('content-length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.length));
    const stream = /text\/event-stream/i.test(headers.get('accept') ?? '');
    const lookup: LookupFunction = (_host, options, cb) => {
      if ((options as { all?: boolean }).all) (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [target]);
      else cb(null, target.address, target.family);
    };
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send({
        host: url.hostname,
        port: url.port,
        path: url.path,
        method: init?.method ?? 'GET',
        agent: false,
        lookup,
        headers: Object.fromEntries(headers.entries()),
        ...(init?.signal ? { signal: init.signal } : {}),
      });
      const timer = setTimeout(() => req.destroy(new Error(`no answer from ${shownUrl(href)} within ${o.headersTimeoutMs} ms`)), o.headersTimeoutMs);
      req.on('response', (r) => {
        clearTimeout(timer);
        resolve(r);
      });
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.end(body);
    });
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400) {
      res.destroy();
      throw new Error(`${shownUrl(href)} answered HTTP ${status}: redirects are not followed`);
    }
    if (NO_BODY.has(status)) {
      res.destroy();
      return new Response(null, { status, statusText: res.statusMessage ?? '', headers: headersOf(res) });
    }
    return new Response(bodyStream(res, o, stream), { status, statusText: res.statusMessage ?? '', headers: headersOf(res) });
  };
  return guarded;
}
