// m4a backup of a live SQLite mailbox while mail keeps arriving: the copy opens, passes
// integrity_check and holds a consistent prefix (every message up to its head, its counters agreeing,
// nothing half). m4a restore refuses while a daemon runs on the data directory and refuses a file
// that is not a mailbox, changing nothing; otherwise it puts the copy in place, keeps the replaced
// file aside, and a daemon started on it serves the backed-up mail.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { MailClient } from '../src/client/http-client.js';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { keyOfAccount } from '../src/store/types.js';
import { message } from './support/store-conformance.js';
import { startTestDaemon } from './support/test-daemon.js';

const MAIN = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'm4a-backup-'));
after(() => rmSync(root, { recursive: true, force: true }));

function m4a(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    c.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    c.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

/** `m4a serve` in its own process (it holds the data directory's lock). */
async function serve(dataDir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const c = spawn(process.execPath, ['--import', 'tsx', MAIN, 'serve', '--data-dir', dataDir, '--port', '0', '--no-stream'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((r) => c.on('exit', () => r()));
  let err = '';
  c.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    c.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    void exited.then(() => reject(new Error(`serve exited: ${err}`)));
  });
  return {
    url,
    stop: async () => {
      c.kill('SIGTERM');
      await exited;
    },
  };
}

const countsAgree = (db: Database.Database): boolean =>
  (db.prepare('SELECT count(*) AS n FROM mailbox_counts AS c WHERE c.total <> (SELECT count(*) FROM messages AS m WHERE m.to_key = c.to_key)').get() as { n: number }).n === 0;

describe('backup and restore of a SQLite mailbox', () => {
  const dataDir = join(root, 'data');
  const db = join(dataDir, 'mail.db');
  const copy = join(root, 'copy.db');

  it('backs up a live daemon while sends run: a consistent prefix that passes integrity_check', async () => {
    // A mailbox large enough that the copy takes a while (many pages), made before the daemon starts.
    const pre = await startTestDaemon({ dataDir });
    await pre.operator.admin.accountAdd({ id: 'bob', kind: 'agent' });
    await pre.stop();
    const s = openSqliteStore({ path: db });
    const body = 'x'.repeat(2000);
    for (let i = 0; i < 40; i++) await Promise.all(Array.from({ length: 500 }, () => s.appendMessage(message(keyOfAccount('bob'), { body }), 0)));
    await s.close();

    const d = await serve(dataDir);
    const operator = new MailClient({ url: d.url, token: readFileSync(join(dataDir, 'operator.token'), 'utf8').trim() });
    const { secret } = await operator.admin.accountAdd({ id: 'alice', kind: 'agent' });
    const alice = new MailClient({ url: d.url, token: secret });
    try {
      let sending = true;
      let sent = 0;
      const senders = Array.from({ length: 4 }, async () => {
        while (sending) {
          await alice.send({ to: 'bob', subject: 's', body: `during ${sent}` });
          sent++;
        }
      });
      while (sent < 20) await new Promise((r) => setTimeout(r, 10));
      const atStart = sent;
      const r = await m4a(['backup', '--data-dir', dataDir, '--out', copy, '--json']);
      const during = sent - atStart;
      sending = false;
      await Promise.all(senders);
      assert.equal(r.status, 0, r.stderr);
      assert.ok(during > 0, 'sends completed while the backup ran');
      const report = JSON.parse(r.stdout) as { headSeq: number; messages: number };
      assert.equal(statSync(copy).mode & 0o777, 0o600);

      const b = new Database(copy, { readonly: true });
      const live = new Database(db, { readonly: true });
      try {
        assert.equal(b.pragma('integrity_check', { simple: true }), 'ok');
        assert.equal(b.pragma('journal_mode', { simple: true }), 'delete', 'a self-contained file');
        const max = (b.prepare('SELECT max(seq) AS m FROM messages').get() as { m: number }).m;
        assert.ok(max >= 20_000 && max === report.headSeq, 'the copy holds the mail up to its head');
        const liveMax = (live.prepare('SELECT max(seq) AS m FROM messages').get() as { m: number }).m;
        assert.ok(liveMax > max, 'mail arrived after the snapshot (the copy is a prefix)');
        // Every message up to its head, as the live file has it, and nothing half: counters agree.
        const ids = (x: Database.Database): string =>
          (x.prepare('SELECT group_concat(id) AS g FROM (SELECT id FROM messages WHERE seq <= ? ORDER BY seq)').get(max) as { g: string }).g;
        assert.equal(ids(b), ids(live));
        assert.ok(countsAgree(b), 'every counter agrees with its messages');
      } finally {
        b.close();
        live.close();
      }

      // Restore while the daemon runs: refused, nothing changed.
      const before = readFileSync(db);
      const refused = await m4a(['restore', copy, '--data-dir', dataDir]);
      assert.equal(refused.status, 1);
      assert.match(refused.stderr, /another mail4agent daemon \(pid \d+\) is already using .*stop it first/);
      assert.ok(readFileSync(db).equals(before), 'mail.db untouched');
      // Never over an existing file.
      const again = await m4a(['backup', '--data-dir', dataDir, '--out', copy]);
      assert.equal(again.status, 1);
      assert.match(again.stderr, /exists/);
    } finally {
      alice.close();
      operator.close();
      await d.stop();
    }
  });

  it('refuses a file that is not a mailbox, then restores a backup and keeps the replaced file', async () => {
    const junk = join(root, 'junk.db');
    writeFileSync(junk, 'not a database at all, just some bytes '.repeat(200));
    const other = join(root, 'other.db');
    new Database(other).exec('CREATE TABLE t (x)');
    const newer = join(root, 'newer.db');
    const n = new Database(newer);
    n.exec('CREATE TABLE messages (seq INTEGER)');
    n.pragma('user_version = 999');
    n.close();
    const before = readFileSync(db);
    for (const [file, want] of [
      [junk, /not a usable SQLite database|not a database|header/],
      [other, /not a mailbox/],
      [newer, /schema version 999, newer than this build/],
    ] as const) {
      const r = await m4a(['restore', file, '--data-dir', dataDir]);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, want);
      assert.ok(readFileSync(db).equals(before), 'mail.db untouched');
    }

    const r = await m4a(['restore', copy, '--data-dir', dataDir, '--json']);
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { keptAs: string; headSeq: number; messages: number };
    assert.ok(existsSync(report.keptAs), 'the replaced database is kept');
    assert.ok(readFileSync(report.keptAs).equals(before));
    assert.ok(readdirSync(dataDir).some((f) => f.startsWith('mail.db.before-restore-')));
    assert.equal(statSync(db).mode & 0o777, 0o600);

    // A daemon on the restored file serves the backed-up mail, and new mail continues its seqs.
    const d = await startTestDaemon({ dataDir });
    try {
      const { client: bob } = await d.account('bob2');
      bob.close();
      const accounts = await d.operator.admin.accountList();
      assert.ok(accounts.accounts.some((a) => a.id === 'alice'));
      const { secret } = await d.operator.admin.accountRotate('bob');
      const b = new MailClient({ url: d.url, token: secret });
      const unread = await b.unread();
      assert.equal(unread.unread, report.messages, "bob's unread mail is the backup's");
      await b.send({ to: 'alice', subject: 'after', body: 'restore' });
      b.close();
    } finally {
      await d.stop();
    }
    const x = new Database(db, { readonly: true });
    assert.equal((x.prepare('SELECT max(seq) AS m FROM messages').get() as { m: number }).m, report.headSeq + 1, 'new mail continues the seqs');
    x.close();
  });
});
