// Search at scale (issue #18): a SQLite store filled with `count` messages straight through the
// store (openSqliteStore's append path and group commit, 2,000 appends a transaction; not over
// HTTP), then `POST /mail/search` over HTTP, one request at a time, for a few query shapes; and the
// cost of a send with the index against one without it, side by side in one run: a copy of the same
// store whose FTS5 triggers were dropped (so its index is no longer written), both daemons of this
// build from source, rounds alternating between them so both see the same machine.
// Then the event loop under a hostile reader: /health and a send of another client, idle and while
// four clients send the slowest queries in a loop, following their cursors.
//   node --import tsx bench/probes/search-probe.ts [count=1000000] [queries=200] [sends=2000] [rounds=4] [--reuse DIR]
import { copyFileSync, mkdirSync, statSync } from 'node:fs';
import postgres from 'postgres';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { MailClient } from '../../src/client/http-client.js';
import { MailError } from '../../src/wire/errors.js';
import { systemIds } from '../../src/engine/clock.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { PG_BELOW_SQL, PG_NEWEST_SQL } from '../../src/store/postgres/search.js';
import { tsQuery } from '../../src/store/search-rules.js';
import { parseSearchQuery } from '../../src/wire/search.js';
import type { NewMessage, Store } from '../../src/store/types.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { startDaemon, type Daemon } from '../lib/daemon.js';
import { cleanupAll, ROOT, tempDir } from '../lib/procs.js';
import { summarize } from '../lib/stats.js';

const [count = 1_000_000, queries = 200, sends = 2000, rounds = 4] = process.argv
  .slice(2)
  .filter((a) => /^\d+$/.test(a))
  .map(Number);
