// `m4a import agent-mail DB` over a real SQLite file in MCP Agent Mail's schema, made at test time
// from test/fixtures/agent-mail/schema.sql and data.sql, on a real daemon: accounts from agents (a
// name used in two projects told apart, HumanOverseer a human account), projects as rooms of their
// agents, one copy per recipient (to, cc, bcc) with its body, threads by thread_id (a message id as
// thread_id names that message as root), high and urgent as urgent, and read/ack state: acked is
// acknowledged, read is acknowledged only where no ack was asked for. A second run adds nothing; a
// file that is not Agent Mail's is a named error that imports nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startTestDaemon, raw, type TestDaemon } from './support/test-daemon.js';
import { ROOT, startCliDaemon, type CliDaemon } from './support/cli-daemon.js';
import { keyOfAccount, type PagedMessage } from '../src/store/types.js';
import { importedCopyId } from '../src/engine/import-mail.js';
import type { MailImportResult } from '../src/cli/import-mail-run.js';

const FIXTURE = join(ROOT, 'test/fixtures/agent-mail');
const at = (s: string): number => Date.parse(`${s}Z`);
const copy = (id: number, to: string): string => importedCopyId('agent-mail', { id: String(id), to });

function makeDb(file: string, extra = ''): void {
  const db = new Database(file);
  db.exec(readFileSync(join(FIXTURE, 'schema.sql'), 'utf8'));
  db.exec(readFileSync(join(FIXTURE, 'data.sql'), 'utf8'));
  // A damaged database: what Agent Mail's foreign keys would refuse (SQLite does not check them by default).
  if (extra) db.exec(`PRAGMA foreign_keys = OFF; ${extra}`);
  db.close();
}

