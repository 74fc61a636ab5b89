// Adds up the tallies the soak's test processes wrote (test/support/soak-tally.ts) and formats the
// summary of `npm run soak:reliability`. Kept apart from the runner so a test can feed it lines.

/** The counts that must all be 0. */
export const FAULTS = ['status5xx', 'crashes', 'hangs', 'changed'] as const;
const COUNTS = ['requests', 'rounds', ...FAULTS] as const;
type Count = (typeof COUNTS)[number];
export type Counts = Record<Count, number>;

/** One line of the report file, as test/support/soak-tally.ts writes it. */
export interface TallyLine extends Partial<Counts> {
  stage: string;
  pid: number;
  door: string;
  final?: boolean;
  progress?: boolean;
}

export interface StageResult {
  stage: { name: string; fuzz: boolean };
  code: number | null;
  secs: number;
  seeds: string[];
}

/**
 * The doors' totals: for each test process and door the last line it wrote (its final line, or its
 * last progress line when it never reached exit), summed over processes. `stage` keeps one stage's.
 */
export function addUp(lines: TallyLine[], stage?: string): { doors: Record<string, Counts>; unfinished: string[] } {
  const last = new Map<string, TallyLine>();
  for (const l of lines) {
    if (stage !== undefined && l.stage !== stage) continue;
    const key = `${l.stage}\0${l.pid}\0${l.door}`;
    const was = last.get(key);
    if (!was || !was.final || l.final) last.set(key, l);
  }
  const doors: Record<string, Counts> = {};
  const unfinished = new Set<string>();
  for (const l of last.values()) {
    const t = (doors[l.door] ??= Object.fromEntries(COUNTS.map((c) => [c, 0])) as Counts);
    for (const c of COUNTS) t[c] += Number(l[c] ?? 0);
    if (!l.final) unfinished.add(l.stage);
  }
  return { doors, unfinished: [...unfinished] };
}

const num = (x: number) => x.toLocaleString('en');

/**
 * The summary: stages with their outcome and time, doors with their counts, and the verdict.
 * ok only when every stage exited 0, no fault was counted, and at least minFuzzed fuzz requests
 * were sent by the fuzz stages.
 */
export function formatSummary(o: { lines: TallyLine[]; results: StageResult[]; scale: number; seed: number; minFuzzed: number }): {
  ok: boolean;
  text: string;
  fuzzed: number;
  faults: number;
  failed: string[];
} {
  const { lines, results, scale, seed, minFuzzed } = o;
  const out: string[] = [];
  out.push('', `summary (scale ${scale}, seed ${seed})`, '', '| stage | result | seconds | seeds printed |', '|---|---|---:|---|');
  for (const r of results) out.push(`| ${r.stage.name} | ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`} | ${r.secs.toFixed(0)} | ${r.seeds.join(', ')} |`);
  const { doors } = addUp(lines);
  out.push('', `| door | sent | rounds | ${FAULTS.join(' | ')} |`, `|---|---:|---:|${FAULTS.map(() => '---:').join('|')}|`);
  for (const [door, t] of Object.entries(doors).sort()) out.push(`| ${door} | ${num(t.requests)} | ${num(t.rounds)} | ${FAULTS.map((f) => num(t[f])).join(' | ')} |`);
  const fuzzStages = new Set(results.filter((r) => r.stage.fuzz).map((r) => r.stage.name));
  const fuzzed = Object.values(addUpStages(lines, fuzzStages)).reduce((a, t) => a + t.requests, 0);
  const faults = Object.values(doors).reduce((a, t) => a + FAULTS.reduce((b, f) => b + t[f], 0), 0);
  const failed = results.filter((r) => r.code !== 0).map((r) => r.stage.name);
  const seconds = results.reduce((a, r) => a + r.secs, 0);
  out.push(
    '',
    `fuzzed requests: ${num(fuzzed)}${minFuzzed ? ` (at least ${num(minFuzzed)} asked)` : ''}; faults counted: ${faults}; stages failed: ${failed.length ? failed.join(', ') : 'none'}; ${num(Math.round(seconds))} s`,
  );
  const ok = failed.length === 0 && faults === 0 && fuzzed >= minFuzzed;
  out.push(ok ? 'soak:reliability: PASSED' : 'soak:reliability: FAILED', '');
  return { ok, text: out.join('\n'), fuzzed, faults, failed };
}

function addUpStages(lines: TallyLine[], stages: Set<string>): Record<string, Counts> {
  return addUp(lines.filter((l) => stages.has(l.stage))).doors;
}
