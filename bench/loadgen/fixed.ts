// Fixed concurrency: `concurrency` keep-alive connections, each sending the next request as soon as
// the previous one is answered, for a duration or a count. Connections are opened and used once
// (attested) before timing starts.
import { Poster, keepAlive } from './http.js';
import { closedLoop, type LoopResult } from './closed-loop.js';

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

export type FixedResult = LoopResult;

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
  const r = await closedLoop(s, s.concurrency, async () => {
    const r = await poster.post(s.path, nextBody());
    return r.status === 200 ? undefined : `${r.status} ${r.text.slice(0, 200)}`;
  });
  poster.close();
  return r;
}
