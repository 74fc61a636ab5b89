// /proc/net/tcp{,6} read into one buffer that every batch reuses, and the rows a batch wants found in
// one pass over its bytes. The table has a row per socket on the host (20,000 rows, 3 MB, with
// 10,000 loopback connections open): read as a string and split into fields per row, every batch
// allocated that much again, and the worker's heap grew with it. Here a row costs a newline search
// and a 4-byte compare; only a row whose server port is wanted becomes a string.
import { closeSync, openSync, readSync } from 'node:fs';
import type { RowLookup } from './proc-net.js';

const NL = 10;
const SPACE = 32;
const COLON = 58;

export class NetTable {
  private buf: Buffer;
  /** Bytes of the last read. */
  length = 0;

  constructor(initialBytes = 1 << 20) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  /** Bytes the buffer holds room for (tests). */
  get capacity(): number {
    return this.buf.length;
  }

  get bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }

  /** Reads the whole file; false (and empty) when it cannot be read (no IPv6 in this kernel, say). */
  read(path: string): boolean {
    this.length = 0;
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return false;
    }
    try {
      for (;;) {
        if (this.length === this.buf.length) {
          const grown = Buffer.allocUnsafe(this.buf.length * 2);
          this.buf.copy(grown, 0, 0, this.length);
          this.buf = grown;
        }
        const n = readSync(fd, this.buf, this.length, this.buf.length - this.length, null);
        if (n === 0) {
          this.shrink();
          return true;
        }
        this.length += n;
      }
    } catch {
      this.length = 0;
      return false;
    } finally {
      closeSync(fd);
    }
  }

  /** A table that was once very large (a burst of sockets) does not keep its buffer for good. */
  private shrink(): void {
    if (this.buf.length <= 4 << 20 || this.length * 4 > this.buf.length) return;
    const smaller = Buffer.allocUnsafe(Math.max(1 << 20, this.length * 2));
    this.buf.copy(smaller, 0, 0, this.length);
    this.buf = smaller;
  }
}

/**
 * Every wanted `LOCAL:PORT REMOTE:PORT` key (the same length, one file's form) looked up in one pass:
 * the key must be the row's local/remote columns (after `sl:` and a space); a live row (inode not 0)
 * wins over an orphaned one (FIN_WAIT/TIME_WAIT, inode 0: `closed`); absent keys are not in the map.
 * Agrees with `findRow` of proc-net.ts for every key.
 */
export function findRows(table: Buffer, keys: Iterable<string>): Map<string, RowLookup> {
  const out = new Map<string, RowLookup>();
  const wanted = new Set(keys);
  if (wanted.size === 0) return out;
  const keyLen = (wanted.values().next().value as string).length;
  // The server's port is the key's last 4 characters: a row for another port is passed over by
  // comparing 4 bytes, without making a string of it.
  const ports: number[][] = [];
  const seenPorts = new Set<string>();
  for (const k of wanted) {
    if (k.length !== keyLen) throw new Error('findRows: keys of one file have one length');
    const p = k.slice(-4);
    if (!seenPorts.has(p)) {
      seenPorts.add(p);
      ports.push([...p].map((c) => c.charCodeAt(0)));
    }
  }
  const end = table.length;
  let line = 0;
  while (line < end) {
    let next = table.indexOf(NL, line);
    if (next === -1) next = end;
    const at = rowKeyStart(table, line, next);
    if (at !== -1 && at + keyLen <= next && (at + keyLen === next || table[at + keyLen] === SPACE) && portIs(table, at + keyLen - 4, ports)) {
      const key = table.toString('latin1', at, at + keyLen);
      if (wanted.has(key)) {
        const inode = inodeOf(table, at + keyLen, next);
        if (inode !== null) {
          if (inode !== '0') out.set(key, { inode });
          else if (!out.has(key)) out.set(key, 'closed');
        }
      }
    }
    line = next + 1;
  }
  return out;
}

/** Where the local/remote columns start: after `  N: ` (spaces, digits, a colon, a space); -1 for
 *  the header and anything else. */
function rowKeyStart(t: Buffer, from: number, to: number): number {
  let i = from;
  while (i < to && t[i] === SPACE) i++;
  const digits = i;
  while (i < to && (t[i] as number) >= 48 && (t[i] as number) <= 57) i++;
  if (i === digits || t[i] !== COLON || t[i + 1] !== SPACE) return -1;
  return i + 2;
}

function portIs(t: Buffer, at: number, ports: number[][]): boolean {
  for (const p of ports) if (t[at] === p[0] && t[at + 1] === p[1] && t[at + 2] === p[2] && t[at + 3] === p[3]) return true;
  return false;
}

/** The inode: the 7th field after the key (st, tx:rx, tr:when, retrnsmt, uid, timeout, inode), digits
 *  only, else null. */
function inodeOf(t: Buffer, from: number, to: number): string | null {
  let i = from;
  for (let field = 0; field < 7; field++) {
    while (i < to && t[i] === SPACE) i++;
    const start = i;
    while (i < to && t[i] !== SPACE) i++;
    if (i === start) return null;
    if (field === 6) {
      for (let j = start; j < i; j++) if ((t[j] as number) < 48 || (t[j] as number) > 57) return null;
      return t.toString('latin1', start, i);
    }
  }
  return null;
}
