// `m4a serve --web-lan ADDR:PORT`: a second listener that serves the browser door and nothing else
// (no /mail, /mcp or /admin: agents and the operator stay on loopback). Host and Origin must name
// exactly ADDR:PORT. Plain HTTP: for trusted networks only, and the daemon says so when it starts.
import { createServer, type Server } from 'node:http';
import { MailError } from '../../wire/errors.js';
import type { Logger } from '../../engine/log.js';
import type { ConnectionGate } from '../http/connection-gate.js';
import type { ConnectionBudget } from '../connection-budget.js';
import { listenOn } from '../http/listen.js';
import { OriginGuard } from '../http/origin-guard.js';
import { sendError } from '../http/respond.js';
import { WebDoor } from './web-door.js';

export class WebLanListener {
  readonly server: Server;
  readonly guard = new OriginGuard();

  constructor(
    private web: WebDoor,
    private log: Logger,
    /** The loopback door's gate: one bound on unproven connections for both listeners. */
    gate: ConnectionGate,
    o: { headersTimeoutMs?: number; budget?: ConnectionBudget } = {},
  ) {
    const headersTimeout = o.headersTimeoutMs ?? 5_000;
    this.server = createServer({ requestTimeout: 120_000, headersTimeout, connectionsCheckingInterval: Math.min(1_000, headersTimeout) }, (req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      try {
        this.guard.check(req.headers.host, req.headers.origin);
        if (!WebDoor.owns(path)) throw new MailError('unknown_route', `only the browser mailbox is served on this address (no ${path})`);
      } catch (err) {
        return sendError(res, err, this.log);
      }
      void this.web.handle(req, res, path);
    });
    gate.attach(this.server);
    o.budget?.attach(this.server);
  }

  async listen(host: string, port: number): Promise<number> {
    const bound = await listenOn(this.server, host, port);
    this.guard.configure(host, bound);
    return bound;
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    this.server.closeAllConnections();
    await closed;
  }
}

/** ADDR:PORT, [v6]:PORT or ADDR (port 7342). */
export function parseLanAddress(s: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]+))(?::(\d{1,5}))?$/.exec(s.trim());
  const host = m?.[1] ?? m?.[2];
  const port = m?.[3] === undefined ? 7342 : Number(m[3]);
  if (!host || !Number.isInteger(port) || port > 65535) throw new MailError('malformed', `--web-lan wants ADDR:PORT, not ${s}`, { field: 'web_lan', reason: 'not ADDR:PORT' });
  return { host, port };
}
