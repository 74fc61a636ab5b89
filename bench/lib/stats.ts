// Percentiles over latency samples (milliseconds). Nearest-rank on a sorted copy: exact, no buckets.

export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export function summarize(samples: ArrayLike<number>): Summary {
  const s = Float64Array.from(samples).sort();
  let sum = 0;
  for (const x of s) sum += x;
  return {
    n: s.length,
    p50: round(percentile(s, 50)),
    p90: round(percentile(s, 90)),
    p99: round(percentile(s, 99)),
    max: round(s.length ? (s[s.length - 1] as number) : NaN),
    mean: round(s.length ? sum / s.length : NaN),
  };
}

/** Milliseconds since an hrtime.bigint() stamp. */
export function msSince(t0: bigint): number {
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

export const nowNs = (): bigint => process.hrtime.bigint();
