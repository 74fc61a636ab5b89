// `m4a doctor`'s one-screen summary of the daemon's GET /metrics. The Prometheus text format is
// parsed here in a few lines: the CLI bundle stays free of the metrics library.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface MetricsSummary {
  operations: number;
  sends: number;
  refusals: number;
  /** The most frequent refusal codes, most first (at most 3). */
  top_refusals: { code: string; count: number }[];
  waits_parked: number;
  wake_attempts: number;
  wake_failures: number;
  outbox_events: number;
  /** Over every store call; and the method with the highest p99. Null before any call. */
  store_p99_seconds: number | null;
  slowest_store_method: { method: string; p99_seconds: number } | null;
  sessions_live: number;
  /** PostgreSQL only: the last catch-up's feed lag. */
  feed_lag_seconds: number | null;
}

const LINE = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([A-Za-z_]\w*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

const sum = (s: Sample[], name: string, where: (l: Record<string, string>) => boolean = () => true): number =>
  s.filter((x) => x.name === name && where(x.labels)).reduce((a, x) => a + x.value, 0);

/** The q-quantile's bucket bound from cumulative buckets (`le` → count), or null when empty. */
function quantile(buckets: Map<number, number>, q: number): number | null {
  const bounds = [...buckets.keys()].sort((a, b) => a - b);
  const total = buckets.get(Infinity) ?? 0;
  if (total === 0) return null;
  const b = bounds.find((le) => (buckets.get(le) ?? 0) >= q * total);
  return b === undefined || b === Infinity ? (bounds.at(-2) ?? null) : b;
}

export function summarize(s: Sample[]): MetricsSummary {
  const codes = new Map<string, number>();
  for (const x of s) if (x.name === 'm4a_refusals_total') codes.set(x.labels.code ?? '', (codes.get(x.labels.code ?? '') ?? 0) + x.value);
  const all = new Map<number, number>();
  const byMethod = new Map<string, Map<number, number>>();
  for (const x of s) {
    if (x.name !== 'm4a_store_call_duration_seconds_bucket') continue;
    const le = x.labels.le === '+Inf' ? Infinity : Number(x.labels.le);
    all.set(le, (all.get(le) ?? 0) + x.value);
    const m = x.labels.method ?? '';
    if (!byMethod.has(m)) byMethod.set(m, new Map());
    byMethod.get(m)!.set(le, x.value);
  }
  let slowest: MetricsSummary['slowest_store_method'] = null;
  for (const [method, b] of byMethod) {
    const p = quantile(b, 0.99);
    if (p !== null && (slowest === null || p > slowest.p99_seconds)) slowest = { method, p99_seconds: p };
  }
  // The feed's metrics are served by every daemon (0 on SQLite); a PostgreSQL daemon has LISTENed.
  const onPostgres = sum(s, 'm4a_pg_feed_listens_total') > 0;
  const lag = onPostgres ? s.find((x) => x.name === 'm4a_pg_feed_lag_seconds') : undefined;
  return {
    operations: sum(s, 'm4a_operations_total'),
    sends: sum(s, 'm4a_sends_total'),
    refusals: sum(s, 'm4a_refusals_total'),
    top_refusals: [...codes]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([code, count]) => ({ code, count })),
    waits_parked: sum(s, 'm4a_waits_parked'),
    wake_attempts: sum(s, 'm4a_wake_attempts_total'),
    wake_failures: sum(s, 'm4a_wake_attempts_total', (l) => l.outcome === 'failed'),
    outbox_events: sum(s, 'm4a_webhook_outbox_events'),
    store_p99_seconds: quantile(all, 0.99),
    slowest_store_method: slowest,
    sessions_live: sum(s, 'm4a_sessions_live'),
    feed_lag_seconds: lag ? lag.value : null,
  };
}

const ms = (v: number | null): string => (v === null ? '-' : `${v * 1000 < 1 ? (v * 1000).toFixed(2) : Math.round(v * 1000)} ms`);

/** The summary in two lines for doctor's text output. */
export function summaryText(m: MetricsSummary): string {
  const top = m.top_refusals.map((r) => `${r.code} ${r.count}`).join(', ');
  return (
    `sends ${m.sends}, operations ${m.operations}, refusals ${m.refusals}${top ? ` (${top})` : ''}, parked waits ${m.waits_parked}, sessions live ${m.sessions_live}\n` +
    `      wake failures ${m.wake_failures} of ${m.wake_attempts}, outbox ${m.outbox_events}, store p99 ${ms(m.store_p99_seconds)}` +
    `${m.slowest_store_method ? ` (slowest ${m.slowest_store_method.method} ${ms(m.slowest_store_method.p99_seconds)})` : ''}` +
    `${m.feed_lag_seconds === null ? '' : `, feed lag ${ms(m.feed_lag_seconds)}`}`
  );
}

/** GET /metrics with the operator credential: the summary, or why there is none. */
export async function fetchSummary(url: string, token: string | null): Promise<{ summary: MetricsSummary } | { why: string; off: boolean }> {
  if (!token) return { why: 'no operator credential readable in the data directory', off: false };
  let res: Response;
  try {
    res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5_000) });
  } catch (err) {
    return { why: `GET /metrics failed: ${(err as Error).message}`, off: false };
  }
  const text = await res.text();
  if (res.status === 404) return { why: 'off (m4a serve --no-metrics)', off: true };
  if (res.status !== 200) return { why: `GET /metrics answered ${res.status}`, off: false };
  return { summary: summarize(parseExposition(text)) };
}
