// Fixed concurrency: `concurrency` keep-alive connections, each sending the next request as soon as
// the previous one is answered, for a duration or a count. Connections are opened and used once
// (attested) before timing starts.
import { Poster, keepAlive, progressReporter } from './http.js';
import { msSince, nowNs, summarize, type Summary } from '../lib/stats.js';

export interface FixedSpec {
  mode: 'fixed';
  port: number;
  path: string;
  token?: string;
  /** One body for every request, or a list used round robin. */
  body: string | string[];
  concurrency: number;
  durationMs?: number;
  count?: number;
  warmupPerConnection?: number;
}

export interface FixedResult {
  count: number;
  errors: number;
  firstError?: string;
  elapsedMs: number;
  rps: number;
  latency: Summary;
}

export async function runFixed(s: FixedSpec): Promise<FixedResult> {
  const poster = new Poster(keepAlive(s.concurrency), s.port, s.token);
  const bodies = Array.isArray(s.body) ? s.body : [s.body];
  let bi = 0;
  const nextBody = (): string => bodies[bi++ % bodies.length] as string;
  // Warm up: every connection opened and attested, JIT warm.
  const warm = s.warmupPerConnection ?? 3;
  for (let i = 0; i < warm; i++) {
    await Promise.all(
      Array.from({ length: s.concurrency }, async () => {
        const r = await poster.post(s.path, nextBody());
        if (r.status !== 200) throw new Error(`warm-up answered ${r.status}: ${r.text.slice(0, 300)}`);
      }),
    );
  }
  const cap = s.count ?? Infinity;
  const lat: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let started = 0;
  const total = s.count ?? Math.round((s.durationMs ?? 0) / 100);
  const tick = progressReporter(total, s.count ? 'requests' : 'ds');
  const t0 = nowNs();
  const stopAt = s.durationMs !== undefined ? Date.now() + s.durationMs : Infinity;
  const worker = async (): Promise<void> => {
    while (started < cap && Date.now() < stopAt) {
      started++;
      const t = nowNs();
      try {
        const r = await poster.post(s.path, nextBody());
        if (r.status !== 200) {
          errors++;
          firstError ??= `${r.status} ${r.text.slice(0, 200)}`;
        } else lat.push(msSince(t));
      } catch (e) {
        errors++;
        firstError ??= String(e);
      }
      tick(s.count ? lat.length : Math.round(msSince(t0) / 100));
    }
  };
  await Promise.all(Array.from({ length: s.concurrency }, worker));
  const elapsedMs = msSince(t0);
  poster.close();
  return {
    count: lat.length,
    errors,
    ...(firstError ? { firstError } : {}),
    elapsedMs: Math.round(elapsedMs),
    rps: Math.round((lat.length / elapsedMs) * 1000),
    latency: summarize(lat),
  };
}
