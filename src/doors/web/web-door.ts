// The browser door: the mailbox for people at / and /web/*. Pages and scripts come from the daemon
// itself; the API (/web/api/*) is POST + JSON only and answers human accounts logged in with a
// password. Every API request but login must carry the login's CSRF token (X-M4A-CSRF), an Origin
// that is exactly the daemon's (checked by the HTTP door's origin guard) and no cross-site fetch
// metadata. The token is handed out only at login and kept in the page's origin storage, so the
// cookie alone (which browsers send to every port of the host) opens nothing.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MailError, detailText } from '../../wire/errors.js';
import { parseInput } from '../../wire/validate.js';
import { LoginRequest } from '../../wire/web.js';
import { EmptyRequest } from '../../wire/ops.js';
import type { MailEngine } from '../../engine/mail-engine.js';
import type { AdminOps } from '../../engine/admin-ops.js';
import type { WebAuth } from '../../engine/web-auth.js';
import type { Logger } from '../../engine/log.js';
import { readJsonBody } from '../http/body.js';
import { clientGoneSignal, isClientGone, sendJson, toMailError } from '../http/respond.js';
import { loadWebAssetsAtStart, webAssets, type Asset } from './assets/index.js';
import { runWebApi, webOperation } from './web-api.js';
import { errorCode } from '../handlers.js';
import type { Observer } from '../../engine/observer.js';
import { clientAddress } from './client-address.js';
import type { WakeChains } from '../../engine/wake-chains.js';

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};

export const CSRF_HEADER = 'x-m4a-csrf';
/** Requests that never parse a long body: login and the mail calls (a message is at most 64 KiB). */
export const API_BODY_CAP = 256 * 1024;

export interface WebDoorOptions {
  engine: MailEngine;
  admin: AdminOps;
  auth: WebAuth;
  log: Logger;
  /** Shown read-only to operators. */
  chains?: WakeChains;
  /** Counts the API's operations with door `web` (the daemon's metrics). */
  observer?: Observer;
}

/** The cookie's name carries the port: cookies are shared by every port of a host, and two
 *  daemons on one machine must not overwrite each other's login. */
export function cookieName(host: string | undefined): string {
  const port = /:(\d+)$/.exec(host ?? '')?.[1] ?? '80';
  return `m4a_session_${port}`;
}

export function readCookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** A page or script with its ETag (shared with the relay, which serves the same pages). */
export function sendWebAsset(req: IncomingMessage, res: ServerResponse, a: Asset, cache: string): void {
  const headers = { ...SECURITY_HEADERS, 'content-type': a.type, 'cache-control': cache, etag: a.etag };
  if (req.headers['if-none-match'] === a.etag) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  res.writeHead(200, { ...headers, 'content-length': String(a.body.length) });
  res.end(req.method === 'HEAD' ? undefined : a.body);
}

/** Cross-site defences that need no login: POST, JSON, an Origin (the guard matched it to us), and
 *  no fetch metadata saying another site or a navigation sent it. */
export function checkBrowserRequest(req: IncomingMessage): void {
  if (req.method !== 'POST') throw new MailError('method_not_allowed', 'the browser API takes POST');
  if (!req.headers.origin) throw new MailError('csrf_failed', 'a browser request must carry its Origin', { reason: 'no origin' });
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') throw new MailError('csrf_failed', `a ${site} request is refused`, { reason: 'cross-site' });
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') throw new MailError('csrf_failed', 'the browser API takes application/json only', { reason: 'content type' });
}

/** The error answer of the browser door and the relay: a client that went away mid-body is not a
 *  failure of ours (a debug line, no stack); else the envelope with the security headers,
 *  Retry-After on rate_limited and Allow on method_not_allowed. */
