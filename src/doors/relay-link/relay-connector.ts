// The one outbound WebSocket a daemon keeps to its relay (wire/relay-link.ts): TLS verified
// (the system's CAs, or the configured CA file's; never unverified), the node token as a bearer,
// capped exponential backoff with full jitter between attempts, and heartbeats that drop a
// half-open connection after two unanswered pings. Calls and notices run per connection.
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { RELAY_LIMITS, RELAY_NODE_HEADER, RELAY_NODE_PATH, RELAY_SUBPROTOCOL, RelayFrame, type NodeFrame } from '../../wire/relay-link.js';
import type { Logger } from '../../engine/log.js';
import type { WebApiContext } from '../web/web-api.js';
import { RelayCalls } from './relay-calls.js';
import { RelayPush } from './relay-push.js';

export interface RelayTarget {
  server_url: string;
  node_id: string;
  node_token: string;
  human_mailboxes: readonly string[];
  ca_file: string | null;
}

export interface ConnectorTimings {
  heartbeatMs: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** A welcomed connection that lived this long resets the backoff. */
  resetAfterMs: number;
}

export const DEFAULT_TIMINGS: ConnectorTimings = {
  heartbeatMs: RELAY_LIMITS.heartbeatMs,
  backoffBaseMs: RELAY_LIMITS.backoffBaseMs,
  backoffCapMs: RELAY_LIMITS.backoffCapMs,
  resetAfterMs: 30_000,
};

export interface ConnectorState {
  connected: boolean;
  since: number | null;
  last_error: string | null;
  rtt_ms: number | null;
}

export interface ConnectorOptions {
  target: RelayTarget;
  ctx: WebApiContext;
  log: Logger;
  version: string;
  timings: ConnectorTimings;
  now?: () => number;
}

/** What an upgrade refused with an HTTP status means, for last_error. */
function refusal(status: number): string {
  if (status === 401) return 'unauthenticated: the relay refused the node id or token (HTTP 401)';
  if (status === 409) return 'node_in_use: another connection holds this node id at the relay (HTTP 409)';
  return `the relay refused the connection (HTTP ${status})`;
}

export class RelayConnector {
  private ws: WebSocket | null = null;
  private retry: NodeJS.Timeout | null = null;
  private attempt = 0;
  private stopped = false;
  private readonly state: ConnectorState = { connected: false, since: null, last_error: null, rtt_ms: null };
  private readonly now: () => number;

  constructor(private readonly o: ConnectorOptions) {
    this.now = o.now ?? Date.now;
  }

  status(): Readonly<ConnectorState> {
    return { ...this.state };
  }

  private endConn: (() => void) | null = null;

  start(): void {
    this.stopped = false;
    if (!this.ws && !this.retry) this.dial();
  }

  /** Closes the connection and dials no more. */
  stop(): void {
    this.stopped = true;
    this.endConn?.();
    this.endConn = null;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.ws?.close(1000, 'node stopping');
    const ws = this.ws;
    // A peer that never answers the close frame is cut off.
    if (ws) setTimeout(() => ws.terminate(), 2000).unref();
    this.ws = null;
    if (this.state.connected) this.state.since = this.now();
    this.state.connected = false;
  }

