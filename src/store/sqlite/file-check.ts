// What can be told of a database file from its size and its 100-byte header, before SQLite opens it
// (an open of a damaged file would already create -wal and -shm beside it). The rules are SQLite's
// own (https://www.sqlite.org/fileformat.html#the_database_header); SQLite's verdict at open is the
// second net for everything else.
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';

const MAGIC = Buffer.from('SQLite format 3\0', 'latin1');

/** Null when the file looks like an SQLite database, else what is wrong with it. */
export function inspectDbFile(path: string): string | null {
  const size = statSync(path).size;
  if (size === 0) return 'is empty (zero bytes)';
  const head = Buffer.alloc(100);
  const fd = openSync(path, 'r');
  let got: number;
  try {
    got = readSync(fd, head, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  if (got < 100) return `is truncated (${size} bytes, shorter than an SQLite header)`;
  if (!head.subarray(0, 16).equals(MAGIC)) return 'is not an SQLite database (damaged header or foreign content)';
  const raw = head.readUInt16BE(16);
  const pageSize = raw === 1 ? 65536 : raw;
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return `has a damaged header (page size ${raw})`;
  // A non-empty -wal may hold the pages a checkpoint was writing when the machine stopped: then
  // SQLite replays it and decides. Without one, the file itself must be whole.
  const wal = `${path}-wal`;
  if (existsSync(wal) && statSync(wal).size > 0) return null;
  if (size % pageSize !== 0) return `is truncated (${size} bytes is not a whole number of ${pageSize}-byte pages)`;
  // The header's page count is valid when its change counter matches version-valid-for.
  const pages = head.readUInt32BE(28);
  const valid = pages > 0 && head.readUInt32BE(24) === head.readUInt32BE(92);
  if (valid && pages * pageSize > size) return `is truncated (${size} bytes of ${pages * pageSize})`;
  return null;
}
