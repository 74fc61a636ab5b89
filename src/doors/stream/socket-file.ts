// The stream door's socket file: its path must fit a Unix socket address, a file left by a daemon
// that died is replaced (only once a connect to it failed: a live listener is never taken over),
// and anything that is not a socket is left alone.
import { lstatSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';

/** sun_path holds 108 bytes with the terminating NUL. */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Why the door cannot listen at `path` (the daemon then serves HTTP only), or null. */
export function socketPathProblem(path: string): string | null {
  const n = Buffer.byteLength(path);
  return n > MAX_SOCKET_PATH_BYTES ? `the socket path is ${n} bytes, over the ${MAX_SOCKET_PATH_BYTES} a Unix socket path may hold (use a shorter --data-dir)` : null;
}

export class SocketInUse extends Error {}

/** Makes way for a new listener at `path`: nothing there, or a socket nobody listens on (removed).
 *  Throws SocketInUse for a live listener and for a file that is not a socket. */
export async function clearStaleSocket(path: string, timeoutMs = 1_000): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (!isSocket) throw new SocketInUse(`${path} exists and is not a socket: remove it to enable the stream door`);
  const live = await new Promise<boolean>((resolve) => {
    const s = connect(path);
    const done = (v: boolean): void => {
      clearTimeout(t);
      s.destroy();
      resolve(v);
    };
    // A listener too busy to accept within the timeout is still a listener.
    const t = setTimeout(() => done(true), timeoutMs);
    s.once('connect', () => done(true));
    s.once('error', (err: NodeJS.ErrnoException) => done(err.code !== 'ECONNREFUSED' && err.code !== 'ENOENT'));
  });
  if (live) throw new SocketInUse(`another process listens on ${path}`);
  try {
    unlinkSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}
