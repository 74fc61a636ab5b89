// Finding D of the hardening issue: file modes. Another OS user (nobody, through setpriv) can
// neither list the data directory nor read mail.db, its -wal and -shm, or the operator token, even
// when the directory itself is loosened; a directory left too wide is tightened at start with a
// warning; one owned by another user is refused (exit 6) and left as it was.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MailClient } from '../../../src/client/http-client.js';
import { BUILT_CLI, serveProcess, type ServedDaemon } from '../../support/serve-process.js';

const NOBODY = 65534;
const EXIT_UNSAFE_DATA_DIR = 6;
const canRun = process.platform === 'linux' && process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;

/** Runs argv as the nobody user, with no supplementary groups. */
function asNobody(argv: string[]): { status: number | null; stderr: string } {
  const r = spawnSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', ...argv], { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}

const modeOf = (p: string): number => statSync(p).mode & 0o777;

/** Every entry with its mode, owner and bytes: what a refused start must leave as it was. */
function dirState(dir: string): Record<string, string> {
  const out: Record<string, string> = { '.': `${modeOf(dir)}:${statSync(dir).uid}` };
  for (const n of readdirSync(dir).sort()) {
    const p = join(dir, n);
    out[n] = `${modeOf(p)}:${statSync(p).uid}:${readFileSync(p).toString('base64')}`;
  }
  return out;
}

/** `m4a serve` with the loose umask of a typical shell. */
async function serveLoose(dir: string): Promise<ServedDaemon> {
  const old = process.umask(0o022);
  try {
    return await serveProcess(['--data-dir', dir, '--port', '0'], { ...process.env, M4A_LOG_LEVEL: 'info' });
  } finally {
    process.umask(old);
  }
}

/** dirState without following links: a link is its target's name, not its bytes. */
function entryState(dir: string): Record<string, string> {
  const out: Record<string, string> = { '.': `${modeOf(dir)}:${statSync(dir).uid}` };
  for (const n of readdirSync(dir).sort()) {
    const p = join(dir, n);
    const s = lstatSync(p);
    out[n] = s.isSymbolicLink() ? `link:${readlinkSync(p)}` : `${s.mode & 0o777}:${s.uid}:${readFileSync(p).toString('base64')}`;
  }
  return out;
}

/** `m4a serve` on dir until it exits, or until it listens (then stopped: a failure). */
function serveUntilExit(dir: string): Promise<{ code: number | null; stderr: string; started: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BUILT_CLI, 'serve', '--data-dir', dir, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let started = false;
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdout.on('data', (c: Buffer) => {
      if (/listening on/.test(c.toString())) {
        started = true;
        child.kill('SIGTERM');
      }
    });
    child.on('exit', (code) => resolve({ code, stderr, started }));
  });
}

async function stop(d: ServedDaemon): Promise<void> {
  d.child.kill('SIGTERM');
  await d.exited;
}

/** Mail in the store, so -wal holds a subject, and the files of a running daemon exist. */
async function sendMail(dir: string, url: string): Promise<void> {
  const op = new MailClient({ url, token: readFileSync(join(dir, 'operator.token'), 'utf8').trim() });
  try {
    const { secret } = await op.admin.accountAdd({ id: 'bob' });
    const bob = new MailClient({ url, token: secret });
    await bob.send({ to: 'bob', subject: 'the merger closes friday', body: 'secret' });
    bob.close();
  } finally {
    op.close();
  }
}

const SECRET_FILES = ['mail.db', 'mail.db-wal', 'mail.db-shm', 'operator.token', 'host-id', 'daemon.json'];