export function sendWebError(req: IncomingMessage, res: ServerResponse, err: unknown, log: Logger, path: string): void {
  if (isClientGone(err, req)) return log.debug({ path, code: (err as NodeJS.ErrnoException).code ?? 'aborted' }, 'client closed the connection mid-request');
  const e = toMailError(err, log);
  const extra: Record<string, string> = { ...SECURITY_HEADERS };
  if (e.code === 'rate_limited') extra['retry-after'] = detailText(e.details.retry_after ?? 1);
  if (e.code === 'method_not_allowed') extra.allow = path.startsWith('/web/api/') ? 'POST' : 'GET, HEAD';
  sendJson(res, e.httpStatus, e.toBody(), extra);
}

export class WebDoor {
  constructor(private o: WebDoorOptions) {
    loadWebAssetsAtStart();
  }

  /** The paths this door answers (the HTTP door routes them here before anything else). */
  static owns(path: string): boolean {
    return path === '/' || path === '/favicon.ico' || path === '/web' || path.startsWith('/web/');
  }

  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    try {
      if (path.startsWith('/web/api/')) return await this.api(req, res, path.slice('/web/api/'.length));
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new MailError('method_not_allowed', `use GET ${path}`);
      const assets = webAssets();
      const asset = assets.files.get(path);
      if (asset) return this.sendAsset(req, res, asset, 'no-cache');
      if (path.startsWith('/web/assets/')) throw new MailError('unknown_route', `no asset ${path}`);
      return this.sendAsset(req, res, assets.shell, 'no-store');
    } catch (err) {
      sendWebError(req, res, err, this.o.log, path);
    }
  }

  private sendAsset(req: IncomingMessage, res: ServerResponse, a: Asset, cache: string): void {
    sendWebAsset(req, res, a, cache);
  }

  private checkRequest(req: IncomingMessage): void {
    checkBrowserRequest(req);
  }

  /** A call refused before its operation ran (no login, a wrong CSRF token) counts under that
   *  operation, as the HTTP door counts a missing credential. */
  private refusedBefore(name: string, err: unknown): never {
    const op = webOperation(name);
    if (op) this.o.observer?.operation('web', op, errorCode(err));
    throw err;
  }

  private async api(req: IncomingMessage, res: ServerResponse, name: string): Promise<void> {
    this.checkRequest(req);
    const auth = this.o.auth;
    const name_ = cookieName(req.headers.host);
    const noStore = { ...SECURITY_HEADERS, 'cache-control': 'no-store' };
    if (name === 'login') {
      const input = parseInput(LoginRequest, await readJsonBody(req, API_BODY_CAP));
      const r = await auth.login(input.account, input.password, clientAddress(req.socket.remoteAddress));
      const cookie = `${name_}=${r.cookie}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(auth.options.absoluteMs / 1000)}`;
      return sendJson(res, 200, { account: r.account.id, label: r.account.label, operator: r.account.permissions.operator, csrf: r.csrf }, { ...noStore, 'set-cookie': cookie });
    }
    const csrf = req.headers[CSRF_HEADER];
    const login = await auth.resolve(readCookie(req, name_), typeof csrf === 'string' ? csrf : '').catch((err: unknown) => this.refusedBefore(name, err));
    const caller = { account: login.account, session: null };
    const expire = `${name_}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`;
    if (name === 'logout' || name === 'revoke-all') {
      await readJsonBody(req, API_BODY_CAP);
      if (name === 'logout') await auth.logout(login);
      const revoked = name === 'revoke-all' ? await auth.revokeAll(login.account.id) : 1;
      return sendJson(res, 200, { ok: true, revoked }, { ...noStore, 'set-cookie': expire });
    }
    if (name === 'login-throttle' || name === 'login-throttle/clear') {
      // The person's own account only: the body names nothing (strict {}), the login does.
      parseInput(EmptyRequest, await readJsonBody(req, API_BODY_CAP));
      const answer = name === 'login-throttle' ? await auth.throttleView(login) : await auth.clearThrottle(login, clientAddress(req.socket.remoteAddress));
      return sendJson(res, 200, answer, noStore);
    }
    const body = await readJsonBody(req, name.startsWith('admin/') ? undefined : API_BODY_CAP);
    return sendJson(res, 200, await runWebApi(name, this.o, caller, body, clientGoneSignal(res)), noStore);
  }
}
