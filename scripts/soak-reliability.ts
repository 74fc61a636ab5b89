// `npm run soak:reliability`: the reliability tests of `npm test`, run big, one stage at a time,
// with a progress line every 15 s and a summary. Never part of `npm test`. Each stage is the same
// test file(s) with larger sizes in the environment; the tests count what they sent and what went
// wrong by door (test/support/soak-tally.ts) into one report file, added up here.
//
//   --scale F     multiply every size by F (0.02 checks the wiring in a few minutes; default 1)
//   --only a,b    stages by name (see STAGES)
//   --seed N      one seed for every stage (default: random, printed; a failing stage prints its own)
//
// Exit 0 only when every stage passed, every count of 5xx, crashes, hangs and changed stores is 0,
// and (at scale 1) at least 100,000 fuzzed requests were sent.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { addUp, FAULTS, formatSummary, type StageResult, type TallyLine } from './soak-summary.js';

const { values: args } = parseArgs({ options: { scale: { type: 'string', default: '1' }, only: { type: 'string' }, seed: { type: 'string' } } });
const scale = Number(args.scale);
if (!(scale > 0)) throw new Error(`--scale must be a positive number, not ${args.scale}`);
const seed = args.seed !== undefined ? Number(args.seed) : Math.floor(Math.random() * 2 ** 31);
const n = (full: number) => String(Math.max(1, Math.round(full * scale)));

interface Stage {
  name: string;
  fuzz: boolean;
  files: string[];
  env: Record<string, string>;
}

/** The stages: test files and the sizes that make them big. Fuzz stages count toward the 100,000. */
const STAGES: Stage[] = [
  { name: 'fuzz-http', fuzz: true, files: ['test/reliability/fuzz-http.test.ts'], env: { M4A_FUZZ_RUNS: n(25_000), M4A_FUZZ_SEED: String(seed) } },
  { name: 'fuzz-stream', fuzz: true, files: ['test/stream-door-fuzz.test.ts'], env: { M4A_FUZZ_STREAM_LINES: n(20_000), M4A_FUZZ_SEED: String(seed) } },
  { name: 'fuzz-cli', fuzz: true, files: ['test/reliability/fuzz-cli.test.ts'], env: { M4A_FUZZ_CLI_RUNS: n(250), M4A_FUZZ_SEED: String(seed) } },
  { name: 'crash', fuzz: false, files: ['test/reliability/crash.test.ts'], env: { M4A_CRASH_ROUNDS: n(50), M4A_CRASH_SEED: String(seed) } },
  { name: 'pg-restart', fuzz: false, files: ['test/reliability/pg-restart.test.ts'], env: { M4A_SOAK_PG_RESTART: '1', M4A_CRASH_SEED: String(seed) } },
  { name: 'engine-model', fuzz: false, files: ['test/reliability/engine-model.test.ts'], env: { M4A_MODEL_RUNS: n(1_000), M4A_MODEL_SEED: String(seed) } },
  { name: 'fuzz-a2a', fuzz: true, files: ['test/reliability/fuzz-a2a.test.ts'], env: { M4A_FUZZ_RUNS: n(8_000), M4A_FUZZ_SEED: String(seed) } },
  { name: 'fuzz-relay', fuzz: true, files: ['test/reliability/fuzz-relay.test.ts'], env: { M4A_FUZZ_RUNS: n(5_000), M4A_FUZZ_SEED: String(seed) } },
  { name: 'fuzz-smtp', fuzz: true, files: ['test/reliability/fuzz-smtp.test.ts'], env: { M4A_FUZZ_SMTP_RUNS: n(1_500), M4A_FUZZ_SEED: String(seed) } },
];

const only = args.only ? new Set(args.only.split(',')) : null;
if (only) for (const o of only) if (!STAGES.some((s) => s.name === o)) throw new Error(`unknown stage ${o}: one of ${STAGES.map((s) => s.name).join(', ')}`);
const stages = STAGES.filter((s) => !only || only.has(s.name));
const work = mkdtempSync(join(tmpdir(), 'm4a-soak-'));
const report = join(work, 'tallies.jsonl');
const t0 = Date.now();
const clock = () => {
  const s = Math.round((Date.now() - t0) / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
};
const lines = (): TallyLine[] =>
  existsSync(report)
    ? readFileSync(report, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as TallyLine)
    : [];

/** Runs one stage's files in one node test process; resolves with its exit code and the seeds it printed. */
function runStage(stage: Stage): Promise<{ code: number | null; out: string; seeds: string[] }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=dot', ...stage.files], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...stage.env, M4A_SOAK_REPORT: report, M4A_SOAK_STAGE: stage.name },
    });
    let out = '';
    const keep = (c: Buffer) => {
      out += c.toString();
      if (out.length > 4_000_000) out = out.slice(-2_000_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const tick = setInterval(() => {
      const { doors } = addUp(lines(), stage.name);
      const sent = Object.values(doors).reduce((a, t) => a + t.requests, 0);
      const rounds = Object.values(doors).reduce((a, t) => a + t.rounds, 0);
      const faults = FAULTS.map((f) => `${Object.values(doors).reduce((a, t) => a + t[f], 0)} ${f}`).join(', ');
      process.stdout.write(`[${clock()}] ${stage.name}: ${sent.toLocaleString('en')} sent, ${rounds.toLocaleString('en')} rounds; ${faults}\n`);
    }, 15_000);
    child.on('exit', (code) => {
      clearInterval(tick);
      const seeds = [...new Set(out.match(/seed[:= ]+-?\d+/gi) ?? [])].slice(0, 5);
      resolve({ code, out, seeds });
    });
  });
}

process.stdout.write(`soak:reliability: ${stages.length} stages, scale ${scale}, seed ${seed}\n`);
const results: StageResult[] = [];
for (const stage of stages) {
  const started = Date.now();
  process.stdout.write(
    `[${clock()}] ${stage.name}: ${stage.files.join(' ')} ${Object.entries(stage.env)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}\n`,
  );
  const r = await runStage(stage);
  const secs = (Date.now() - started) / 1000;
  results.push({ stage, code: r.code, secs, seeds: r.seeds });
  process.stdout.write(`[${clock()}] ${stage.name}: ${r.code === 0 ? 'passed' : `FAILED (exit ${r.code})`} in ${secs.toFixed(0)} s\n`);
  if (r.code !== 0) {
    const failing = r.out
      .split('\n')
      .filter((l) => /not ok|Counterexample|Property failed|seed|Error|assert/i.test(l))
      .slice(0, 40);
    process.stdout.write(failing.map((l) => `    ${l}`).join('\n') + '\n');
  }
}

const summary = formatSummary({ lines: lines(), results, scale, seed, minFuzzed: scale >= 1 ? 100_000 : 0 });
process.stdout.write(summary.text);
rmSync(work, { recursive: true, force: true });
process.exit(summary.ok ? 0 : 1);