const FROM_SOURCE = { cli: join(ROOT, 'src', 'cli', 'main.ts'), nodeFlags: ['--import', 'tsx'] };
const RECIPIENTS = Array.from({ length: 50 }, (_, i) => `peer${i}`);
const VOCAB = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`);

/** A small seeded PRNG, so every run stores the same mail. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Every 10th message to the reader. alpha: 1 in 10 of all mail (drawn); "release candidate": 1 in 100;
// rareword: 1 in 20,000; elsewhere: 1 in 10 of the mail to others only (the worst shape: the index
// finds many matches, the scope keeps none of them); the rest a skewed draw from VOCAB.
function messageAt(k: number, r: () => number, now: number): NewMessage {
  const toReader = k % 10 === 0;
  const to = toReader ? 'reader' : (RECIPIENTS[k % RECIPIENTS.length] as string);
  const words = Array.from({ length: 20 }, () => VOCAB[Math.floor(VOCAB.length * r() ** 3)] as string);
  if (r() < 0.1) words.push('alpha');
  if (r() < 0.01) words.push('release candidate');
  if (k % 20_000 === 0 || k % 20_000 === 10) words.push('rareword');
  if (!toReader && r() < 0.1) words.push('elsewhere');
  const id = systemIds.messageId();
  return {
    id,
    threadId: id,
    fromAccount: 'writer',
    fromSession: null,
    fromKind: 'agent',
    toAddress: to,
    toKey: `a:${to}`,
    subject: `topic ${words[0]} ${words[1]}`,
    body: words.join(' '),
    replyTo: null,
    correlation: null,
    refs: [],
    priority: 'normal',
    createdAt: now - (count - k) * 1000,
    idempotencyKey: null,
    fingerprint: null,
  };
}

async function prefill(open: string | (() => Promise<Store>)): Promise<{ ms: number; perSec: number }> {
  const store = typeof open === 'string' ? openSqliteStore({ path: open }) : await open();
  const r = rng(18);
  const now = Date.now();
  const t0 = Date.now();
  for (let done = 0; done < count;) {
    const n = Math.min(2000, count - done);
    const batch: Promise<unknown>[] = [];
    for (let i = 0; i < n; i++) batch.push(store.appendMessage(messageAt(done + i, r, now), 0));
    await Promise.all(batch);
    done += n;
    if (done % 100_000 === 0) process.stderr.write(`prefilled ${done}\n`);
  }
  await store.close();
  const ms = Date.now() - t0;
  return { ms, perSec: Math.round((count / ms) * 1000) };
}

const SHAPES: [string, string][] = [
  ['common word (1 in 10)', 'alpha'],
  ['two words', 'alpha w1'],
  ['phrase (1 in 100)', '"release candidate"'],
  ['prefix', 'w1*'],
  ['prefix of a rarer word', 'wzz*'],
  ['rare word (1 in 20,000)', 'rareword'],
  ['no match', 'zzznothing'],
  ["others' word (1 in 10, none the reader's)", 'elsewhere'],
];

async function timeShapes(reader: MailClient): Promise<void> {
  console.log(`\nsearch over HTTP, one at a time, reader holds ${count / 10} of ${count} (page of 20):`);
  for (const [name, query] of SHAPES) {
    await timeQueries(reader, query, 5); // warm
    const r = await timeQueries(reader, query, queries);
    console.log(`  ${name.padEnd(44)} ${query.padEnd(22)} p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  (${r.hits} results)`);
  }
}

async function timeQueries(c: MailClient, query: string, n: number): Promise<{ p50: number; p99: number; hits: number }> {
  const ms: number[] = [];
  let hits = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await c.search({ query });
    ms.push(performance.now() - t0);
    hits = r.results.length;
  }
  const s = summarize(ms.sort((a, b) => a - b));
  return { p50: s.p50, p99: s.p99, hits };
}

/** /health and a send, one at a time, idle and then while 4 hostile clients loop over the slowest
 *  shapes (each following its next_cursor to the end): how long others wait behind a search. */
async function timeLoop(label: string, d: Daemon, hostile: MailClient, other: MailClient): Promise<void> {
  const health = async (n: number) => {
    const ms: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await (await fetch(new URL('/health', d.url))).arrayBuffer();
      ms.push(performance.now() - t0);
    }
    return summarize(ms.sort((a, b) => a - b));
  };
  const send = async (n: number) => {
    const ms: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await other.send({ to: 'reader', subject: 'loop send', body: 'during the loop' });
      ms.push(performance.now() - t0);
    }
    return summarize(ms.sort((a, b) => a - b));
  };
  const idleHealth = await health(500);
  const idleSend = await send(200);
  let stop = false;
  let searches = 0;
  let refused = 0;
  const worst = ['w1*', 'elsewhere', 'wzz*', 'alpha w1', 'zzznothing'];
  // A hostile client: a refused search (rate_limited) is sent again at once, not after retry_after.
  const loops = Array.from({ length: 4 }, async (_, k) => {
    for (let i = k; !stop; i++) {
      let cursor: string | undefined;
      do {
        try {
          const r = await hostile.search({ query: worst[i % worst.length] as string, ...(cursor ? { cursor } : {}) });
          searches++;
          cursor = r.next_cursor;
        } catch (err) {
          if (!(err instanceof MailError && err.code === 'rate_limited')) throw err;
          refused++;
        }
      } while (cursor && !stop);
    }
  });
  const t0 = performance.now();
  const busyHealth = await health(500);
  const busySend = await send(200);
  const secs = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(loops);
  const f = (x: { p50: number; p99: number }) => `p50 ${x.p50.toFixed(2)} p99 ${x.p99.toFixed(2)} ms`;
  console.log(`
