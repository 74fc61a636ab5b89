// Time and identity sources are injected so tests can move time and predict ids.
import { randomBytes } from 'node:crypto';

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls fn after ms of this clock's time; returns a cancel function. */
  timer(ms: number, fn: () => void): () => void;
}

export interface Ids {
  messageId(): string;
  /** A fresh bearer secret (32 random bytes, encoded). */
  secret(): string;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  timer(ms, fn) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};

let lastMs = 0;
let counter = 0;

/** Message ids sort by creation time: m- + 11 base36 chars of ms + a counter + 12 random hex. */
export const systemIds: Ids = {
  messageId() {
    const ms = Date.now();
    counter = ms === lastMs ? counter + 1 : 0;
    lastMs = ms;
    return `m-${ms.toString(36).padStart(9, '0')}${counter.toString(36).padStart(3, '0')}${randomBytes(6).toString('hex')}`;
  },
  secret() {
    return `m4a_${randomBytes(32).toString('base64url')}`;
  },
};

/** A clock tests move by hand; timers fire as time passes them. */
export class ManualClock implements Clock {
  private timers = new Set<{ at: number; fn: () => void }>();
  constructor(private t = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t;
  }
  timer(ms: number, fn: () => void): () => void {
    const entry = { at: this.t + ms, fn };
    this.timers.add(entry);
    return () => this.timers.delete(entry);
  }
  advance(ms: number): void {
    this.t += ms;
    const due = [...this.timers].filter((e) => e.at <= this.t).sort((a, b) => a.at - b.at);
    for (const e of due) {
      this.timers.delete(e);
      e.fn();
    }
  }
  pendingTimers(): number {
    return this.timers.size;
  }
}
