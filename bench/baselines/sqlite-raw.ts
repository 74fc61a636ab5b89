// The cost of the store alone: raw better-sqlite3 inserts with the daemon's durability (WAL,
// synchronous=FULL), one row per message in a plain table, one row per transaction and grouped.
import Database from 'better-sqlite3';
import { finish, readSpec } from '../lib/spec.js';
import { msSince, nowNs, summarize, type Summary } from '../lib/stats.js';

interface Spec {
  path: string;
  durationMs: number;
  groups: number[];
}

interface GroupResult {
  rowsPerTx: number;
  rows: number;
  rowsPerSec: number;
  commit: Summary;
}

async function main(s: Spec): Promise<{ results: GroupResult[] }> {
  const db = new Database(s.path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE IF NOT EXISTS m (seq INTEGER PRIMARY KEY AUTOINCREMENT, to_key TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL)');
  const insert = db.prepare('INSERT INTO m (to_key, subject, body, created_at) VALUES (?, ?, ?, ?)');
  const body = 'x'.repeat(200);
  const results: GroupResult[] = [];
  for (const g of s.groups) {
    const tx = db.transaction((n: number) => {
      for (let i = 0; i < n; i++) insert.run('a:bench-r0', 'subject', body, Date.now());
    });
    for (let i = 0; i < 20; i++) tx(g); // warm
    const lat: number[] = [];
    let rows = 0;
    const t0 = nowNs();
    const stopAt = Date.now() + s.durationMs;
    while (Date.now() < stopAt) {
      const t = nowNs();
      tx(g);
      lat.push(msSince(t));
      rows += g;
    }
    const el = msSince(t0);
    results.push({ rowsPerTx: g, rows, rowsPerSec: Math.round((rows / el) * 1000), commit: summarize(lat) });
  }
  db.close();
  return { results };
}

finish(main(readSpec<Spec>()));
