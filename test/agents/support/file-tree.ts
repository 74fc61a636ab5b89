// A directory tree as a map from path to what is there: "dir", "-> target" for a symlink, or the
// sha256 of a file's bytes (and its mode), so two snapshots compare byte for byte with deepEqual.
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/** Every entry under each root (roots included), except the paths `skip` says to leave out (a
 *  skipped directory is not entered). */
export function snapshotTree(roots: string[], skip: (path: string) => boolean = () => false): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (p: string): void => {
    if (skip(p)) return;
    const st = lstatSync(p);
    if (st.isSymbolicLink()) out[p] = `-> ${readlinkSync(p)}`;
    else if (st.isDirectory()) {
      out[p] = 'dir';
      for (const n of readdirSync(p).sort()) walk(join(p, n));
    } else out[p] = `${createHash('sha256').update(readFileSync(p)).digest('hex')} mode ${(st.mode & 0o777).toString(8)}`;
  };
  for (const r of roots) walk(r);
  return out;
}

/** The regular files under each root, for grepping. */
export function filesUnder(roots: string[]): string[] {
  return Object.entries(snapshotTree(roots))
    .filter(([, v]) => v !== 'dir' && !v.startsWith('-> '))
    .map(([p]) => p);
}
