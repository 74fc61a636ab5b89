// Command wakes: a program resumes a session that is not running and the successor reads the mail
// that waited for it; argv runs without a shell, placeholders are daemon values only, a timeout
// kills the process group, one run per lineage, a total cap, an abort stops the run.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MailError } from '../src/wire/errors.js';
import type { WakeRequest, WakeSession } from '../src/wake/types.js';
import { checkCommandStep, CommandAdapter, commandWakeText, CommandPool, type CommandExit } from '../src/wake/command-adapter.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { AGENT_SCRIPT, startAgent, type AgentProc } from './support/agent.js';

/** A stand-in program: records its argv, cwd and wake environment in <event id>.json, then sleeps,
 *  ignores SIGTERM, starts a grandchild or fails as its arguments say. */
const PROGRAM = `
import { appendFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
const args = process.argv.slice(2);
const opt = (n) => args.find((a) => a.startsWith('--' + n + '='))?.slice(n.length + 3);
const dir = process.env.M4A_TEST_OUT_DIR;
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('M4A_WAKE_') || k === 'CLAUDE_CODE_SESSION_ID' || k === 'KEEP_ME' || k === 'NOT_NAMED'));
const rec = { pid: process.pid, argv: args, cwd: process.cwd(), env };
if (args.includes('--grandchild')) rec.grandchild = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }).pid;
if (args.includes('--ignore-term')) process.on('SIGTERM', () => {});
writeFileSync(dir + '/' + process.env.M4A_WAKE_EVENT_ID + '.json', JSON.stringify(rec));
appendFileSync(dir + '/runs.log', process.env.M4A_WAKE_EVENT_ID + '\\n');
if (opt('stderr')) process.stderr.write(opt('stderr'));
setTimeout(() => process.exit(Number(opt('exit') ?? 0)), Number(opt('sleep') ?? 0));
`;

/** The resumed agent: named \`claude\` so the daemon corroborates it as Claude Code with the session id
 *  of its --resume argument; it reads the waiting mail with the typed client and writes what it got. */
const RESUMED_AGENT = `
import { writeFileSync } from 'node:fs';
const { MailClient } = await import(process.env.M4A_TEST_CLIENT_URL);
const client = new MailClient({ url: process.env.M4A_URL, token: process.env.M4A_TEST_TOKEN });
const me = await client.whoami();
const inbox = await client.inbox({ limit: 50 });
writeFileSync(process.env.M4A_TEST_OUT, JSON.stringify({
  argv: process.argv.slice(2),
  cwd: process.cwd(),
  env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('M4A_WAKE_'))),
  me,
  inbox: inbox.messages.map((m) => ({ message_id: m.message_id, subject: m.subject, body: m.body })),
}));
client.close();
`;

const session = (o: Partial<WakeSession> = {}): WakeSession => ({
  id: 's-one',
  lineage: 's-one',
  slug: 'bob/work',
  pid: 1,
  live: false,
  provider: 'claude',
  providerSessionId: 'conv-1',
  cwd: null,
  listening: false,
  ...o,
});

const request = (eventId: string, o: Partial<WakeRequest> = {}): WakeRequest => ({
  eventId,
  account: 'bob',
  session: session(),
  mail: [
    { message_id: 'm-1', from: 'alice/s-9', subject: '$(touch pwned) `id` ; rm -rf ~', priority: 'normal', thread_id: 'm-1' },
    { message_id: 'm-2', from: 'carol', subject: 'second', priority: 'urgent', thread_id: 'm-1' },
  ],
  urgent: true,
  text: 'You have new mail … "$(touch pwned)"',
  ...o,
});

const never = new AbortController().signal;