describe('m4a import agent-mail', () => {
  let h: CliDaemon;
  let d: TestDaemon;
  let home: string;
  let dbFile: string;
  const cli = (args: string[]) => h.cli(args);
  const run = async (file: string): Promise<MailImportResult> => {
    const r = await cli(['import', 'agent-mail', file, '--json']);
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as MailImportResult;
  };
  const mailOf = (account: string): Promise<PagedMessage[]> =>
    d.store
      .page({ account, sessionKey: null, rooms: [] }, { after: null, pendingOnly: false, limit: 100, threadId: null })
      .then((p) => p.filter((m) => m.toKey === keyOfAccount(account)));

  before(async () => {
    h = await startCliDaemon('m4a-agent-mail-import-', { source: true });
    ({ d, home } = h);
    dbFile = join(home, 'storage.sqlite3');
    makeDb(dbFile);
  });
  after(() => h.stop());

  it('makes accounts, project rooms and every copy with its thread, priority and read/ack state', async () => {
    const r = await run(dbFile);
    assert.deepEqual(
      r.accounts.map((a) => [a.id, a.kind, a.source, a.created]),
      [
        ['GreenCastle', 'agent', 'backend/GreenCastle', true],
        ['BlueLake', 'agent', 'backend/BlueLake', true],
        ['GreenCastle-2', 'agent', 'frontend/GreenCastle', true],
        ['HumanOverseer', 'human', 'backend/HumanOverseer', true],
      ],
    );
    assert.equal((await d.store.getAccount('GreenCastle'))?.label, 'GreenCastle: API work');
    assert.equal((await d.store.getAccount('BlueLake'))?.label, 'BlueLake');
    // Six recipient rows; acknowledged: 1→BlueLake (acked), 2→GreenCastle (read, no ack asked), 4→BlueLake (acked).
    assert.deepEqual([r.messages_created, r.messages_existing, r.acknowledged, r.timers_created], [6, 0, 3, 0]);
    assert.ok(r.notes.some((n) => n.where === 'messages 4' && n.what === 'attachments are not imported'));

    const rooms = await d.operator.admin.roomList();
    const members = (name: string): string[] => [...(rooms.rooms.find((x) => x.name === name)?.members ?? [])].sort();
    assert.deepEqual(members('backend'), ['BlueLake', 'GreenCastle', 'HumanOverseer']);
    assert.deepEqual(members('frontend'), ['GreenCastle-2']);

    const blue = await mailOf('BlueLake');
    assert.deepEqual(
      blue.map((m) => [m.id, m.fromAccount, m.fromKind, m.subject, m.priority, m.ackedAt]),
      [
        [copy(1, 'BlueLake'), 'GreenCastle', 'agent', 'Plan for /api/users', 'urgent', at('2026-11-20T09:06:00')],
        [copy(3, 'BlueLake'), 'HumanOverseer', 'human', 'Deploy freeze', 'urgent', null],
        [copy(4, 'BlueLake'), 'GreenCastle-2', 'agent', 'Button styles', 'normal', at('2026-11-20T11:06:00')],
        [copy(5, 'BlueLake'), 'GreenCastle', 'agent', 'Re: Deploy freeze', 'normal', null],
      ],
    );
    assert.equal(blue[0]!.body, 'I will take the **users** endpoints; you take auth.');
    assert.equal(blue[0]!.createdAt, at('2026-11-20T09:00:00.123'));
    assert.equal(blue[0]!.correlation, 'agent-mail:backend#1');
    assert.equal(blue[0]!.threadId, blue[0]!.id, 'message 1 starts its thread');
    // OPS-7: message 3's first copy (to GreenCastle) is the root; its cc copy and message 5 join it.
    assert.equal(blue[1]!.threadId, copy(3, 'GreenCastle'));
    assert.equal(blue[3]!.threadId, copy(3, 'GreenCastle'));
    assert.equal(blue[2]!.threadId, blue[2]!.id, "another project's message starts its own thread");

    const green = await mailOf('GreenCastle');
    assert.deepEqual(
      green.map((m) => [m.id, m.threadId, m.priority, m.ackedAt]),
      [
        // thread_id '1': message 1's copy is the root; read without an ack asked: handled.
        [copy(2, 'GreenCastle'), copy(1, 'BlueLake'), 'normal', at('2026-11-20T09:12:00')],
        // read, but an ack was asked and not given: still to handle.
        [copy(3, 'GreenCastle'), copy(3, 'GreenCastle'), 'urgent', null],
      ],
    );
    assert.equal(green[1]!.body, 'No deploys until the incident review is done.');
    assert.equal(await d.store.unread({ account: 'BlueLake', sessionKey: null, rooms: [] }), 2);
    assert.deepEqual(await mailOf('GreenCastle-2'), []);
  });

  it('a second run adds nothing', async () => {
    const head = await d.store.headSeq();
    const r = await run(dbFile);
    assert.deepEqual([r.messages_created, r.messages_existing, r.acknowledged], [0, 6, 0]);
    assert.ok(r.accounts.every((a) => !a.created));
    assert.equal(await d.store.headSeq(), head);
  });

  it('new mail in the database since is all a later run adds', async () => {
    const db = new Database(dbFile);
    db.exec(`INSERT INTO messages (id, project_id, sender_id, thread_id, subject, body_md, importance, ack_required, created_ts) VALUES
      (6, 1, 2, 'OPS-7', 'Re: Deploy freeze', 'Auth release held too.', 'normal', 0, '2026-11-20 12:00:00.000000');
      INSERT INTO message_recipients (message_id, agent_id, kind) VALUES (6, 1, 'to'), (6, 4, 'cc');`);
    db.close();
    const r = await run(dbFile);
    assert.deepEqual([r.messages_created, r.messages_existing], [2, 6]);
    const [six] = (await mailOf('HumanOverseer')).filter((m) => m.id === copy(6, 'HumanOverseer'));
    assert.equal(six!.threadId, copy(3, 'GreenCastle'));
  });

  it('a file that is not Agent Mail\u2019s database is named and imports nothing', async () => {
    const head = await d.store.headSeq();
    const junk = join(home, 'junk.sqlite3');
    writeFileSync(junk, 'this is not a database at all, just some text long enough to look like a header');
    const r = await cli(['import', 'agent-mail', junk, '--json']);
    assert.notEqual(r.status, 0);
    const err = JSON.parse(r.stderr) as { error: { code: string; field: string; reason: string } };
    assert.deepEqual([err.error.code, err.error.field], ['malformed', 'file']);
    assert.match(err.error.reason, /not an SQLite database/);

    // SQLite, but a recipient names an agent that is not there: refused before anything is made.
    const broken = join(home, 'broken.sqlite3');
    makeDb(
      broken,
      `INSERT INTO agents (id, project_id, name, program, model, inception_ts, last_active_ts) VALUES (9, 2, 'NewAgent', 'x', 'y', '2026-11-20 00:00:00', '2026-11-20 00:00:00');
      INSERT INTO message_recipients (message_id, agent_id, kind) VALUES (5, 77, 'to');`,
    );
    const b = await cli(['import', 'agent-mail', broken, '--json']);
    assert.notEqual(b.status, 0);
    assert.match((JSON.parse(b.stderr) as { error: { reason: string } }).error.reason, /agent 77 is not in agents/);
    assert.equal(await d.store.getAccount('NewAgent'), null, 'no account was made');

    const other = join(home, 'other.sqlite3');
    new Database(other).exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)');
    const o = await cli(['import', 'agent-mail', other, '--json']);
    assert.notEqual(o.status, 0);
    assert.match((JSON.parse(o.stderr) as { error: { reason: string } }).error.reason, /table projects: no such table/);
    assert.equal(await d.store.headSeq(), head, 'no mail was stored');
  });
});

