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
import { keyOfLineage, type Store, type TeamAction, type TeamChange, type TeamChangeRecord } from '../../src/store/types.js';
import type { TeamCapability } from '../../src/wire/teams.js';
import { A, R, account, item, message, q, scope, send, session } from '../support/store-conformance.js';
import { approval, task, taskQuery } from '../support/task-conformance.js';
import { freshSchema, noteFailure, pgSkip } from './support/pg.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'm4a-migrate-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A mailbox with a bit of everything, including acks that leave gaps and a successor lineage. */
async function fill(s: Store): Promise<void> {
  for (const id of ['alice', 'bob', 'carol']) await s.addAccount(account(id, { createdAt: 10 }));
  await s.addRoom('lobby', 5);
  await s.addRoom('all', 6, { everyone: true });
  await s.addMember('lobby', 'alice');
  await s.addMember('lobby', 'bob');
  // A team: leaders with and without grants, its recorded changes; contacts and a policy.
  await s.addRoom('crew', 7, { team: true });
  const change = (action: TeamAction, account: string | null, capability: TeamCapability | null = null): TeamChange => ({
    room: 'crew',
    at: 20,
    by: 'operator',
    action,
    account,
    capability,
  });
  for (const id of ['alice', 'bob', 'carol']) await s.addMember('crew', id, change('member.add', id));
  await s.setLeader('crew', 'alice', true, change('leader.add', 'alice'));
  await s.setLeader('crew', 'bob', true, change('leader.add', 'bob'));
  await s.setGrant('crew', 'alice', 'team.manage_members', true, change('grant', 'alice', 'team.manage_members'));
  await s.setGrant('crew', 'alice', 'timer.schedule_team', true, change('grant', 'alice', 'timer.schedule_team'));
  await s.setContactPolicy('carol', 'contacts_only');
  await s.addContact('carol', 'alice', 30);
  await s.addContact('carol', 'bob', 31);
  await s.addContact('alice', 'carol', 32);
  await s.setListener('bob', 'http://127.0.0.1:9/ring');
  await s.putRecord({ kind: 'timer', id: 't-1', value: '{"due":5}', updatedAt: 11 });
  await s.putRecord({ kind: 'timer', id: 't-2', value: '{"due":6}', updatedAt: 12 });
  await s.putRecord({ kind: 'wake_chain', id: 'bob', value: '{"steps":[]}', updatedAt: 13 });
  await s.initMeta('installation', 'abc');
  await s.registerSession(session('alice', 's-1', { slugBase: 'web', createdAt: 2_000 }));
  await s.registerSession(session('alice', 's-2', { slugBase: 'web', predecessor: 's-1', createdAt: 3_000 }));
  await s.registerSession(session('bob', 's-3', { slugBase: 'api', createdAt: 2_500 }));
  await s.addAlias('alice', 's-1', 'front');
  await s.setDeclared('bob', 's-3', { workingOn: 'parser', role: 'reviewer' });
  await s.touchSessions([{ account: 'bob', id: 's-3', at: 9_000 }]);
  await s.endSession('bob', 's-3', 9_500);
  const ms = [];
  for (let i = 0; i < 30; i++) {
    const to = [A('alice'), A('bob'), R('lobby'), R('all'), keyOfLineage('alice', 's-1')][i % 5] as string;
    ms.push(
      await send(s, to, {
        threadId: `t${i % 4}`,
        fromAccount: i % 2 ? 'alice' : 'bob',
        idempotencyKey: i % 3 === 0 ? `key-${i}` : null,
        fingerprint: i % 3 === 0 ? `fp-${i}` : null,
        refs: i % 7 === 0 ? [{ kind: 'file', locator: `/src/${i}.ts`, digest: 'd' }] : [],
        createdAt: 10_000 + i,
        // Some are a task's changes: the structured part moves with its message.
        ...(i % 4 === 1 ? { task: { task_id: `t-${i}`, state: i % 8 === 1 ? ('submitted' as const) : ('working' as const), version: 1 + (i % 3) } } : {}),
      }),
    );
  }
  const aliceScope = scope('alice', 's-1', await s.roomsOf('alice'));
  await s.ack(
    aliceScope,
    ms
      .filter((_, i) => i % 3 !== 1)
      .slice(0, 14)
      .map(item),
    77,
  );
  await s.ack(
    scope('bob', null, await s.roomsOf('bob')),
    ms
      .filter((m) => m.toKey !== A('alice'))
      .slice(0, 5)
      .map(item),
    88,
  );
  await s.createTask(task('t-1', { fromAccount: 'alice', toAccount: 'bob', idempotencyKey: 'tk', lastSeq: 3, result: { summary: 's', data: { a: [1, null] } } }), 0);
  await s.createTask(task('t-2', { fromAccount: 'bob', toAccount: 'alice', parentTaskId: 't-1', lastSeq: 4 }), 0);
  await s.createApproval(approval('a-1', { requesterAccount: 'bob', reviewerAccount: 'carol', taskId: 't-2', expiresAt: 99_000 }));
  await s.createApproval(approval('a-2', { state: 'approved', reason: 'fine', decidedAt: 12_000 }));
}

/** Everything a reader or the directory can see. */
async function view(s: Store): Promise<unknown> {
  const scopes = [scope('alice', 's-1', await s.roomsOf('alice')), scope('bob', null, await s.roomsOf('bob')), scope('carol', null, await s.roomsOf('carol'))];
  const pages = [];
  for (const sc of scopes) {
    pages.push(await s.page(sc, q({ limit: 1000 })), await s.page(sc, q({ limit: 1000, pendingOnly: true })), await s.unread(sc));
  }
  return {
    accounts: await s.listAccounts(),
    rooms: await s.listRooms(),
    teamChanges: [await s.teamChanges('crew', null, 100), await s.teamChanges('crew', ((await s.teamChanges('crew', null, 2))[1] as TeamChangeRecord).id, 100)],
    contacts: [await s.listContacts('alice'), await s.listContacts('bob'), await s.listContacts('carol')],
    sessions: await s.listSessions(),
    names: await s.listNames(),
    listeners: [await s.getListener('alice'), await s.getListener('bob')],
    meta: await s.getMeta('installation'),
    records: [await s.listRecords('timer', '', 100), await s.listRecords('wake_chain', '', 100)],
    head: await s.headSeq(),
    threads: [await s.getThread('t0'), await s.getThread('t3')],
    pages,
    tasks: [await s.listTasks(taskQuery('bob')), await s.listTasks(taskQuery('bob', { role: 'requested' })), await s.taskChildren('t-1', 10)],
    approvals: [await s.getApproval('a-1'), await s.getApproval('a-2')],
  };
}

describe('postgres: migrate-store from SQLite', { skip: pgSkip }, () => {
  it('moves a mailbox over, answers identically, and a second run doubles nothing', async () => {
    try {
      const path = join(dir, 'mail.db');
      const sqlite = openSqliteStore({ path });
      await fill(sqlite);
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
