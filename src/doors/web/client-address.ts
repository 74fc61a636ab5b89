// The key the login throttle counts a client under: the connection's own peer address, never a
// header (X-Forwarded-For and the like are the client's words, and would let a guesser pick a fresh
// key per request). IPv4-mapped IPv6 is the IPv4 address; other IPv6 is its /64, since one host is
// usually handed a whole /64 and could otherwise take a new address per guess.
import { isIPv4, isIPv6 } from 'node:net';

export function clientAddress(remote: string | undefined): string {
  if (!remote) return 'unknown';
  const plain = remote.split('%')[0]!.toLowerCase();
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(plain)?.[1];
  if (mapped && isIPv4(mapped)) return mapped;
  if (isIPv4(plain)) return plain;
  if (!isIPv6(plain)) return 'unknown';
  return `${expand(plain).slice(0, 4).join(':')}::/64`;
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
