#!/usr/bin/env node
// Runs every test file under test/ with node's test runner (Node 20 needs an explicit file list).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('../test/', import.meta.url).pathname;
const only = process.argv.slice(2);
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    // test/agents holds the slow tests with the real agent programs: `npm run test:agents`.
    if (statSync(p).isDirectory()) {
      if (name !== 'agents') walk(p);
    } else if (name.endsWith('.test.ts') && (only.length === 0 || only.some((o) => p.includes(o)))) files.push(p);
  }
})(root);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
