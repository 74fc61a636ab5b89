// Finding F of the hardening issue: a name used again inherited history. `admin account remove
// temp1; admin account add temp1` let the new secret read the old account's mail, and a room
// removed and added again showed its old messages to a member who was never in it. Now removal
// deletes the mail (the CLI says how many), and a new account of the name inherits nothing: no
// mail, no session mail, no sender's rights over what the old one sent, no idempotency keys, no
// wake chain (which runs programs), no timers, no listener.
// A parked wait of the removed account is refused (also when another daemon removed it), and
// records an earlier build left under the name are deleted when the name is created again.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MailError } from '../../../src/wire/errors.js';
import { MailClient } from '../../../src/client/http-client.js';
import { CLI } from '../../support/shell-agents.js';
import { startTestDaemon, type TestDaemon } from '../../support/test-daemon.js';
import { sleep } from '../helpers.js';
import { PASSWORD, call, createPerson, login, webPost } from '../../web/web-helpers.js';

const refused = async (p: Promise<unknown>, code: string, where: string): Promise<void> => {
  const e = await p.then(
    (ok) => assert.fail(`${where}: expected ${code}, got ${JSON.stringify(ok).slice(0, 300)}`),
    (x: unknown) => x,
  );
  assert.ok(e instanceof MailError && e.code === code, `${where}: expected ${code}, got ${String(e)}`);
};

