// Property test of the real CLI's argument parsing: the built `m4a` run with arbitrary argv (known
// verbs and flags, wrong values, unicode, control characters, very long arguments) against a
// running test daemon. Every run ends within a deadline with a documented exit code (0 ok,
// 1 refused, 2 usage, 3 unreachable), says why on stderr when it fails, never prints a stack
// trace, and a failed run stores nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { stillClock } from './still-clock.js';
import { tally } from '../support/soak-tally.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const RUNS = Number(process.env.M4A_FUZZ_CLI_RUNS ?? 0) || 6;
const BATCH = 4;
const DEADLINE_MS = 20_000;

// Verbs that start or stop daemons, write agent configs or wait for minutes are not fuzzed as the
// first word (they may still appear as arguments).
const VERBS = [
  ['send'],
  ['reply'],
  ['inbox'],
  ['read'],
  ['thread'],
  ['ack'],
  ['unread'],
  ['whoami'],
  ['peers'],
  ['alias'],
  ['status'],
  ['capabilities'],
  ['doctor'],
  ['help'],
  ['admin'],
  ['admin', 'account', 'add'],
  ['admin', 'account', 'rotate'],
  ['admin', 'account', 'remove'],
  ['admin', 'account', 'list'],
  ['admin', 'room', 'add'],
  ['admin', 'room', 'set'],
  ['admin', 'room', 'remove'],
  ['admin', 'room', 'list'],
  ['admin', 'room', 'member', 'add'],
  ['admin', 'room', 'member', 'remove'],
  ['admin', 'listener', 'set'],
  ['admin', 'listener', 'remove'],
];
const FLAGS = [
  '--json',
  '--account',
  '--data-dir',
  '--reply-to',
  '--urgent',
  '--idempotency-key',
  '--correlation',
  '--subject',
  '--wait',
  '--all',
  '--thread',
  '--limit',
  '--after',
  '--no-bodies',
  '--live',
  '--remove',
  '--working-on',
  '--role',
  '--parent',
  '--kind',
  '--label',
  '--bind-provider',
  '--operator',
  '--no-send',
  '--no-read',
  '--everyone',
  '--open',
  '--closed',
  '--help',
  '-h',
  '--version',
  '--',
  '-',
  '-x',
  '--json=1',
  '--limit=2',
  '---',
  '--no-json',
];

interface Ran {
  argv: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

describe("fuzz: the CLI's argument parsing", () => {
  let d: TestDaemon;
  let home: string;
  let env: NodeJS.ProcessEnv;
  let values: string[];
  before(async () => {
    assert.ok(existsSync(CLI), 'run `npm run build` first (npm test does)');
    // Waits end within milliseconds, so `inbox --wait 60` cannot stall the run, and nothing a run
    // sets (a reminder) comes due in the middle of another (see still-clock.ts).
    d = await startTestDaemon({ clock: stillClock(), timerPollMs: 1 });
    const me = await d.account('fuzzer');
    const bob = await d.account('bob');
    await d.operator.admin.roomAdd('lobby');
    await d.operator.admin.memberAdd('lobby', 'fuzzer');
    await d.operator.admin.memberAdd('lobby', 'bob'); // members only may post
    const m1 = await bob.client.send({ to: 'fuzzer', subject: 'hello', body: 'hi' });
    const m2 = await bob.client.send({ to: '#lobby', subject: 'room', body: 'r' });
    home = mkdtempSync(join(tmpdir(), 'm4a-clifuzz-'));
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(M4A_|CLAUDE|CODEX|GEMINI|CURSOR)/.test(k)));
    env = {
      ...inherited,
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      XDG_DATA_HOME: join(home, 'data'),
      M4A_URL: d.url,
      M4A_TOKEN: me.secret,
      M4A_DATA_DIR: d.dataDir,
      M4A_PORT: String(d.port),
      M4A_LISTEN_SECS: '1',
      NO_COLOR: '1',
    };
    values = [
      'bob',
      'fuzzer',
      '#lobby',
      '#nowhere',
      'nobody',
      'bob/s-0',
      'fuzzer/',
      m1.message_id,
      m2.message_id,
      'm-zz',
      'c1.0',
      'c1.zzzzzzzzzzzzz',
      '0',
      '-1',
      '60',
      '3.5',
      '1e309',
      'NaN',
      'agent',
      'robot',
      'http://127.0.0.1:9/',
      'http://example.com/',
      '',
      ' ',
      'a..b',
    ];
  });
  after(async () => {
    await d.stop();
    rmSync(home, { recursive: true, force: true });
  });

