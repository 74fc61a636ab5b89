// m4a export / m4a import FILE.jsonl between SQLite files: every kind of row survives with its ids
// and seqs (the target answers exactly like the source), a second import adds nothing, secret
// digests leave only with --with-secrets (the file then 0600), and a bad line is refused by its line
// number with nothing imported. SQLite <-> PostgreSQL: test/postgres/export-import.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { runExport, runImportJsonl, type Io } from '../src/daemon/backup.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { TABLES } from '../src/store/export-import/tables.js';
import { A, send } from './support/store-conformance.js';
import { fill, view } from './support/mailbox-fill.js';

const dir = mkdtempSync(join(tmpdir(), 'm4a-export-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const MAIN = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));

function io(): Io & { text: () => string } {
  const out: string[] = [];
  return { out: (s) => out.push(s), err: (s) => out.push(s), tty: false, text: () => out.join('') };
}

/** Every exported table's rows, as the file holds them (counters and registration order aside). */
function tables(path: string, omit: Record<string, string[]> = {}): Record<string, unknown[]> {
  const db = new Database(path, { readonly: true });
  try {
    const out: Record<string, unknown[]> = {};
    for (const t of TABLES) {
      const rows = db.prepare(`SELECT * FROM ${t.table} ORDER BY ${t.order || 'rowid'}`).all() as Record<string, unknown>[];
      for (const r of rows) for (const c of omit[t.table] ?? []) delete r[c];
      out[t.table] = rows;
    }
    return out;
  } finally {
    db.close();
  }
}

describe('export and import as JSON lines', () => {
  const source = join(dir, 'source.db');
  const file = join(dir, 'all.jsonl');

  it('round trip SQLite -> SQLite: every row, same ids and seqs, a second run adds nothing', async () => {
    const s = openSqliteStore({ path: source });
    await fill(s);
    const before = await view(s);
    await s.close();

    const e = io();
    assert.equal(await runExport({ store: `sqlite:${source}`, out: file, json: true }, e), 0, e.text());
    const lines = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines[0]?.type, 'header');
    assert.equal(lines[0]?.head_seq, 30);
    const types = new Set(lines.map((l) => l.type));
    for (const t of TABLES) assert.ok(types.has(t.type), `the file holds ${t.type} lines`);
    assert.ok(
      lines.filter((l) => l.type === 'account').every((l) => !('secret_digest' in l)),
      'no secret digest without --with-secrets',
    );
    assert.equal(statSync(file).mode & 0o777, 0o644);

    const target = join(dir, 'target.db');
    const i1 = io();
    assert.equal(await runImportJsonl({ store: `sqlite:${target}`, file, json: true }, i1), 0, i1.text());
    const first = JSON.parse(i1.text()) as { counts: Record<string, { lines: number; added: number }>; accountsWithoutSecret: number; headSeq: number };
    assert.equal(first.headSeq, 30);
    assert.equal(first.accountsWithoutSecret, 3);
    for (const [k, c] of Object.entries(first.counts)) assert.equal(c.added, c.lines, `${k}: every line added`);
    assert.deepEqual(first.counts.message, { lines: 30, added: 30 });

    const t = openSqliteStore({ path: target });
    const afterImport = await view(t);
    await t.close();
    const noSecrets = (v: unknown): unknown => JSON.parse(JSON.stringify(v, (k, x: unknown) => (k === 'secretDigest' ? undefined : x)));
    assert.deepEqual(noSecrets(afterImport), noSecrets(before), 'the target answers like the source (secrets aside)');
    assert.deepEqual(tables(target, { accounts: ['secret_digest'] }), tables(source, { accounts: ['secret_digest'] }), 'every row of every table, same ids and seqs');

    // Again, through the CLI in its `m4a import FILE.jsonl` form: nothing is added twice.
    const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, 'import', file, '--store', `sqlite:${target}`, '--json'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const second = JSON.parse(r.stdout) as typeof first;
    for (const [k, c] of Object.entries(second.counts)) assert.equal(c.added, 0, `${k}: nothing added twice`);
    const t2 = openSqliteStore({ path: target });
    assert.deepEqual(noSecrets(await view(t2)), noSecrets(before), 'still identical after the second run');
    // An account imported without its digest is unusable until rotated, and new mail continues the seqs.
    assert.equal((await t2.getAccount('alice'))?.secretDigest, 'none');
    assert.equal((await send(t2, A('bob'))).seq, 31);
    await t2.close();
  });

  it('--with-secrets carries the digests in a 0600 file, with a warning', async () => {
    const out = join(dir, 'secrets.jsonl');
    const e = io();
    assert.equal(await runExport({ store: `sqlite:${source}`, out, withSecrets: true }, e), 0, e.text());
    assert.match(e.text(), /warning: .* secret digest/);
    assert.equal(statSync(out).mode & 0o777, 0o600);
    const target = join(dir, 'with-secrets.db');
    const i = io();
    assert.equal(await runImportJsonl({ store: `sqlite:${target}`, file: out }, i), 0, i.text());
    assert.deepEqual(tables(target), tables(source), 'the digests too');
    // Never over an existing file.
    const again = io();
    assert.equal(await runExport({ store: `sqlite:${source}`, out }, again), 1);
    assert.match(again.text(), /exists/);
  });

  it('a bad line is refused by its number, and nothing is imported', async () => {
    const target = join(dir, 'bad.db');
    const good = readFileSync(file, 'utf8').split('\n');
    const cases: [string, (l: string[]) => string[], RegExp][] = [
      ['torn JSON', (l) => [...l.slice(0, 40), '{"type":"message","seq":', ...l.slice(40)], /line 41: not JSON/],
      ['unknown type', (l) => [...l.slice(0, 5), '{"type":"mystery"}', ...l.slice(5)], /line 6: unknown type \\"mystery\\"/],
      ['unknown column', (l) => [...l.slice(0, 3), '{"type":"room","name":"x","created_at":1,"colour":"red"}', ...l.slice(3)], /line 4: room has no column \\"colour\\"/],
      ['no header', (l) => l.slice(1), /line 1: the first line is not a mail4agent-export header/],
    ];
    for (const [name, edit, want] of cases) {
      const f = join(dir, `bad-${name.replace(/ /g, '-')}.jsonl`);
      writeFileSync(f, edit(good).join('\n'));
      const i = io();
      assert.equal(await runImportJsonl({ store: `sqlite:${target}`, file: f, json: true }, i), 1, name);
      assert.match(i.text(), want, name);
      assert.match(i.text(), /"code":"malformed"/, name);
      assert.deepEqual(
        Object.values(tables(target)).map((rows) => rows.length),
        TABLES.map(() => 0),
        `${name}: nothing half-imported`,
      );
    }
  });

  it('refuses a target whose messages disagree, and leaves it as it was', async () => {
    const other = join(dir, 'other.db');
    const o = openSqliteStore({ path: other });
    await send(o, A('zed'));
    await o.close();
    const before = tables(other);
    const i = io();
    assert.equal(await runImportJsonl({ store: `sqlite:${other}`, file }, i), 1);
    assert.match(i.text(), /line \d+: the target holds another message at seq 1/);
    assert.deepEqual(tables(other), before);
  });
});
