// Listener URLs must point at this machine: parsed with the WHATWG parser, host exactly a
// loopback name, no user info. The doorbell connects to the address checked here.
import { MailError } from '../wire/errors.js';

export interface CheckedListener {
  href: string;
  /** The literal address to connect to (never re-resolved). */
  connectHost: '127.0.0.1' | '::1';
  port: number;
  path: string;
  hostHeader: string;
}

/** Refuses a `url` field: MailError('malformed', 'url: <reason>', { field: 'url', reason }). Shared
 *  with the webhook URLs of the wake layer (wake/remote-url.ts), which refuse the same way. */
export function refuseUrl(reason: string): never {
  throw new MailError('malformed', `url: ${reason}`, { field: 'url', reason });
}

/** A `url` field parsed with the WHATWG parser; anything else is refused ('not a URL'). */
export function parseUrlField(raw: string): URL {
  try {
    return new URL(raw);
  } catch {
    return refuseUrl('not a URL');
  }
}

export function checkListenerUrl(raw: string): CheckedListener {
  const u = parseUrlField(raw);
  if (u.protocol !== 'http:') refuseUrl('only http:// listeners on this machine are allowed');
  if (u.username || u.password) refuseUrl('user info is not allowed');
  const host = u.hostname;
  const connectHost = host === '127.0.0.1' || host === 'localhost' ? '127.0.0.1' : host === '[::1]' ? '::1' : null;
  if (!connectHost) return refuseUrl('the host must be exactly 127.0.0.1, localhost or [::1]');
  const port = u.port ? Number(u.port) : 80;
  return { href: u.href, connectHost, port, path: `${u.pathname}${u.search}`, hostHeader: u.host };
}

/** Rings listeners; implemented by the daemon (it does network I/O, the engine does not). */
export interface Doorbell {
  ring(target: CheckedListener, payload: { account: string; to: string; message_id: string; from: string }): void;
}
