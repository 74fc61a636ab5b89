// Webhook URLs: as strict as listener URLs (engine/listener-url.ts) unless the operator allows remote
// hosts. Parsed with the WHATWG parser (which canonicalises IPv4 forms such as 0x7f.1), no user info.
// - Loopback (127.0.0.0/8, [::1], localhost = 127.0.0.1, never resolved): http or https.
// - Anything else only with allow_remote, and only https (mail metadata never crosses a network in
//   clear). The name is resolved at each attempt; every address must be allowed, and the connection
//   goes to the address checked (never re-resolved, so DNS rebinding cannot redirect it).
// - Never, even with allow_remote: unspecified, link-local (169.254/16 with the cloud metadata
//   service, fe80::/10), multicast, reserved and broadcast addresses, known metadata addresses.
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { parseUrlField, refuseUrl } from '../engine/listener-url.js';

export interface CheckedWebhookUrl {
  href: string;
  protocol: 'http:' | 'https:';
  /** As in the URL (brackets stripped from IPv6); the Host header and TLS name come from the URL. */
  hostname: string;
  port: number;
  path: string;
  hostHeader: string;
  /** A literal loopback address to connect to without resolving, or null for a remote host. */
  loopback: string | null;
  allowRemote: boolean;
}

/** A URL or address the operator's settings never allow: retrying will not help. */
export class WebhookUrlRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'WebhookUrlRefused';
  }
}

const NEVER = new BlockList();
NEVER.addSubnet('0.0.0.0', 8, 'ipv4');
NEVER.addSubnet('169.254.0.0', 16, 'ipv4');
NEVER.addSubnet('224.0.0.0', 4, 'ipv4');
NEVER.addSubnet('240.0.0.0', 4, 'ipv4');
NEVER.addAddress('100.100.100.200', 'ipv4'); // Alibaba Cloud metadata
NEVER.addAddress('::', 'ipv6');
NEVER.addSubnet('fe80::', 10, 'ipv6');
NEVER.addSubnet('ff00::', 8, 'ipv6');
NEVER.addAddress('fd00:ec2::254', 'ipv6'); // AWS metadata over IPv6

const IPV4_LOOPBACK = new BlockList();
IPV4_LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');

/** The IPv4 address inside ::ffff:a.b.c.d (or its hex form), else null. */
function mappedV4(addr: string): string | null {
  const m = /^::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(addr);
  if (!m) return null;
  if (m[1]) return m[1];
  const hi = parseInt(m[2] ?? '0', 16);
  const lo = parseInt(m[3] ?? '0', 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Why an address may never be a webhook target, or null when it may (with allow_remote). */
export function forbiddenAddress(addr: string): string | null {
  const v4 = isIP(addr) === 4 ? addr : mappedV4(addr);
  if (v4 !== null) return NEVER.check(v4, 'ipv4') ? `${addr} is an unspecified, link-local, metadata, multicast or reserved address` : null;
  if (isIP(addr) !== 6) return `${addr} is not an IP address`;
  return NEVER.check(addr, 'ipv6') ? `${addr} is an unspecified, link-local, metadata or multicast address` : null;
}

function loopbackLiteral(hostname: string): string | null {
  if (hostname === 'localhost') return '127.0.0.1';
  if (hostname === '[::1]') return '::1';
  if (isIP(hostname) === 4 && IPV4_LOOPBACK.check(hostname, 'ipv4')) return hostname;
  return null;
}

/** Checks a webhook URL as `m4a wake set` stores it; throws MailError('malformed', {field:'url', reason}). */
export function checkWebhookUrl(raw: string, allowRemote = false): CheckedWebhookUrl {
  const u = parseUrlField(raw);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') refuseUrl('only http:// and https:// webhooks are allowed');
  if (u.username || u.password) refuseUrl('user info is not allowed (put no credentials in the URL)');
  const loopback = loopbackLiteral(u.hostname);
  const hostname = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  if (loopback === null) {
    if (!allowRemote) refuseUrl('the host must be on this machine (127.0.0.0/8, localhost or [::1]); set allow_remote to send elsewhere');
    if (u.protocol !== 'https:') refuseUrl('a remote webhook must use https://');
    if (isIP(hostname) !== 0) {
      const why = forbiddenAddress(hostname);
      if (why) refuseUrl(why);
    }
  }
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  return {
    href: u.href,
    protocol: u.protocol,
    hostname,
    port,
    path: `${u.pathname}${u.search}`,
    hostHeader: u.host,
    loopback,
    allowRemote,
  };
}

/** For `m4a wake set`: throws MailError('malformed') naming the problem. */
export function checkWebhookStep(step: { url: string; allow_remote?: boolean | undefined }): void {
  checkWebhookUrl(step.url, step.allow_remote ?? false);
}

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;
const systemResolver: Resolver = (h) => dnsLookup(h, { all: true, verbatim: true });

/** The one address to connect to. Throws WebhookUrlRefused (permanent) when any address the name
 *  resolves to is forbidden; a resolver error (e.g. ENOTFOUND) passes through (worth retrying). */
export async function resolveWebhookTarget(u: CheckedWebhookUrl, resolve: Resolver = systemResolver): Promise<{ address: string; family: 4 | 6 }> {
  if (u.loopback !== null) return { address: u.loopback, family: isIP(u.loopback) === 6 ? 6 : 4 };
  if (!u.allowRemote) throw new WebhookUrlRefused('a remote host needs allow_remote');
  const literal = isIP(u.hostname);
  const addrs = literal !== 0 ? [{ address: u.hostname, family: literal }] : await resolve(u.hostname);
  if (addrs.length === 0) throw new Error(`${u.hostname} resolved to no address`);
  for (const a of addrs) {
    const why = forbiddenAddress(a.address);
    if (why) throw new WebhookUrlRefused(`${u.hostname}: ${why}`);
  }
  const first = addrs[0]!;
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}
