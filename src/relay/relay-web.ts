// The relay's browser side: the same pages as the local browser door (web-door.ts), the same login,
// cookie, CSRF and throttle rules (engine/web-auth.ts over the relay's store), and every other API
// call forwarded to the user's node as a `call` frame for the one mailbox the user's grant names.
// Nothing the browser sends chooses the node, the mailbox or the delegate: the grant does.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MailError } from '../wire/errors.js';
import { parseInput } from '../wire/validate.js';
import { LoginRequest } from '../wire/web.js';
import { EmptyRequest } from '../wire/ops.js';
import { isRelayedWebCall } from '../wire/relay-link.js';
import type { Logger } from '../engine/log.js';
import type { WebLogin } from '../engine/web-auth.js';
import { readJsonBody } from '../doors/http/body.js';
import { clientGoneSignal, sendJson } from '../doors/http/respond.js';
import { loadWebAssetsAtStart, webAssets } from '../doors/web/assets/index.js';
import { API_BODY_CAP, CSRF_HEADER, SECURITY_HEADERS, checkBrowserRequest, cookieName, readCookie, sendWebAsset, sendWebError } from '../doors/web/web-door.js';
import { clientAddress } from '../doors/web/client-address.js';
import type { CallAnswer, NodeHub } from './relay-nodes.js';
import type { RelayGrant, RelayState } from './relay-store.js';

/** A live read waits at the relay at most this long (the browser door's own bound). */
const LIVE_WAIT_SECS = 30;

export interface RelayWebOptions {
  state: RelayState;
  hub: NodeHub;
  log: Logger;
  /** The cookie carries Secure (the relay serves TLS, or its public URL is https). */
  secure: boolean;
  /** Live reads parked at once per node and per relay user (RELAY_GUARD); the next is rate_limited. */
  parked: { perNode: number; perUser: number };
}

interface CallFrame {
  mailbox: string;
  name: string;
  body: unknown;
  delegate?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const noMessages = (a: CallAnswer): boolean => a.status === 200 && isObject(a.body) && Array.isArray(a.body.messages) && a.body.messages.length === 0;

export class RelayWeb {
  /** Parked live reads per relay user. */
  private parkedOf = new Map<string, number>();

  constructor(private o: RelayWebOptions) {
    loadWebAssetsAtStart();
  }

  static owns(path: string): boolean {
    return path === '/' || path === '/favicon.ico' || path === '/web' || path.startsWith('/web/');
  }

  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    try {
      if (path.startsWith('/web/api/')) return await this.api(req, res, path.slice('/web/api/'.length));
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new MailError('method_not_allowed', `use GET ${path}`);
      const assets = webAssets();
      const asset = assets.files.get(path);
      if (asset) return sendWebAsset(req, res, asset, 'no-cache');
      if (path.startsWith('/web/assets/')) throw new MailError('unknown_route', `no asset ${path}`);
      return sendWebAsset(req, res, assets.shell, 'no-store');
    } catch (err) {
      sendWebError(req, res, err, this.o.log, path);
    }
  }

  private cookie(name: string, value: string, maxAge: number): string {
    return `${name}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${this.o.secure ? '; Secure' : ''}`;
  }

  private async api(req: IncomingMessage, res: ServerResponse, name: string): Promise<void> {
    checkBrowserRequest(req);
    const { auth } = this.o.state;
    const name_ = cookieName(req.headers.host);
    const noStore = { ...SECURITY_HEADERS, 'cache-control': 'no-store' };
    if (name === 'login') {
      const input = parseInput(LoginRequest, await readJsonBody(req, API_BODY_CAP));
      const r = await auth.login(input.account, input.password, clientAddress(req.socket.remoteAddress));
      const grant = await this.o.state.grantOf(r.account.id);
      if (!grant) {
        // The password was right but the user may reach no mailbox: no login is left behind.
        await auth.logout(await auth.resolve(r.cookie, null));
        throw new MailError('not_relayed', 'this relay user holds no mailbox: ask the relay operator for a grant');
      }
      const relay = { user: r.account.id, node: grant.node, role: grant.role };
      this.o.log.info({ code: 'relay_login', user: r.account.id, node: grant.node }, 'relay user logged in');
      return sendJson(
        res,
        200,
        { account: grant.mailbox, label: r.account.label, operator: false, csrf: r.csrf, relay },
        { ...noStore, 'set-cookie': this.cookie(name_, r.cookie, Math.floor(auth.options.absoluteMs / 1000)) },
      );
    }
    const csrf = req.headers[CSRF_HEADER];
    const login = await auth.resolve(readCookie(req, name_), typeof csrf === 'string' ? csrf : '');
    if (name === 'logout' || name === 'revoke-all') {
      await readJsonBody(req, API_BODY_CAP);
      if (name === 'logout') await auth.logout(login);
      const revoked = name === 'revoke-all' ? await auth.revokeAll(login.account.id) : 1;
      return sendJson(res, 200, { ok: true, revoked }, { ...noStore, 'set-cookie': this.cookie(name_, '', 0) });
    }
    if (name === 'login-throttle' || name === 'login-throttle/clear') {
      parseInput(EmptyRequest, await readJsonBody(req, API_BODY_CAP));
      const answer = name === 'login-throttle' ? await auth.throttleView(login) : await auth.clearThrottle(login, clientAddress(req.socket.remoteAddress));
      return sendJson(res, 200, answer, noStore);
    }
    if (!isRelayedWebCall(name)) throw new MailError('not_relayed', `the relay does not carry /web/api/${name}`, { call: name.slice(0, 64) });
    const grant = await this.grantFor(login);
    const body = await readJsonBody(req, API_BODY_CAP);
    const frame: CallFrame = { mailbox: grant.mailbox, name, body, ...(grant.role === 'delegate' ? { delegate: login.account.id } : {}) };
    const answer = await this.forward(login.account.id, grant, frame, clientGoneSignal(res));
    // A reload asks `me`: the page learns again that this is a relay login (it offers mail only).
    if (name === 'me' && answer.status === 200 && answer.body !== null && typeof answer.body === 'object')
      return sendJson(res, 200, { ...answer.body, relay: { user: login.account.id, node: grant.node, role: grant.role } }, noStore);
    return sendJson(res, answer.status, answer.body, noStore);
  }

