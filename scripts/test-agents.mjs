#!/usr/bin/env node
// Runs the slow tests with the real agent programs (test/agents/*.test.ts): Claude Code, Codex and
// Gemini CLI from the devDependencies, driven by scripted model servers on loopback. Not part of
// `npm test`; `npm run test:agents` builds first, since the agents run dist/cli/main.js.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const dir = new URL('../test/agents/', import.meta.url).pathname;
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((n) => n.endsWith('.test.ts'))
  .sort()
  .map((n) => join(dir, n))
  .filter((p) => only.length === 0 || only.some((o) => p.includes(o)));
if (files.length === 0) {
  console.error('no test files found in test/agents/');
  process.exit(1);
}
// One file at a time: each test starts several agent processes and a daemon of its own.
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
