// Finding E of the hardening issue: a damaged mail.db. Every damage `m4a serve` can see at start is
// refused by name (store_corrupt, exit 7, no stack trace) and the data directory is left byte for
// byte as it was; only a missing file makes a new mailbox. Damage in the middle starts (503
// store_unavailable where it is touched) and `m4a doctor --check-store` finds it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { MailClient } from '../../../src/client/http-client.js';
import { MailError } from '../../../src/wire/errors.js';
import { startTestDaemon } from '../../support/test-daemon.js';
import { BUILT_CLI, serveProcess } from '../../support/serve-process.js';
import { freePort, rng } from '../helpers.js';

const EXIT_STORE_CORRUPT = 7;

interface ServeRun {
  code: number | null;
  stderr: string;
  /** It printed its address: the damage was not refused (the process is then stopped). */
  started: boolean;
}

/** `m4a serve` on dir until it exits, or until it listens (then it is stopped: a failure). */
function runServe(dir: string, env: NodeJS.ProcessEnv = {}): Promise<ServeRun> {
  const child = spawn(process.execPath, [BUILT_CLI, 'serve', '--data-dir', dir, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, M4A_LOG_LEVEL: 'info', ...env },
  });
  let stderr = '';
  let started = false;
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.on('data', (c: Buffer) => {
    if (!started && /listening on/.test(c.toString())) {
      started = true;
      child.kill('SIGTERM');
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) => child.on('exit', (code) => (clearTimeout(timer), resolve({ code, stderr, started }))));
}

/** Every file of the directory with its bytes. */
function dirState(dir: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((n) => [n, readFileSync(join(dir, n)).toString('base64')]),
  );
}

function doctor(dir: string, home: string): { status: number | null; json: { ok: boolean; checks: { name: string; status: string; detail: string; todo?: string }[] } } {
  const r = spawnSync(process.execPath, [BUILT_CLI, 'doctor', '--check-store', '--json', '--data-dir', dir], {
    encoding: 'utf8',
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), M4A_TOKEN: '' },
    timeout: 30_000,
  });
  return { status: r.status, json: JSON.parse(r.stdout) };
}