  const run = (argv: string[]): Promise<Ran> =>
    new Promise((resolve) => {
      const t0 = performance.now();
      const child = spawn(process.execPath, [CLI, ...argv], { env, cwd: home, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout.length < 200_000 ? (stdout += c.toString()) : undefined));
      child.stderr.on('data', (c: Buffer) => (stderr.length < 200_000 ? (stderr += c.toString()) : undefined));
      const timer = setTimeout(() => child.kill('SIGKILL'), DEADLINE_MS);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ argv, code, signal, stdout, stderr, ms: performance.now() - t0 });
      });
    });

  it(`${RUNS * BATCH} runs with arbitrary argv: a documented exit code, a reason on stderr, no stack trace, no hang, nothing stored on failure`, async () => {
    // Arguments: known flags and values, and anything a shell could pass (no NUL: argv cannot hold one).
    const noNul = (s: string) => s.replace(/\0/g, '');
    const token = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...FLAGS) },
      { weight: 4, arbitrary: fc.constantFrom(...values) },
      { weight: 2, arbitrary: fc.string({ maxLength: 12 }).map(noNul) },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }).map(noNul) },
      {
        weight: 1,
        arbitrary: fc.string({
          unit: fc
            .integer({ min: 1, max: 0x9f })
            .filter((c) => c < 0x20 || c > 0x7e)
            .map((c) => String.fromCharCode(c)),
          maxLength: 6,
        }),
      },
      // Long arguments, in bytes (Linux refuses a single argument over 128 KiB before we run).
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom(513, 5_000, 70_000), fc.constantFrom('x', 'é', '😀')).map(([n, c]) => c.repeat(Math.ceil(n / Buffer.byteLength(c)))) },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...FLAGS), fc.string({ maxLength: 8 }).map(noNul)).map(([f, v]) => `${f}=${v}`) },
    );
    const argv = fc
      .tuple(
        fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...VERBS) }, { weight: 1, arbitrary: fc.array(token, { minLength: 1, maxLength: 1 }) }),
        fc.array(token, { maxLength: 6 }),
      )
      .map(([verb, rest]) => [...verb, ...rest]);
    // Shown short in counterexamples: a 70 000-character argument prints as its length.
    const shown = argv.map((a) => Object.assign(a, { [fc.toStringMethod]: () => JSON.stringify(a.map((x) => (x.length > 60 ? `${x.slice(0, 20)}…(${x.length})` : x))) }));
    const sendsMail = (a: string[]) => a[0] === 'send' || a[0] === 'reply';
    const seen = new Map<number, number>();
    const cli = tally('cli');
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(shown, { minLength: BATCH, maxLength: BATCH, selector: (a) => a.join('\0') }), async (batch) => {
        const head = await d.engine.store.headSeq();
        const results = await Promise.all(batch.map(run));
        for (const r of results) {
          const what = `m4a ${JSON.stringify(r.argv.map((x) => (x.length > 60 ? `${x.slice(0, 20)}…(${x.length})` : x)))}`;
          cli.requests++;
          if (r.signal !== null) cli.hangs++;
          else if (r.code === null || ![0, 1, 2, 3].includes(r.code) || /^\s+at .+[(:]\d+/m.test(r.stderr) || /Unhandled|uncaught|node:internal/i.test(r.stderr)) cli.crashes++;
          assert.equal(r.signal, null, `${what}: no answer within ${DEADLINE_MS} ms (a hang)`);
          assert.ok(r.code !== null && [0, 1, 2, 3].includes(r.code), `${what}: exit code ${r.code}\n${r.stderr.slice(0, 2000)}`);
          assert.ok(!/^\s+at .+[(:]\d+/m.test(r.stderr), `${what}: a stack trace on stderr:\n${r.stderr.slice(0, 3000)}`);
          assert.ok(!/Unhandled|uncaught|node:internal/i.test(r.stderr), `${what}: an unhandled error:\n${r.stderr.slice(0, 3000)}`);
          if (r.code !== 0) assert.ok(r.stderr.trim().length > 0, `${what}: exit ${r.code} with nothing on stderr`);
          seen.set(r.code, (seen.get(r.code) ?? 0) + 1);
          if (process.env.M4A_FUZZ_CLI_DEBUG)
            process.stderr.write(`cli: ${Math.round(r.ms)} ms exit ${r.code} ${what.slice(0, 120)} :: ${r.stderr.split('\n')[0]?.slice(0, 120)}\n`);
        }
        const grew = (await d.engine.store.headSeq()) - head;
        const ok = results.filter((r) => r.code === 0 && sendsMail(r.argv)).length;
        if (grew > ok) cli.changed++;
        assert.ok(grew <= ok, `${grew} messages stored by ${ok} successful sends: a failed run stored mail (${JSON.stringify(results.map((r) => [r.argv[0], r.code]))})`);
      }),
      {
        numRuns: RUNS,
        includeErrorInReport: true,
        ...(process.env.M4A_FUZZ_SEED ? { seed: Number(process.env.M4A_FUZZ_SEED) } : {}),
        // The cases that matter most run every time.
        examples: [
          [[['send'], ['send', 'bob'], ['inbox', '--limit', 'abc'], ['inbox', '--wait', '60', '--json']]],
          [[['send', 'bob', 'x'.repeat(600), 'b'], ['send', 'bob', 's', 'b', '--urgent'], ['read', 'm-zz'], ['status']]],
          [[['ack'], ['inbox', '--after', 'garbage'], ['admin', 'listener', 'set', 'bob', 'http://example.com/'], ['--nope']]],
          [
            [
              ['send', '#nowhere', 's', 'b', '--json'],
              ['reply', 'm-zz', 'b'],
              ['admin', 'account', 'add', ''],
              ['send', 'bob', 's\u0007', 'b\u001b'],
            ],
          ],
        ],
      },
    );
    // The runs reached every kind of outcome: success, refusal and usage error.
    for (const code of [0, 1, 2]) assert.ok((seen.get(code) ?? 0) > 0, `no run ended with exit ${code}: ${JSON.stringify([...seen])}`);
  });
});
