// Migration 10 indexes the mail stored before it: a SQLite mailbox taken back to version 9 (its
// search table and triggers gone) finds its old mail once opened by this build, and the triggers
// it adds index what comes after.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { keyOfAccount, type NewMessage, type SearchQuery } from '../src/store/types.js';
import { parseSearchQuery } from '../src/wire/search.js';

const msg = (id: string, subject: string): NewMessage => ({
  id,
  threadId: id,
  fromAccount: 'alice',
  fromSession: null,
  fromKind: 'agent',
  toAddress: 'bob',
  toKey: keyOfAccount('bob'),
  subject,
  body: 'stored before the index',
  replyTo: null,
  correlation: null,
  refs: [],
  priority: 'normal',
  createdAt: 1,
  idempotencyKey: null,
  fingerprint: null,
});

function query(text: string): SearchQuery {
  const p = parseSearchQuery(text);
  assert.ok('terms' in p);
  return { terms: p.terms, to: null, fromAccount: null, threadId: null, after: null, before: null, tier: 1, beforeSeq: null, limit: 10, window: 2000 };
}

describe('search migration (SQLite)', () => {
  it('indexes the mail stored before migration 10, and what comes after', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'm4a-search-mig-'));
    const path = join(dir, 'mail.db');
    try {
      let s = openSqliteStore({ path });
      await s.appendMessage(msg('m-old1', 'heron one'), 0);
      await s.close();
      const db = new Database(path);
      db.exec(
        'DROP TRIGGER messages_fts_insert; DROP TRIGGER messages_fts_delete; DROP TRIGGER messages_fts_update; DROP TABLE messages_fts; DROP INDEX messages_external; ALTER TABLE messages DROP COLUMN via;',
      );
      db.prepare(
        "INSERT INTO messages (id, thread_id, from_account, from_kind, to_address, to_key, subject, body, refs, priority, created_at) VALUES ('m-old2', 'm-old2', 'alice', 'agent', 'bob', 'a:bob', 'heron two', 'x', '[]', 'normal', 2)",
      ).run();
      db.pragma('user_version = 9');
      db.close();
      s = openSqliteStore({ path });
      const scope = { account: 'bob', sessionKey: null, rooms: [] };
      assert.deepEqual(
        (await s.search(scope, query('heron'))).messages.map((m) => m.id),
        ['m-old2', 'm-old1'],
      );
      await s.appendMessage(msg('m-new', 'heron three'), 0);
      assert.deepEqual(
        (await s.search(scope, query('heron'))).messages.map((m) => m.id),
        ['m-new', 'm-old2', 'm-old1'],
      );
      await s.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
