// DNS rebinding defence: Host must name the daemon's own loopback address and port, and an
// Origin, when present, must be exactly the daemon's own origin (another port is another site).
import { MailError } from '../../wire/errors.js';

export class OriginGuard {
  private hosts = new Set<string>();
  private origins = new Set<string>();

  /** Call once the port is known. */
  configure(bindHost: string, port: number): void {
    const names = bindHost === '::1' ? ['[::1]', 'localhost'] : bindHost === '127.0.0.1' ? ['127.0.0.1', 'localhost'] : [bindHost.includes(':') ? `[${bindHost}]` : bindHost];
    this.hosts = new Set(names.map((n) => `${n}:${port}`));
    this.origins = new Set([...this.hosts].map((h) => `http://${h}`));
  }

  check(host: string | undefined, origin: string | undefined): void {
    if (!host || !this.hosts.has(host.toLowerCase())) throw new MailError('forbidden_origin', 'the Host header does not name this daemon', { field: 'host' });
    if (origin !== undefined && !this.origins.has(origin)) throw new MailError('forbidden_origin', "the Origin is not this daemon's own origin", { field: 'origin' });
  }

  get allowedOrigins(): string[] {
    return [...this.origins];
  }
}
