// m4a task … and m4a approval …, run as a user runs them (the built CLI, a daemon found through its
// data directory, each party with its own account): one task through every state an assignee
// moves it to, a refusal on a finished task, an approval that holds a task in auth_required, a
// pooled task claimed and updated with its lease's epoch.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { CLI } from './support/shell-agents.js';
import { startTestDaemon, type StoreKind, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';
import { parseData, parseRef } from '../src/cli/task-commands.js';

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

// The default store (SQLite); M4A_TEST_STORE=memory runs the same round on the memory store.
const storeKind: StoreKind = process.env.M4A_TEST_STORE === 'memory' ? 'memory' : 'sqlite';

describe(`m4a task / approval (${storeKind} store)`, () => {
  let d: TestDaemon;
  let home: string;
  let env: Record<string, string>;
  // Asynchronous: the daemon runs in this test process and must keep answering meanwhile.
  const cli = (args: string[]) =>
    new Promise<Run>((resolve) =>
      execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );
  const as = (account: string, args: string[]) => cli([...args, '--account', account]);
  const json = async (account: string, args: string[]) => {
    const r = await as(account, [...args, '--json']);
    assert.equal(r.status, 0, `${account}: ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return JSON.parse(r.stdout);
  };
  /** A refusal: exit 1, the named error on stderr (text) and its envelope (--json). */
  const refused = async (account: string, args: string[], code: string) => {
    const text = await as(account, args);
    assert.equal(text.status, 1, `${args.join(' ')}: ${text.stdout}${text.stderr}`);
    assert.match(text.stderr, new RegExp(`^m4a: ${code}: `), args.join(' '));
    assert.equal(text.stdout, '');
    const j = await as(account, [...args, '--json']);
    assert.equal(j.status, 1);
    const e = JSON.parse(j.stderr).error;
    assert.equal(e.code, code, `${args.join(' ')}: ${j.stderr}`);
    return e;
  };

  before(async () => {
    d = await startTestDaemon({ storeKind });
    home = mkdtempSync(join(tmpdir(), 'm4a-task-cli-'));
    const accounts: Record<string, { secret: string }> = {};
    for (const id of ['alice', 'bob', 'carol', 'eve']) accounts[id] = { secret: (await d.account(id)).secret };
    mkdirSync(join(home, 'mail4agent'));
    writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts }), { mode: 0o600 });
    env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir };
  });
  after(async () => {
    await d.stop();
    rmSync(home, { recursive: true, force: true });
  });

  let t1: string;

  it('create, list, show: the assignee gets it as mail; a retry with the same key makes nothing new', async () => {
    const args = ['task', 'create', 'bob', 'Review the fix branch', '--instructions', 'Run the tests.\nRead \u202etxt.exe', '--ref', 'git:refs/heads/fix', '--key', 'review-1'];
    const t = await json('alice', args);
    t1 = t.task_id;
    assert.match(t1, /^t-[0-9a-z]+$/);
    assert.equal(t.state, 'submitted');
    assert.equal(t.version, 1);
    assert.equal(t.to, 'bob');
    assert.match(t.from, /^alice(\/|$)/);
    assert.deepEqual(t.refs, [{ kind: 'git', locator: 'refs/heads/fix' }]);
    assert.equal((await json('alice', args)).task_id, t1, 'the same key names the same task');
    const again = await as('alice', args);
    assert.match(again.stdout, new RegExp(`^created ${t1} submitted v1 · alice.* → bob · Review the fix branch\n$`));

    const inbox = await json('bob', ['inbox']);
    const mail = inbox.messages.filter((m: { subject: string }) => m.subject === 'Task: Review the fix branch');
    assert.equal(mail.length, 1, 'one mail for the task, however often it was asked for');
    assert.equal(mail[0].thread_id ?? mail[0].message_id, t.thread_id, "the mail starts the task's thread");

    assert.deepEqual(
      (await json('bob', ['task', 'list'])).tasks.map((x: { task_id: string }) => x.task_id),
      [t1],
    );
    assert.deepEqual((await json('alice', ['task', 'list'])).tasks, [], 'assigned to alice: none');
    assert.equal((await json('alice', ['task', 'list', '--requested'])).tasks[0].task_id, t1);
    assert.deepEqual((await json('bob', ['task', 'list', '--state', 'working'])).tasks, []);
    const table = (await as('bob', ['task', 'list'])).stdout;
    assert.match(table, /^TASK +STATE +FROM +UPDATED +TITLE\n/);
    assert.match(table, new RegExp(`${t1} +submitted +alice.* +Review the fix branch`));

    const shown = await as('bob', ['task', 'show', t1]);
    assert.equal(shown.status, 0, shown.stderr);
    assert.match(shown.stdout, /Review the fix branch/);
    assert.match(shown.stdout, /ref git: refs\/heads\/fix/);
    assert.match(shown.stdout, /history\n +submitted/);
    assert.ok(!shown.stdout.includes('\u202e'), 'a bidi control in the instructions is not printed raw');
    assert.match(shown.stdout, /Read \\u202etxt\.exe/);
    await refused('eve', ['task', 'show', t1], 'not_task_party');
  });

  it('update working → input_required (a question) → working → completed with a result; a finished task refuses a cancel', async () => {
    assert.equal((await json('bob', ['task', 'update', t1, 'working'])).version, 2);
    await refused('bob', ['task', 'update', t1, 'input_required'], 'malformed');
    await refused('alice', ['task', 'update', t1, 'completed'], 'invalid_transition');
    await refused('eve', ['task', 'update', t1, 'completed'], 'not_task_party');
    const asked = await as('bob', ['task', 'update', t1, 'input_required', '--note', 'Which branch: fix or fix-2?']);
    assert.equal(asked.status, 0, asked.stderr);
    assert.match(asked.stdout, new RegExp(`^${t1} input_required v3 · `));

    await json('bob', ['task', 'update', t1, 'working', '--note', 'fix it is']);
    const start = Date.now();
    const behind = await json('alice', ['task', 'show', t1, '--wait', '20', '--after-version', '2']);
    assert.equal(behind.version, 4);
    assert.ok(Date.now() - start < 10_000, 'a version already past after-version answers at once');
    assert.equal((await as('alice', ['task', 'show', t1, '--after-version', '2'])).status, 2, '--after-version goes with --wait');

    const done = await json('bob', ['task', 'update', t1, 'completed', '--summary', 'All 12 tests pass', '--data', '{"tests":12,"failed":0,"log":"a\u2028b"}']);
    assert.equal(done.state, 'completed');
    assert.equal(done.version, 5);
    assert.deepEqual(done.result, { summary: 'All 12 tests pass', data: { tests: 12, failed: 0, log: 'a\u2028b' } });
    assert.deepEqual(
      done.history.map((h: { state: string }) => h.state),
      ['submitted', 'working', 'input_required', 'working', 'completed'],
    );
    assert.equal(done.history[2].note, 'Which branch: fix or fix-2?');
    assert.match(done.history[2].by, /^bob(\/|$)/);

    const text = (await as('alice', ['task', 'show', t1])).stdout;
    assert.match(text, /result\n {2}All 12 tests pass\n {2}data \{"tests":12,"failed":0,"log":"a\\u2028b"\}/);
    assert.ok(!text.includes('\u2028'), 'a line separator in the data is not printed raw');

    const e = await refused('alice', ['task', 'cancel', t1, '--reason', 'too late'], 'task_terminal');
    assert.equal(e.state, 'completed');
    await refused('bob', ['task', 'update', t1, 'working'], 'task_terminal');
    assert.equal((await json('alice', ['task', 'show', t1])).version, 5, 'nothing changed');

    // Every change is mail in the task's thread, from the party who made it.
    const thread = (await json('alice', ['thread', done.thread_id])).thread as { subject: string }[];
    assert.deepEqual(
      thread.map((m) => m.subject),
      [
        'Task: Review the fix branch',
        'Task working: Review the fix branch',
        'Task input_required: Review the fix branch',
        'Task working: Review the fix branch',
        'Task completed: Review the fix branch',
      ],
    );
  });

  it('a child task, cancelled by its requester; the assignee cannot cancel', async () => {
    const file = join(home, 'steps.md');
    writeFileSync(file, '1. migrate\n2. verify\n');
    const child = await json('alice', ['task', 'create', 'bob', 'Run the migration', '--instructions-file', file, '--parent', t1]);
    assert.equal(child.instructions, '1. migrate\n2. verify\n');
    assert.equal(child.parent_task_id, t1);
    const parent = await json('alice', ['task', 'show', t1]);
    assert.deepEqual(parent.children, [{ task_id: child.task_id, title: 'Run the migration', state: 'submitted' }]);
    await refused('bob', ['task', 'cancel', child.task_id], 'invalid_transition');
    const canceled = await json('alice', ['task', 'cancel', child.task_id, '--reason', 'not needed']);
    assert.equal(canceled.state, 'canceled');
    assert.equal(canceled.history.at(-1).note, 'not needed');
    const both = await as('alice', ['task', 'create', 'bob', 'x', '--instructions', 'a', '--instructions-file', file]);
    assert.equal(both.status, 2, 'both instruction flags: a usage error');
    assert.equal((await as('alice', ['task', 'create', 'bob', 'x', '--ref', 'nocolon'])).status, 2);
    assert.equal((await as('alice', ['task', 'create', 'bob', 'x', '--instructions-file', join(home, 'absent')])).status, 2);
  });

  it('approval request with --task holds the task in auth_required; the reviewer decides once; the task returns to working', async () => {
    const t = await json('alice', ['task', 'create', 'bob', 'Deploy the fix']);
    await json('bob', ['task', 'update', t.task_id, 'working']);
    const a = await json('bob', ['approval', 'request', 'carol', 'deploy fix to production', '--details', 'after the migration', '--task', t.task_id, '--expires-in', '1h']);
    assert.match(a.approval_id, /^a-[0-9a-z]+$/);
    assert.equal(a.state, 'pending');
    assert.equal(a.reviewer, 'carol');
    assert.equal(a.task_id, t.task_id);
    const expires = Date.parse(a.expires_at) - Date.parse(a.created_at);
    assert.equal(expires, 3_600_000);
    assert.equal((await json('bob', ['task', 'show', t.task_id])).state, 'auth_required');
    await refused('bob', ['task', 'update', t.task_id, 'working'], 'invalid_transition');
    const asked = (await json('carol', ['inbox'])).messages.find((m: { subject: string }) => m.subject === 'Approval: deploy fix to production');
    assert.ok(asked, 'the reviewer gets the request as mail');
    assert.equal(asked.thread_id, t.thread_id, "in the task's thread");

    const waiting = as('bob', ['approval', 'show', a.approval_id, '--wait', '20', '--json']);
    await until('the requester parked on the approval', () => d.engine.parkedWaits() > 0);
    await refused('eve', ['approval', 'decide', a.approval_id, 'approved', '--reason', 'sure'], 'not_reviewer');
    const bad = await as('carol', ['approval', 'decide', a.approval_id, 'maybe', '--reason', 'hm']);
    assert.equal(bad.status, 2, `not a decision: a usage error (${bad.stderr})`);
    assert.equal((await as('carol', ['approval', 'decide', a.approval_id, 'approved'])).status, 2, '--reason is required');
    const decided = await as('carol', ['approval', 'decide', a.approval_id, 'approved', '--reason', 'migration verified']);
    assert.equal(decided.status, 0, decided.stderr);
    assert.match(decided.stdout, new RegExp(`^${a.approval_id}  approved  bob.* asks carol`));
    assert.match(decided.stdout, /approved just now: migration verified/);
    const decidedAt = Date.now();
    const woke = JSON.parse((await waiting).stdout);
    assert.ok(Date.now() - decidedAt < 5_000, 'the wait answered with the decision, not at its deadline');
    assert.equal(woke.state, 'approved');
    assert.equal(woke.reason, 'migration verified');
    await refused('carol', ['approval', 'decide', a.approval_id, 'rejected', '--reason', 'changed my mind'], 'approval_decided');

    const back = await json('bob', ['task', 'show', t.task_id]);
    assert.equal(back.state, 'working');
    assert.deepEqual(
      back.history.map((h: { state: string }) => h.state),
      ['submitted', 'working', 'auth_required', 'working'],
    );
    const shown = await json('carol', ['approval', 'show', a.approval_id]);
    assert.equal(shown.state, 'approved');
    await refused('eve', ['approval', 'show', a.approval_id], 'not_reviewer');
  });

  // A woken wait reads the new version (the task's row is written before the mail that wakes it).
  it('a parked `task show --wait` answers when the other party moves the task', async () => {
    const t = await json('alice', ['task', 'create', 'bob', 'Wait for me']);
    const timed = async (who: string, move: () => Promise<unknown>) => {
      const start = Date.now();
      const waiting = as(who, ['task', 'show', t.task_id, '--wait', '10', '--json']);
      await until(`${who} parked on the task`, () => d.engine.parkedWaits() > 0);
      await move();
      const r = await waiting;
      assert.equal(r.status, 0, r.stderr);
      return { version: JSON.parse(r.stdout).version as number, ms: Date.now() - start };
    };
    const requester = await timed('alice', () => json('bob', ['task', 'update', t.task_id, 'working']));
    const assignee = await timed('bob', () => json('alice', ['task', 'cancel', t.task_id]));
    assert.deepEqual([requester.version, assignee.version], [2, 3]);
    assert.ok(requester.ms < 5_000, `the requester's wait answered after ${requester.ms} ms`);
    assert.ok(assignee.ms < 5_000, `the assignee's wait answered after ${assignee.ms} ms`);
  });

  it('claim from a pool (--pool or the task), update it only with the live --epoch; refusals by name', async () => {
    await d.operator.admin.roomAdd('crew');
    for (const m of ['alice', 'bob', 'carol']) await d.operator.admin.memberAdd('crew', m);
    const t = await json('alice', ['task', 'create', '#crew', 'Pooled job']);
    assert.deepEqual(t.pool, { room: '#crew', attempt: 0, max_attempts: 3 });

    const got = await json('bob', ['task', 'claim', '--pool', '#crew', '--ttl', '2m']);
    assert.equal(got.task.task_id, t.task_id);
    assert.equal(got.task.state, 'working');
    assert.match(got.task.to, /^bob(\/|$)/);
    assert.deepEqual([got.lease.epoch, got.lease.attempt], [1, 1]);
    const ttl = Date.parse(got.lease.expires_at) - Date.parse(got.task.updated_at);
    assert.ok(Math.abs(ttl - 120_000) < 2_000, `--ttl 2m: ${ttl} ms`);
    const none = await as('carol', ['task', 'claim', '--pool', '#crew']);
    assert.equal(none.status, 0, none.stderr);
    assert.equal(none.stdout, 'nothing on offer in #crew\n');
    assert.deepEqual(await json('carol', ['task', 'claim', '--pool', '#crew']), { task: null, lease: null });
    const conflict = await refused('carol', ['task', 'claim', t.task_id], 'lease_conflict');
    assert.match(conflict.holders[0].holder, /^bob(\/|$)/);
    await refused('eve', ['task', 'claim', '--pool', '#crew'], 'permission_denied');
    await refused('bob', ['task', 'claim', '--pool', '#crew', '--ttl', '9s'], 'malformed');
    for (const bad of [[], [t.task_id, '--pool', '#crew'], ['--pool', '#crew', '--ttl', 'soon']])
      assert.equal((await as('bob', ['task', 'claim', ...bad])).status, 2, `a usage error: claim ${bad.join(' ')}`);

    await refused('bob', ['task', 'update', t.task_id, 'completed'], 'lease_lost');
    await refused('bob', ['task', 'update', t.task_id, 'completed', '--epoch', '2'], 'lease_lost');
    for (const e of ['0', '-1', '1.5', 'x']) assert.equal((await as('bob', ['task', 'update', t.task_id, 'completed', '--epoch', e])).status, 2, `--epoch ${e}`);
    assert.equal((await json('alice', ['task', 'show', t.task_id])).state, 'working', 'nothing changed');
    const done = await json('bob', ['task', 'update', t.task_id, 'completed', '--epoch', '1', '--summary', 'done by bob']);
    assert.equal(done.state, 'completed');
    assert.deepEqual(done.result, { summary: 'done by bob' });

    // The text form names the lease and how to update it.
    const t2 = await json('alice', ['task', 'create', '#crew', 'Second job']);
    const text = await as('carol', ['task', 'claim', t2.task_id]);
    assert.equal(text.status, 0, text.stderr);
    assert.match(
      text.stdout,
      new RegExp(
        `^claimed ${t2.task_id} working v2 · alice.* → carol.* · Second job\n  lease l-\\S+ epoch 1 · attempt 1 of 3 · until \\S+\n  update it with: m4a task update ${t2.task_id} <state> --epoch 1\n$`,
      ),
    );
    assert.equal((await json('carol', ['task', 'update', t2.task_id, 'completed', '--epoch', '1'])).state, 'completed');
  });

  it('parses refs and data, refusing what it cannot read', () => {
    assert.deepEqual(parseRef('url:https://example.com/a:b'), { kind: 'url', locator: 'https://example.com/a:b' });
    assert.throws(() => parseRef(':x'), /not a ref/);
    assert.throws(() => parseRef('git:'), /not a ref/);
    assert.deepEqual(parseData('[1,{"a":null}]'), [1, { a: null }]);
    assert.throws(() => parseData('{tests: 12}'), /must be JSON/);
  });
});
