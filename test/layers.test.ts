// Folders are layers; an import against the direction fails this test.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** What each layer may import (besides itself). Paths are relative to src/, without extension. */
const ALLOWED: Record<string, (target: string) => boolean> = {
  wire: () => false,
  attest: () => false,
  store: (t) => t.startsWith('wire/'),
  // The engine sees the store only through its interface and attestation only through its types.
  engine: (t) => t.startsWith('wire/') || t === 'store/types' || t === 'attest/types',
  doors: (t) => t.startsWith('wire/') || t.startsWith('engine/') || t === 'attest/types' || t === 'store/types',
  // Wake adapters reach agents (programs, app-servers, webhooks); the engine never sees them.
  wake: (t) => t.startsWith('wire/') || t.startsWith('engine/') || t === 'store/types' || t === 'attest/types',
  client: (t) => t.startsWith('wire/'),
  cli: (t) => t.startsWith('wire/') || t.startsWith('client/'),
  daemon: () => true,
  // The relay is a program of its own (m4a relay serve): its store, the engine's login rules and
  // the browser door's pages, never the daemon, the wake adapters or the CLI.
  relay: (t) => !t.startsWith('daemon/') && !t.startsWith('wake/') && !t.startsWith('cli/'),
  index: () => true,
};

/** Imports allowed only as a lazy `await import()`: the CLI hosts `m4a serve`. */
const LAZY_ONLY: Record<string, (target: string) => boolean> = {
  cli: (t) => t.startsWith('daemon/') || t.startsWith('relay/'),
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const layerOf = (rel: string): string => (rel.includes('/') ? rel.split('/')[0]! : rel.replace(/\.ts$/, ''));

export function violations(): string[] {
  const out: string[] = [];
  for (const file of files(SRC)) {
    const rel = relative(SRC, file);
    const layer = layerOf(rel);
    const rule = ALLOWED[layer];
    if (!rule) {
      out.push(`${rel}: folder ${layer} is not a known layer`);
      continue;
    }
    const text = readFileSync(file, 'utf8');
    const re = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
    for (const m of text.matchAll(re)) {
      const spec = m[1] ?? m[2]!;
      const lazy = m[2] !== undefined;
      if (!spec.startsWith('.')) continue;
      const target = relative(SRC, resolve(dirname(file), spec)).replace(/\.js$/, '');
      if (target.startsWith('..')) {
        out.push(`${rel}: imports ${spec} from outside src/`);
        continue;
      }
      if (layerOf(target) === layer) continue;
      if (rule(target)) continue;
      if (lazy && LAZY_ONLY[layer]?.(target)) continue;
      out.push(`${rel} (${layer}) must not import ${target}`);
    }
  }
  return out;
}

describe('layers', () => {
  it('every import runs with the direction of the layers', () => {
    assert.deepEqual(violations(), []);
  });

  it('the check itself catches a wrong import', () => {
    const re = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"]([^'"]+)['"]/g;
    const sample = "import { x } from '../store/sqlite/sqlite-store.js';";
    const spec = [...sample.matchAll(re)][0]?.[1];
    const target = relative(SRC, resolve(join(SRC, 'engine'), spec!)).replace(/\.js$/, '');
    assert.equal(ALLOWED.engine!(target), false, 'the engine may not import a store implementation');
    assert.equal(ALLOWED.client!('engine/mail-engine'), false);
    assert.equal(ALLOWED.cli!('daemon/daemon'), false, 'the CLI reaches the daemon only lazily');
  });
});
