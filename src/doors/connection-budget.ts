// One connection budget for every listener of the daemon (HTTP, the browser's LAN door, the stream
// door). Each listener's own maxConnections would let them together hold more descriptors than the
// process may open, so a flood on one door (a runaway program on the stream socket) could leave the
// store and the other doors without any; counted here, the sum stays under the limit.
import { readFileSync } from 'node:fs';
import type { Server, Socket } from 'node:net';

export class ConnectionBudget {
  private open = 0;

  constructor(readonly max: number) {}

  get size(): number {
    return this.open;
  }

  /** Counts the socket until it closes; past the budget it is closed at once (false). */
  admit(socket: Socket): boolean {
    if (this.open >= this.max) {
      socket.destroy();
      return false;
    }
    this.open++;
    socket.once('close', () => this.open--);
    return true;
  }

  /** Every connection the server accepts is admitted first (before its other listeners run). */
  attach(server: Server): void {
    server.prependListener('connection', (socket: Socket) => void this.admit(socket));
  }
}

/** Connections a process's listeners may hold together: the process's open-file limit less room for the store, logs,
 *  wake programs and the other listener (node raises the soft limit to the hard one at start). */
export function descriptorBudget(): number {
  let limit = 4096;
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (m?.[1]) limit = Number(m[1]);
  } catch {
    /* not Linux: keep the default */
  }
  return Math.max(256, limit - 512);
}
