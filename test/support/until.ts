// Polling until something holds, for tests that wait on the daemon's background work.
import assert from 'node:assert/strict';

/** Polls `f` every `everyMs` until it returns something truthy and resolves with that; fails the
 *  test (`timed out waiting for <what>`) once `ms` have passed. */
export async function until<T>(what: string, f: () => Promise<T | null | undefined | false> | T | null | undefined | false, ms = 10_000, everyMs = 25): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
