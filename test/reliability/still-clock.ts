// The fuzz daemon's clock: time stands still, so nothing comes due by itself in the middle of a
// property (a reminder from `mailbox`, a pooled claim's lease running out and its pool notice, a
// retention cutoff); yet every timer fires within `capMs` of real time, so a fuzzed wait parks and
// ends almost at once.
import type { Clock } from '../../src/engine/clock.js';

/** now() is always `at`, except while a timer's callback runs: it sees the instant it was armed
 *  for (wait-expiry.ts compares a wait's deadline with now() as its timer fires, so the wait
 *  expires). Work a callback starts runs on at `at` once it awaits anything. A loop that arms for
 *  what is next due (timers.ts arms for a reminder's due time) would see it due in its callback:
 *  the daemon runs with a short poll (timerPollMs), which caps that loop's arming below any due
 *  time a request can set (in_secs is at least 1). */
export function stillClock(capMs = 25, at = Date.now()): Clock {
  let now = at;
  return {
    now: () => now,
    timer(ms, fn) {
      const due = now + Math.max(0, ms);
      const t = setTimeout(
        () => {
          const was = now;
          now = due;
          try {
            fn();
          } finally {
            now = was;
          }
        },
        ms > 0 ? capMs : 0,
      );
      return () => clearTimeout(t);
    },
  };
}
