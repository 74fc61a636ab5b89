// Before a client sends its secret, it checks who listens on the daemon's port: the kernel's
// socket table names the owning uid of every LISTEN socket. Another user who grabbed the port
// first gets nothing. Linux only; elsewhere the check reports 'unknown'.
import { readFileSync } from 'node:fs';
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

/** The uid owning the LISTEN socket on host:port, judged against this process's uid. */
export function portOwner(host: string, port: number): PortOwner {
  if (process.platform !== 'linux' || typeof process.getuid !== 'function') return { kind: 'unknown' };
  const me = process.getuid();
  for (const { file, hex } of addrHex(host)) {
    let table: string;
    try {
      table = readFileSync(`/proc/net/${file}`, 'utf8');
    } catch {
      return { kind: 'unknown' };
    }
    const needle = `${hex}:${hexPort(port)} `;
    for (let i = table.indexOf(needle); i !== -1; i = table.indexOf(needle, i + 1)) {
      const lineEnd = table.indexOf('\n', i);
      const cols = table
        .slice(i, lineEnd === -1 ? undefined : lineEnd)
        .trim()
        .split(/\s+/);
      // cols: local rem st tx:rx tr:when retrnsmt uid …
      if (cols[2] !== '0A') continue; // LISTEN only
      const uid = Number(cols[6]);
      return uid === me || uid === 0 ? { kind: 'same' } : { kind: 'other', uid };
    }
  }
  return { kind: 'none' };
}
