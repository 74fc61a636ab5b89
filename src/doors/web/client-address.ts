// The key the login throttle counts a client under: the connection's own peer address, never a
// header (X-Forwarded-For and the like are the client's words, and would let a guesser pick a fresh
// key per request). IPv4-mapped IPv6 is the IPv4 address; other IPv6 is its /64, since one host is
// usually handed a whole /64 and could otherwise take a new address per guess. Every loopback
// address (127.0.0.0/8, ::1, ::ffff:127.x) is one key, `loopback`: any local process may bind any
// of the 16 million, and would otherwise have a fresh allowance on each.
import { isIPv4, isIPv6 } from 'node:net';

export const LOOPBACK_KEY = 'loopback';

export function clientAddress(remote: string | undefined): string {
  if (!remote) return 'unknown';
  const plain = remote.split('%')[0]!.toLowerCase();
  if (isIPv4(plain)) return v4(plain);
  if (!isIPv6(plain)) return 'unknown';
  const g = expand(plain);
  const zeros = g.slice(0, 5).every((x) => x === '0');
  if (zeros && g[5] === '0' && g[6] === '0' && g[7] === '1') return LOOPBACK_KEY;
  // IPv4-mapped (::ffff:a.b.c.d, written dotted or in hex): the IPv4 address.
  if (zeros && g[5] === 'ffff') {
    const hi = parseInt(g[6]!, 16);
    const lo = parseInt(g[7]!, 16);
    return v4(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`);
  }
  return `${g.slice(0, 4).join(':')}::/64`;
}

function v4(a: string): string {
  return a.startsWith('127.') ? LOOPBACK_KEY : a;
}

/** The eight groups of an IPv6 address, without leading zeros (an embedded IPv4 tail is two groups). */
function expand(a: string): string[] {
  const tail = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(a)?.[1];
  let s = a;
  if (tail) {
    const [b0, b1, b2, b3] = tail.split('.').map(Number) as [number, number, number, number];
    s = `${a.slice(0, -tail.length)}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = rest === undefined ? [] : rest ? rest.split(':') : [];
  const groups = rest === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.map((g) => parseInt(g || '0', 16).toString(16));
}
