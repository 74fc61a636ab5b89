#!/usr/bin/env node
// Builds the SO_PEERCRED addon (native/peercred) into native/peercred/prebuilds/<platform>-<arch>/
// with prebuildify (N-API, stripped). Run by `npm run build` and `npm pack` (prepack); skipped when
// the built addon is newer than its sources. Without a compiler the build warns and succeeds: the
// daemon then serves HTTP only (no stream door). `--strict` (prepack) fails instead, so a package is
// never shipped without the prebuilt addon by accident.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const strict = process.argv.includes('--strict');
const dir = new URL('../native/peercred/', import.meta.url).pathname;
const out = join(dir, 'prebuilds', `${process.platform}-${process.arch}`);

/** @param {string} why @returns {never} */
function fail(why) {
  process.stderr.write(`build:native: ${why}; the daemon will serve HTTP only (no stream door)\n`);
  process.exit(strict ? 1 : 0);
}

// SO_PEERCRED is Linux's; elsewhere there is nothing to build.
if (process.platform !== 'linux') fail(`SO_PEERCRED is Linux-only (this is ${process.platform})`);

/** @param {string[]} files */
const newest = (files) => Math.max(...files.map((f) => statSync(join(dir, f)).mtimeMs));
const built = existsSync(out) ? readdirSync(out).filter((n) => n.endsWith('.node')) : [];
if (built.length > 0 && Math.min(...built.map((n) => statSync(join(out, n)).mtimeMs)) > newest(['peercred.c', 'binding.gyp'])) process.exit(0);

let bin;
try {
  bin = createRequire(import.meta.url).resolve('prebuildify/bin.js');
} catch {
  fail('prebuildify is not installed (a devDependency)');
}
// prebuildify runs node-gyp; npm puts its own copy on PATH for scripts it runs.
const r = spawnSync(process.execPath, [bin, '--napi', '--strip'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
if (r.status !== 0) {
  process.stderr.write(r.stderr ?? '');
  fail(`compiling native/peercred failed (exit ${r.status ?? r.signal})`);
}
