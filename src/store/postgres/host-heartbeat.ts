// Liveness across hosts. A daemon attaches its host id: a row in `hosts` refreshed every few
// seconds with an expiry on the database clock. Sessions of another host whose expiry has passed
// read as ended at that expiry (nothing is written: they come back live when their host does;
// sessions.ts). Sessions of this daemon's own host are judged by the daemon itself.
import { bootId as readBootId } from './host-identity.js';
import { NOW_MS, type Sql } from './pg-sql.js';

export interface HostOptions {
  bootId?: string | null;
  /** How long the host counts as alive after each refresh (default 60 s). */
  ttlMs?: number;
  /** How often the refresh runs (default ttl / 4). */
  everyMs?: number;
}

export class HostHeartbeat {
  private host: { id: string; bootId: string | null; ttlMs: number } | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(private readonly sql: Sql) {}

  /** This daemon's host id, or '' before attach: its sessions are never expired by its own store. */
  get hostId(): string {
    return this.host?.id ?? '';
  }

  /** Publishes the host as alive now and every `everyMs`. */
  async attach(hostId: string, o: HostOptions = {}): Promise<void> {
    const ttlMs = o.ttlMs ?? 60_000;
    this.host = { id: hostId, bootId: o.bootId ?? readBootId(), ttlMs };
    if (this.timer) clearInterval(this.timer);
    await this.beat();
    this.timer = setInterval(() => void this.beat().catch(() => undefined), o.everyMs ?? Math.max(50, Math.floor(ttlMs / 4)));
    this.timer.unref();
  }

  /** Stops refreshing (the host's sessions then expire for the other daemons after the ttl). */
  detach(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** For close: no refresh runs after it. */
  stop(): void {
    this.stopped = true;
    this.detach();
  }

  private async beat(): Promise<void> {
    const h = this.host;
    if (!h || this.stopped) return;
    await this.sql.unsafe(
      `INSERT INTO hosts (host_id, boot_id, started_at, last_seen, expires_at)
       VALUES ($1, $2, ${NOW_MS}, ${NOW_MS}, ${NOW_MS} + $3::bigint)
       ON CONFLICT (host_id) DO UPDATE SET
         started_at = CASE WHEN hosts.boot_id IS DISTINCT FROM excluded.boot_id THEN excluded.started_at ELSE hosts.started_at END,
         boot_id = excluded.boot_id, last_seen = excluded.last_seen, expires_at = excluded.expires_at`,
      [h.id, h.bootId, h.ttlMs],
    );
  }
}
