// m4a guard: the git pre-commit hook, in real repositories, with the built CLI and a real daemon.
// Two stand-in agents with bash tools (alice and bob, each its own session) reserve files and
// commit; the hook asks the daemon and refuses bob's commit of alice's files, naming her and
// her reason, and never blocks when the daemon does not answer.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, existsSync, renameSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, m4a, startShellAgent, type ShellAgent } from './support/shell-agents.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { CHAINED, HOOK_MARK } from '../src/cli/guard-hook.js';
import { pathOf } from '../src/wire/operation-facts.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

// The hook inherits whatever this process has: none of the caller's own m4a or git settings.
for (const k of Object.keys(process.env)) if (/^(M4A_|GIT_)/.test(k)) delete process.env[k];

const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
/** `n` staged paths of ~119 bytes each in a request body: 10,000 of them are over 1 MiB. */
const bulk = (n: number): string[] => Array.from({ length: n }, (_, i) => `bulk/${'d'.repeat(100)}/f${String(i).padStart(5, '0')}.txt`);
/** What `git update-index --index-info` reads to stage `paths` as empty files, without a work tree. */
const indexInfo = (paths: string[]): string => paths.map((p) => `100644 blob e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\t${p}\n`).join('');
/** Stages what `indexInfo` says; the empty blob is written first, so a commit the guard lets
 *  through can build its tree. */
const stage = 'git hash-object -w --stdin </dev/null >/dev/null && git update-index --add --index-info';