  /** Full jitter over min(cap, base · 2^attempt). */
  private backoff(): number {
    const t = this.o.timings;
    const ceiling = Math.min(t.backoffCapMs, t.backoffBaseMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.floor(Math.random() * ceiling);
  }

  private dial(): void {
    const { target, timings, log } = this.o;
    let ca: Buffer | undefined;
    try {
      if (target.ca_file) ca = readFileSync(target.ca_file);
    } catch (err) {
      return this.lost(null, `ca_file unreadable: ${err instanceof Error ? err.message : String(err)}`);
    }
    const url = new URL(RELAY_NODE_PATH, target.server_url);
    const ws = new WebSocket(url, RELAY_SUBPROTOCOL, {
      headers: { authorization: `Bearer ${target.node_token}`, [RELAY_NODE_HEADER]: target.node_id },
      maxPayload: RELAY_LIMITS.frameBytes,
      perMessageDeflate: false,
      followRedirects: false,
      handshakeTimeout: timings.heartbeatMs * 2,
      rejectUnauthorized: true,
      ...(ca ? { ca } : {}),
    });
    this.ws = ws;
    const conn = new AbortController();
    // stop() ends the notice loops and calls at once, not when the close handshake ends.
    this.endConn = () => conn.abort();
    let welcomedAt: number | null = null;
    let calls: RelayCalls | null = null;
    let push: RelayPush | null = null;
    let error: string | null = null;
    let missed = 0;
    let pingAt = 0;
    const send = (f: NodeFrame): void => {
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(f));
    };
    // A relay that accepts but never welcomes is dropped as well as one that stops answering.
    let ticks = 0;
    const beat = setInterval(() => {
      if (ws.readyState !== WebSocket.OPEN) return;
      if (missed >= 2) {
        error = 'heartbeat: the relay answered none of the last two pings';
        return ws.terminate();
      }
      if (welcomedAt === null && ++ticks > 2) {
        error = 'no welcome from the relay';
        return ws.terminate();
      }
      missed++;
      pingAt = this.now();
      ws.ping();
    }, timings.heartbeatMs);
    beat.unref();

    ws.on('unexpected-response', (_req, res) => {
      error = refusal(res.statusCode ?? 0);
      res.resume();
      ws.terminate(); // while connecting: aborts the request, then 'close' as for any failure
    });
    ws.on('open', () => {
      send({ t: 'hello', node: target.node_id, mailboxes: [...target.human_mailboxes], version: this.o.version });
    });
    ws.on('pong', () => {
      missed = 0;
      this.state.rtt_ms = this.now() - pingAt;
    });
    ws.on('message', (data, isBinary) => {
      let parsed: unknown;
      try {
        parsed = isBinary ? undefined : JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8'));
      } catch {
        parsed = undefined;
      }
      const f = RelayFrame.safeParse(parsed);
      if (!f.success) return log.warn({ t: (parsed as { t?: unknown } | undefined)?.t ?? null }, 'relay link: a frame the protocol does not name; ignored');
      const frame = f.data;
      if (frame.t === 'welcome') {
        if (welcomedAt !== null) return log.warn({}, 'relay link: a second welcome; ignored');
        welcomedAt = this.now();
        Object.assign(this.state, { connected: true, since: welcomedAt, last_error: null });
        calls = new RelayCalls({ ctx: this.o.ctx, mailboxes: new Set(target.human_mailboxes), relayHost: url.host, log, send });
        push = new RelayPush({ engine: this.o.ctx.engine, mailboxes: target.human_mailboxes, cursors: frame.cursors, log, send, signal: conn.signal });
        push.start();
        log.info({ relay: url.host, node: target.node_id }, 'relay link connected');
        return;
      }
      if (!calls || !push) return log.warn({ t: frame.t }, 'relay link: a frame before the welcome; ignored');
      if (frame.t === 'call') calls.handle(frame);
      else if (frame.t === 'cancel') calls.cancel(frame.id);
      else push.ack(frame.mailbox, frame.cursor);
    });
    ws.on('error', (err) => {
      error ??= err.message;
    });
    ws.on('close', (code, reason) => {
      clearInterval(beat);
      conn.abort();
      calls?.abortAll();
      if (welcomedAt !== null && this.now() - welcomedAt >= timings.resetAfterMs) this.attempt = 0;
      const why = error ?? `closed by the relay (${code}${reason.length ? ` ${reason.toString('utf8')}` : ''})`;
      if (this.ws === ws) this.lost(ws, why);
    });
  }

  /** The connection (or the attempt) ended: remember why, and dial again after the backoff. */
  private lost(ws: WebSocket | null, why: string): void {
    if (ws && this.ws !== ws) return;
    this.ws = null;
    const was = this.state.connected;
    Object.assign(this.state, { connected: false, last_error: why, ...(was || this.state.since === null ? { since: this.now() } : {}) });
    if (this.stopped) return;
    const delay = this.backoff();
    this.o.log.warn({ why, retry_ms: delay }, 'relay link: not connected; dialling again');
    this.retry = setTimeout(() => {
      this.retry = null;
      if (!this.stopped) this.dial();
    }, delay);
    this.retry.unref();
  }
}
