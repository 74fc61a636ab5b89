// The SO_PEERCRED addon (native/peercred): who connected to a Unix socket, as the kernel recorded
// it at connect time. Node 20 has no API for it. Loaded through node-gyp-build (prebuilds/ of the
// package, or build/Release of a checkout); null when it cannot load, and the daemon then runs
// without the stream door. It never throws at load.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { PeerCredentials } from './types.js';

/** The peer of a connected Unix socket's fd (`socket._handle.fd`); throws when fd is no such socket. */
export type ReadPeerCred = (fd: number) => PeerCredentials;

export interface PeerCredLoad {
  /** Simulates a machine where the addon cannot load (tests, `serve` without the stream door). */
  disabled?: boolean;
  /** Told why the addon is unavailable (the daemon logs it once). */
  onUnavailable?: (reason: string) => void;
}

export function loadPeerCred(packageRoot: string, o: PeerCredLoad = {}): ReadPeerCred | null {
  const refuse = (reason: string): null => {
    o.onUnavailable?.(reason);
    return null;
  };
  if (o.disabled) return refuse('disabled');
  if (process.platform !== 'linux') return refuse(`SO_PEERCRED is Linux-only (this is ${process.platform})`);
  let fn: unknown;
  try {
    const load = createRequire(import.meta.url)('node-gyp-build') as (dir: string) => { peercred?: unknown };
    fn = load(join(packageRoot, 'native', 'peercred')).peercred;
  } catch (err) {
    return refuse(`the SO_PEERCRED addon did not load: ${err instanceof Error ? (err.message.split('\n')[0] ?? '') : String(err)} (npm run build:native builds it)`);
  }
  if (typeof fn !== 'function') return refuse('the SO_PEERCRED addon has no peercred function');
  const peercred = fn as (fd: number) => PeerCredentials;
  return (fd) => {
    const r = peercred(fd);
    if (!Number.isSafeInteger(r.pid) || !Number.isSafeInteger(r.uid) || !Number.isSafeInteger(r.gid)) throw new Error('SO_PEERCRED answered no credentials');
    return { pid: r.pid, uid: r.uid, gid: r.gid };
  };
}
