// Finding I of the hardening issue (one of the smaller ones): any account could post into any
// room. Now a room takes posts from its members only, as a mailing list does, unless the operator
// opened it (`m4a admin room add NAME --open`, `m4a admin room set NAME --open|--closed`); the
// operator may post anywhere, and an everyone-room has every account as a member.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import type { MailClient } from '../../../src/client/http-client.js';
import { CLI } from '../../support/shell-agents.js';
import { startTestDaemon, type TestDaemon } from '../../support/test-daemon.js';
import { assertEnvelope, assertUnchanged, http, storeSnapshot } from '../helpers.js';

describe('security matrix I: posting into a room', () => {
  let d: TestDaemon;
  let alice: MailClient;
  let carol: MailClient;
  let carolSecret: string;

  const cli = (args: string[]) =>
    new Promise<{ status: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [CLI, ...args, '--data-dir', d.dataDir], { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );
  const ok = async (args: string[]): Promise<string> => {
    const r = await cli(args);
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  /** carol (no member) posts; returns the refusal's code, asserting the store did not change. */
  const refusedPost = async (body: Record<string, unknown>): Promise<Record<string, unknown>> => {
    await carol.whoami();
    const before = await storeSnapshot(d.engine.store);
    const r = await http(d.url, '/mail/send', { token: carolSecret, body: JSON.stringify(body) });
    assert.equal(assertEnvelope(r, 'post by a non-member'), 'permission_denied');
    await assertUnchanged(d.engine.store, before, 'a refused post');
    return r.json.error as Record<string, unknown>;
  };

  before(async () => {
    d = await startTestDaemon();
    alice = (await d.account('alice')).client;
    ({ client: carol, secret: carolSecret } = await d.account('carol'));
    await d.operator.admin.roomAdd('reviewers');
    await d.operator.admin.memberAdd('reviewers', 'alice');
  });
  after(async () => {
    await d.stop();
  });

  it('a non-member posting into a room is refused by name and nothing is stored; a member posts', async () => {
    const e = await refusedPost({ to: '#reviewers', subject: 'let me in', body: 'x' });
    assert.equal(e.need, 'member');
    assert.equal(e.room, 'reviewers');
    const own = await alice.send({ to: '#reviewers', subject: 'review', body: 'y' });
    // Nor can a non-member reply into the room: it may not read the parent to begin with.
    const reply = await http(d.url, '/mail/send', { token: carolSecret, body: JSON.stringify({ to: '#reviewers', subject: 're', body: 'z', reply_to: own.message_id }) });
    assert.equal(assertEnvelope(reply, 'reply'), 'not_addressed_to_you');
    assert.deepEqual(
      (await alice.inbox()).messages.map((m) => m.subject),
      ['review'],
    );
  });

  it('admin room set --open lets anyone post, --closed takes it back; admin room add --open makes an open room', async () => {
    assert.match(await ok(['admin', 'room', 'set', 'reviewers', '--open']), /anyone may post/);
    const open = await carol.send({ to: '#reviewers', subject: 'from outside', body: 'x' });
    assert.ok((await alice.inbox()).messages.some((m) => m.message_id === open.message_id));
    assert.equal((await d.operator.admin.roomList()).rooms.find((r) => r.name === 'reviewers')?.open, true);
    assert.match(await ok(['admin', 'room', 'list']), /#reviewers\s+anyone\s+alice/);
    assert.match(await ok(['admin', 'room', 'set', 'reviewers', '--closed']), /members only may post/);
    await refusedPost({ to: '#reviewers', subject: 'closed again', body: 'x' });
    const neither = await cli(['admin', 'room', 'set', 'reviewers']);
    assert.notEqual(neither.status, 0, 'room set needs --open or --closed');

    assert.match(await ok(['admin', 'room', 'add', 'square', '--open']), /anyone may post/);
    await carol.send({ to: '#square', subject: 'open room', body: 'x' });
    assert.match(await ok(['admin', 'room', 'add', 'quiet']), /members only may post/);
    await refusedPost({ to: '#quiet', subject: 'x', body: 'x' });
  });

  it('every account posts into an everyone-room, and the operator into any room', async () => {
    await d.operator.admin.roomAdd('all', { everyone: true });
    const late = (await d.account('late')).client;
    await late.send({ to: '#all', subject: 'hello all', body: 'x' });
    await d.operator.send({ to: '#quiet', subject: 'from the operator', body: 'x' });
  });
});