describe('POST /admin/import/agent-mail and /admin/import/interagentmail', () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon();
  });
  after(() => d.stop());

  it('refuse an agent, and a request naming an account that does not exist stores none of it', async () => {
    const bob = await d.account('bob');
    await d.account('alice');
    const c = (id: string, to: string) => ({
      id,
      from: 'alice',
      to,
      subject: 's',
      body: 'b',
      priority: 'normal',
      created_at: 1,
      thread: null,
      reply_to: null,
      acked_at: null,
      origin: 'x',
    });
    for (const path of ['/admin/import/agent-mail', '/admin/import/interagentmail']) {
      const r = await raw(d.url, path, { token: bob.secret, body: JSON.stringify({ messages: [c('1', 'bob')], timers: [] }) });
      assert.equal(r.status, 403, path);
      const head = await d.store.headSeq();
      const ghost = await raw(d.url, path, { token: d.operatorToken, body: JSON.stringify({ messages: [c('1', 'bob'), c('2', 'ghost')], timers: [] }) });
      assert.deepEqual([ghost.json.error.code, ghost.json.error.participant, ghost.json.error.field], ['unknown_participant', 'ghost', 'messages[1].to'], path);
      const twice = await raw(d.url, path, { token: d.operatorToken, body: JSON.stringify({ messages: [c('1', 'bob'), c('1', 'bob')], timers: [] }) });
      assert.equal(twice.json.error.code, 'malformed', path);
      const reserved = await raw(d.url, path, { token: d.operatorToken, body: JSON.stringify({ messages: [c('1', 'mailbox')], timers: [] }) });
      assert.equal(reserved.json.error.code, 'malformed', path);
      assert.equal(await d.store.headSeq(), head, `${path}: nothing stored`);
    }
    // The same source id in the two sources is two messages: the source is part of the id.
    const a = await d.operator.admin.importAgentMail({ messages: [c('1', 'bob') as never], timers: [] });
    const i = await d.operator.admin.importInterAgentMail({ messages: [c('1', 'bob') as never], timers: [] });
    assert.deepEqual([a.messages_created, i.messages_created], [1, 1]);
  });
});

describe('m4a import agent-mail of a database larger than one request', () => {
  let h: CliDaemon;
  let d: TestDaemon;
  let home: string;
  before(async () => {
    h = await startCliDaemon('m4a-agent-mail-big-', { source: true });
    ({ d, home } = h);
  });
  after(() => h.stop());

  it('goes in several requests, threads kept across them, and a second run adds nothing', async () => {
    const file = join(home, 'big.sqlite3');
    makeDb(file);
    const db = new Database(file);
    const add = db.prepare(
      "INSERT INTO messages (id, project_id, sender_id, thread_id, subject, body_md, importance, ack_required, created_ts) VALUES (?, 1, 1, 'BIG-1', ?, ?, 'normal', 0, ?)",
    );
    const to = db.prepare("INSERT INTO message_recipients (message_id, agent_id, kind) VALUES (?, 2, 'to')");
    db.transaction(() => {
      for (let i = 0; i < 2200; i++) {
        add.run(100 + i, `part ${i}`, `body ${i}`, new Date(Date.UTC(2026, 10, 21) + i * 1000).toISOString().replace('T', ' ').replace('Z', ''));
        to.run(100 + i);
      }
    })();
    db.close();
    const run = async (): Promise<MailImportResult> => {
      const r = await h.cli(['import', 'agent-mail', file, '--json'], { timeout: 120_000, maxBuffer: 64 << 20 });
      if (r.status !== 0) throw new Error(r.stderr);
      return JSON.parse(r.stdout) as MailImportResult;
    };
    const first = await run();
    assert.equal(first.requests, 3, '2,206 copies: 1,000 a request');
    assert.equal(first.messages_created, 2206);
    const last = await d.store.getMessage(copy(2299, 'BlueLake'));
    assert.equal(last?.threadId, copy(100, 'BlueLake'), 'the thread root was in the first request');
    assert.equal(last?.body, 'body 2199');
    const again = await run();
    assert.deepEqual([again.messages_created, again.messages_existing], [0, 2206]);
  });
});
