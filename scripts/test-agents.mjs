#!/usr/bin/env node
// Runs the slow tests with the real agent programs (test/agents/*.test.ts): Claude Code, Codex,
// Gemini CLI, pi, omp, Qwen Code, opencode and Copilot CLI, driven by scripted model servers on
// loopback. Not part of `npm test`; `npm run test:agents` builds first, since the agents run
// dist/cli/main.js. The programs are a package of their own (test/agents/package.json), kept out
// of the project's install: installed here when test/agents/node_modules is missing or older than its lockfile.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const dir = new URL('../test/agents/', import.meta.url).pathname;

// npm writes node_modules/.package-lock.json at the end of every install: older than the lockfile
// means the lockfile changed since (a pull, a version bump). The lockfile lists some packages'
// per-platform builds by hand (omp's @oh-my-pi/pi-natives-*, opencode-*, @teddyzhu/clipboard-*: the
// registry it was made against serves only linux-x64's, and npm ci refuses a lockfile that lacks
// the others): keep them on an update.
const installed = join(dir, 'node_modules', '.package-lock.json');
if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(join(dir, 'package-lock.json')).mtimeMs) {
  console.error('test:agents: installing the agent programs (npm ci in test/agents)');
  const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
  if (npm.status !== 0) process.exit(npm.status ?? 1);
}

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

// omp has no offline switch and reaches for several hosts at start, and Gemini, Qwen Code, opencode
// and Copilot try to (updates, telemetry, model lists): their files run in a network namespace with
// only loopback up (the daemon, the model servers and the program share it), so every outside
// attempt fails at once. That takes root (CAP_SYS_ADMIN).
const OFFLINE = ['omp', 'gemini-live', 'qwen', 'opencode', 'copilot', 'mixed'];
/** @param {string} p */
const offline = (p) => OFFLINE.some((n) => p.slice(dir.length).includes(n));
const plain = files.filter((p) => !offline(p));
const isolated = files.filter(offline);
if (isolated.length > 0 && spawnSync('unshare', ['-n', 'true']).status !== 0) {
  console.error('test:agents: these tests need a loopback-only network namespace (`unshare -n`), which failed here: run as root.');
  process.exit(1);
}

// One file at a time: each test starts several agent processes and a daemon of its own.
const node = [process.execPath, '--import', 'tsx', '--test', '--test-concurrency=1'];
const statuses = [];
if (plain.length > 0) statuses.push(spawnSync(node[0], [...node.slice(1), ...plain], { stdio: 'inherit' }).status);
if (isolated.length > 0) statuses.push(spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up && exec "$@"', 'sh', ...node, ...isolated], { stdio: 'inherit' }).status);
process.exit(statuses.every((s) => s === 0) ? 0 : 1);
