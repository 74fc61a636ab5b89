// docs/protocol.md is generated from the code; this fails when it is stale or misses a part.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { OPERATIONS, OPERATION_NAMES } from '../src/wire/operations.js';
import { ERROR_TABLE } from '../src/wire/errors.js';
import { LIMITS } from '../src/wire/limits.js';

const ROOT = join(import.meta.dirname, '..');
const DOC = join(ROOT, 'docs/protocol.md');
const GEN = join(ROOT, 'scripts/gen-protocol-doc.ts');

function generator(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', GEN, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test('docs/protocol.md is what the generator writes (run `npm run docs:protocol` when this fails)', () => {
  const r = generator('--check');
  assert.equal(r.status, 0, `generator --check failed:\n${r.out}`);
});

test('check mode fails with a message on a stale or missing file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'm4a-doc-'));
  try {
    const stale = join(dir, 'protocol.md');
    writeFileSync(stale, readFileSync(DOC, 'utf8').replace('## Semantics', '## Semantic'));
    const r = generator('--check', '--file', stale);
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /stale/);
    const missing = generator('--check', '--file', join(dir, 'nope.md'));
    assert.equal(missing.status, 1, missing.out);
    assert.match(missing.out, /missing/);
    // Writing to the same path makes it pass.
    assert.equal(generator('--file', stale).status, 0);
    assert.equal(generator('--check', '--file', stale).status, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the document covers every op, route, error code and limit, and the semantics table', () => {
  const doc = readFileSync(DOC, 'utf8');
  for (const n of OPERATION_NAMES) {
    const o = OPERATIONS[n];
    assert.ok(doc.includes(`POST ${o.path}`), o.path);
    if (o.tool) assert.ok(doc.includes(`\`${o.tool}\``), o.tool);
    if (o.callers.includes('operator') || o.callers.includes('local')) assert.ok(doc.includes(`### \`POST ${o.path}\``), o.path);
  }
  for (const [code, spec] of Object.entries(ERROR_TABLE)) assert.match(doc, new RegExp(`\\| \`${code}\` \\| ${spec.http} \\|`), code);
  for (const [k, v] of Object.entries(LIMITS)) assert.ok(doc.includes(`| \`${k}\` | ${v} |`), k);
  assert.match(doc, /^\| question \| case \| rule \|$/m);
  for (const topic of ['Who reads it', 'Who acknowledges for whom', 'When a wait parks', 'Where a reply goes']) assert.ok(doc.includes(`| ${topic} |`), topic);
  for (const fact of ['2025-03-26', '2025-06-18', '2025-11-25', '-32601', '-32602', '202', 'isError: true', 'session_ended {account}', 'redirected: true'])
    assert.ok(doc.includes(fact), fact);
});