  /** Read per request, so a grant or revoke by `m4a relay user …` applies at once. */
  private async grantFor(login: WebLogin): Promise<RelayGrant> {
    const grant = await this.o.state.grantOf(login.account.id);
    if (!grant) throw new MailError('not_relayed', 'this relay user holds no mailbox any more');
    return grant;
  }

  /** One call to the grant's node, refused before sending when the node is away or does not
   *  offer the grant's mailbox. */
  private once(grant: RelayGrant, frame: CallFrame, signal: AbortSignal): Promise<CallAnswer> {
    const link = this.o.hub.link(grant.node);
    if (!link) throw new MailError('relay_unavailable', `node ${grant.node} is not connected`, { node: grant.node });
    if (!link.mailboxes.includes(grant.mailbox)) throw new MailError('not_relayed', `node ${grant.node} does not offer ${grant.mailbox}`, { mailbox: grant.mailbox });
    return link.call(frame, signal);
  }

  /** A live read (inbox with after and wait_secs > 0) waits here, not at the node: asked with wait
   *  0; when empty, parked until a mail frame for the mailbox or the node's reconnect, then asked
   *  once more. A mail frame that arrived while the first ask ran counts (the generation moved). */
  private async forward(user: string, grant: RelayGrant, frame: CallFrame, signal: AbortSignal): Promise<CallAnswer> {
    const b = frame.body;
    const live = frame.name === 'inbox' && isObject(b) && typeof b.after === 'string' && typeof b.wait_secs === 'number' && b.wait_secs > 0;
    if (!live) return this.once(grant, frame, signal);
    const waitMs = Math.min(b.wait_secs as number, LIVE_WAIT_SECS) * 1000;
    const asked = { ...frame, body: { ...b, wait_secs: 0 } };
    const hub = this.o.hub;
    const gen = hub.generation(grant.node, grant.mailbox);
    const first = await this.once(grant, asked, signal);
    if (!noMessages(first)) return first;
    // A browser gone before it parks would never abort: its slot would be held for the whole wait.
    if (hub.generation(grant.node, grant.mailbox) === gen && !signal.aborted) {
      const { perNode, perUser: cap } = this.o.parked;
      if (hub.parkedCount(grant.node) >= perNode) throw new MailError('rate_limited', `${perNode} live reads wait for this node`, { retry_after: 1, limit: perNode });
      const mine = this.parkedOf.get(user) ?? 0;
      if (mine >= cap) throw new MailError('rate_limited', `${cap} live reads of this relay user wait already`, { retry_after: 1, limit: cap });
      this.parkedOf.set(user, mine + 1);
      const woke = await new Promise<boolean>((resolve) => {
        let done = false;
        const finish = (v: boolean): void => {
          if (done) return;
          done = true;
          clearTimeout(t);
          unpark();
          const left = (this.parkedOf.get(user) ?? 1) - 1;
          if (left > 0) this.parkedOf.set(user, left);
          else this.parkedOf.delete(user);
          signal.removeEventListener('abort', onAbort);
          resolve(v);
        };
        const onAbort = (): void => finish(false);
        const t = setTimeout(() => finish(false), waitMs);
        const unpark = hub.park(grant.node, grant.mailbox, () => finish(true));
        signal.addEventListener('abort', onAbort, { once: true });
      });
      if (!woke) return first;
    }
    return this.once(grant, asked, signal);
  }
}
