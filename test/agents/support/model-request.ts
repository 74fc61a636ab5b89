// What both scripted model servers read from a request: method, path without the query, and the
// body (parsed as JSON when it is JSON, else the raw text), stamped with when it arrived.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ModelRequest {
  method: string;
  path: string;
  body: any;
  at: number;
}

export async function readModelRequest(req: IncomingMessage): Promise<ModelRequest> {
  const chunks: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
  const raw = Buffer.concat(chunks).toString('utf8');
  let body: unknown;
  try {
    body = raw ? JSON.parse(raw) : null;
  } catch {
    body = raw;
  }
  return { method: req.method ?? 'GET', path: (req.url ?? '/').split('?')[0] ?? '/', body, at: Date.now() };
}

export interface ModelServer {
  url: string;
  close(): Promise<void>;
}

/** A scripted model's server on 127.0.0.1 (port 0): each request is read, then handled; a handler
 *  that throws is recorded in `problems` and answered 500. */
export async function serveModel(problems: string[], handle: (got: ModelRequest, res: ServerResponse) => Promise<void> | void): Promise<ModelServer> {
  const server = createServer((req, res) => {
    void (async () => handle(await readModelRequest(req), res))().catch((err: unknown) => {
      problems.push(`server error: ${err instanceof Error ? err.message : String(err)}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
