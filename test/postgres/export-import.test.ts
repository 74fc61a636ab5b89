// Between stores: m4a export of a SQLite mailbox imported into PostgreSQL answers exactly like the
// SQLite one (same ids, seqs, acks, pages), a second import adds nothing, and the PostgreSQL store's
// export imported into a new SQLite file gives every row back. And pg_dump: a database a daemon
// wrote, restored into a fresh database, serves the same mail to a daemon started on it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { runExport, runImportJsonl, type Io } from '../../src/daemon/backup.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { TABLES } from '../../src/store/export-import/tables.js';
import { A, send } from '../support/store-conformance.js';
import { fill, view } from '../support/mailbox-fill.js';
import { startTestDaemon } from '../support/test-daemon.js';
import { admin, freshSchema, noteFailure, PG_URL, pgSkip } from './support/pg.js';

const dir = mkdtempSync(join(tmpdir(), 'm4a-pg-export-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function io(): Io & { text: () => string } {
  const out: string[] = [];
  return { out: (s) => out.push(s), err: (s) => out.push(s), tty: false, text: () => out.join('') };
}

function tables(path: string): Record<string, unknown[]> {
  const db = new Database(path, { readonly: true });
  try {
    return Object.fromEntries(TABLES.map((t) => [t.table, db.prepare(`SELECT * FROM ${t.table} ORDER BY ${t.order || 'rowid'}`).all()]));
  } finally {
    db.close();
  }
}

const pgDump = spawnSync('pg_dump', ['--version'], { encoding: 'utf8' }).status === 0 && spawnSync('pg_restore', ['--version']).status === 0;

describe('postgres: export and import between stores', { skip: pgSkip }, () => {
  it('SQLite -> PostgreSQL -> SQLite: same answers, every row, nothing added twice', async () => {
    try {
      const source = join(dir, 'source.db');
      const s = openSqliteStore({ path: source });
      await fill(s);
      const before = await view(s);
      await s.close();
      const file = join(dir, 'all.jsonl');
      const e = io();
      assert.equal(await runExport({ store: `sqlite:${source}`, out: file, withSecrets: true }, e), 0, e.text());

      const { spec } = await freshSchema('export_import');
      const i1 = io();
      assert.equal(await runImportJsonl({ store: spec, file, json: true }, i1), 0, i1.text());
      const first = JSON.parse(i1.text()) as { counts: Record<string, { lines: number; added: number }>; headSeq: number };
      for (const [k, c] of Object.entries(first.counts)) assert.equal(c.added, c.lines, `${k}: every line added`);
      assert.equal(first.headSeq, 30);
      const i2 = io();
      assert.equal(await runImportJsonl({ store: spec, file, json: true }, i2), 0, i2.text());
      for (const [k, c] of Object.entries((JSON.parse(i2.text()) as typeof first).counts)) assert.equal(c.added, 0, `${k}: nothing added twice`);

      const pg = await openPostgresStore({ spec, max: 2 });
      try {
        assert.deepEqual(await view(pg), before, 'the PostgreSQL store answers like the SQLite one');
        assert.equal(
          (await pg.getAccount('alice'))?.secretDigest,
          (before as { accounts: { id: string; secretDigest: string }[] }).accounts.find((a) => a.id === 'alice')?.secretDigest,
        );
      } finally {
        await pg.close();
      }

      // Back out of PostgreSQL into a new SQLite file: every row of every table as the source had it.
      const back = join(dir, 'back.jsonl');
      const e2 = io();
      assert.equal(await runExport({ store: spec, out: back, withSecrets: true }, e2), 0, e2.text());
      const target = join(dir, 'back.db');
      const i3 = io();
      assert.equal(await runImportJsonl({ store: `sqlite:${target}`, file: back }, i3), 0, i3.text());
      assert.deepEqual(tables(target), tables(source));
      const t = openSqliteStore({ path: target });
      try {
        assert.deepEqual(await view(t), before);
        assert.equal((await send(t, A('bob'))).seq, 31, 'new mail continues the seqs');
      } finally {
        await t.close();
      }
    } catch (err) {
      noteFailure();
      throw err;
    }
  });

  it(
    'pg_dump of a database a daemon wrote, restored into a fresh database, serves the same mail',
    { skip: pgDump ? false : 'pg_dump or pg_restore is not installed (apt-get install postgresql-client)' },
    async () => {
      const { schema, spec } = await freshSchema('pg_dump');
      const fresh = `m4a_restore_${Math.random().toString(36).slice(2, 10)}`;
      const sql = admin();
      try {
        const d = await startTestDaemon({ store: spec });
        let seen: unknown;
        try {
          const { client: alice } = await d.account('alice');
          const { client: bob } = await d.account('bob');
          for (let i = 0; i < 25; i++) await alice.send({ to: 'bob', subject: `s${i}`, body: `b${i}` });
          const page = await bob.inbox({ limit: 10 });
          await bob.ack(page.messages.slice(0, 7).map((m) => m.message_id));
          seen = { inbox: await bob.inbox({ limit: 100 }), unread: await bob.unread() };
          alice.close();
          bob.close();
        } finally {
          await d.stop();
        }
        const dump = join(dir, 'mail.dump');
        const r = spawnSync('pg_dump', ['--format=custom', `--schema=${schema}`, `--file=${dump}`, PG_URL.replace(/\?.*$/, '')], { encoding: 'utf8' });
        assert.equal(r.status, 0, r.stderr);
        await sql.unsafe(`CREATE DATABASE "${fresh}"`);
        const target = new URL(PG_URL);
        target.pathname = `/${fresh}`;
        const rr = spawnSync('pg_restore', ['--no-owner', `--dbname=${target.toString()}`, dump], { encoding: 'utf8' });
        assert.equal(rr.status, 0, rr.stderr);
        target.searchParams.set('schema', schema);

        const d2 = await startTestDaemon({ store: target.toString() });
        try {
          const { secret } = await d2.operator.admin.accountRotate('bob');
          const { MailClient } = await import('../../src/client/http-client.js');
          const bob = new MailClient({ url: d2.url, token: secret });
          assert.deepEqual({ inbox: await bob.inbox({ limit: 100 }), unread: await bob.unread() }, seen, 'same ids, seqs, acks and pages');
          bob.close();
        } finally {
          await d2.stop();
        }
      } catch (err) {
        noteFailure();
        throw err;
      } finally {
        await sql.unsafe(`DROP DATABASE IF EXISTS "${fresh}" WITH (FORCE)`);
      }
    },
  );
});
