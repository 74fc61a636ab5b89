// The closed loop both fixed-concurrency load generators time (HTTP in fixed.ts, the stream door in
// stream.ts): each lane sends its next request as soon as the previous one is answered, for a count
// or a duration; each request timed; a refusal or a throw counted as an error, never as a sample.
import { progressReporter } from './http.js';
import { msSince, nowNs, summarize, type Summary } from '../lib/stats.js';

export interface LoopBounds {
  durationMs?: number | undefined;
  count?: number | undefined;
}

export interface LoopResult {
  count: number;
  errors: number;
  firstError?: string;
  elapsedMs: number;
  rps: number;
  latency: Summary;
}

/**
 * @param attempt one request of lane `lane`: resolves undefined when answered, or the text of a
 *   refusal; a throw is an error too, and ends the lane when `endsLane` says so (a closed connection).
 */
export async function closedLoop(
  b: LoopBounds,
  lanes: number,
  attempt: (lane: number) => Promise<string | undefined>,
  endsLane: (e: unknown) => boolean = () => false,
): Promise<LoopResult> {
  const cap = b.count ?? Infinity;
  const lat: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let started = 0;
  const total = b.count ?? Math.round((b.durationMs ?? 0) / 100);
  const tick = progressReporter(total, b.count ? 'requests' : 'ds');
  const t0 = nowNs();
  const stopAt = b.durationMs !== undefined ? Date.now() + b.durationMs : Infinity;
  const lane = async (i: number): Promise<void> => {
    while (started < cap && Date.now() < stopAt) {
      started++;
      const t = nowNs();
      try {
        const refused = await attempt(i);
        if (refused === undefined) lat.push(msSince(t));
        else {
          errors++;
          firstError ??= refused;
        }
      } catch (e) {
        errors++;
        firstError ??= String(e);
        if (endsLane(e)) return;
      }
      tick(b.count ? lat.length : Math.round(msSince(t0) / 100));
    }
  };
  await Promise.all(Array.from({ length: lanes }, (_, i) => lane(i)));
  const elapsedMs = msSince(t0);
  return {
    count: lat.length,
    errors,
    ...(firstError ? { firstError } : {}),
    elapsedMs: Math.round(elapsedMs),
    rps: Math.round((lat.length / elapsedMs) * 1000),
    latency: summarize(lat),
  };
}
