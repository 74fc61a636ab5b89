// The soak's arithmetic (scripts/soak-summary.ts): tallies from several test processes add up by
// door, a process's final line wins over its progress lines, a process that died keeps its last
// progress, and the verdict fails on any fault, a failed stage or too few fuzzed requests.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { addUp, formatSummary, type StageResult, type TallyLine } from '../scripts/soak-summary.js';

const line = (stage: string, pid: number, door: string, requests: number, more: Partial<TallyLine> = {}): TallyLine => ({
  stage,
  pid,
  door,
  requests,
  rounds: 0,
  status5xx: 0,
  crashes: 0,
  hangs: 0,
  changed: 0,
  progress: true,
  ...more,
});
const result = (name: string, fuzz: boolean, code = 0): StageResult => ({ stage: { name, fuzz }, code, secs: 10, seeds: [] });

describe('soak summary', () => {
  it('adds processes by door, the final line over progress, the last progress of a process that died', () => {
    const lines = [
      line('fuzz-http', 1, 'http', 100),
      line('fuzz-http', 1, 'http', 900, { final: true, progress: undefined }),
      line('fuzz-http', 1, 'http', 950), // a stray progress line after the final one does not count
      line('fuzz-a2a', 2, 'http', 50),
      line('fuzz-a2a', 2, 'a2a', 400),
      line('fuzz-a2a', 2, 'a2a', 700),
    ];
    const { doors, unfinished } = addUp(lines);
    assert.equal(doors.http!.requests, 950);
    assert.equal(doors.a2a!.requests, 700);
    assert.deepEqual(unfinished, ['fuzz-a2a']);
    assert.equal(addUp(lines, 'fuzz-http').doors.http!.requests, 900);
  });

  it('passes only with no fault, no failed stage and enough fuzzed requests from fuzz stages', () => {
    const clean = [line('fuzz-http', 1, 'http', 120_000, { final: true }), line('crash', 2, 'crash-sqlite', 5_000, { final: true, rounds: 50 })];
    const ok = formatSummary({ lines: clean, results: [result('fuzz-http', true), result('crash', false)], scale: 1, seed: 7, minFuzzed: 100_000 });
    assert.equal(ok.ok, true, ok.text);
    assert.equal(ok.fuzzed, 120_000);
    assert.match(ok.text, /\| crash-sqlite \| 5,000 \| 50 \| 0 \| 0 \| 0 \| 0 \|/);

    // Crash-test sends are not fuzzed requests.
    const few = formatSummary({ lines: clean, results: [result('fuzz-http', true), result('crash', false)], scale: 1, seed: 7, minFuzzed: 200_000 });
    assert.equal(few.ok, false);

    const faulty = [...clean, line('fuzz-http', 3, 'mcp', 10, { final: true, status5xx: 1 })];
    const bad = formatSummary({ lines: faulty, results: [result('fuzz-http', true)], scale: 1, seed: 7, minFuzzed: 0 });
    assert.equal(bad.ok, false);
    assert.equal(bad.faults, 1);

    const failed = formatSummary({ lines: clean, results: [result('fuzz-http', true), result('crash', false, 1)], scale: 1, seed: 7, minFuzzed: 0 });
    assert.equal(failed.ok, false);
    assert.deepEqual(failed.failed, ['crash']);
    assert.match(failed.text, /FAILED/);
  });
});