/** A process is gone (or a zombie waiting for init to reap it). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}
async function until(cond: () => boolean, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return cond();
}

describe('command wakes', () => {
  let tmp: string;
  let out: string;
  let program: string;
  const pools: CommandPool[] = [];

  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'm4a-command-'));
    out = join(tmp, 'out');
    mkdirSync(out);
    program = join(tmp, 'program.mjs');
    writeFileSync(program, PROGRAM);
  });
  after(async () => {
    for (const p of pools) await p.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  const adapter = (
    argv: string[],
    o: { timeout_secs?: number; cwd?: string; maxConcurrent?: number; pool?: CommandPool; startGraceMs?: number; killGraceMs?: number; onExit?: (e: CommandExit) => void } = {},
  ) => {
    const pool = o.pool ?? new CommandPool({ maxConcurrent: o.maxConcurrent ?? 4 });
    pools.push(pool);
    return new CommandAdapter(
      { kind: 'command', argv, ...(o.timeout_secs ? { timeout_secs: o.timeout_secs } : {}), ...(o.cwd ? { cwd: o.cwd } : {}), env: ['M4A_TEST_OUT_DIR', 'KEEP_ME'] },
      {
        pool,
        env: { ...process.env, M4A_TEST_OUT_DIR: out, CLAUDE_CODE_SESSION_ID: 'inherited-from-whoever-started-the-daemon', KEEP_ME: 'yes', NOT_NAMED: 'no' },
        startGraceMs: o.startGraceMs ?? 10_000,
        killGraceMs: o.killGraceMs ?? 300,
        ...(o.onExit ? { onExit: o.onExit } : {}),
      },
    );
  };
  const record = (eventId: string): any => JSON.parse(readFileSync(join(out, `${eventId}.json`), 'utf8'));
  const runs = (): string[] => (existsSync(join(out, 'runs.log')) ? readFileSync(join(out, 'runs.log'), 'utf8').trim().split('\n') : []);

  describe('resuming a session that is not running', () => {
    let d: TestDaemon;
    let bobSecret: string;
    const procs: AgentProc[] = [];
    before(async () => {
      d = await startTestDaemon();
      bobSecret = (await d.account('bob')).secret;
    });
    after(async () => {
      for (const p of procs) await p.exit();
      await d.stop();
    });

    it('the command resumes the session; the successor reads the mail that waited', async () => {
      const alice = (await d.account('alice')).client;
      // Two executables named `claude`: the session that ends, and the program that resumes it.
      const work = join(tmp, 'project');
      const firstDir = join(tmp, 'first');
      const resumeDir = join(tmp, 'resume');
      for (const dir of [work, firstDir, resumeDir]) {
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
      }
      copyFileSync(AGENT_SCRIPT, join(firstDir, 'claude'));
      writeFileSync(join(resumeDir, 'claude'), RESUMED_AGENT);

      const first = await startAgent(d.url, bobSecret, { script: join(firstDir, 'claude'), args: ['--resume', 'conv-b-7'], cwd: work });
      procs.push(first);
      const me1 = (await first.call('/mail/whoami')).body;
      assert.equal(me1.card.corroborated.provider_session_id, 'conv-b-7');
      const toSession = await alice.send({ to: me1.address, subject: 'please review $(touch pwned)', body: 'the diff is in /tmp/x' });
      await first.exit();
      const toAccount = await alice.send({ to: 'bob', subject: 'and this', body: 'account mail' });

      // What the dispatcher hands the adapter: the lineage's latest session, which is not running.
      const rec = (await d.engine.store.getSession('bob', me1.session))!;
      const listed = (await alice.directory({ detail: true, include_ended: true })).accounts.find((a) => a.id === 'bob')!.sessions.find((s) => s.address === me1.address)!;
      assert.equal(listed.live, false, 'the first session is not running');
      const req: WakeRequest = {
        eventId: 'ev-resume-1',
        account: 'bob',
        session: {
          id: rec.id,
          lineage: rec.lineage,
          slug: rec.slug,
          pid: rec.pid,
          live: false,
          provider: 'claude',
          providerSessionId: 'conv-b-7',
          cwd: me1.card.corroborated.cwd,
          listening: false,
        },
        mail: [
          { message_id: toSession.message_id, from: 'alice', subject: 'please review $(touch pwned)', priority: 'normal', thread_id: toSession.message_id },
          { message_id: toAccount.message_id, from: 'alice', subject: 'and this', priority: 'normal', thread_id: toAccount.message_id },
        ],
        urgent: false,
        text: 'unused by the command line',
      };
      const resultFile = join(tmp, 'resumed.json');
      const exits: CommandExit[] = [];
      const cmd = new CommandAdapter(
        {
          kind: 'command',
          argv: [process.execPath, '--import', import.meta.resolve('tsx'), join(resumeDir, 'claude'), '--resume', '{provider_session_id}', '-p', '{wake_text}'],
          cwd: '{cwd}',
          timeout_secs: 60,
          env: ['M4A_URL', 'M4A_TEST_TOKEN', 'M4A_TEST_OUT', 'M4A_TEST_CLIENT_URL'],
        },
        {
          env: {
            ...process.env,
            M4A_URL: d.url,
            M4A_TEST_TOKEN: bobSecret,
            M4A_TEST_OUT: resultFile,
            M4A_TEST_CLIENT_URL: pathToFileURL(join(import.meta.dirname, '../src/client/http-client.ts')).href,
          },
          startGraceMs: 60_000,
          onExit: (e) => exits.push(e),
        },
      );
      pools.push(cmd.pool);
      const r = await cmd.wake(req, never);
      assert.equal(r.ok, true, r.detail);
      assert.match(r.detail, /exited 0/);

      const got = JSON.parse(readFileSync(resultFile, 'utf8'));
      assert.deepEqual(got.argv, ['--resume', 'conv-b-7', '-p', commandWakeText(2)]);
      assert.equal(got.cwd, work, "it ran in the session's attested working directory");
      assert.equal(got.env.M4A_WAKE_EVENT_ID, 'ev-resume-1');
      assert.equal(got.env.M4A_WAKE_ACCOUNT, 'bob');
      assert.equal(got.env.M4A_WAKE_SESSION, rec.id);
      assert.equal(got.env.M4A_WAKE_MESSAGE_IDS, `${toSession.message_id},${toAccount.message_id}`);
      assert.equal(got.env.M4A_WAKE_SENDERS, 'alice');
      assert.equal(got.env.M4A_WAKE_URGENT, '0');
      // The resumed program is the successor session, and it read the mail that waited.
      assert.notEqual(got.me.address, me1.address, 'a new process is a new session');
      assert.equal(got.me.account, 'bob');
      assert.equal(got.me.card.corroborated.provider, 'claude');
      assert.equal(got.me.card.corroborated.provider_session_id, 'conv-b-7');
      const read = got.inbox.map((m: { message_id: string }) => m.message_id);
      assert.ok(read.includes(toSession.message_id), 'the successor reads the mail sent to the session that was not running');
      assert.ok(read.includes(toAccount.message_id));
      assert.equal(got.inbox.find((m: { message_id: string }) => m.message_id === toSession.message_id).body, 'the diff is in /tmp/x', 'the body is fetched by the agent itself');
      const dir = await alice.directory({ detail: true, include_ended: true });
      const old = dir.accounts.find((a) => a.id === 'bob')!.sessions.find((s) => s.address === me1.address)!;
      assert.equal(old.successor, got.me.address, 'the daemon records the resumed program as the successor');
      assert.equal(exits.length, 1);
      assert.equal(exits[0]!.code, 0);
      assert.ok(!existsSync(join(work, 'pwned')));
    });
  });

  it('argv runs without a shell: metacharacters are passed literally; subjects and senders stay off the command line', async () => {
    const literal = ['$(touch x1)', '; touch x2', '`touch x3`', '| touch x4 &&', '> x5', '{"json":true}', '--session={session}', '{lineage}/{account}'];
    const r = await adapter([process.execPath, program, ...literal], {}).wake(request('ev-noshell', { session: session({ cwd: tmp }) }), never);
    assert.equal(r.ok, true, r.detail);
    const rec = record('ev-noshell');
    assert.deepEqual(rec.argv, ['$(touch x1)', '; touch x2', '`touch x3`', '| touch x4 &&', '> x5', '{"json":true}', '--session=s-one', 's-one/bob']);
    for (const f of ['x1', 'x2', 'x3', 'x4', 'x5', 'pwned']) assert.ok(!existsSync(join(tmp, f)), `${f} was not created`);
    assert.equal(rec.cwd, tmp, "without a cwd step it runs in the session's cwd");
    assert.ok(!rec.argv.some((a: string) => a.includes('pwned') || a.includes('alice')), 'no subject or sender on the command line');
    assert.deepEqual(
      rec.env,
      {
        M4A_WAKE_EVENT_ID: 'ev-noshell',
        M4A_WAKE_ACCOUNT: 'bob',
        M4A_WAKE_SESSION: 's-one',
        M4A_WAKE_LINEAGE: 's-one',
        M4A_WAKE_MESSAGE_IDS: 'm-1,m-2',
        M4A_WAKE_SENDERS: 'alice/s-9,carol',
        M4A_WAKE_URGENT: '1',
        KEEP_ME: 'yes',
      },
      'only the allow-listed base and the names the step gives: no agent session id of whoever started the daemon, nothing unnamed',
    );
  });

  it('unknown placeholders are refused when the step is set; a missing value refuses the run without starting it', async () => {
    const refusal = (step: { argv: string[]; cwd?: string; env?: string[] }): { field: unknown; reason: unknown } => {
      try {
        checkCommandStep(step);
      } catch (e) {
        assert.ok(e instanceof MailError);
        assert.equal(e.code, 'malformed');
        return { field: e.details.field, reason: e.details.reason };
      }
      return { field: null, reason: 'accepted' };
    };
    assert.match(String(refusal({ argv: ['claude', '--resume', '{sesion_id}'] }).reason), /unknown placeholder \{sesion_id\}/);
    assert.equal(refusal({ argv: ['claude', '--resume', '{sesion_id}'] }).field, 'argv[2]');
    assert.match(String(refusal({ argv: ['claude', 'x={subject}'] }).reason), /unknown placeholder \{subject\}/);
    assert.match(String(refusal({ argv: ['claude', '{from}'] }).reason), /unknown placeholder/);
    assert.deepEqual(refusal({ argv: ['{cwd}/bin/agent'] }).field, 'argv[0]', 'the program itself is fixed');
    assert.match(String(refusal({ argv: ['x'], cwd: '{session}' }).reason), /only \{cwd\}/);
    assert.match(String(refusal({ argv: ['x'], cwd: 'relative/dir' }).reason), /absolute/);
    assert.equal(refusal({ argv: ['claude', '-p', '{wake_text}', '--resume', '{provider_session_id}', '{"a":{"b":1}}'], cwd: '{cwd}/sub' }).reason, 'accepted');
    assert.throws(() => adapter(['x', '{nope}']), MailError);
    const envRefusal = (env: string[]) => refusal({ argv: ['x'], env });
    assert.deepEqual(envRefusal(['KEEP_ME', 'M4A_TOKEN']).field, 'env[1]', "the starter's secret is never passed by name");
    for (const name of ['M4A_ACCOUNT', 'M4A_STORE', 'M4A_WAKE_ACCOUNT', 'CLAUDE_CODE_SESSION_ID', '1BAD', 'A=B']) assert.notEqual(envRefusal([name]).reason, 'accepted', name);
    assert.equal(envRefusal(['ANTHROPIC_API_KEY', 'M4A_URL']).reason, 'accepted', "any other name is the operator's explicit choice");

    const before = runs().length;
    const noId = await adapter([process.execPath, program, '--resume', '{provider_session_id}']).wake(request('ev-noid', { session: session({ providerSessionId: null }) }), never);
    assert.deepEqual(noId, { ok: false, detail: 'no {provider_session_id} for this recipient; not started' });
    const noSession = await adapter([process.execPath, program, '{session}']).wake(request('ev-nosession', { session: null }), never);
    assert.equal(noSession.ok, false);
    const optionLike = await adapter([process.execPath, program, '--resume', '{provider_session_id}']).wake(
      request('ev-opt', { session: session({ providerSessionId: '--dangerously-skip-permissions' }) }),
      never,
    );
    assert.match(optionLike.detail, /not a plain token/);
    const noCwd = await adapter([process.execPath, program], { cwd: '{cwd}' }).wake(request('ev-nocwd'), never);
    assert.match(noCwd.detail, /no \{cwd\}/);
    const live = await adapter([process.execPath, program]).wake(request('ev-live', { session: session({ live: true }) }), never);
    assert.equal(live.ok, false);
    assert.match(live.detail, /is running/);
    assert.equal(runs().length, before, 'nothing was started');
    // An account with no session on record can still be woken by a command that needs none.
    const accountOnly = await adapter([process.execPath, program, '{account}']).wake(request('ev-account', { session: null }), never);
    assert.equal(accountOnly.ok, true, accountOnly.detail);
  });

  it('a failing program is not a wake: exit code and the end of stderr in the detail', async () => {
    const r = await adapter([process.execPath, program, '--exit=3', `--stderr=${'x'.repeat(10_000)}tail-of-stderr`]).wake(request('ev-fail'), never);
    assert.equal(r.ok, false);
    assert.match(r.detail, /exited 3; stderr: x+tail-of-stderr$/);
    assert.ok(r.detail.length < 4200, 'only a few KiB of stderr');
    const missing = await adapter([join(tmp, 'no-such-program')]).wake(request('ev-enoent'), never);
    assert.equal(missing.ok, false);
    assert.match(missing.detail, /could not start .*ENOENT/);
  });

  it('a timeout kills the whole process group: SIGTERM, then SIGKILL', async () => {
    const exits: CommandExit[] = [];
    const t0 = Date.now();
    const r = await adapter([process.execPath, program, '--ignore-term', '--grandchild', '--sleep=60000'], {
      timeout_secs: 1,
      killGraceMs: 300,
      onExit: (e) => exits.push(e),
    }).wake(request('ev-timeout'), never);
    assert.equal(r.ok, false);
    assert.match(r.detail, /timed out after 1 s/);
    const elapsed = Date.now() - t0;
    assert.ok(elapsed >= 1000 && elapsed < 5000, `${elapsed} ms`);
    const rec = record('ev-timeout');
    assert.ok(await until(() => gone(rec.pid) && gone(rec.grandchild)), 'the program and its child are gone');
    assert.equal(exits[0]!.timedOut, true);
    assert.equal(exits[0]!.signal, 'SIGKILL', 'it ignored SIGTERM, so SIGKILL ended it');
  });

  it('one run per lineage at a time; a second wake is answered "already running"', async () => {
    const pool = new CommandPool({ maxConcurrent: 4 });
    const cmd = adapter([process.execPath, program, '--sleep=1500'], { pool, startGraceMs: 200 });
    const r1 = await cmd.wake(request('ev-one-1'), never);
    assert.equal(r1.ok, true);
    assert.match(r1.detail, /still running after 200 ms/);
    const r2 = await cmd.wake(request('ev-one-2'), never);
    assert.equal(r2.ok, true);
    assert.match(r2.detail, /^already running \(pid \d+/);
    // Another adapter (another chain) sharing the pool sees the same run.
    const r3 = await adapter([process.execPath, program], { pool }).wake(request('ev-one-3'), never);
    assert.match(r3.detail, /^already running/);
    const other = await cmd.wake(request('ev-one-4', { session: session({ id: 's-two', lineage: 's-two' }) }), never);
    assert.equal(other.ok, true, 'another lineage runs at the same time');
    assert.ok(!existsSync(join(out, 'ev-one-2.json')) && !existsSync(join(out, 'ev-one-3.json')), 'no second process for the lineage');
    assert.ok(await until(() => pool.size === 0));
    const after = await cmd.wake(request('ev-one-5'), never);
    assert.equal(after.ok, true);
    assert.ok(existsSync(join(out, 'ev-one-5.json')), 'once the run ended, the lineage can be woken again');
  });

  it('a total cap on concurrent runs', async () => {
    const pool = new CommandPool({ maxConcurrent: 2 });
    const cmd = adapter([process.execPath, program, '--sleep=1000'], { pool, startGraceMs: 100 });
    const lineage = (n: number) => ({ session: session({ id: `s-cap-${n}`, lineage: `s-cap-${n}` }) });
    assert.equal((await cmd.wake(request('ev-cap-1', lineage(1)), never)).ok, true);
    assert.equal((await cmd.wake(request('ev-cap-2', lineage(2)), never)).ok, true);
    assert.deepEqual(await cmd.wake(request('ev-cap-3', lineage(3)), never), { ok: false, detail: 'at the cap of 2 concurrent command runs' });
    assert.ok(!existsSync(join(out, 'ev-cap-3.json')));
    assert.ok(await until(() => pool.size === 0));
    assert.equal((await cmd.wake(request('ev-cap-4', lineage(3)), never)).ok, true);
  });

  it('an abort stops the run; an aborted signal starts nothing; close() ends what still runs', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const r = await adapter([process.execPath, program, '--ignore-term', '--sleep=60000']).wake(request('ev-abort'), ac.signal);
    assert.equal(r.ok, false);
    assert.match(r.detail, /^aborted/);
    assert.ok(await until(() => gone(record('ev-abort').pid)));

    const pre = new AbortController();
    pre.abort();
    assert.equal((await adapter([process.execPath, program]).wake(request('ev-pre'), pre.signal)).ok, false);
    assert.ok(!existsSync(join(out, 'ev-pre.json')));

    const pool = new CommandPool();
    const started = await adapter([process.execPath, program, '--sleep=60000'], { pool, startGraceMs: 200 }).wake(request('ev-close'), never);
    assert.equal(started.ok, true);
    await pool.close();
    assert.ok(gone(record('ev-close').pid) || (await until(() => gone(record('ev-close').pid))));
    assert.equal(pool.size, 0);
  });
});
