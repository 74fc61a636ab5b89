// Before a client sends its secret, it checks who listens on the daemon's port: the kernel's
// socket table names the owning uid of every LISTEN socket. Another user who grabbed the port
// first gets nothing. Linux only; elsewhere the check reports 'unknown'.
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { endianness } from 'node:os';

export type PortOwner = { kind: 'same' } | { kind: 'other'; uid: number } | { kind: 'none' } | { kind: 'unknown' };

const LE = endianness() === 'LE';
const hexPort = (port: number) => port.toString(16).toUpperCase().padStart(4, '0');

function addrHex(host: string): { file: 'tcp' | 'tcp6'; hex: string }[] {
  if (host === '127.0.0.1' || host === 'localhost') {
    const v4 = LE ? '0100007F' : '7F000001';
    return [
      { file: 'tcp', hex: v4 },
      { file: 'tcp', hex: '00000000' },
      // An IPv6 socket takes IPv4 connections too (dual-stack, Linux's default): bound to
      // ::ffff:127.0.0.1, or to `::`, which is what listen(port) with no host binds.
      { file: 'tcp6', hex: `0000000000000000${LE ? 'FFFF0000' : '0000FFFF'}${v4}` },
      { file: 'tcp6', hex: '0'.repeat(32) },
    ];
  }
  if (host === '::1' || host === '[::1]') {
    return [
      { file: 'tcp6', hex: `000000000000000000000000${LE ? '01000000' : '00000001'}` },
      { file: 'tcp6', hex: '0'.repeat(32) },
    ];
  }
  return [];
}

/** The table's rows up to the first one in another state than LISTEN: the kernel prints its
 *  listening sockets first, and printing every connection of a busy host (20,000 rows) cost a cold
 *  `m4a send` tens of milliseconds. The kernel fills each read with whole rows. */
function listenPrefix(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    let text = '';
    for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) {
      text += buf.toString('latin1', 0, n);
      const end = text.lastIndexOf('\n');
      const start = text.lastIndexOf('\n', end - 1) + 1;
      // The last whole row, not the header: "sl local rem st …"
      if (start > 0 && text.slice(start, end).trim().split(/\s+/)[3] !== '0A') break;
    }
    return text.slice(0, text.lastIndexOf('\n') + 1);
  } finally {
    closeSync(fd);
  }
}

/** The uid owning the LISTEN socket on host:port in a /proc/net table, or null when none is listed. */
function ownerIn(table: string, hex: string, port: number): number | null {
  const needle = `${hex}:${hexPort(port)} `;
  for (let i = table.indexOf(needle); i !== -1; i = table.indexOf(needle, i + 1)) {
    const lineEnd = table.indexOf('\n', i);
    const cols = table
      .slice(i, lineEnd === -1 ? undefined : lineEnd)
      .trim()
      .split(/\s+/);
    // cols: local rem st tx:rx tr:when retrnsmt uid …
    if (cols[2] !== '0A') continue; // LISTEN only
    return Number(cols[6]);
  }
  return null;
}

/** The uid owning the LISTEN socket on host:port, judged against this process's uid. The listening
 *  rows are read first; only when the port is not among them is the whole table read, so an
 *  unexpected order can cost time but never lets a secret go to another user's listener. */
export function portOwner(host: string, port: number): PortOwner {
  if (process.platform !== 'linux' || typeof process.getuid !== 'function') return { kind: 'unknown' };
  const me = process.getuid();
  const judge = (uid: number): PortOwner => (uid === me || uid === 0 ? { kind: 'same' } : { kind: 'other', uid });
  const places = addrHex(host);
  try {
    for (const { file, hex } of places) {
      const uid = ownerIn(listenPrefix(`/proc/net/${file}`), hex, port);
      if (uid !== null) return judge(uid);
    }
    for (const { file, hex } of places) {
      const uid = ownerIn(readFileSync(`/proc/net/${file}`, 'latin1'), hex, port);
      if (uid !== null) return judge(uid);
    }
  } catch {
    return { kind: 'unknown' };
  }
  return { kind: 'none' };
}
