// `m4a migrate-store --from sqlite:… --to postgres://…`: every account (its contact policy), room
// (a team with its leaders and grants), membership, team change, contact, listener, session, name, task, approval, message (same ids and seqs), ack and idempotency key moves over, the
// PostgreSQL store then answers exactly like the SQLite one, and a second run doubles nothing.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { runMigrateStore } from '../../src/daemon/migrate-store.js';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.js';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { TeamChangeRecord } from '../../src/store/types.js';
import { A, message, send } from '../support/store-conformance.js';
import { task } from '../support/task-conformance.js';
import { fill, view } from '../support/mailbox-fill.js';
import { freshSchema, noteFailure, pgSkip } from './support/pg.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'm4a-migrate-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('postgres: migrate-store from SQLite', { skip: pgSkip }, () => {
  it('moves a mailbox over, answers identically, and a second run doubles nothing', async () => {
    try {
      const path = join(dir, 'mail.db');
      const sqlite = openSqliteStore({ path });
      await fill(sqlite, { lease: false });
      const before = await view(sqlite);
      await sqlite.close();
      const { spec } = await freshSchema('migrate_store');

      const out: string[] = [];
      const io = { out: (x: string) => out.push(x), err: (x: string) => out.push(x) };
      assert.equal(await runMigrateStore({ from: `sqlite:${path}`, to: spec, json: true }, io), 0, out.join(''));
      const first = JSON.parse(out.join('')) as { tables: Record<string, { source: number; copied: number }>; headSeq: number };
      assert.equal(first.headSeq, 30);
      assert.deepEqual(first.tables.messages, { source: 30, copied: 30 });
      for (const [name, c] of Object.entries(first.tables)) assert.equal(c.copied, c.source, `${name}: all copied`);
      assert.deepEqual(
        [first.tables.teamChanges, first.tables.contacts],
        [
          { source: 7, copied: 7 },
          { source: 3, copied: 3 },
        ],
      );

      const pg = await openPostgresStore({ spec, max: 2 });
      try {
        assert.deepEqual(await view(pg), before, 'the PostgreSQL store answers like the SQLite one');
        const changes = await pg.getThread('t1');
        assert.ok(changes.length > 0 && changes.every((m) => m.task?.task_id === `t-${m.createdAt - 10_000}`), "a task's changes kept their structured part");
        // Idempotency keys came along: a retry is a duplicate of the moved message.
        const retry = await pg.appendMessage(message(A('bob'), { fromAccount: 'alice', idempotencyKey: 'key-3', fingerprint: 'fp-3', createdAt: 10_010 }), 0);
        assert.equal(retry.kind, 'duplicate');
        assert.equal((await pg.createTask(task('t-3', { fromAccount: 'alice', idempotencyKey: 'tk' }), 0)).kind, 'duplicate', "so are a task's");

        // Again, through the CLI when it has the command (else the same function): nothing doubles.
        const help = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
        let second: { tables: Record<string, { source: number; copied: number }> };
        if (/^\s+migrate-store\b/m.test(help.stdout)) {
          const r = spawnSync(process.execPath, [CLI, 'migrate-store', '--from', `sqlite:${path}`, '--to', spec, '--json'], { encoding: 'utf8' });
          assert.equal(r.status, 0, r.stderr);
          second = JSON.parse(r.stdout) as typeof second;
        } else {
          const again: string[] = [];
          assert.equal(await runMigrateStore({ from: `sqlite:${path}`, to: spec, json: true }, { out: (x) => again.push(x), err: (x) => again.push(x) }), 0, again.join(''));
          second = JSON.parse(again.join('')) as typeof second;
        }
        for (const [name, c] of Object.entries(second.tables)) assert.equal(c.copied, 0, `${name}: nothing copied twice`);
        assert.deepEqual(await view(pg), before, 'still identical after the second run');

        // New mail continues the sequence, and a new team change the ids.
        assert.equal((await send(pg, A('bob'))).seq, 31);
        const last = (await pg.teamChanges('crew', null, 1))[0] as TeamChangeRecord;
        assert.equal(await pg.setLeader('crew', 'carol', true, { room: 'crew', at: 40, by: 'operator', action: 'leader.add', account: 'carol', capability: null }), 'ok');
        assert.ok(((await pg.teamChanges('crew', null, 1))[0] as TeamChangeRecord).id > last.id, 'a change made after the move is newer than every moved one');
        assert.equal((await pg.getAccount('carol'))?.contactPolicy, 'contacts_only');
      } finally {
        await pg.close();
      }

      // A target that is not a copy of this source is refused and left as it was.
      const other = join(dir, 'other.db');
      const o = openSqliteStore({ path: other });
      await send(o, A('zed'));
      await o.close();
      const refused: string[] = [];
      assert.equal(await runMigrateStore({ from: `sqlite:${other}`, to: spec }, { out: (x) => refused.push(x), err: (x) => refused.push(x) }), 1);
      assert.match(refused.join(''), /not a copy of this source/);
      const check = await openPostgresStore({ spec, max: 1 });
      try {
        assert.equal(await check.headSeq(), 31);
        assert.equal((await check.listAccounts()).length, 3, 'the refused run changed nothing');
      } finally {
        await check.close();
      }
    } catch (err) {
      noteFailure();
      throw err;
    }
  });
});
