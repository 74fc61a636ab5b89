// The load generator's HTTP: node:http on keep-alive agents, one POST at a time per socket.
import { Agent, request } from 'node:http';

export interface Reply {
  status: number;
  text: string;
}

export function keepAlive(maxSockets: number): Agent {
  return new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets, scheduling: 'fifo' });
}

export class Poster {
  private readonly headers: Record<string, string>;

  constructor(
    readonly agent: Agent,
    readonly port: number,
    token?: string,
  ) {
    this.headers = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
  }

  post(path: string, body: string, timeoutMs = 120_000): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          agent: this.agent,
          host: '127.0.0.1',
          port: this.port,
          path,
          method: 'POST',
          headers: { ...this.headers, 'content-length': Buffer.byteLength(body) },
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  async json<T>(path: string, body: unknown, timeoutMs?: number): Promise<T> {
    const r = await this.post(path, JSON.stringify(body), timeoutMs);
    if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${r.text.slice(0, 300)}`);
    return JSON.parse(r.text) as T;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** `@progress DONE TOTAL UNIT` on stderr, at most every 200 ms (the harness draws it). */
export function progressReporter(total: number, unit: string): (done: number, force?: boolean) => void {
  let last = 0;
  return (done, force = false) => {
    const now = Date.now();
    if (!force && now - last < 200) return;
    last = now;
    process.stderr.write(`@progress ${done} ${total} ${unit}\n`);
  };
}
