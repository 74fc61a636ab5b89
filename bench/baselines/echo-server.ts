// The cost of the door alone: a plain node:http server that reads the JSON body, parses it and
// answers a small JSON, with the daemon's own server timeouts. Prints {"port":N} once listening.
import { createServer } from 'node:http';

const server = createServer({ requestTimeout: 120_000, headersTimeout: 30_000, keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"code":"malformed"}}');
      return;
    }
    const out = JSON.stringify({ ok: true, keys: typeof parsed === 'object' && parsed !== null ? Object.keys(parsed).length : 0 });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) }).end(out);
  });
});

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof a === 'object' && a ? a.port : 0 })}\n`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