${label}: /health idle ${f(idleHealth)}; during the hostile loop ${f(busyHealth)}`);
  console.log(
    `  send idle ${f(idleSend)}; during the hostile loop ${f(busySend)} (${Math.round(searches / secs)} hostile searches/s answered, ${Math.round(refused / secs)}/s refused)`,
  );
}

/** `sends` sends to the reader, 16 at a time; per-send latency and sends per second. */
async function timeSends(c: MailClient): Promise<{ perSec: number; p50: number; p99: number }> {
  const ms: number[] = [];
  let next = 0;
  const t0 = performance.now();
  const body = VOCAB.slice(0, 30).join(' ');
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < sends) {
        next++;
        const s0 = performance.now();
        await c.send({ to: 'reader', subject: 'bench send', body });
        ms.push(performance.now() - s0);
      }
    }),
  );
  const s = summarize(ms.sort((a, b) => a - b));
  return { perSec: Math.round((sends / (performance.now() - t0)) * 1000), p50: s.p50, p99: s.p99 };
}

/** The window query as it was before it was bounded on PostgreSQL (EXPLAINed beside the store's). */
const PLAIN_WINDOW = 'SELECT seq FROM message_search WHERE doc @@ $1::tsquery ORDER BY seq DESC LIMIT $2';

/** PostgreSQL (--pg URL): a schema of its own filled as the SQLite store is (the same generator,
 *  through the PostgreSQL store's append path and group commit; an import would hold the
 *  migration lock that every other user of the database waits on), a daemon of this build on it,
 *  the same shapes over HTTP; then EXPLAIN ANALYZE of each shape's window query, the plain form
 *  and the store's. The schema is dropped at the end unless --pg-schema NAME named one to keep
 *  (and reuse). */
async function postgresMode(url: string): Promise<void> {
  const keep = flag('--pg-schema');
  const schema = keep ?? `search_probe_${process.pid}`;
  const spec = `${url}?schema=${schema}`;
  const sql = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    const dir = join(tempDir('search-pg'), 'data');
    let d = await startDaemon(dir, { ...FROM_SOURCE, args: ['--store', spec] });
    const secrets = new Map<string, string>();
    const known = new Set((await d.operator.admin.accountList()).accounts.map((a) => a.id));
    for (const id of ['reader', 'writer']) if (known.has(id)) secrets.set(id, (await d.operator.admin.accountRotate(id)).secret);
    if (!known.has('reader')) for (const [k, v] of await d.accounts(['reader', 'writer', ...RECIPIENTS])) secrets.set(k, v);
    await d.stop();
    const rows = await sql.unsafe<{ n: string }[]>(`SELECT count(*) AS n FROM "${schema}".message_search`);
    if (Number(rows[0]?.n ?? 0) < count) {
      const fill = await prefill(() => openPostgresStore({ spec }));
      await sql.unsafe(`ANALYZE "${schema}".message_search; ANALYZE "${schema}".messages`);
      console.log(`PostgreSQL prefill: ${count} messages in ${(fill.ms / 1000).toFixed(1)} s (${fill.perSec}/s, search trigger on), schema ${schema}`);
    }
    d = await startDaemon(dir, { ...FROM_SOURCE, args: ['--store', spec] });
    const reader = new MailClient({ url: d.url, token: secrets.get('reader') as string, timeoutMs: 120_000 });
    try {
      await timeShapes(reader);
    } finally {
      reader.close();
      await d.stop();
    }
    await sql.unsafe(`SET search_path = "${schema}"`);
    console.log('\nthe window query of the first page, EXPLAIN (ANALYZE, BUFFERS): execution ms, rows, buffers, plan');
    const edgeRow = await sql.unsafe<{ seq: string }[]>('SELECT seq FROM message_search ORDER BY seq DESC OFFSET 4999 LIMIT 1');
    const edge = Number(edgeRow[0]?.seq ?? 0);
    for (const [name, query] of SHAPES) {
      const p = parseSearchQuery(query);
      if ('problem' in p) throw new Error(p.problem);
      for (const tier of [1, 2] as const) {
        const tsq = tsQuery(p.terms, tier);
        // The two steps, as the store takes them, give the plain query's window (the check of step 2
        // at a size the tests do not reach).
        const seqsOf = async (text: string, params: (string | number)[]) => (await sql.unsafe<{ seq: string }[]>(text, params)).map((r) => Number(r.seq));
        const plainSeqs = await seqsOf(PLAIN_WINDOW, [tsq, 2000]);
        const first = await seqsOf(PG_NEWEST_SQL, [tsq, 2000, Number.MAX_SAFE_INTEGER, 5_000]);
        const need = 2000 - first.length;
        const gin = !(first.length > 0 && need <= 20 * first.length);
        const step2: [string, (string | number)[]] = [PG_BELOW_SQL, [tsq, need, edge]];
        if (gin) await sql.unsafe('SET enable_seqscan = off; SET enable_indexscan = off');
        const second = need === 0 ? [] : await seqsOf(...step2);
        if (gin) await sql.unsafe('RESET enable_seqscan; RESET enable_indexscan');
        const same = JSON.stringify(plainSeqs) === JSON.stringify(first.concat(second));
        console.log(
          `  ${name.padEnd(44)} tier ${tier} window of ${plainSeqs.length}: steps 1+2 ${same ? 'the same' : 'DIFFER'} (${first.length} + ${second.length}, step 2 ${gin ? 'GIN' : 'key'})`,
        );
        const forms: [string, string, (string | number)[], boolean][] = [
          ['plain', PLAIN_WINDOW, [tsq, 2000], false],
          ['step 1', PG_NEWEST_SQL, [tsq, 2000, Number.MAX_SAFE_INTEGER, 5_000], false],
          ...(need === 0 ? [] : [['step 2', step2[0], step2[1], gin] as [string, string, (string | number)[], boolean]]),
        ];
        for (const [form, text, params, gin] of forms) {
          if (gin) await sql.unsafe('SET enable_seqscan = off; SET enable_indexscan = off');
          const plan = await sql.unsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
          if (gin) await sql.unsafe('RESET enable_seqscan; RESET enable_indexscan');
          const lines = plan.map((r) => r['QUERY PLAN']);
          const ms = /Execution Time: ([\d.]+)/.exec(lines.join('\n'))?.[1] ?? '?';
          const buffers = /Buffers: (shared [^\n]*)/.exec(lines.join('\n'))?.[1] ?? '';
          const rows = /actual time=[\d.]+\.\.[\d.]+ rows=(\d+)/.exec(lines[0] ?? '')?.[1] ?? '?';
          const nodes = lines
            .filter((l) => /->|^\w/.test(l) && !/^(Planning|Execution)/.test(l))
            .map((l) =>
              l
                .trim()
                .replace(/\s+\(cost.*$/, '')
                .replace(/^-> +/, ''),
            );
          console.log(`  ${name.padEnd(44)} tier ${tier} ${form.padEnd(6)} ${ms.padStart(9)} ms ${rows.padStart(5)} rows  ${buffers.padEnd(36)} ${nodes.slice(0, 3).join(' / ')}`);
        }
      }
    }
  } finally {
    if (keep === undefined) await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await sql.end();
  }
}

const flag = (name: string): string | undefined => (process.argv.indexOf(name) >= 0 ? process.argv[process.argv.indexOf(name) + 1] : undefined);

async function main(): Promise<void> {
  // --reuse DIR: a data directory this probe filled before (the prefill is the long part).
  const pg = flag('--pg');
  if (pg !== undefined) return void (await postgresMode(pg));
  const reuse = flag('--reuse');
  // --fill-only DIR: make and fill the mailbox in DIR (kept), for later runs with --reuse DIR.
  const fillOnly = flag('--fill-only');
  const withDir = reuse ?? (fillOnly !== undefined ? join(fillOnly, 'data') : join(tempDir('search-with'), 'data'));
  const withoutDir = join(tempDir('search-without'), 'data');
  let d: Daemon;
  const secrets = new Map<string, string>();
  if (reuse) {
    d = await startDaemon(withDir, FROM_SOURCE);
    for (const id of ['reader', 'writer']) secrets.set(id, (await d.operator.admin.accountRotate(id)).secret);
    await d.stop();
  } else {
    // A first start makes the mailbox (migrations, accounts); then the store is filled directly.
    d = await startDaemon(withDir, FROM_SOURCE);
    for (const [k, v] of await d.accounts(['reader', 'writer', ...RECIPIENTS])) secrets.set(k, v);
    await d.stop();
    const fill = await prefill(join(withDir, 'mail.db'));
    console.log(
      `prefill: ${count} messages in ${(fill.ms / 1000).toFixed(1)} s (${fill.perSec}/s, FTS5 triggers on); mail.db ${(statSync(join(withDir, 'mail.db')).size / 2 ** 20).toFixed(0)} MiB`,
    );
  }
  if (fillOnly !== undefined) return;

  // --baseline CLI: another build's src/cli/main.ts (e.g. the commit before a change), whose
  // hostile-loop figures are taken in the same run, its rounds alternating with this build's.
  const baseline = flag('--baseline');
  const builds: [string, typeof FROM_SOURCE][] = baseline
    ? [
        ['baseline', { cli: baseline, nodeFlags: FROM_SOURCE.nodeFlags }],
        ['this build', FROM_SOURCE],
      ]
    : [['this build', FROM_SOURCE]];
  for (let round = 0; round < (baseline ? 2 : 1); round++) {
    for (const [label, how] of builds) {
      d = await startDaemon(withDir, how);
      const reader = new MailClient({ url: d.url, token: secrets.get('reader') as string, timeoutMs: 120_000 });
      if (round === 0 && label === 'this build' && !process.argv.includes('--skip-shapes')) await timeShapes(reader);
      await timeLoop(`${label}, round ${round + 1}`, d, reader, new MailClient({ url: d.url, token: secrets.get('writer') as string, timeoutMs: 120_000 }));
      reader.close();
      await d.stop();
    }
  }
  if (process.argv.includes('--skip-sends')) return;

  // The same store twice: one keeps its triggers, the copy has them dropped.
  mkdirSync(withoutDir, { recursive: true });
  for (const f of ['mail.db', 'operator.token', 'host-id']) {
    try {
      copyFileSync(join(withDir, f), join(withoutDir, f));
    } catch {
      /* not every file exists in every version */
    }
  }
  const db = new Database(join(withoutDir, 'mail.db'));
  db.exec('DROP TRIGGER messages_fts_insert; DROP TRIGGER messages_fts_delete; DROP TRIGGER messages_fts_update;');
  db.close();
  const a = await startDaemon(withDir, FROM_SOURCE);
  const b = await startDaemon(withoutDir, FROM_SOURCE);
  const ca = new MailClient({ url: a.url, token: secrets.get('writer') as string, timeoutMs: 120_000 });
  const cb = new MailClient({ url: b.url, token: secrets.get('writer') as string, timeoutMs: 120_000 });
  await timeSends(ca);
  await timeSends(cb);
  const rows: { with: Awaited<ReturnType<typeof timeSends>>; without: Awaited<ReturnType<typeof timeSends>> }[] = [];
  for (let i = 0; i < rounds; i++) {
    const first = i % 2 === 0;
    const x = first ? await timeSends(ca) : null;
    const y = await timeSends(cb);
    rows.push({ with: x ?? (await timeSends(ca)), without: y });
  }
  console.log(`\nsend (a 30-word body), 16 at a time, ${sends} a round, rounds alternating, on the ${count}-message store:`);
  for (const [i, r] of rows.entries()) {
    console.log(
      `  round ${i + 1}: with index ${r.with.perSec}/s p50 ${r.with.p50.toFixed(2)} p99 ${r.with.p99.toFixed(2)} ms; without ${r.without.perSec}/s p50 ${r.without.p50.toFixed(2)} p99 ${r.without.p99.toFixed(2)} ms; p50 ratio ${(r.with.p50 / r.without.p50).toFixed(2)}x, throughput ratio ${(r.without.perSec / r.with.perSec).toFixed(2)}x`,
    );
  }
  ca.close();
  cb.close();
  await a.stop();
  await b.stop();
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => cleanupAll());
