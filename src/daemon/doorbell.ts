// Listener doorbells: a POST of ids only to a checked loopback address, short timeout, no
// redirects, bounded concurrency. Failures are logged and otherwise ignored.
import { request } from 'node:http';
import type { CheckedListener, Doorbell } from '../engine/listener-url.js';
import type { Logger } from '../engine/log.js';

const TIMEOUT_MS = 2000;
const MAX_IN_FLIGHT = 64;

export class HttpDoorbell implements Doorbell {
  private inFlight = 0;

  constructor(private log: Logger) {}

  ring(t: CheckedListener, payload: { account: string; to: string; message_id: string; from: string }): void {
    if (this.inFlight >= MAX_IN_FLIGHT) {
      this.log.warn({ account: payload.account }, 'listener dropped: too many in flight');
      return;
    }
    this.inFlight++;
    const body = JSON.stringify(payload);
    const req = request({
      host: t.connectHost,
      port: t.port,
      path: t.path,
      method: 'POST',
      timeout: TIMEOUT_MS,
      headers: { host: t.hostHeader, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'mail4agent-doorbell' },
    });
    const done = (err?: Error): void => {
      if (err) this.log.warn({ account: payload.account, err: err.message }, 'listener failed');
      this.inFlight--;
    };
    let finished = false;
    const finish = (err?: Error): void => {
      if (finished) return;
      finished = true;
      done(err);
    };
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => finish(res.statusCode && res.statusCode < 400 ? undefined : new Error(`HTTP ${res.statusCode}`)));
      res.on('error', finish);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', finish);
    req.end(body);
  }
}
