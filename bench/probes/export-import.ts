// Export and import speed and memory: N messages (default 1,000,000) as a JSON lines file, imported
// into SQLite, exported from it, imported into PostgreSQL, exported from there and imported into a
// second SQLite file. Prints messages/s for each step and the RSS sampled every 250 ms during it
// (flat = constant memory). Run: npx tsx bench/probes/export-import.ts [N] [postgres-url]
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import postgres from 'postgres';
import { exportStore } from '../../src/store/export-import/export.js';
import { importStore } from '../../src/store/export-import/import.js';
import { FORMAT, FORMAT_VERSION } from '../../src/store/export-import/tables.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';

const N = Number(process.argv[2] ?? 1_000_000);
const PG = process.argv[3] ?? 'postgres://postgres@127.0.0.1:5432/test';
/** M4A_PROBE_ONLY=pg: only the PostgreSQL legs (the source file straight into PostgreSQL). */
const ONLY_PG = process.env.M4A_PROBE_ONLY === 'pg';
const dir = mkdtempSync(join(tmpdir(), 'm4a-ei-probe-'));
const schema = `probe_ei_${process.pid}`;
const spec = `${PG}?schema=${schema}`;

async function writeSource(path: string): Promise<void> {
  const out = createWriteStream(path);
  const w = async (s: string): Promise<void> => {
    if (!out.write(s)) await once(out, 'drain');
  };
  await w(
    `${JSON.stringify({ type: 'header', format: FORMAT, version: FORMAT_VERSION, store: 'sqlite', migration: MIGRATIONS.length, head_seq: N, exported_at: Date.now(), with_secrets: false })}\n`,
  );
  for (const id of ['alice', 'bob'])
    await w(
      `${JSON.stringify({ type: 'account', id, kind: 'agent', label: id, perm_send: 1, perm_read: 1, perm_urgent: 0, perm_operator: 0, bind_provider: null, created_at: 1, born_seq: 0, contact_policy: 'open' })}\n`,
    );
  let text = '';
  for (let seq = 1; seq <= N; seq++) {
    const m = {
      type: 'message',
      seq,
      id: `01JPROBE${String(seq).padStart(12, '0')}`,
      thread_id: `t${seq % 5000}`,
      from_account: seq % 2 ? 'alice' : 'bob',
      from_session: null,
      from_kind: 'agent',
      to_address: seq % 2 ? 'bob' : 'alice',
      to_key: seq % 2 ? 'a:bob' : 'a:alice',
      subject: `subject ${seq}`,
      body: `message ${seq}: ${'lorem ipsum dolor sit amet '.repeat(6)}`,
      reply_to: null,
      correlation: null,
      refs: '[]',
      priority: 'normal',
      created_at: 1_700_000_000_000 + seq,
      idempotency_key: seq % 10 === 0 ? `k${seq}` : null,
      fingerprint: seq % 10 === 0 ? `f${seq}` : null,
      task: null,
    };
    text += `${JSON.stringify(m)}\n`;
    if (seq % 1000 === 0) {
      await w(text);
      text = '';
    }
  }
  await w(text);
  out.end();
  await finished(out);
}

async function step(name: string, fn: () => Promise<unknown>): Promise<void> {
  const rss: number[] = [];
  const t = setInterval(() => rss.push(process.memoryUsage().rss), 250);
  const t0 = performance.now();
  await fn();
  const s = (performance.now() - t0) / 1000;
  clearInterval(t);
  const mb = (x: number): string => (x / 2 ** 20).toFixed(0);
  const q = (p: number): number => [...rss].sort((a, b) => a - b)[Math.floor((rss.length - 1) * p)] ?? 0;
  const half = rss.slice(0, Math.max(1, Math.floor(rss.length / 2)));
  console.log(
    `${name.padEnd(34)} ${s.toFixed(1).padStart(6)} s ${String(Math.round(N / s)).padStart(8)} msg/s   RSS MiB min ${mb(q(0))} median ${mb(q(0.5))} max ${mb(q(1))} (first half max ${mb(Math.max(...half))})`,
  );
}

const src = join(dir, 'source.jsonl');
try {
  await step('write the source file', () => writeSource(src));
  console.log(`source file ${(statSync(src).size / 2 ** 20).toFixed(0)} MiB, ${N} messages`);
  const fromSqlite = ONLY_PG ? src : join(dir, 'from-sqlite.jsonl');
  if (!ONLY_PG) await step('import JSONL -> SQLite', () => importStore(createReadStream(src, { highWaterMark: 256 * 1024 }), join(dir, 'a.db')));
  if (!ONLY_PG)
    await step('export SQLite -> JSONL', async () => {
      const out = createWriteStream(fromSqlite);
      await exportStore(join(dir, 'a.db'), out);
      out.end();
      await finished(out);
    });
  await step('import JSONL -> PostgreSQL', () => importStore(createReadStream(fromSqlite, { highWaterMark: 256 * 1024 }), spec));
  const fromPg = join(dir, 'from-pg.jsonl');
  await step('export PostgreSQL -> JSONL', async () => {
    const out = createWriteStream(fromPg);
    await exportStore(spec, out);
    out.end();
    await finished(out);
  });
  await step('import JSONL -> SQLite (from PG)', () => importStore(createReadStream(fromPg, { highWaterMark: 256 * 1024 }), join(dir, 'b.db')));
  await step('import again (adds nothing) -> PG', () => importStore(createReadStream(fromSqlite, { highWaterMark: 256 * 1024 }), spec));
} finally {
  const sql = postgres(PG, { max: 1, onnotice: () => undefined });
  await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
  await sql.end();
  rmSync(dir, { recursive: true, force: true });
}