describe('security matrix D: file modes', { skip: canRun ? false : 'needs Linux, root and util-linux setpriv to act as another user' }, () => {
  let root: string;
  before(() => {
    assert.ok(existsSync(BUILT_CLI), 'run `npm run build` first');
    root = mkdtempSync(join(tmpdir(), 'm4a-d-'));
    chmodSync(root, 0o755); // nobody may walk up to the data directory: only its own modes protect it
    // The method works: nobody reads a world-readable file here.
    writeFileSync(join(root, 'probe'), 'public', { mode: 0o644 });
    chmodSync(join(root, 'probe'), 0o644);
    assert.equal(asNobody(['cat', join(root, 'probe')]).status, 0, 'nobody can read a 0644 file beside the data directory');
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('a new data directory is 0700 and every file in it 0600: nobody lists or reads any, even with the directory loosened', async () => {
    const dir = join(root, 'fresh');
    const d = await serveLoose(dir);
    try {
      await sendMail(dir, d.url);
      assert.equal(modeOf(dir), 0o700);
      for (const f of SECRET_FILES) assert.ok(existsSync(join(dir, f)), `${f} exists while the daemon runs`);
      for (const f of readdirSync(dir)) assert.equal(modeOf(join(dir, f)), 0o600, `${f} is 0600`);
      assert.notEqual(asNobody(['ls', dir]).status, 0, 'nobody cannot list the directory');
      for (const f of SECRET_FILES) assert.notEqual(asNobody(['cat', join(dir, f)]).status, 0, `nobody cannot read ${f}`);
      // The files hold on their own: an operator loosening the directory does not expose them.
      chmodSync(dir, 0o755);
      assert.equal(asNobody(['ls', dir]).status, 0, 'the loosened directory lists (the method works)');
      for (const f of SECRET_FILES) {
        const r = asNobody(['cat', join(dir, f)]);
        assert.notEqual(r.status, 0, `nobody cannot read ${f} in a loosened directory`);
        assert.match(r.stderr, /Permission denied/);
      }
      chmodSync(dir, 0o700);
    } finally {
      await stop(d);
    }
  });

  it('an existing directory left 0755 with 0644 files is tightened at start, with a warning naming what changed', async () => {
    const dir = join(root, 'loose');
    await stop(await serveLoose(dir));
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'daemon.log'), 'old log lines\n');
    writeFileSync(join(dir, 'sub', 'note'), 'x');
    for (const f of readdirSync(dir)) chmodSync(join(dir, f), statSync(join(dir, f)).isDirectory() ? 0o755 : 0o644);
    chmodSync(join(dir, 'sub', 'note'), 0o644);
    chmodSync(dir, 0o755);
    assert.equal(asNobody(['cat', join(dir, 'operator.token')]).status, 0, 'before the start the token is exposed');

    const d = await serveLoose(dir);
    try {
      await sendMail(dir, d.url);
      assert.match(d.stderr(), /"level":40[^\n]*tightened[^\n]*"path":"[^"]*loose"/, 'a warning log line names the directory');
      assert.match(d.stderr(), /"path":"[^"]*operator\.token","mode":"644"/);
      assert.equal(modeOf(dir), 0o700);
      assert.equal(modeOf(join(dir, 'sub')), 0o700);
      assert.equal(modeOf(join(dir, 'sub', 'note')), 0o600);
      for (const f of readdirSync(dir).filter((n) => n !== 'sub')) assert.equal(modeOf(join(dir, f)), 0o600, `${f} is 0600`);
      chmodSync(dir, 0o755); // the files alone keep nobody out
      for (const f of [...SECRET_FILES, 'daemon.log']) assert.notEqual(asNobody(['cat', join(dir, f)]).status, 0, `nobody cannot read ${f}`);
      chmodSync(dir, 0o700);
    } finally {
      await stop(d);
    }
  });

  it('a data directory owned by another user is refused at start (exit 6, the fix named) and left as it was', async () => {
    const dir = join(root, 'foreign');
    await stop(await serveLoose(dir));
    for (const f of readdirSync(dir)) chmodSync(join(dir, f), 0o644);
    chmodSync(dir, 0o755);
    chownSync(dir, NOBODY, NOBODY);
    const before = dirState(dir);
    const r = await new Promise<{ code: number | null; stderr: string; started: boolean }>((resolve) => {
      const child = spawn(process.execPath, [BUILT_CLI, 'serve', '--data-dir', dir, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      let started = false;
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.stdout.on('data', (c: Buffer) => {
        if (/listening on/.test(c.toString())) {
          started = true;
          child.kill('SIGTERM');
        }
      });
      child.on('exit', (code) => resolve({ code, stderr, started }));
    });
    assert.equal(r.started, false, `served a directory of another user: ${r.stderr}`);
    assert.equal(r.code, EXIT_UNSAFE_DATA_DIR, r.stderr);
    assert.match(r.stderr, new RegExp(`^m4a: unsafe data directory: the data directory ${dir} belongs to uid ${NOBODY}`, 'm'));
    assert.match(r.stderr, /chown -R 0 /, 'the fix is named');
    assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
    assert.deepEqual(dirState(dir), before, 'nothing was changed');
  });

  it('a file of another user planted in a directory that was open is refused at start (exit 6, the entry and the fix named), nothing tightened', async () => {
    const dir = join(root, 'planted');
    await stop(await serveLoose(dir));
    chmodSync(dir, 0o777); // open: anyone could have put or replaced a file here
    rmSync(join(dir, 'operator.token'));
    writeFileSync(join(dir, 'operator.token'), 'chosen-by-nobody\n', { mode: 0o644 });
    chownSync(join(dir, 'operator.token'), NOBODY, NOBODY);
    const before = dirState(dir);
    const r = await serveUntilExit(dir);
    assert.equal(r.started, false, `served with a file of another user in it: ${r.stderr}`);
    assert.equal(r.code, EXIT_UNSAFE_DATA_DIR, r.stderr);
    assert.match(r.stderr, new RegExp(`^m4a: unsafe data directory: ${join(dir, 'operator.token')} belongs to uid ${NOBODY}, not to this user`, 'm'));
    assert.match(r.stderr, /remove it \(rm -r .*operator\.token\) or give it to this user: chown -R 0 /);
    assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
    assert.deepEqual(dirState(dir), before, 'nothing was changed: not even the directory was tightened');
  });

  it('a symlink in the data directory (mail.db -> another file, or a dangling one) is refused at start (exit 6) and left in place', async () => {
    const dir = join(root, 'linked');
    await stop(await serveLoose(dir));
    const elsewhere = join(root, 'elsewhere');
    mkdirSync(elsewhere);
    cpSync(join(dir, 'mail.db'), join(elsewhere, 'x.db'));
    rmSync(join(dir, 'mail.db'));
    for (const target of [join(elsewhere, 'x.db'), join(root, 'not-mounted', 'x.db')]) {
      rmSync(join(dir, 'mail.db'), { force: true });
      symlinkSync(target, join(dir, 'mail.db'));
      const before = entryState(dir);
      const x = readFileSync(join(elsewhere, 'x.db'));
      const r = await serveUntilExit(dir);
      assert.equal(r.started, false, `served through a link: ${r.stderr}`);
      assert.equal(r.code, EXIT_UNSAFE_DATA_DIR, r.stderr);
      assert.match(r.stderr, new RegExp(`^m4a: unsafe data directory: ${join(dir, 'mail.db')} is a symbolic link \\(to ${target}\\)`, 'm'));
      assert.match(r.stderr, /remove it \(rm .*mail\.db\) or put the real file in its place/);
      assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
      assert.deepEqual(entryState(dir), before, 'the link and every file are as they were');
      assert.ok(readFileSync(join(elsewhere, 'x.db')).equals(x), 'the link target was not written');
      assert.equal(existsSync(join(root, 'not-mounted')), false, 'nothing was made through the dangling link');
    }
  });

  it('doctor reports a loosened directory or file as a failure, naming the fix', () => {
    const dir = join(root, 'doctor');
    mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o700);
    writeFileSync(join(dir, 'mail.db'), '', { mode: 0o644 });
    chmodSync(join(dir, 'mail.db'), 0o644);
    const home = mkdtempSync(join(root, 'home-'));
    const r = spawnSync(process.execPath, [BUILT_CLI, 'doctor', '--json', '--data-dir', dir], {
      encoding: 'utf8',
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), M4A_URL: 'http://127.0.0.1:9' },
    });
    const check = (JSON.parse(r.stdout).checks as { name: string; status: string; detail: string; todo?: string }[]).find((c) => c.name === 'data directory');
    assert.equal(check?.status, 'fail', JSON.stringify(check));
    assert.match(check.detail, /mail\.db 644/);
    assert.match(check.todo ?? '', /tightens them when it starts/);
  });
});
