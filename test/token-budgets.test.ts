// Token budgets of what models read, counted with a real tokenizer (o200k_base): deterministic, so
// a test and not a benchmark.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getEncoding } from 'js-tiktoken';
import { setupFiles } from '../src/cli/setup/setup-files.js';
import type { Program } from '../src/cli/setup/programs.js';

describe('agent guide', () => {
  const GUIDE_MAX = 500;
  const enc = getEncoding('o200k_base');
  const temps: string[] = [];
  after(() => temps.forEach((d) => rmSync(d, { recursive: true, force: true })));

  /** The guide file setup writes for a program into a fresh project, as the program reads it. */
  function guideFile(program: Program): { path: string; text: string } {
    const home = mkdtempSync(join(tmpdir(), 'm4a-budget-home-'));
    const dir = mkdtempSync(join(tmpdir(), 'm4a-budget-proj-'));
    temps.push(home, dir);
    const files = setupFiles({
      program,
      scope: { kind: 'project', dir },
      transport: 'stdio',
      account: program,
      hooks: false,
      bridge: { command: 'm4a', prefix: [], portable: true },
      env: { HOME: home, PATH: '' },
    }).map((f) => f.path);
    const path = files.find((p) => /SKILL\.md$|AGENTS\.md$|GEMINI\.md$|\.mdc$/.test(p));
    assert.ok(path, `${program}: setup wrote a guide (${files.join(', ')})`);
    return { path, text: readFileSync(path, 'utf8') };
  }

  for (const program of ['claude', 'codex', 'gemini', 'cursor', 'pi', 'omp'] as const) {
    it(`${program}: the guide file is at most ${GUIDE_MAX} tokens`, () => {
      const { path, text } = guideFile(program);
      const tokens = enc.encode(text).length;
      assert.ok(tokens <= GUIDE_MAX, `${path}: ${tokens} tokens, over ${GUIDE_MAX}`);
      // The counted text is the guide and not an empty stand-in.
      assert.match(text, /m4a_mail_reply/);
      assert.ok(tokens > 200, `${path}: ${tokens} tokens is too few for the guide`);
    });
  }
});
