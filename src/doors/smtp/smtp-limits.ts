// What the SMTP door holds a sender to (docs/email.md "Receiving mail"): the message size, mail
// per envelope sender and per recipient in sliding windows, and the connections it keeps open.
// The rate windows live in memory: a restart forgets them, which costs at most one window's worth.

export interface SmtpLimits {
  /** Message bytes (as received after DATA, dot-unstuffed), announced with SIZE. */
  maxBytes: number;
  /** Message bytes held at once across every connection's DATA (default 4 messages at the cap):
   *  a mail past it is answered 451 4.3.1, to be sent again later. */
  bufferedBytes: number;
  /** Transactions (accepted MAIL FROM) per envelope sender per window. */
  perSender: number;
  /** Accepted recipients (RCPT) per account per window. */
  perRecipient: number;
  windowMs: number;
  /** Recipients of one transaction. */
  maxRecipients: number;
  /** Connections at once; one more is answered 421 and closed. */
  maxClients: number;
  /** Silence between commands (or data lines) before the connection is closed. */
  idleMs: number;
  /** The longest a connection may live, however busy: a sender trickling bytes cannot hold one. */
  lifetimeMs: number;
  /** On shutdown, how long open transactions get before their connections are closed. */
  closeMs: number;
}

export const SMTP_DEFAULTS: SmtpLimits = {
  maxBytes: 10 * 1024 * 1024,
  bufferedBytes: 40 * 1024 * 1024,
  perSender: 30,
  perRecipient: 60,
  windowMs: 60_000,
  maxRecipients: 50,
  maxClients: 100,
  idleMs: 60_000,
  lifetimeMs: 10 * 60_000,
  closeMs: 2_000,
};

const MAX_KEYS = 10_000;

/** Events per key in the last `windowMs`: a sliding window of timestamps, at most `limit` kept
 *  per key, keys without recent events dropped as they are met. */
export class SlidingWindow {
  private hits = new Map<string, number[]>();

  constructor(
    private limit: number,
    private windowMs: number,
    private now: () => number = Date.now,
  ) {}

  /** Milliseconds until `key` may have one more event, or 0 when it may now. */
  wait(key: string): number {
    const list = this.recent(key);
    if (list.length < this.limit) return 0;
    return Math.max(1, (list[0] ?? 0) + this.windowMs - this.now());
  }

  /** Counts one event for `key`; false (nothing counted) when the window is full. */
  take(key: string): boolean {
    if (this.wait(key) > 0) return false;
    const list = this.hits.get(key) ?? [];
    list.push(this.now());
    this.hits.set(key, list);
    if (this.hits.size > 2 * MAX_KEYS) this.sweep();
    return true;
  }

  private recent(key: string): number[] {
    const list = this.hits.get(key);
    if (!list) return [];
    const since = this.now() - this.windowMs;
    let i = 0;
    while (i < list.length && (list[i] ?? 0) <= since) i++;
    if (i > 0) list.splice(0, i);
    if (list.length === 0) this.hits.delete(key);
    return list;
  }

  /** Drops stale keys, then the oldest until MAX_KEYS remain (a flood of distinct senders costs
   *  bounded memory, amortised over the MAX_KEYS takes between sweeps). */
  private sweep(): void {
    for (const key of [...this.hits.keys()]) this.recent(key);
    for (const key of this.hits.keys()) {
      if (this.hits.size <= MAX_KEYS) break;
      this.hits.delete(key);
    }
  }
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/i;

/** `--smtp ADDR:PORT` ([v6]:PORT for IPv6); a port is required (0: any free port). */
export function parseSmtpAddress(s: string): { host: string; port: number; loopback: boolean } | null {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(s.trim());
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!host || !Number.isInteger(port) || port > 65535) return null;
  return { host: host.toLowerCase() === 'localhost' ? '127.0.0.1' : host, port, loopback: LOOPBACK.test(host) };
}
