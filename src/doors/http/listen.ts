// Listening a node:http server on host:port, for the loopback door and the LAN browser listener.
import type { Server } from 'node:http';

/** Listens `server` on host:port (exclusive; port 0 picks a free one) and resolves with the port it
 *  bound; rejects with the listen error (EADDRINUSE, EACCES, …). */
export async function listenOn(server: Server, host: string, port: number, o: { backlog?: number } = {}): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, exclusive: true, ...(o.backlog !== undefined ? { backlog: o.backlog } : {}) }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : port;
}