describe('security matrix F: a name used again is a new participant', () => {
  let d: TestDaemon;
  let bob: MailClient;
  let tmp: string;
  const clients: MailClient[] = [];

  const cli = (args: string[]) =>
    new Promise<{ status: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [CLI, ...args, '--data-dir', d.dataDir], { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );
  const client = (token: string): MailClient => {
    const c = new MailClient({ url: d.url, token });
    clients.push(c);
    return c;
  };

  before(async () => {
    d = await startTestDaemon();
    bob = (await d.account('bob')).client;
    await bob.whoami();
    tmp = mkdtempSync(join(tmpdir(), 'm4a-f-'));
  });
  after(async () => {
    for (const c of clients) c.close();
    await d.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it("admin account remove temp1; admin account add temp1: the new secret reads none of the old account's mail and inherits nothing", async () => {
    const { client: old, secret: oldSecret } = await d.account('temp1');
    const me = await old.whoami(); // this test process is a session of temp1: session mail has a key
    const direct = await bob.send({ to: 'temp1', subject: 'old secret plan', body: 'for the old temp1 only' });
    const toSession = await bob.send({ to: me.address, subject: 'old session note', body: 'for that session' });
    const sent = await old.send({ to: 'bob', subject: 'from the old temp1', body: 'x', idempotency_key: 'k-reused' });
    await old.remind(3600, 'old reminder', true);
    const marker = join(tmp, 'woken');
    await d.operator.admin.wakeSet({
      account: 'temp1',
      steps: [{ kind: 'command', argv: [process.execPath, '-e', 'require("node:fs").writeFileSync(process.argv[1], "ran")', marker] }],
      debounce_ms: 0,
    });
    await d.operator.admin.listenerSet('temp1', 'http://127.0.0.1:9/doorbell');
    assert.equal((await old.inbox()).messages.length, 2);

    const removed = await cli(['admin', 'account', 'remove', 'temp1']);
    assert.equal(removed.status, 0, removed.stderr);
    assert.match(removed.stdout, /account temp1 removed; 2 messages delivered to it deleted/, 'the operator is told how many');
    const added = await cli(['admin', 'account', 'add', 'temp1', '--json']);
    assert.equal(added.status, 0, added.stderr);
    const fresh = client((JSON.parse(added.stdout) as { secret: string }).secret);

    await refused(client(oldSecret).whoami(), 'unauthenticated', 'the old secret');
    const again = await fresh.whoami();
    assert.equal(again.address, me.address, 'the same process, the same session id: only the mail is gone');
    const inbox = await fresh.inbox({ include_acked: true });
    assert.deepEqual(inbox.messages, [], 'no direct or session mail of the old account');
    assert.equal(inbox.unread, 0);
    assert.equal((await fresh.unread()).unread, 0);
    for (const id of [direct.message_id, toSession.message_id]) await refused(fresh.get(id), 'unknown_message', `get ${id}`);
    // What the old account sent stays the recipient's; the new one has no sender's rights over it.
    assert.equal((await bob.get(sent.message_id)).message.subject, 'from the old temp1');
    await refused(fresh.get(sent.message_id), 'not_addressed_to_you', "get of the old account's sent mail");
    await refused(fresh.receipts(sent.message_id), 'not_addressed_to_you', "receipts of the old account's sent mail");
    await refused(fresh.send({ to: 'bob', subject: 're', body: 'x', reply_to: sent.message_id }), 'not_addressed_to_you', 'a reply as its sender');
    const retry = await fresh.send({ to: 'bob', subject: 'a new message', body: 'y', idempotency_key: 'k-reused' });
    assert.equal(retry.duplicate, false, 'the old idempotency key does not answer with the old message');
    assert.notEqual(retry.message_id, sent.message_id);
    assert.deepEqual((await fresh.timers()).timers, [], 'no timers');
    assert.deepEqual(
      (await d.operator.admin.wakeList()).chains.filter((c) => c.account === 'temp1'),
      [],
      'no wake chain',
    );
    assert.equal(await d.engine.store.getListener('temp1'), null, 'no listener');

    // Mail to the new account wakes no program of the old one (its chain would have run at once).
    const mail = await bob.send({ to: 'temp1', subject: 'for the new temp1', body: 'z' });
    await sleep(600);
    assert.equal(existsSync(marker), false, 'the old wake chain did not run');
    assert.deepEqual(
      (await fresh.inbox()).messages.map((m) => m.message_id),
      [mail.message_id],
    );
  });

  /** Starts a long-poll inbox read of `c` and resolves once the daemon holds it parked. */
  type Outcome = { ok?: unknown; err?: unknown };
  const parkedWait = async (c: MailClient): Promise<{ ended: Promise<Outcome> }> => {
    const before = d.engine.parkedWaits();
    const p = c.inbox({ wait_secs: 20 }).then(
      (ok) => ({ ok }),
      (err: unknown) => ({ err }),
    );
    for (let i = 0; i < 200 && d.engine.parkedWaits() <= before; i++) await sleep(10);
    assert.ok(d.engine.parkedWaits() > before, 'the wait is parked');
    return { ended: p };
  };
  const settled = <T>(p: Promise<T>, ms: number): Promise<T | 'pending'> => Promise.race([p, sleep(ms).then(() => 'pending' as const)]);
  const isRefusal = (r: Outcome | 'pending', code: string): boolean => r !== 'pending' && r.err instanceof MailError && r.err.code === code;
  const untouched = async (fresh: MailClient, id: string): Promise<void> => {
    const inbox = await fresh.inbox();
    assert.deepEqual(
      inbox.messages.map((m) => m.message_id),
      [id],
      'the mail waits for the new account, unread',
    );
    const [rc] = (await bob.receipts(id)).receipts;
    assert.equal(rc?.surfaced_at !== null && rc?.surfaced_at !== undefined, true, 'surfaced by the read just made');
  };

  it('a parked wait of a removed account is refused at the removal, never answered with mail of the new account of the name', async () => {
    const { client: old } = await d.account('temp4');
    await old.whoami();
    const { ended: waiting } = await parkedWait(old);
    assert.equal((await cli(['admin', 'account', 'remove', 'temp4'])).status, 0);
    const added = await cli(['admin', 'account', 'add', 'temp4', '--json']);
    assert.equal(added.status, 0, added.stderr);
    const fresh = client((JSON.parse(added.stdout) as { secret: string }).secret);
    const mail = await bob.send({ to: 'temp4', subject: 'for the new temp4 only', body: 'its own secret' });
    const r = await settled(waiting, 3000);
    assert.ok(isRefusal(r, 'unauthenticated'), `the old wait is refused, got ${JSON.stringify(r).slice(0, 300)}`);
    const [rc] = (await bob.receipts(mail.message_id)).receipts;
    assert.equal(rc?.surfaced_at, null, 'nobody has read the new mail');
    await untouched(fresh, mail.message_id);
  });

  // A removal through another daemon sharing the store (no signal here): test/postgres/reused-names.test.ts,
  // with two `m4a serve` processes on one PostgreSQL store, the only store daemons share.

  it('wake chains, timers and notices an earlier build left under a name do not run for, or show to, a new account of it', async () => {
    const marker = join(tmp, 'old-build-chain');
    const store = d.engine.store;
    const at = Date.now() - 60_000;
    // The records of a removed temp6 as the build before this one left them: no incarnation.
    const chain = {
      account: 'temp6',
      lineage: null,
      steps: [{ kind: 'command', argv: [process.execPath, '-e', 'require("node:fs").writeFileSync(process.argv[1], "ran")', marker] }],
      rooms: false,
      debounceMs: 0,
    };
    await store.putRecord({ kind: 'wake_chain', id: 'temp6', value: JSON.stringify(chain), updatedAt: at });
    const timer = { id: 't-0123456789ab', account: 'temp6', lineage: null, session: null, due: Date.now() + 3_600_000, note: 'old', createdAt: at };
    await store.putRecord({ kind: 'timer', id: `temp6|${timer.id}`, value: JSON.stringify(timer), updatedAt: at });
    await store.putRecord({ kind: 'notice', id: 's:temp6/L-old', value: JSON.stringify({ noticed: 99, listening: true }), updatedAt: at });
    assert.equal(
      (await d.operator.admin.wakeList()).chains.some((c) => c.account === 'temp6'),
      false,
      'a chain of no account is not listed',
    );

    const added = await cli(['admin', 'account', 'add', 'temp6', '--json']);
    assert.equal(added.status, 0, added.stderr);
    const fresh = client((JSON.parse(added.stdout) as { secret: string }).secret);
    assert.equal(await store.getRecord('wake_chain', 'temp6'), null, 'the creation deleted the chain');
    assert.equal(await store.getRecord('timer', `temp6|${timer.id}`), null, 'and the timer');
    assert.equal(await store.getRecord('notice', 's:temp6/L-old'), null, 'and the notice');
    assert.deepEqual((await fresh.timers()).timers, []);
    assert.equal(
      (await d.operator.admin.wakeList()).chains.some((c) => c.account === 'temp6'),
      false,
      'no chain listed',
    );

    // A chain without an incarnation older than the account (as another daemon's cache may hold it).
    await store.putRecord({ kind: 'wake_chain', id: 'temp6', value: JSON.stringify(chain), updatedAt: at });
    assert.equal(
      (await d.operator.admin.wakeList()).chains.some((c) => c.account === 'temp6'),
      false,
      'an older chain is not listed',
    );
    const mail = await bob.send({ to: 'temp6', subject: 'for the new temp6', body: 'x' });
    await sleep(2600); // past the chain cache
    const again = await bob.send({ to: 'temp6', subject: 'and again', body: 'y' });
    await sleep(600);
    assert.equal(existsSync(marker), false, 'the old chain did not run');
    for (const m of [mail, again]) {
      const [rc] = (await d.operator.receipts(m.message_id)).receipts;
      assert.deepEqual(rc?.signalled, [], 'no wake attempt at all');
    }
    assert.equal((await fresh.inbox()).messages[0]?.message_id, mail.message_id);

    // The rule is about age, not form: a chain of that form set after the account was made is its own.
    await store.putRecord({ kind: 'wake_chain', id: 'temp6', value: JSON.stringify(chain), updatedAt: Date.now() });
    assert.equal(
      (await d.operator.admin.wakeList()).chains.some((c) => c.account === 'temp6'),
      true,
      'a later chain is listed',
    );
    await sleep(2600);
    const woke = await bob.send({ to: 'temp6', subject: 'now it wakes', body: 'z' });
    let tried: unknown[] = [];
    for (let i = 0; i < 100 && tried.length === 0; i++, await sleep(50)) tried = (await d.operator.receipts(woke.message_id)).receipts[0]?.signalled ?? [];
    // (The command itself declines: this test process is a live session of temp6.)
    assert.equal((tried[0] as { adapter?: string } | undefined)?.adapter, 'command', 'a chain set after the account was made is tried');
  });

  it('a person removed and added again as a human account: neither the old password nor an old browser login gets in', async () => {
    await createPerson(d, 'temp2');
    const l = await login(d.url, 'temp2');
    assert.equal((await call(d.url, l, 'me')).status, 200);
    assert.equal((await cli(['admin', 'account', 'remove', 'temp2'])).status, 0);
    assert.equal((await cli(['admin', 'account', 'add', 'temp2', '--kind', 'human'])).status, 0);
    const r = await webPost(d.url, 'login', { body: { account: 'temp2', password: PASSWORD } });
    assert.equal(r.json?.error?.code, 'bad_credentials', 'the old password is gone with the old account');
    assert.equal((await call(d.url, l, 'me')).json?.error?.code, 'unauthenticated', 'the old login ended');
  });

  it('remove and add room reviewers: a member who was never in the old room reads none of its messages', async () => {
    const alice = (await d.account('alice')).client;
    const carol = (await d.account('carol')).client;
    await d.operator.admin.roomAdd('reviewers');
    await d.operator.admin.memberAdd('reviewers', 'alice');
    await d.operator.admin.memberAdd('reviewers', 'bob');
    const first = await bob.send({ to: '#reviewers', subject: 'old review 1', body: 'a' });
    await alice.send({ to: '#reviewers', subject: 'old review 2', body: 'b', reply_to: first.message_id });
    await alice.ack(first.message_id);

    const removed = await cli(['admin', 'room', 'remove', 'reviewers']);
    assert.equal(removed.status, 0, removed.stderr);
    assert.match(removed.stdout, /room #reviewers removed; 2 messages deleted/);
    await d.operator.admin.roomAdd('reviewers');
    await d.operator.admin.memberAdd('reviewers', 'carol');
    await d.operator.admin.memberAdd('reviewers', 'alice');

    const c = await carol.inbox({ include_acked: true });
    assert.deepEqual(c.messages, [], 'the new member sees no old message');
    assert.equal(c.unread, 0);
    await refused(carol.get(first.message_id), 'unknown_message', 'get of an old room message');
    const a = await alice.inbox({ include_acked: true });
    assert.deepEqual(a.messages, [], 'an old member of the old room sees none of it in the new one');
    assert.equal(a.unread, 0, 'and no old ack is counted against the new room');
    const now = await bob.send({ to: '#reviewers', subject: 'new room', body: 'c' }).catch((e: unknown) => e);
    assert.ok(now instanceof MailError && now.code === 'permission_denied', 'bob is not a member of the new room');
    const post = await carol.send({ to: '#reviewers', subject: 'new room', body: 'c' });
    assert.deepEqual(
      (await alice.inbox()).messages.map((m) => m.message_id),
      [post.message_id],
    );
    assert.equal((await alice.unread()).unread, 1);
  });
});
