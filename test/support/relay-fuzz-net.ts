// The relay fuzz's network side: a raw HTTPS request to the relay with every header and body byte
// under the test's control and a hard deadline (helpers.ts's tallied), counted in the soak tally's
// "relay" door.
import https from 'node:https';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { tallied, type RawAnswer } from '../reliability/helpers.js';

export type RelayAnswer = RawAnswer;

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
    const body = o.body === undefined ? undefined : Buffer.isBuffer(o.body) ? o.body : Buffer.from(o.body, 'utf8');
    const start = (onAnswer: (res: IncomingMessage) => void) =>
      https.request(
        {
          host: '127.0.0.1',
          port: this.port,
          path,
          method: o.method ?? 'POST',
          agent: this.agent,
          headers: { host: `127.0.0.1:${this.port}`, ...(body !== undefined ? { 'content-length': String(body.length) } : {}), ...o.headers },
        },
        onAnswer,
      );
    return tallied(start, { door: 'relay', path: `the relay's ${path}`, body, count5xx: !o.node, ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}) });
  }

  close(): void {
    this.agent.destroy();
  }
}
