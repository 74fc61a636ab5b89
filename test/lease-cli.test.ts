// m4a reserve … and m4a lease …, run as a user runs them (the built CLI, a daemon found through
// its data directory, two accounts): the root from git in a repository and from the directory
// outside one, globs typed in a subdirectory, a conflict naming the holder and its reason, list
// with its filters, renew and release, and usage errors before anything is sent.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from './support/shell-agents.js';
import { startTestDaemon, type StoreKind, type TestDaemon } from './support/test-daemon.js';
import { globUnder, until } from '../src/cli/lease-commands.js';

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

const storeKind: StoreKind = process.env.M4A_TEST_STORE === 'memory' ? 'memory' : 'sqlite';
const MIN = 60_000;

describe(`m4a reserve / lease (${storeKind} store)`, () => {
  let d: TestDaemon;
  let home: string;
  let repo: string;
  let plain: string;
  let env: Record<string, string>;
  const cli = (account: string, args: string[], cwd: string) =>
    new Promise<Run>((resolve) =>
      execFile(process.execPath, [CLI, ...args, '--account', account], { cwd, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );
  const json = async (account: string, args: string[], cwd = repo) => {
    const r = await cli(account, [...args, '--json'], cwd);
    assert.equal(r.status, 0, `${account}: ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return JSON.parse(r.stdout);
  };
  const near = (iso: string, ms: number) => assert.ok(Math.abs(Date.parse(iso) - (Date.now() + ms)) < 20_000, `${iso} is about ${ms / MIN} min from now`);

  before(async () => {
    d = await startTestDaemon({ storeKind });
    home = mkdtempSync(join(tmpdir(), 'm4a-lease-cli-'));
    const accounts: Record<string, { secret: string }> = {};
    for (const id of ['alice', 'bob']) accounts[id] = { secret: (await d.account(id)).secret };
    mkdirSync(join(home, 'mail4agent'));
    writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts }), { mode: 0o600 });
    env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir, NO_COLOR: '1' };
    repo = realpathSync(mkdtempSync(join(tmpdir(), 'm4a-lease-repo-')));
    execFileSync('git', ['init', '-q', repo]);
    mkdirSync(join(repo, 'src', 'lexer'), { recursive: true });
    mkdirSync(join(repo, 'src', 'util'));
    plain = realpathSync(mkdtempSync(join(tmpdir(), 'm4a-lease-plain-')));
  });
  after(async () => {
    await d.stop();
    for (const p of [home, repo, plain]) rmSync(p, { recursive: true, force: true });
  });

  it("reserve: the repository's root from git, globs typed below it relative to where they were typed", async () => {
    const r = await json('alice', ['reserve', 'src/parser/**', 'README.md', '--ttl', '30m', '--reason', 'refactor']);
    assert.deepEqual(
      r.leases.map((l: any) => [l.resource, l.root, l.mode, l.reason]),
      [
        ['path:src/parser/**', repo, 'exclusive', 'refactor'],
        ['path:README.md', repo, 'exclusive', 'refactor'],
      ],
    );
    near(r.leases[0].expires_at, 30 * MIN);
    const sub = await cli('alice', ['reserve', 'lexer/*.ts', '--shared', '--ttl', '90s'], join(repo, 'src', 'lexer', '..'));
    assert.equal(sub.status, 0, sub.stderr);
    assert.match(sub.stdout, /^reserved l-[0-9a-z]+ epoch 1 · path:src\/lexer\/\*\.ts in \S+ · shared · alice\/\S+ · until \S+ \(in (1m|\d\ds)\)$/m);
    // Outside a repository the directory is the root; --root names one.
    const out = await json('alice', ['reserve', 'notes/**'], plain);
    assert.equal(out.leases[0].root, plain);
    near(out.leases[0].expires_at, 15 * MIN);
    // A directory on disk, named without wildcards, covers what is under it.
    const dir = await json('alice', ['reserve', 'util', 'utility.ts'], join(repo, 'src'));
    assert.deepEqual(
      dir.leases.map((l: any) => l.resource),
      ['path:src/util/', 'path:src/utility.ts'],
    );
    for (const l of dir.leases) await json('alice', ['lease', 'release', l.lease_id, String(l.epoch)]);
    const rooted = await json('alice', ['reserve', 'x/**', '--root', '.'], join(repo, 'src'));
    assert.equal(rooted.leases[0].root, join(repo, 'src'));
    assert.equal(rooted.leases[0].resource, 'path:x/**');
  });

  it("another account's overlapping reserve is refused naming the holder and its reason; all or none", async () => {
    const r = await cli('bob', ['reserve', 'docs/**', 'src/parser/ast.ts'], repo);
    assert.equal(r.status, 1, r.stdout);
    assert.match(r.stderr, /^m4a: lease_conflict: path:src\/parser\/ast\.ts is held by alice\/\S+ \(exclusive path:src\/parser\/\*\* until \S+: refactor\)/);
    assert.equal(r.stdout, '');
    const j = await cli('bob', ['reserve', 'src/parser/ast.ts', '--json'], repo);
    assert.equal(JSON.parse(j.stderr).error.holders[0].reason, 'refactor');
    assert.deepEqual((await json('bob', ['lease', 'list', '--holder', 'bob'])).leases, [], 'docs/** was not kept');
  });

  it('lease list names holder, resource and expiry, filtered by prefix and holder', async () => {
    const text = await cli('bob', ['lease', 'list', '--prefix', 'path:src/'], repo);
    assert.equal(text.status, 0, text.stderr);
    const lines = text.stdout.trim().split('\n');
    assert.match(lines[0]!, /^HOLDER\s+RESOURCE\s+MODE\s+EXPIRES\s+LEASE\s+EPOCH\s+REASON$/);
    assert.ok(
      lines.some((l) => /^alice\/\S+\s+path:src\/parser\/\*\* in \S+\s+exclusive\s+in (29|30)m\s+l-\S+\s+1\s+refactor$/.test(l)),
      text.stdout,
    );
    assert.ok(!lines.some((l) => l.includes('README.md')), 'the prefix filters');
    const all = await json('bob', ['lease', 'list', '--holder', 'alice']);
    assert.equal(all.leases.length, 5);
    assert.equal((await cli('bob', ['lease', 'list', '--holder', 'bob'], repo)).stdout.trim(), 'no leases');
  });

  it('renew and release by lease id and epoch; usage errors are refused before anything is sent', async () => {
    const [l] = (await json('alice', ['lease', 'list', '--prefix', 'path:README'])).leases;
    const renewed = await json('alice', ['lease', 'renew', l.lease_id, String(l.epoch), '--ttl', '2h']);
    near(renewed.expires_at, 120 * MIN);
    const lostIt = await cli('alice', ['lease', 'renew', l.lease_id, String(l.epoch + 1)], repo);
    assert.equal(lostIt.status, 1);
    assert.match(lostIt.stderr, /^m4a: lease_lost: /);
    const bobs = await cli('bob', ['lease', 'release', l.lease_id, String(l.epoch)], repo);
    assert.match(bobs.stderr, /^m4a: lease_lost: /, 'not his to release');
    const done = await cli('alice', ['lease', 'release', l.lease_id, String(l.epoch)], repo);
    assert.equal(done.status, 0, done.stderr);
    assert.match(done.stdout, /^released l-\S+ · path:README\.md in /);
    assert.deepEqual((await json('alice', ['lease', 'list', '--prefix', 'path:README'])).leases, []);
    for (const args of [
      ['lease', 'release', l.lease_id, 'one'],
      ['lease', 'renew', l.lease_id, '0'],
      ['reserve', 'a/**', '--ttl', '5x'],
      ['reserve', '/elsewhere/a.ts'],
    ]) {
      const r = await cli('alice', args, repo);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    }
    const tooLong = await cli('alice', ['reserve', 'a/**', '--ttl', '9'], repo);
    assert.match(tooLong.stderr, /^m4a: malformed: ttl_secs/, 'the daemon refuses a TTL under 10 s by name');
  });

  it('globUnder and until', () => {
    assert.equal(globUnder('/r', '/r', './src/**'), 'src/**');
    assert.equal(globUnder('/r', '/r/src', 'a.ts'), 'src/a.ts');
    assert.equal(globUnder('/r', '/elsewhere', 'a.ts'), 'a.ts');
    assert.equal(globUnder('/r', '/r/x', '/r/src/'), 'src/');
    assert.throws(() => globUnder('/r', '/r', '/other/a.ts'), /not inside the repository root/);
    assert.equal(until(new Date(Date.now() + 90 * MIN + 500).toISOString()), 'in 1h 30m');
    assert.equal(until(new Date(Date.now() - 1000).toISOString()), 'expired');
  });
});