describe('security matrix E: a damaged database', () => {
  let root: string;
  let base: string;
  let big: string;
  let n = 0;

  before(async () => {
    assert.ok(existsSync(BUILT_CLI), 'run `npm run build` first');
    root = mkdtempSync(join(tmpdir(), 'm4a-e-'));
    // A real mailbox: accounts and mail, closed cleanly (one checkpointed file).
    base = join(root, 'base');
    const d = await startTestDaemon({ dataDir: base });
    const { client: alice } = await d.account('alice');
    await d.account('bob');
    for (let i = 0; i < 20; i++) await alice.send({ to: 'bob', subject: `s${i}`, body: 'kept' });
    await d.stop();
    // A larger one, so that one page in the middle of the messages table can be damaged.
    big = join(root, 'big');
    const b = await startTestDaemon({ dataDir: big });
    const { client: a } = await b.account('alice');
    await b.account('bob');
    for (let round = 0; round < 8; round++) await Promise.all(Array.from({ length: 50 }, (_, i) => a.send({ to: 'bob', subject: `m${round}-${i}`, body: 'x'.repeat(1500) })));
    await b.stop();
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  const copyOf = (src: string): string => {
    const dir = join(root, `case-${++n}`);
    cpSync(src, dir, { recursive: true });
    return dir;
  };

  const refusedUnchanged = async (damage: (db: string) => void, reason: RegExp): Promise<void> => {
    const dir = copyOf(base);
    const db = join(dir, 'mail.db');
    damage(db);
    const before = dirState(dir);
    const r = await runServe(dir);
    assert.equal(r.started, false, `the damaged store was served: ${r.stderr}`);
    assert.equal(r.code, EXIT_STORE_CORRUPT, r.stderr);
    assert.match(r.stderr, /^m4a: store_corrupt: /m);
    assert.ok(r.stderr.includes(db), 'the message names the file');
    assert.match(r.stderr, reason);
    assert.match(r.stderr, /Restore it from a copy/);
    assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
    assert.doesNotMatch(r.stderr, /SqliteError/);
    assert.deepEqual(dirState(dir), before, 'the refused start changed no byte and made no file');
  };

  it('an empty (zero-byte) mail.db is refused, never re-created as an empty mailbox', async () => {
    await refusedUnchanged((db) => writeFileSync(db, ''), /is empty \(zero bytes\)/);
  });

  it('an SQLite file without the mailbox schema is refused', async () => {
    await refusedUnchanged((db) => {
      rmSync(db);
      const e = new Database(db);
      e.exec('VACUUM');
      e.close();
    }, /holds no mailbox schema/);
  });

  it('a file truncated on a page boundary, inside a page or inside the header is refused', async () => {
    await refusedUnchanged((db) => truncateSync(db, 4096 * 4), /is truncated/);
    await refusedUnchanged((db) => truncateSync(db, 10_000), /is truncated/);
    await refusedUnchanged((db) => truncateSync(db, 50), /is truncated/);
  });

  it('random bytes are refused', async () => {
    const next = rng(11);
    await refusedUnchanged((db) => writeFileSync(db, Buffer.from(Array.from({ length: 65_536 }, () => Math.floor(next() * 256)))), /is not an SQLite database/);
  });

  it('a damaged header is refused, whether the header check or SQLite itself finds it', async () => {
    const patch = (at: number, bytes: number[]) => (db: string) => {
      const b = readFileSync(db);
      b.set(bytes, at);
      writeFileSync(db, b);
    };
    await refusedUnchanged(patch(0, [0x58]), /is not an SQLite database/); // the magic string
    await refusedUnchanged(patch(16, [0x03, 0xe8]), /damaged header \(page size 1000\)/);
    await refusedUnchanged(patch(21, [99]), /is damaged \(SQLite: file is not a database\)/); // payload fraction
    await refusedUnchanged(patch(100, Array(40).fill(0xff)), /is damaged \(SQLite: database disk image is malformed\)/); // page 1's b-tree header
  });

  it('the stack trace is printed only when asked (M4A_LOG_LEVEL=debug)', async () => {
    const dir = copyOf(base);
    writeFileSync(join(dir, 'mail.db'), '');
    const r = await runServe(dir, { M4A_LOG_LEVEL: 'debug' });
    assert.equal(r.code, EXIT_STORE_CORRUPT);
    assert.match(r.stderr, /^\s+at /m);
  });

  it('only a missing file makes a new mailbox, and the new file is complete', async () => {
    const dir = copyOf(base);
    rmSync(join(dir, 'mail.db'));
    const d = await serveProcess(['--data-dir', dir, '--port', '0']);
    d.child.kill('SIGTERM');
    assert.equal(await d.exited, 0, d.stderr());
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith('mail.db')),
      ['mail.db'],
      'no half-built file is left',
    );
    const db = new Database(join(dir, 'mail.db'), { readonly: true });
    assert.ok((db.pragma('user_version', { simple: true }) as number) > 0);
    db.close();
  });

  it('a store path that is a symlink to a missing file (a volume not mounted) is refused; the link stays, no mailbox is made', async () => {
    const dir = copyOf(base);
    const vol = join(root, `vol-${n}`);
    mkdirSync(vol);
    const link = join(vol, 'mail.db');
    const target = join(root, `unmounted-${n}`, 'mail.db');
    symlinkSync(target, link);
    const before = dirState(dir);
    const r = await runServe(dir, { M4A_STORE: `sqlite:${link}` });
    assert.equal(r.started, false, `an empty mailbox was served in place of the link: ${r.stderr}`);
    assert.equal(r.code, EXIT_STORE_CORRUPT, r.stderr);
    assert.match(r.stderr, new RegExp(`^m4a: store_corrupt: the mailbox database ${link} is a symbolic link to ${target}, which does not exist`, 'm'));
    assert.match(r.stderr, /Mount or restore/);
    assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
    assert.ok(lstatSync(link).isSymbolicLink(), 'the link was not removed');
    assert.equal(readlinkSync(link), target);
    assert.deepEqual(readdirSync(vol), ['mail.db'], 'nothing was made beside the link');
    assert.equal(existsSync(target), false, 'nothing was made through the link');
    assert.deepEqual(dirState(dir), before, 'the data directory is as it was');
  });

  it('a directory named mail.db: serve refuses it as store_corrupt, doctor --check-store reports it without a stack', async () => {
    const dir = copyOf(base);
    rmSync(join(dir, 'mail.db'));
    mkdirSync(join(dir, 'mail.db'));
    const r = await runServe(dir);
    assert.equal(r.started, false, r.stderr);
    assert.equal(r.code, EXIT_STORE_CORRUPT, r.stderr);
    assert.match(r.stderr, /^m4a: store_corrupt: the mailbox database \S*mail\.db is not a regular file \(a directory\)/m);
    assert.deepEqual(readdirSync(join(dir, 'mail.db')), [], 'left as it was');
    const d = doctor(dir, mkdtempSync(join(root, 'home-')));
    const check = d.json.checks.find((c) => c.name === 'store integrity');
    assert.equal(check?.status, 'fail', JSON.stringify(d.json.checks));
    assert.match(check.detail, /mail\.db cannot be read \(EISDIR/);
    assert.equal(d.status, 1);
  });

  it("a CLI command that auto-starts a daemon on a damaged store fails at once with the daemon's store_corrupt line", { timeout: 10_000 }, async () => {
    const dir = copyOf(base);
    writeFileSync(join(dir, 'mail.db'), '');
    rmSync(join(dir, 'daemon.json'), { force: true });
    const home = mkdtempSync(join(root, 'home-'));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      M4A_DATA_DIR: dir,
      M4A_PORT: String(await freePort()),
      M4A_LOG_LEVEL: 'info',
    };
    delete env.M4A_URL; // else no daemon is started
    // Bounded below the 15 s an unfixed command waits: it must not wait out the timeout.
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [BUILT_CLI, 'admin', 'account', 'list'], { stdio: ['ignore', 'pipe', 'pipe'], env });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 8_000);
      child.on('exit', (code) => (clearTimeout(timer), resolve({ code, stderr })));
    });
    assert.notEqual(r.code, null, `still waiting after 8 s: ${r.stderr}`);
    assert.notEqual(r.code, 0, r.stderr);
    assert.match(r.stderr, /exited with code 7 before answering/);
    assert.match(r.stderr, new RegExp(`^m4a: store_corrupt: the mailbox database ${join(dir, 'mail.db')} is empty \\(zero bytes\\)`, 'm'));
    assert.equal(readFileSync(join(dir, 'mail.db')).length, 0, 'the empty file was not replaced');
  });

  it('damage in the middle: the daemon starts and answers 503 store_unavailable there; doctor --check-store finds it without writing', async () => {
    const dir = copyOf(big);
    const path = join(dir, 'mail.db');
    const ro = new Database(path, { readonly: true });
    const pageSize = ro.pragma('page_size', { simple: true }) as number;
    const leaves = (ro.prepare("SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY pageno").all() as { pageno: number }[]).map((r) => r.pageno);
    ro.close();
    rmSync(`${path}-wal`, { force: true });
    rmSync(`${path}-shm`, { force: true });
    assert.ok(leaves.length > 50, `a table of many pages (${leaves.length})`);
    const page = leaves[Math.floor(leaves.length / 2)]!;
    const bytes = readFileSync(path);
    bytes.fill(0xa5, (page - 1) * pageSize, (page - 1) * pageSize + 400); // its b-tree header and cell pointers
    writeFileSync(path, bytes);
    const home = mkdtempSync(join(root, 'home-'));

    const before = readFileSync(path);
    const r = doctor(dir, home);
    const check = r.json.checks.find((c) => c.name === 'store integrity');
    assert.equal(check?.status, 'fail', JSON.stringify(r.json.checks));
    assert.match(check.detail, /mail\.db is damaged: /);
    assert.match(check.todo ?? '', /restore .*mail\.db from a copy/);
    assert.match(check.todo ?? '', /m4a backup/);
    assert.equal(r.status, 1);
    assert.ok(readFileSync(path).equals(before), 'doctor does not write the database');

    const d = await serveProcess(['--data-dir', dir, '--port', '0']);
    try {
      const bob = new MailClient({ url: d.url, token: await adminSecret(dir, d.url, 'bob') });
      let seen: MailError | null = null;
      try {
        for (let after: string | undefined, i = 0; i < 100; i++) {
          const page = await bob.inbox({ limit: 50, ...(after ? { after } : {}) });
          if (!page.next_cursor || page.messages.length === 0) break;
          after = page.next_cursor;
        }
      } catch (err) {
        seen = err as MailError;
      }
      bob.close();
      assert.equal(seen?.code, 'store_unavailable', String(seen));
      // Beside the running daemon too: a read-only reader of its own.
      assert.equal(doctor(dir, home).json.checks.find((c) => c.name === 'store integrity')?.status, 'fail');
    } finally {
      d.child.kill('SIGTERM');
      await d.exited;
    }
  });

  it('doctor --check-store names what SQLite finds when the damage does not stop the check (cell pointers)', () => {
    const dir = copyOf(big);
    const path = join(dir, 'mail.db');
    const ro = new Database(path, { readonly: true });
    const pageSize = ro.pragma('page_size', { simple: true }) as number;
    const leaves = (ro.prepare("SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY pageno").all() as { pageno: number }[]).map((r) => r.pageno);
    ro.close();
    const page = leaves[Math.floor(leaves.length / 3)]!;
    const bytes = readFileSync(path);
    bytes.fill(0xa5, (page - 1) * pageSize + 8, (page - 1) * pageSize + 12); // two cell pointers, out of the page
    writeFileSync(path, bytes);
    const check = doctor(dir, mkdtempSync(join(root, 'home-'))).json.checks.find((c) => c.name === 'store integrity');
    assert.equal(check?.status, 'fail');
    assert.match(check.detail, new RegExp(`page ${page} cell \\d+: Offset \\d+ out of range`));
  });

  it('doctor --check-store passes an undamaged mailbox', () => {
    const dir = copyOf(base);
    const check = doctor(dir, mkdtempSync(join(root, 'home-'))).json.checks.find((c) => c.name === 'store integrity');
    assert.equal(check?.status, 'ok', JSON.stringify(check));
  });
});

/** A new secret for an account, from the daemon's own operator token. */
async function adminSecret(dir: string, url: string, id: string): Promise<string> {
  const op = new MailClient({ url, token: readFileSync(join(dir, 'operator.token'), 'utf8').trim() });
  try {
    return (await op.admin.accountRotate(id)).secret;
  } finally {
    op.close();
  }
}
