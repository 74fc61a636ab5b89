// Growing delays after wrong passwords, per account name. Never a lockout: every local caller shares
// 127.0.0.1, so anyone could trigger one; a delay only slows guessing (1 s, 2 s, 4 s … at most
// maxMs) and a right password after the delay still gets in. Kept as a store record so several
// daemons sharing one store count together; names that are no account stay in memory (bounded), so
// guessing random names cannot fill the store.
import { MailError } from '../wire/errors.js';
import type { Store } from '../store/types.js';
import type { Clock } from './clock.js';

export interface ThrottleOptions {
  /** Delay after the first wrong password; each further one doubles it. */
  baseMs: number;
  maxMs: number;
  /** Failures older than this are forgotten. */
  forgetMs: number;
}

export const DEFAULT_THROTTLE: ThrottleOptions = { baseMs: 1000, maxMs: 60_000, forgetMs: 15 * 60_000 };

interface ThrottleState {
  failures: number;
  last_failure: number;
  not_before: number;
}

const KIND = 'web_throttle';
const MEMORY_MAX = 10_000;

export class LoginThrottle {
  private memory = new Map<string, ThrottleState>();
  /** One attempt per name at a time in this daemon: parallel guesses cannot share one delay window. */
  private inFlight = new Set<string>();

  constructor(
    private store: Store,
    private clock: Clock,
    private o: ThrottleOptions = DEFAULT_THROTTLE,
  ) {}

  private async read(name: string, known: boolean): Promise<ThrottleState | null> {
    if (!known) return this.memory.get(name) ?? null;
    const row = await this.store.getRecord(KIND, name);
    return row ? (JSON.parse(row.value) as ThrottleState) : null;
  }

  /** Runs one login attempt under the throttle: refused while a delay runs; `attempt` says whether
   *  the password was right. A wrong one grows the delay, a right one clears it. */
  async run<T>(name: string, known: boolean, attempt: () => Promise<T | null>): Promise<T> {
    const now = this.clock.now();
    if (this.inFlight.has(name)) throw this.refusal(this.o.baseMs);
    const st = await this.read(name, known);
    if (st && st.not_before > now) throw this.refusal(st.not_before - now);
    this.inFlight.add(name);
    try {
      const ok = await attempt();
      if (ok !== null) {
        if (st) await this.clear(name, known);
        return ok;
      }
      const failures = st && now - st.last_failure < this.o.forgetMs ? st.failures + 1 : 1;
      const delay = Math.min(this.o.baseMs * 2 ** Math.min(failures - 1, 30), this.o.maxMs);
      const next: ThrottleState = { failures, last_failure: now, not_before: now + delay };
      if (known) await this.store.putRecord({ kind: KIND, id: name, value: JSON.stringify(next), updatedAt: now });
      else {
        if (this.memory.size >= MEMORY_MAX) this.memory.clear();
        this.memory.set(name, next);
      }
      throw new MailError('bad_credentials', 'unknown account or wrong password', { retry_after: Math.ceil(delay / 1000), retry_after_ms: delay, failures });
    } finally {
      this.inFlight.delete(name);
    }
  }

  private async clear(name: string, known: boolean): Promise<void> {
    if (known) await this.store.deleteRecord(KIND, name);
    else this.memory.delete(name);
  }

  private refusal(ms: number): MailError {
    return new MailError('rate_limited', `too many wrong passwords for this account: try again in ${Math.ceil(ms / 1000)} s`, {
      retry_after: Math.ceil(ms / 1000),
      retry_after_ms: ms,
    });
  }
}