describe('m4a guard', () => {
  let d: TestDaemon;
  let home: string;
  let repo: string;
  let base: Record<string, string>;
  let alice: ShellAgent;
  let bob: ShellAgent;
  let secrets: Record<string, string>;

  const cli = (args: string[], cwd: string, env: Record<string, string> = {}) =>
    new Promise<Run>((resolve) =>
      execFile(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', env: { ...process.env, ...base, ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );
  /** An agent edits a file and commits it from its bash tool. */
  const commit = (agent: ShellAgent, file: string, env = '') =>
    agent.run(`cd ${q(repo)} && mkdir -p "$(dirname ${q(file)})" && echo "$RANDOM" >> ${q(file)} && git add ${q(file)} && ${env} git commit -q -m ${q(`edit ${file}`)}`);
  /** A reservation taken with `m4a reserve` from an agent's bash: held by that agent's session. */
  const reserve = async (agent: ShellAgent, glob: string, mode: 'exclusive' | 'shared', reason: string) => {
    const r = await agent.run(`cd ${q(repo)} && ${m4a} reserve ${q(glob)} --ttl 10m --reason ${q(reason)} ${mode === 'shared' ? '--shared' : ''} --json`);
    assert.equal(r.code, 0, `reserve ${glob}: ${r.stdout}${r.stderr}`);
    const lease = (JSON.parse(r.stdout) as { leases: { lease_id: string; epoch: number; holder: string }[] }).leases[0]!;
    held.push({ agent, lease });
    return lease;
  };
  const held: { agent: ShellAgent; lease: { lease_id: string; epoch: number } }[] = [];
  const release = async (agent: ShellAgent, lease: { lease_id: string; epoch: number }) => {
    const r = await agent.run(`${m4a} lease release ${lease.lease_id} ${lease.epoch}`);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    held.splice(
      held.findIndex((h) => h.lease === lease),
      1,
    );
  };

  before(async () => {
    d = await startTestDaemon();
    secrets = { alice: (await d.account('alice')).secret, bob: (await d.account('bob')).secret };
    home = realpathSync(mkdtempSync(join(tmpdir(), 'm4a-guard-')));
    base = {
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      M4A_DATA_DIR: d.dataDir,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'T',
      GIT_AUTHOR_EMAIL: 't@example.invalid',
      GIT_COMMITTER_NAME: 'T',
      GIT_COMMITTER_EMAIL: 't@example.invalid',
    };
    repo = join(home, 'repo');
    mkdirSync(repo);
    alice = await startShellAgent({ ...base, M4A_URL: d.url, M4A_TOKEN: secrets.alice! });
    bob = await startShellAgent({ ...base, M4A_URL: d.url, M4A_TOKEN: secrets.bob! });
    const init = await alice.run(`cd ${q(repo)} && git init -q . && echo hi > README.md && git add README.md && git commit -q -m init`);
    assert.equal(init.code, 0, init.stderr);
  });
  let stopped = false;
  after(async () => {
    alice?.stop();
    bob?.stop();
    if (!stopped) await d?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('install chains an existing hook, is idempotent, and uninstall puts it back exactly', async () => {
    const hooks = join(repo, '.git', 'hooks');
    const theirs = '#!/bin/sh\n# their own checks\necho "their hook ran" >&2\n[ -f "$(git rev-parse --show-toplevel)/.fail-their-hook" ] && exit 3\nexit 0\n';
    writeFileSync(join(hooks, 'pre-commit'), theirs, { mode: 0o750 });

    const first = await cli(['guard', 'install'], repo);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^installed: .*pre-commit \(runs .*pre-commit\.m4a-chained first\)/);
    const hook = join(hooks, 'pre-commit');
    const text = readFileSync(hook, 'utf8');
    assert.ok(text.startsWith('#!/bin/sh\n') && text.includes(HOOK_MARK));
    assert.equal(lstatSync(hook).mode & 0o777, 0o755);
    assert.ok(text.includes(process.execPath) && text.includes(CLI), 'the running m4a, by node and script');
    assert.ok(text.includes('command -v m4a'), 'and m4a on PATH as the fallback');
    for (const s of Object.values(secrets)) assert.ok(!text.includes(s), 'no secret in the hook');
    assert.ok(!/M4A_TOKEN|secret|credentials/i.test(text));
    assert.equal(readFileSync(join(hooks, CHAINED), 'utf8'), theirs);
    assert.equal(lstatSync(join(hooks, CHAINED)).mode & 0o777, 0o750, 'their hook keeps its mode');

    // Twice (from a subdirectory too): nothing changes, and ours is never chained to itself.
    mkdirSync(join(repo, 'sub'), { recursive: true });
    const again = await cli(['guard', 'install'], join(repo, 'sub'));
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^already installed: /);
    assert.equal(readFileSync(hook, 'utf8'), text);
    assert.equal(readFileSync(join(hooks, CHAINED), 'utf8'), theirs);

    // Their hook still runs (first) and can still fail the commit.
    const ok = await commit(bob, 'notes/a.txt');
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stderr, /their hook ran/);
    writeFileSync(join(repo, '.fail-their-hook'), '');
    const failed = await commit(bob, 'notes/b.txt');
    assert.notEqual(failed.code, 0, 'their hook refused the commit');
    assert.match(failed.stderr, /their hook ran/);
    rmSync(join(repo, '.fail-their-hook'));
    assert.equal((await bob.run(`cd ${q(repo)} && git commit -q -m b`)).code, 0);

    const un = await cli(['guard', 'uninstall'], repo);
    assert.equal(un.code, 0, un.stderr);
    assert.match(un.stdout, /the earlier hook is back/);
    assert.equal(readFileSync(hook, 'utf8'), theirs);
    assert.equal(lstatSync(hook).mode & 0o777, 0o750);
    assert.ok(!existsSync(join(hooks, CHAINED)));
    const twice = await cli(['guard', 'uninstall'], repo);
    assert.match(twice.stdout, /is not ours, left as it is/);
    assert.equal(readFileSync(hook, 'utf8'), theirs);

    // Without a hook before it: install writes one, uninstall removes it.
    rmSync(hook);
    assert.match((await cli(['guard', 'install'], repo)).stdout, /^installed: \S+pre-commit$/m);
    assert.match((await cli(['guard', 'uninstall'], repo)).stdout, /^removed: /);
    assert.ok(!existsSync(hook));
    assert.match((await cli(['guard', 'uninstall'], repo)).stdout, /^not installed: no hook/);
  });

  it('honours core.hooksPath; outside a repository it says so', async () => {
    const other = join(home, 'other');
    mkdirSync(other);
    assert.equal((await alice.run(`cd ${q(other)} && git init -q . && git config core.hooksPath .githooks`)).code, 0);
    const r = await cli(['guard', 'install'], other);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(readFileSync(join(other, '.githooks', 'pre-commit'), 'utf8').includes(HOOK_MARK));
    assert.ok(!existsSync(join(other, '.git', 'hooks', 'pre-commit')));
    const outside = mkdtempSync(join(tmpdir(), 'm4a-guard-none-'));
    const no = await cli(['guard', 'install'], outside, { GIT_CEILING_DIRECTORIES: tmpdir() });
    assert.equal(no.code, 1);
    assert.match(no.stderr, /^m4a: git rev-parse --git-path hooks: .*not a git repository/i);
    rmSync(outside, { recursive: true, force: true });
  });

  describe('with the hook installed', () => {
    before(async () => {
      const r = await cli(['guard', 'install'], repo);
      assert.equal(r.code, 0, r.stderr);
    });
    // Each case starts from a clean tree and no reservations, whatever the one before left.
    afterEach(async () => {
      for (const { agent, lease } of held.splice(0)) if (!stopped) await agent.run(`${m4a} lease release ${lease.lease_id} ${lease.epoch}`);
      assert.equal((await bob.run(`cd ${q(repo)} && git restore --staged -- . && git checkout -q -- . && git clean -fdq && git status --porcelain`)).stdout, '');
    });

    it('refuses a commit staging a path another live session reserved exclusively, naming holder, reason and expiry', async () => {
      const lease = await reserve(alice, 'src/parser/**', 'exclusive', 'refactor of the lexer');
      const refused = await commit(bob, 'src/parser/lex.ts');
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stderr, /m4a guard: commit refused: 1 staged path is reserved by another session/);
      assert.match(refused.stderr, /^m4a guard: {3}src\/parser\/lex\.ts$/m);
      assert.match(
        refused.stderr,
        new RegExp(`held by alice/\\S+ \\(path:src/parser/\\*\\*, exclusive\\) until \\d{4}-\\d\\d-\\d\\dT\\S+ \\(in \\d+ min\\): refactor of the lexer`),
      );
      assert.match(refused.stderr, /M4A_GUARD=off/);
      // Nothing was committed: the file is still staged.
      assert.match((await bob.run(`cd ${q(repo)} && git diff --cached --name-only`)).stdout, /src\/parser\/lex\.ts/);
      assert.equal((await bob.run(`cd ${q(repo)} && git restore --staged -- .`)).code, 0);

      // Outside the reservation bob commits as before; once it is released, inside too.
      assert.equal((await commit(bob, 'src/main.ts')).code, 0);
      await release(alice, lease);
      const after = await commit(bob, 'src/parser/lex.ts');
      assert.equal(after.code, 0, `released: free at once: ${after.stderr}`);
    });

    // The attestor sees through git as through a shell (src/attest/transparent.ts): the hook's m4a
    // speaks as the agent that committed.
    it("the holder's own commit passes", async () => {
      await reserve(alice, 'src/parser/**', 'exclusive', 'refactor of the lexer');
      const own = await commit(alice, 'src/parser/lex.ts');
      assert.equal(own.code, 0, `the holder's own commit: ${own.stderr}`);
      assert.equal(own.stderr, '');
    });

    it('a path no glob can name (a control character) is left out with a warning; the others are still checked', async () => {
      await reserve(alice, 'src/parser/**', 'exclusive', 'refactor');
      const r = await bob.run(
        `cd ${q(repo)} && mkdir -p src/parser && echo 1 > "$(printf 'odd\\tname.txt')" && echo 2 > src/parser/lex.ts && git add -- "$(printf 'odd\\tname.txt')" src/parser/lex.ts && git commit -q -m odd`,
      );
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr,
        /^m4a guard: warning: 1 path not checked: the daemon cannot be asked about it \(first: odd\\u0009name\.txt: U\+0009 \(a control character\) is not allowed\)$/m,
      );
      assert.match(r.stderr, /^m4a guard: {3}src\/parser\/lex\.ts$/m);
    });

    // The daemon's schema refuses more than controls in a path (format characters, the line and
    // paragraph separators): one such path must not make it refuse the whole question.
    it('paths with format characters or separators are left out with a warning; a reserved path beside them is refused', async () => {
      await reserve(alice, 'src/a.ts', 'exclusive', 'mine');
      const odd = ['docs/read\u200bme.md', 'docs/\u202eevil.md', 'docs/line\u2028sep.md'];
      const r = await bob.run(
        `cd ${q(repo)} && mkdir -p src docs && echo 1 > src/a.ts && ${odd.map((p) => `echo 2 > ${q(p)}`).join(' && ')} && git add -- src/a.ts docs && git commit -q -m cf`,
      );
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr,
        /^m4a guard: warning: 3 paths not checked: the daemon cannot be asked about them \(first: docs\/line\\u2028sep\.md: U\+2028 \(the line separator\) is not allowed\)$/m,
      );
      assert.match(r.stderr, /m4a guard: commit refused: 1 staged path is reserved by another session/);
      assert.match(r.stderr, /^m4a guard: {3}src\/a\.ts$/m);
      assert.doesNotMatch(r.stderr, /NOT checked|could not ask/);
    });

    it("10,000 long staged paths, over the daemon's 1 MiB body, are asked in batches: a reserved one among them is refused", async () => {
      await reserve(alice, 'src/a.ts', 'exclusive', 'mine');
      const r = await bob.run(`cd ${q(repo)} && ${stage} && git commit -q -m many`, indexInfo([...bulk(9_999), 'src/a.ts']));
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /m4a guard: commit refused: 1 staged path is reserved by another session/);
      assert.match(r.stderr, /^m4a guard: {3}src\/a\.ts$/m);
      assert.doesNotMatch(r.stderr, /warning/);
    });

    it('a rename counts on both sides: moving a reserved file away is refused too', async () => {
      const lease = await reserve(alice, 'src/main.ts', 'exclusive', 'keep main');
      const r = await bob.run(`cd ${q(repo)} && git mv src/main.ts src/app.ts && git commit -q -m rename`);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^m4a guard: {3}src\/main\.ts$/m);
      assert.doesNotMatch(r.stderr, /^m4a guard: {3}src\/app\.ts$/m);
      // `git commit -- <path>` commits from a temporary index (GIT_INDEX_FILE): that one is checked.
      const partial = await bob.run(`cd ${q(repo)} && git mv src/app.ts src/main.ts && echo more >> src/main.ts && git commit -q -m partial -- src/main.ts`);
      assert.equal(partial.code, 1, partial.stderr);
      assert.match(partial.stderr, /^m4a guard: {3}src\/main\.ts$/m);
      await release(alice, lease);
    });

    it('a shared reservation does not block', async () => {
      const lease = await reserve(alice, 'docs/', 'shared', 'reading the docs');
      const r = await commit(bob, 'docs/guide.md');
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, '');
      await release(alice, lease);
    });

    it('M4A_GUARD=off lets one commit through with a notice', async () => {
      const lease = await reserve(alice, 'src/**', 'exclusive', 'big move');
      const r = await commit(bob, 'src/x.ts', 'M4A_GUARD=off');
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^m4a guard: M4A_GUARD=off: this commit is not checked against file reservations\n$/);
      assert.equal((await commit(bob, 'src/y.ts')).code, 1, 'the next commit is checked again');
      await release(alice, lease);
    });

    // A stand-in in front of the real daemon refuses some lease checks, as a daemon with rules
    // beyond the request schema might; everything else reaches the daemon as it came.
    it('a batch the daemon refuses is reported NOT checked; a conflict another batch found still refuses', async () => {
      let refuse: (paths: string[]) => Record<string, unknown> | null = () => null;
      const seen: number[] = [];
      const target = new URL(d.url);
      const proxy = createHttpServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks);
          if (req.url === pathOf('lease.check')) {
            const paths = (JSON.parse(body.toString('utf8')) as { paths: string[] }).paths;
            seen.push(paths.length);
            const error = refuse(paths);
            if (error) return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error }));
          }
          // One connection per request (agent: false): none is left open to the daemon.
          const headers = { ...req.headers, host: target.host, connection: 'close' };
          const up = httpRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers, agent: false }, (ur) => {
            res.writeHead(ur.statusCode ?? 502, ur.headers);
            ur.pipe(res);
          });
          up.end(body);
        });
      });
      await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
      const via = `M4A_URL=http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
      try {
        await reserve(alice, 'src/a.ts', 'exclusive', 'mine');

        // A refusal naming one path: the batch is asked again without it, and the conflict found.
        refuse = (paths) => {
          const i = paths.indexOf('notes/poison.txt');
          return i < 0 ? null : { code: 'malformed', message: `paths.${i}: a rule of its own`, field: `paths.${i}`, reason: 'a rule of its own' };
        };
        const named = await bob.run(`cd ${q(repo)} && ${stage} && ${via} git commit -q -m named`, indexInfo(['notes/poison.txt', 'notes/fine.txt', 'src/a.ts']));
        assert.equal(named.code, 1, named.stderr);
        assert.deepEqual(seen.splice(0), [3, 2], 'asked once more, without the named path');
        assert.match(named.stderr, /^m4a guard: warning: 1 of 3 staged paths NOT checked against file reservations \(malformed: paths\.1: a rule of its own\)$/m);
        assert.match(named.stderr, /^m4a guard: {3}src\/a\.ts$/m);
        assert.equal((await bob.run(`cd ${q(repo)} && git restore --staged -- .`)).code, 0);

        // A whole batch refused: the other batch is still asked; its conflict refuses the commit.
        const refuseFirst = (paths: string[]) =>
          paths.includes(bulk(1)[0]!) ? { code: 'malformed', message: 'a rule of its own', field: '(body)', reason: 'a rule of its own' } : null;
        refuse = refuseFirst;
        const many = indexInfo([...bulk(9_999), 'src/a.ts']);
        const refused = await bob.run(`cd ${q(repo)} && ${stage} && ${via} git commit -q -m batch`, many);
        assert.equal(refused.code, 1, refused.stderr);
        assert.equal(seen.length, 2, 'two batches');
        const first = seen.splice(0)[0]!;
        assert.ok(first < 9_999, `the refused batch holds ${first} of the bulk paths only`);
        assert.match(
          refused.stderr,
          new RegExp(`^m4a guard: warning: ${first} of 10000 staged paths NOT checked against file reservations \\(malformed: a rule of its own\\)$`, 'm'),
        );
        assert.match(refused.stderr, /^m4a guard: {3}src\/a\.ts$/m);
        assert.equal((await bob.run(`cd ${q(repo)} && git restore --staged -- .`)).code, 0);

        // Refused as too much work (no path named): asked again in halves, every path answered.
        refuse = (paths) => (paths.length > 3_000 ? { code: 'too_large', message: 'paths is over its limit', field: 'paths', limit: 3_000, actual: paths.length } : null);
        const halves = await bob.run(`cd ${q(repo)} && ${stage} && ${via} git commit -q -m halves`, many);
        assert.equal(halves.code, 1, halves.stderr);
        const pieces = seen.splice(0);
        assert.ok(pieces.length > 4, `asked in pieces: ${pieces.join(' ')}`);
        assert.equal(
          pieces.filter((n) => n <= 3_000).reduce((a, n) => a + n, 0),
          10_000,
          'every path answered once',
        );
        assert.doesNotMatch(halves.stderr, /warning/);
        assert.match(halves.stderr, /^m4a guard: {3}src\/a\.ts$/m);
        assert.equal((await bob.run(`cd ${q(repo)} && git restore --staged -- .`)).code, 0);

        // Nothing any answered batch found: the commit goes on, with the warning.
        refuse = refuseFirst;
        const passed = await bob.run(`cd ${q(repo)} && ${stage} && ${via} ${m4a} guard check`, indexInfo(bulk(10_000)));
        assert.equal(passed.code, 0, passed.stderr);
        assert.equal(seen.splice(0).length, 2);
        assert.match(passed.stderr, /^m4a guard: warning: \d+ of 10000 staged paths NOT checked against file reservations \(malformed: a rule of its own\)$/m);
        assert.doesNotMatch(passed.stderr, /refused/);
      } finally {
        proxy.closeAllConnections();
        proxy.close();
      }
    });

    it('a daemon that does not answer only warns: nothing listening, no answer in time, an error, a stopped daemon', async () => {
      const lease = await reserve(alice, 'lib/**', 'exclusive', 'mine');
      const port = await new Promise<number>((resolve) => {
        const s = createServer().listen(0, '127.0.0.1', () => {
          const p = (s.address() as { port: number }).port;
          s.close(() => resolve(p));
        });
      });
      const none = await commit(bob, 'lib/a.ts', `M4A_URL=http://127.0.0.1:${port}`);
      assert.equal(none.code, 0, none.stderr);
      assert.match(none.stderr, /^m4a guard: warning: could not ask the daemon \(.*\); the commit is not checked against file reservations$/m);

      // A daemon that accepts the connection and never answers: the guard gives up after ~2 s.
      const sockets: Socket[] = [];
      const silent: Server = createServer((s) => void sockets.push(s));
      await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
      const t0 = Date.now();
      const slow = await commit(bob, 'lib/b.ts', `M4A_URL=http://127.0.0.1:${(silent.address() as { port: number }).port}`);
      assert.equal(slow.code, 0, slow.stderr);
      assert.match(slow.stderr, /warning: could not ask the daemon \(.*did not answer in time\)/);
      assert.ok(Date.now() - t0 < 15_000, 'not the client default of 30 s');
      for (const s of sockets) s.destroy();
      silent.close();

      const wrong = await commit(bob, 'lib/c.ts', 'M4A_TOKEN=not-a-secret');
      assert.equal(wrong.code, 0, wrong.stderr);
      assert.match(wrong.stderr, /warning: could not ask the daemon \(unauthenticated: /);

      // The real daemon is still here and still refuses; then it stops, and the guard only warns.
      assert.equal((await commit(bob, 'lib/d.ts')).code, 1);
      await release(alice, lease);
      await reserve(alice, 'lib/**', 'exclusive', 'mine again');
      await d.stop();
      stopped = true;
      const gone = await bob.run(`cd ${q(repo)} && git commit -q -m d`);
      assert.equal(gone.code, 0, gone.stderr);
      assert.match(gone.stderr, /warning: could not ask the daemon/);
    });
  });

  it('without m4a the hook warns and lets the commit through', async () => {
    // The daemon is gone; what is tested here is the hook finding no m4a at all.
    const hook = join(repo, '.git', 'hooks', 'pre-commit');
    const text = readFileSync(hook, 'utf8');
    renameSync(hook, `${hook}.saved`);
    writeFileSync(hook, text.replace(CLI, join(home, 'gone.js')), { mode: 0o755 });
    const r = await bob.run(`cd ${q(repo)} && echo z >> README.md && PATH=/usr/bin:/bin git commit -q -am no-m4a`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^m4a guard: warning: m4a not found; the commit is not checked against file reservations$/m);
    renameSync(`${hook}.saved`, hook);
  });
});
