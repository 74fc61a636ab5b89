// The webhook outbox's bounds. Slots for its attempts: at most `total` in flight, at most
// `perOrigin` to one receiver (host:port), the others waiting first come, first served, except that
// a waiter whose origin is full lets a later one to another origin go first. A receiver that
// accepts and never answers then holds `perOrigin` sockets of this daemon, not one per pending
// event, and cannot stall the deliveries to everyone else. A waiter holds no socket and is not in
// flight. And the events pending per origin, oldest first, so a dead receiver cannot grow the
// store without bound.
import { checkWebhookUrl } from './remote-url.js';

/** What an attempt counts against: host:port, a loopback name as the address it is. */
export function originOf(url: string, allowRemote: boolean): string {
  try {
    const u = checkWebhookUrl(url, allowRemote);
    return `${u.loopback ?? u.hostname}:${u.port}`;
  } catch {
    return 'refused'; // its attempt is refused at once, without a socket
  }
}

/** Gives a slot back; calling it again does nothing. */
export type Release = () => void;

interface Waiter {
  /** Arrival order, across origins. */
  n: number;
  grant(release: Release | null): void;
}

export class OutboxSlots {
  private running = 0;
  private byOrigin = new Map<string, number>();
  /** Per origin, oldest first; only origins with a waiter are present. */
  private waiting = new Map<string, Waiter[]>();
  private arrivals = 0;
  private closed = false;

  constructor(
    readonly total: number,
    readonly perOrigin: number,
  ) {}

  /** A slot for one attempt to `origin`: `slot` resolves with its release, or with null once the
   *  slots are closed or the wait is cancelled (`cancel` does nothing once the slot is granted). */
  acquire(origin: string): { slot: Promise<Release | null>; cancel: () => void } {
    if (this.closed) return { slot: Promise.resolve(null), cancel: () => undefined };
    if (this.running < this.total && this.count(origin) < this.perOrigin && !this.waiting.has(origin)) return { slot: Promise.resolve(this.take(origin)), cancel: () => undefined };
    let waiter!: Waiter;
    const slot = new Promise<Release | null>((resolve) => (waiter = { n: this.arrivals++, grant: resolve }));
    const queue = this.waiting.get(origin) ?? [];
    queue.push(waiter);
    this.waiting.set(origin, queue);
    const cancel = (): void => {
      const q = this.waiting.get(origin);
      const i = q?.indexOf(waiter) ?? -1;
      if (!q || i < 0) return;
      q.splice(i, 1);
      if (q.length === 0) this.waiting.delete(origin);
      waiter.grant(null);
    };
    return { slot, cancel };
  }

  /** Attempts holding a slot, and waiters. */
  stats(): { running: number; waiting: number } {
    let waiting = 0;
    for (const q of this.waiting.values()) waiting += q.length;
    return { running: this.running, waiting };
  }

  /** Every waiter gets null; slots granted already are released as usual. */
  close(): void {
    this.closed = true;
    const all = [...this.waiting.values()].flat();
    this.waiting.clear();
    for (const w of all) w.grant(null);
  }

  private count(origin: string): number {
    return this.byOrigin.get(origin) ?? 0;
  }

  private take(origin: string): Release {
    this.running++;
    this.byOrigin.set(origin, this.count(origin) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.running--;
      const left = this.count(origin) - 1;
      if (left > 0) this.byOrigin.set(origin, left);
      else this.byOrigin.delete(origin);
      this.pump();
    };
  }

  /** Grants free slots to the oldest waiters whose origin has room. */
  private pump(): void {
    while (this.running < this.total && !this.closed) {
      let best: string | null = null;
      let bestN = Infinity;
      for (const [origin, q] of this.waiting) {
        const head = q[0];
        if (head && head.n < bestN && this.count(origin) < this.perOrigin) {
          best = origin;
          bestN = head.n;
        }
      }
      if (best === null) return;
      const q = this.waiting.get(best)!;
      const w = q.shift()!;
      if (q.length === 0) this.waiting.delete(best);
      w.grant(this.take(best));
    }
  }
}

/** Events pending per origin in arrival order; past `max` for one origin, the oldest one that may
 *  be given up is handed back. */
export class PendingByOrigin<T> {
  private byOrigin = new Map<string, Map<string, T>>();

  constructor(readonly max: number) {}

  get(origin: string, id: string): T | undefined {
    return this.byOrigin.get(origin)?.get(id);
  }

  /** Adds the event once; returns the one to give up (already removed), if the origin is past its
   *  bound and one is `evictable`. */
  add(origin: string, id: string, value: T, evictable: (id: string, v: T) => boolean): { id: string; value: T } | null {
    const mine = this.byOrigin.get(origin) ?? new Map<string, T>();
    this.byOrigin.set(origin, mine);
    if (!mine.has(id)) mine.set(id, value);
    if (mine.size <= this.max) return null;
    for (const [oldest, v] of mine) {
      if (!evictable(oldest, v)) continue;
      mine.delete(oldest);
      return { id: oldest, value: v };
    }
    return null;
  }

  delete(origin: string, id: string): void {
    const mine = this.byOrigin.get(origin);
    if (mine?.delete(id) && mine.size === 0) this.byOrigin.delete(origin);
  }

  clear(): void {
    this.byOrigin.clear();
  }
}
