// m4a admin retention set|list|run, run as an operator runs them (the built CLI, a daemon found
// through its data directory, a real SQLite file; the daemon's clock moved by hand so mail is
// old): settings for an account and a room, --off, --records-days, the list with the last run, a
// run that deletes exactly the acknowledged old mail and prints its counts, the --json shapes, and
// bad input refused as malformed by its field and bounds, changing nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { MailError } from '../src/wire/errors.js';
import type { MailClient } from '../src/client/http-client.js';
import { runCli } from './support/cli-daemon.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

const DAY = 24 * 3600_000;

describe('m4a admin retention', () => {
  let d: TestDaemon;
  const clock = new ManualClock();
  // Asynchronous: the daemon runs in this test process and must keep answering meanwhile.
  const cli = (args: string[]) => runCli(['admin', 'retention', ...args, '--data-dir', d.dataDir], { timeout: 30_000 });
  const ok = async (args: string[]) => {
    const r = await cli(args);
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '--json']));
  /** Refused, as text and as JSON, naming the field: malformed, or too_large with the limit (a
   *  number's bounds are the daemon's, so the CLI answers as HTTP does). */
  const malformed = async (args: string[], field: string, tooLarge?: { limit: number }) => {
    const code = tooLarge ? 'too_large' : 'malformed';
    const text = await cli(args);
    assert.equal(text.status, 1, `${args.join(' ')}: ${text.stdout}${text.stderr}`);
    assert.match(text.stderr, new RegExp(`^m4a: ${code}: `), args.join(' '));
    assert.equal(text.stdout, '');
    const j = await cli([...args, '--json']);
    assert.equal(j.status, 1);
    const e = JSON.parse(j.stderr).error;
    assert.equal(e.code, code, j.stderr);
    assert.equal(e.field, field, `${args.join(' ')}: ${j.stderr}`);
    if (tooLarge) assert.equal(e.limit, tooLarge.limit);
  };

  let alice: MailClient;
  let bob: MailClient;
  let carol: MailClient;
  const ids: Record<string, string> = {};

  before(async () => {
    d = await startTestDaemon({ clock });
    alice = (await d.account('alice')).client;
    bob = (await d.account('bob')).client;
    carol = (await d.account('carol')).client;
    await d.operator.admin.roomAdd('ops');
    for (const a of ['alice', 'bob', 'carol']) await d.operator.admin.memberAdd('ops', a);
    const send = async (name: string, to: string) => (ids[name] = (await alice.send({ to, subject: name, body: 'x' })).message_id);
    await send('bobAcked', 'bob');
    await send('bobUnacked', 'bob');
    await send('opsAcked', '#ops');
    await send('opsHalf', '#ops');
    await send('carolAcked', 'carol');
    await bob.ack([ids.bobAcked as string, ids.opsAcked as string, ids.opsHalf as string]);
    await carol.ack([ids.opsAcked as string, ids.carolAcked as string]);
    await alice.ack([ids.opsAcked as string, ids.opsHalf as string]);
    // Eleven days on. The daemon's first scheduled run (a minute after start) runs now, with
    // nothing set; the next is an hour away, and the clock stays put: the CLI's run is the one.
    clock.advance(11 * DAY);
    await send('bobNew', 'bob');
    await bob.ack(ids.bobNew as string);
  });
  after(async () => {
    await d?.stop();
  });

  it('refuses bad input by its field and bounds, and changes nothing', async () => {
    await malformed(['set', '--account', 'bob', '--days', '0'], 'days');
    await malformed(['set', '--account', 'bob', '--days', 'abc'], 'days');
    await malformed(['set', '--account', 'bob', '--days', '1.5'], 'days');
    await malformed(['set', '--account', 'bob', '--days', '36501'], 'days', { limit: 36_500 });
    await malformed(['set', '--account', 'bob', '--room', 'ops', '--days', '5'], 'account');
    await malformed(['set', '--days', '5'], 'account');
    await malformed(['set'], 'account');
    await malformed(['set', '--account', 'bob'], 'days');
    await malformed(['set', '--account', 'bob', '--days', '5', '--off'], 'days');
    await malformed(['set', '--off', '--records-days', '40'], 'days');
    await malformed(['set', '--records-days', '0'], 'records_days');
    await malformed(['set', '--records-days', '3651'], 'records_days', { limit: 3_650 });
    await malformed(['set', '--records-days', '-3'], 'records_days');
    await malformed(['set', '--records-days', '1e3'], 'records_days');
    // Checked against the registry by the daemon: an unknown name is named too.
    const unknown = await cli(['set', '--account', 'nobody', '--days', '5', '--json']);
    assert.equal(unknown.status, 1);
    assert.equal(JSON.parse(unknown.stderr).error.code, 'unknown_participant');
    const listed = await json(['list']);
    assert.deepEqual(listed.settings, [], 'nothing was set');
    assert.equal(listed.records_days, 30, 'the default');
  });

  it('sets an account and a room, turns one off, sets the age of wake records, and lists them', async () => {
    assert.match(await ok(['set', '--account', 'bob', '--days', '10']), /^bob: acknowledged mail older than 10 days is deleted\n$/);
    assert.deepEqual(await json(['set', '--room', 'ops', '--days', '10']), { room: 'ops', days: 10 });
    assert.deepEqual(await json(['set', '--account', 'alice', '--days', '1']), { account: 'alice', days: 1 });
    assert.deepEqual(await json(['set', '--account', 'alice', '--off']), { account: 'alice', days: null });
    assert.match(await ok(['set', '--account', 'alice', '--off']), /^alice: mail kept for ever\n$/);
    assert.deepEqual(await json(['set', '--records-days', '45']), { records_days: 45 });
    assert.match(await ok(['set', '--records-days', '1']), /^wake records older than 1 day are pruned\n$/);
    assert.deepEqual(await json(['set', '--records-days', '45']), { records_days: 45 });

    const listed = await json(['list']);
    assert.deepEqual(Object.keys(listed).sort(), ['last_run', 'records_days', 'settings']);
    assert.deepEqual(
      listed.settings.map((s: { account?: string; room?: string; days: number; set_at: string }) => [s.account ?? `#${s.room}`, s.days, s.set_at]),
      [
        ['bob', 10, new Date(clock.now()).toISOString()],
        ['#ops', 10, new Date(clock.now()).toISOString()],
      ],
    );
    assert.equal(listed.records_days, 45);
    const text = await ok(['list']);
    assert.match(text, /^FOR\s+DAYS\s+SET/m);
    assert.match(text, /^bob\s+10\s/m);
    assert.match(text, /^#ops\s+10\s/m);
    assert.match(text, /^wake records are kept 45 days$/m);
  });

  it('runs: deletes exactly the acknowledged old mail of the settings, prints its counts, and lists the run', async () => {
    const unread = async () => Promise.all([alice, bob, carol].map(async (c) => (await c.unread()).unread));
    const before = await unread();
    const r = await json(['run']);
    assert.deepEqual(Object.keys(r).sort(), ['by', 'errors', 'finished_at', 'messages_deleted', 'ran', 'records', 'records_days', 'records_pruned', 'started_at', 'targets']);
    assert.equal(r.ran, true);
    assert.equal(r.by, 'operator');
    assert.equal(r.messages_deleted, 2);
    assert.deepEqual(r.targets, [
      { account: 'bob', deleted: 1 },
      { room: 'ops', deleted: 1 },
    ]);
    assert.equal(r.records_days, 45, 'the age set is the one applied');
    assert.equal(r.records_pruned, 0, 'no wake record is 45 days old');
    assert.equal(r.errors, 0);

    const gone = async (c: MailClient, id: string) => assert.rejects(c.get(id), (e: unknown) => e instanceof MailError && e.code === 'unknown_message');
    await gone(bob, ids.bobAcked as string);
    await gone(bob, ids.opsAcked as string);
    await gone(carol, ids.opsAcked as string);
    for (const [c, name] of [
      [bob, 'bobUnacked'],
      [bob, 'bobNew'],
      [bob, 'opsHalf'],
      [carol, 'opsHalf'],
      [carol, 'carolAcked'],
    ] as const)
      assert.equal((await c.get(ids[name] as string)).message.message_id, ids[name], `${name} stays`);
    assert.deepEqual(await unread(), before, 'unread counts are unchanged');

    const again = await ok(['run']);
    assert.match(again, /^retention run \(operator\) \S+: 0 messages deleted, 0 wake records pruned \(older than 45 days\)$/m);
    assert.match(again, /^ {2}bob: 0$/m);
    assert.match(again, /^ {2}#ops: 0$/m);
    const listed = await json(['list']);
    assert.equal(listed.last_run.by, 'operator');
    assert.equal(listed.last_run.messages_deleted, 0);
    assert.match(await ok(['list']), /^retention run \(operator\) /m);
  });
});
