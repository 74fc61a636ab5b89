// The relay fuzz's network side: a raw HTTPS request to the relay with every header and body byte
// under the test's control and a hard deadline, counted in the soak tally's "relay" door.
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { tally } from './soak-tally.js';

export interface RelayAnswer {
  status: number;
  text: string;
  json: any;
  headers: Record<string, string | string[] | undefined>;
}

export class RelayHttp {
  private readonly agent: https.Agent;

  constructor(
    readonly port: number,
    caFile: string,
  ) {
    // The certificate names localhost and 127.0.0.1: checked against that, whatever Host is sent.
    this.agent = new https.Agent({ keepAlive: true, maxSockets: 4, ca: readFileSync(caFile), servername: 'localhost' });
  }

  /** `node: true`: the answer is one a node chose (its status passes through), so a 5xx there is
   *  not counted as the relay's. */
  request(path: string, o: { method?: string; headers?: Record<string, string>; body?: string | Buffer; timeoutMs?: number; node?: boolean } = {}): Promise<RelayAnswer> {
    const t = tally('relay');
    t.requests++;
    const body = o.body === undefined ? undefined : Buffer.isBuffer(o.body) ? o.body : Buffer.from(o.body, 'utf8');
    const timeoutMs = o.timeoutMs ?? 10_000;
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: this.port,
          path,
          method: o.method ?? 'POST',
          agent: this.agent,
          headers: { host: `127.0.0.1:${this.port}`, ...(body !== undefined ? { 'content-length': String(body.length) } : {}), ...o.headers },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            clearTimeout(timer);
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown;
            try {
              json = text ? JSON.parse(text) : null;
            } catch {
              json = text;
            }
            if ((res.statusCode ?? 0) >= 500 && !o.node) t.status5xx++;
            resolve({ status: res.statusCode ?? 0, text, json, headers: res.headers });
          });
          res.on('error', reject);
        },
      );
      const timer = setTimeout(() => {
        t.hangs++;
        req.destroy(new Error(`no answer from the relay's ${path} within ${timeoutMs} ms (a hang)`));
      }, timeoutMs);
      req.on('error', (e) => {
        clearTimeout(timer);
        if (/ECONNREFUSED|ECONNRESET|EPIPE/.test((e as NodeJS.ErrnoException).code ?? '')) t.crashes++;
        reject(e);
      });
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
