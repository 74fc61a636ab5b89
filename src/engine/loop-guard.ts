// Two agents answering each other ("ok" / "thanks" / "ok") must not burn tokens overnight. When a
// pair exchanges more than `pairMax` messages within `windowMs`, or a thread grows past
// `threadMax` messages with none from a person, new mail is still stored but wakes nobody, and the
// sender is told so. Counts live in memory (a restart forgives a loop once).
import type { Clock } from './clock.js';

export interface LoopGuardOptions {
  pairMax: number;
  windowMs: number;
  threadMax: number;
}

export const DEFAULT_LOOP_GUARD: LoopGuardOptions = { pairMax: 30, windowMs: 10 * 60_000, threadMax: 40 };

export class LoopGuard {
  private pairs = new Map<string, number[]>();
  private quietIds = new Set<string>();
  /** Messages committed but not judged yet: the verdict comes after the commit announces them. */
  private judging = new Map<string, Promise<void>>();

  constructor(
    private clock: Clock,
    private o: LoopGuardOptions = DEFAULT_LOOP_GUARD,
  ) {}

  /** Records a send between two accounts and says why it must not wake anyone, if it must not. */
  judge(from: string, to: string | null, thread: { length: number; hasHuman: boolean }): string | null {
    const now = this.clock.now();
    let reason: string | null = null;
    if (to !== null && to !== from) {
      const key = from < to ? `${from}\u0000${to}` : `${to}\u0000${from}`;
      // Only the newest pairMax + 1 times matter: the verdict is whether that many fit the window.
      const times = (this.pairs.get(key) ?? []).filter((t) => now - t < this.o.windowMs);
      times.push(now);
      if (times.length > this.o.pairMax + 1) times.splice(0, times.length - this.o.pairMax - 1);
      this.pairs.set(key, times);
      if (times.length > this.o.pairMax) reason = `${from} and ${to} exchanged ${times.length} messages within ${Math.round(this.o.windowMs / 60_000)} min`;
    }
    if (!reason && !thread.hasHuman && thread.length > this.o.threadMax) reason = `the thread has ${thread.length} messages and none from a person`;
    if (this.pairs.size > 50_000) this.pairs.clear();
    return reason;
  }

  markQuiet(id: string): void {
    if (this.quietIds.size > 200_000) this.quietIds.clear();
    this.quietIds.add(id);
  }

  isQuiet(id: string): boolean {
    return this.quietIds.has(id);
  }

  /** Announces that `id` is about to commit and be judged; call the returned function once the
   *  verdict is in (or the send failed). Until then `verdict(id)` waits. */
  judgingStarts(id: string): () => void {
    let done!: () => void;
    this.judging.set(id, new Promise<void>((r) => (done = r)));
    return () => {
      this.judging.delete(id);
      done();
    };
  }

  /** Whether the message is quiet, once it has been judged (commit listeners run before that). */
  async verdict(id: string): Promise<boolean> {
    await this.judging.get(id);
    return this.quietIds.has(id);
  }
}
