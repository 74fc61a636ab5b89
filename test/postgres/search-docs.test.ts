// The writers' search documents (store/postgres/search-docs.ts, migration 11): made in this process,
// equal to what the database's own m4a_search_doc makes of the same text wherever both cut words
// alike; every writer (append batch, import, store migration) indexes each message it adds exactly
// once; an insert by anyone else is still indexed by the trigger.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { pgSearchDocument } from '../../src/store/search-rules.js';
import { importStore } from '../../src/store/export-import/import.js';
import { FORMAT, FORMAT_VERSION } from '../../src/store/export-import/tables.js';
import { A, send } from '../support/store-conformance.js';
import { admin, freshSchema, noteFailure, pgSkip } from './support/pg.js';

const opened: PostgresStore[] = [];
after(async () => {
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

const TEXTS: [string, string][] = [
  ['Deploy plan', 'the release candidate is ready; deploy it at 10:30 (UTC), then roll back if tests fail.'],
  ['Re: Re: café au lait', 'CAFÉ crème, naïve façade — über-groß, Ελληνικά, русский текст, 東京都に行く'],
  ['', ''],
  ['subject only', ''],
  ['', 'body only, body only, body only'],
  ['repeat repeat repeat', 'repeat '.repeat(300)],
  ['a-b_c.d/e@f', 'x1y2 1.5 2e10 -3 $4 #5 foo_bar foo-bar foo.bar https://example.com/a?b=c me@example.com'],
  ['tabs\tand\nlines', 'line one\r\nline two\ttabbed   spaced'],
  // tsvector's edges: positions a word in one field (255) and in both (256), a word too long to
  // index (2,048 bytes: skipped without taking a position), positions past 16,383.
  ['w '.repeat(200), 'w '.repeat(200)],
  ['x', `a ${'x'.repeat(2047)} b ${'y'.repeat(2048)} c ${'é'.repeat(1024)} d`],
  ['s', `${'filler '.repeat(16_500)}tail tail tail`],
];

describe('postgres: writers make the search documents', { skip: pgSkip }, () => {
  it('a document made here equals m4a_search_doc of the same text', async () => {
    try {
      const { spec, schema } = await freshSchema('searchdoc');
      opened.push(await openPostgresStore({ spec, max: 2 }));
      const sql = admin();
      for (const [subject, body] of TEXTS) {
        const [r] = await sql.unsafe<{ same: boolean; ours: string; theirs: string }[]>(
          `SELECT $1::tsvector = "${schema}".m4a_search_doc($2, $3) AS same, $1::tsvector::text AS ours, "${schema}".m4a_search_doc($2, $3)::text AS theirs`,
          [pgSearchDocument(subject, body), subject, body],
        );
        assert.ok(r?.same, `${JSON.stringify([subject, body.slice(0, 40)])}: ours ${r?.ours.slice(0, 200)} theirs ${r?.theirs.slice(0, 200)}`);
      }
    } catch (err) {
      noteFailure();
      throw err;
    }
  });

  it('sends, an import and a raw insert each leave one document per message, findable', async () => {
    try {
      const { spec, schema } = await freshSchema('searchdocw');
      const store = await openPostgresStore({ spec, max: 2 });
      opened.push(store);
      const sql = admin();
      const s = `"${schema}"`;
      for (let i = 0; i < 5; i++) await send(store, A('bob'), { subject: `sent ${i}`, body: `zebra number ${i}` });
      // A raw insert (a writer that does not index its rows: a daemon of an earlier version).
      await sql.begin(async (tx) => {
        await tx.unsafe(`SET LOCAL search_path = ${s}`); // as the trigger's own statements name tables
        await tx.unsafe(
          `INSERT INTO messages (seq, id, thread_id, from_account, from_kind, to_address, to_key, subject, body, refs, priority, created_at)
           VALUES (100, 'raw-1', 'raw-1', 'alice', 'agent', 'bob', 'a:bob', 'raw', 'zebra raw', '[]', 'normal', 1)`,
        );
        await tx.unsafe(`UPDATE message_head SET seq = 100`);
      });
      const header = { type: 'header', format: FORMAT, version: FORMAT_VERSION, store: 'sqlite', migration: 1, head_seq: 205, exported_at: 1, with_secrets: false };
      const lines = [JSON.stringify(header)];
      for (let seq = 201; seq <= 205; seq++)
        lines.push(
          JSON.stringify({
            type: 'message',
            seq,
            id: `imp-${seq}`,
            thread_id: `imp-${seq}`,
            from_account: 'alice',
            from_kind: 'agent',
            to_address: 'bob',
            to_key: 'a:bob',
            subject: `imported ${seq}`,
            body: `zebra imported ${seq}`,
            refs: '[]',
            priority: 'normal',
            created_at: seq,
          }),
        );
      const file = `${lines.join('\n')}\n`;
      await importStore(Readable.from([file]), spec);
      await importStore(Readable.from([file]), spec); // adds nothing, indexes nothing twice
      const [c] = await sql.unsafe<{ messages: number; docs: number; unindexed: number; zebra: number }[]>(
        `SELECT (SELECT count(*) FROM ${s}.messages)::int AS messages, (SELECT count(*) FROM ${s}.message_search)::int AS docs,
           (SELECT count(*) FROM ${s}.messages m WHERE NOT EXISTS (SELECT 1 FROM ${s}.message_search d WHERE d.seq = m.seq))::int AS unindexed,
           (SELECT count(*) FROM ${s}.message_search WHERE doc @@ 'zebra'::tsquery)::int AS zebra`,
      );
      assert.deepEqual(c, { messages: 11, docs: 11, unindexed: 0, zebra: 11 });
      const [w] = await sql.unsafe<{ ok: boolean }[]>(`SELECT doc = ${s}.m4a_search_doc('imported 203', 'zebra imported 203') AS ok FROM ${s}.message_search WHERE seq = 203`);
      assert.ok(w?.ok, 'the imported document is the one m4a_search_doc makes');
    } catch (err) {
      noteFailure();
      throw err;
    }
  });
});
