// Finding the client's socket row in /proc/net/tcp{,6}. Each row reads
// `sl: LOCAL:PORT REMOTE:PORT st ... uid timeout inode ...`; addresses are hex of each 32-bit word in
// host byte order, ports are big-endian hex. The client's local pair is the daemon's remote pair.
import { isIPv4, isIPv6 } from 'node:net';
import { endianness } from 'node:os';

const LITTLE_ENDIAN = endianness() === 'LE';

/** True for 127.0.0.0/8, ::1 and ::ffff:127.x.y.z. */
export function isLoopback(address: string): boolean {
  const v4 = asIPv4(address);
  if (v4 !== null) return v4[0] === 127;
  return isIPv6(address) && expandIPv6(address).every((w, i) => w === (i === 7 ? 1 : 0));
}

/** The IPv4 octets of a plain or IPv4-mapped IPv6 address (either spelling), else null. */
function asIPv4(address: string): number[] | null {
  if (isIPv4(address)) return address.split('.').map(Number);
  if (!isIPv6(address)) return null;
  const w = expandIPv6(address);
  if (!w.slice(0, 5).every((x) => x === 0) || w[5] !== 0xffff) return null;
  const hi = w[6] ?? 0;
  const lo = w[7] ?? 0;
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];
}

/** Eight 16-bit words of an IPv6 address (handles `::` and a dotted IPv4 tail). */
function expandIPv6(address: string): number[] {
  let a = address.split('%')[0] ?? address;
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (tail?.[1] !== undefined) {
    const o = tail[1].split('.').map(Number);
    a = a.slice(0, -tail[1].length) + `${(((o[0] ?? 0) << 8) | (o[1] ?? 0)).toString(16)}:${(((o[2] ?? 0) << 8) | (o[3] ?? 0)).toString(16)}`;
  }
  const [head = '', rest] = a.split('::');
  const h = head === '' ? [] : head.split(':');
  const r = rest === undefined || rest === '' ? [] : rest.split(':');
  const fill = rest === undefined ? 0 : 8 - h.length - r.length;
  return [...h, ...Array<string>(fill).fill('0'), ...r].map((x) => parseInt(x, 16));
}

/** One 32-bit word as the kernel prints it (%08X of the in-memory value). */
function word(bytes: number[]): string {
  const ordered = LITTLE_ENDIAN ? [...bytes].reverse() : bytes;
  return ordered
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('')
    .toUpperCase();
}

function bytesOfIPv6(address: string): number[] {
  return expandIPv6(address).flatMap((w) => [w >> 8, w & 0xff]);
}

/** How an address can appear in each file: an IPv4 peer may own an AF_INET socket (tcp) or an
 *  AF_INET6 socket talking IPv4-mapped (tcp6), whichever form the daemon's side reports. */
export function encodings(address: string): { tcp?: string; tcp6: string } {
  const v4 = asIPv4(address);
  if (v4 !== null) {
    return { tcp: word(v4), tcp6: word([0, 0, 0, 0]) + word([0, 0, 0, 0]) + word([0, 0, 0xff, 0xff]) + word(v4) };
  }
  const b = bytesOfIPv6(address);
  return { tcp6: [0, 4, 8, 12].map((i) => word(b.slice(i, i + 4))).join('') };
}

function port(p: number): string {
  return p.toString(16).toUpperCase().padStart(4, '0');
}

/** The exact `LOCAL:PORT REMOTE:PORT` text of the client's row in each file (client local = our remote). */
export function clientRowKeys(conn: { localAddress: string; localPort: number; remoteAddress: string; remotePort: number }): { tcp?: string; tcp6?: string } {
  const client = encodings(conn.remoteAddress);
  const server = encodings(conn.localAddress);
  const keys: { tcp?: string; tcp6?: string } = {};
  // Both ends of one connection use the same family, so a v4 key needs both sides in v4 form.
  if (client.tcp !== undefined && server.tcp !== undefined) {
    keys.tcp = `${client.tcp}:${port(conn.remotePort)} ${server.tcp}:${port(conn.localPort)}`;
  }
  keys.tcp6 = `${client.tcp6}:${port(conn.remotePort)} ${server.tcp6}:${port(conn.localPort)}`;
  return keys;
}

/** Result of looking a row up: the socket inode, `closed` when the row exists only as an orphaned
 *  (FIN_WAIT/TIME_WAIT) socket with inode 0, or null when the row is absent. */
export type RowLookup = { inode: string } | 'closed' | null;

/** Finds `key` as the local/remote pair of a row by string search, without splitting the file (the
 *  reference for net-table.ts's one-pass lookup of many keys). */
export function findRow(table: string, key: string): RowLookup {
  let closed = false;
  for (let at = table.indexOf(key); at !== -1; at = table.indexOf(key, at + 1)) {
    // The pair must be the row's local/remote columns, which follow `sl:` and a space.
    if (table.charCodeAt(at - 1) !== 32 || table.charCodeAt(at - 2) !== 58) continue;
    const end = table.indexOf('\n', at);
    const fields = table
      .slice(at, end === -1 ? undefined : end)
      .trim()
      .split(/\s+/);
    // local rem st tx:rx tr:when retrnsmt uid timeout inode
    const inode = fields[8];
    if (inode === undefined || !/^\d+$/.test(inode)) continue;
    if (inode === '0') {
      closed = true; // a TIME_WAIT or orphaned socket; a live row for a reused tuple may still follow
      continue;
    }
    return { inode };
  }
  return closed ? 'closed' : null;
}
