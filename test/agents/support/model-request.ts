// What both scripted model servers read from a request: method, path without the query, and the
// body (parsed as JSON when it is JSON, else the raw text), stamped with when it arrived.
import type { IncomingMessage } from 'node:http';

export interface ModelRequest {
  method: string;
  path: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  at: number;
}

export async function readModelRequest(req: IncomingMessage): Promise<ModelRequest> {
  const chunks: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
  const raw = Buffer.concat(chunks).toString('utf8');
  let body: unknown = null;
  try {
    body = raw ? JSON.parse(raw) : null;
  } catch {
    body = raw;
  }
  return { method: req.method ?? 'GET', path: (req.url ?? '/').split('?')[0] ?? '/', body, at: Date.now() };
}
