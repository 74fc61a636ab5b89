// The mail rules through the HTTP door on a running daemon, once per store.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MailError } from '../src/wire/errors.js';
import type { MailClient } from '../src/client/http-client.js';
import { STORE_KINDS, startTestDaemon, type TestDaemon } from './support/test-daemon.js';

async function refused(p: Promise<unknown>, code: string, details: Record<string, unknown> = {}): Promise<MailError> {
  const err = await p.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof MailError, `expected a MailError, got ${String(err)}`);
  assert.equal(err.code, code, err.message);
  for (const [k, v] of Object.entries(details)) assert.deepEqual(err.details[k], v, `detail ${k}`);
  return err;
}

for (const kind of STORE_KINDS) {
  describe(`mail over HTTP (${kind} store)`, () => {
    let d: TestDaemon;
    let claude: MailClient;
    let codex: MailClient;
    let gemini: MailClient;

    before(async () => {
      d = await startTestDaemon({ storeKind: kind });
      claude = (await d.account('claude', { urgent: true })).client;
      codex = (await d.account('codex')).client;
      gemini = (await d.account('gemini')).client;
    });
    after(() => d.stop());

    it('sends, threads, reads, acknowledges', async () => {
      const me = await claude.whoami();
      assert.match(me.address, /^claude\/s-[0-9a-f]{64}$/);
      // Answers print a session short: account/slug (the test process runs in the repository).
      const printed = `claude/${me.slug}`;
      const s = await claude.send({ to: 'codex', subject: 'review please', body: 'The diff is on branch fix-42' });
      assert.equal(s.from, printed, "the sender is the caller's own session, printed short");
      assert.equal(s.thread_id, s.message_id);
      assert.equal(s.to, 'codex');
      const page = await codex.inbox();
      const got = page.messages.find((m) => m.message_id === s.message_id);
      assert.ok(got);
      assert.equal(got.body, 'The diff is on branch fix-42');
      assert.equal(got.from, printed);
      assert.equal(got.acked_at, undefined, 'no acked_at until acknowledged');
      const before = (await codex.unread()).unread;
      const r = await codex.send({ to: s.from, subject: 'Re: review please', body: 'LGTM', reply_to: s.message_id });
      assert.equal(r.thread_id, s.message_id, 'a reply joins the thread of its parent');
      const a1 = await codex.ack(s.message_id);
      const a2 = await codex.ack(s.message_id);
      assert.deepEqual(a2.acked, a1.acked, 'a second ack returns the first unchanged');
      assert.equal((await codex.unread()).unread, before - 1);
      const thread = await claude.get(s.message_id, true);
      assert.deepEqual(
        thread.thread?.map((m) => m.message_id),
        [s.message_id, r.message_id],
      );
      assert.equal((await claude.inbox()).messages.find((m) => m.message_id === r.message_id)?.reply_to, s.message_id);
    });

    it('lean items leave out what is default or implied; verbose gives every field', async () => {
      const me = await claude.whoami();
      const s = await claude.send({ to: 'codex', subject: 'lean', body: 'b' });
      const lean = (await codex.inbox({ limit: 256 })).messages.find((m) => m.message_id === s.message_id)!;
      assert.deepEqual(Object.keys(lean).sort(), ['body', 'created_at', 'from', 'message_id', 'subject'], JSON.stringify(lean));
      assert.match(lean.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, 'second precision');
      const r = await codex.send({ to: lean.from, subject: 'Re: lean', body: 'r', reply_to: s.message_id, priority: 'normal' });
      assert.equal(r.to, `claude/${me.slug}`, 'the printed sender is accepted back as to');
      const reply = (await claude.inbox({ limit: 256 })).messages.find((m) => m.message_id === r.message_id)!;
      assert.equal(reply.thread_id, s.message_id, 'a reply names its thread');
      assert.equal(reply.to, `claude/${me.slug}`, 'session mail names its session; account mail leaves to out');
      await codex.ack(s.message_id);
      const acked = (await codex.get(s.message_id)).message;
      assert.match(acked.acked_at ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(acked.from_session, me.session, 'get names the sender session in full');
      const got = (await codex.get(r.message_id)).message;
      assert.equal(got.from, 'codex/' + (await codex.whoami()).slug);
      const verbose = (await codex.inbox({ limit: 256, include_acked: true, verbose: true })).messages.find((m) => m.message_id === s.message_id)!;
      assert.deepEqual(
        { ...verbose, created_at: 'x', acked_at: 'y' },
        {
          message_id: s.message_id,
          thread_id: s.message_id,
          from: `claude/${me.slug}`,
          from_session: me.session,
          from_kind: 'agent',
          to: 'codex',
          subject: 'lean',
          priority: 'normal',
          created_at: 'x',
          acked_at: 'y',
          body: 'b',
        },
      );
      assert.match(verbose.created_at, /\.\d{3}Z$/, 'verbose: to the millisecond');
      const urgentHuman = await claude.send({ to: 'codex', subject: 'u', body: '', priority: 'urgent' });
      assert.equal((await codex.get(urgentHuman.message_id)).message.priority, 'urgent');
    });

    it('keeps inbox a peek and pages with an opaque cursor, oldest first', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await claude.send({ to: 'gemini', subject: `n${i}`, body: String(i) })).message_id);
      const p1 = await gemini.inbox({ limit: 2 });
      assert.deepEqual(
        p1.messages.map((m) => m.message_id),
        ids.slice(0, 2),
      );
      assert.deepEqual(
        (await gemini.inbox({ limit: 2 })).messages.map((m) => m.message_id),
        ids.slice(0, 2),
        'reading changes nothing',
      );
      const p2 = await gemini.inbox({ limit: 2, after: p1.next_cursor! });
      assert.deepEqual(
        p2.messages.map((m) => m.message_id),
        ids.slice(2, 4),
      );
      const p3 = await gemini.inbox({ after: p2.next_cursor! });
      assert.deepEqual(
        p3.messages.map((m) => m.message_id),
        ids.slice(4),
      );
      assert.deepEqual((await gemini.inbox({ after: p3.next_cursor! })).messages, []);
      await gemini.ack(ids);
      assert.deepEqual((await gemini.inbox()).messages, [], 'nothing unacknowledged: empty page');
      assert.equal((await gemini.inbox({ include_acked: true })).messages.length, 5);
      const noBodies = await gemini.inbox({ include_acked: true, include_bodies: false, limit: 1 });
      assert.equal(noBodies.messages[0]?.body, undefined);
      await refused(gemini.inbox({ after: 'not-a-cursor' }), 'malformed', { field: 'after' });
    });

    it('stores refs, correlation and priority verbatim; urgent needs permission', async () => {
      const refs = [
        { kind: 'git', locator: 'branch fix-42', digest: 'ab'.repeat(20) },
        { kind: 'file', locator: 'src/a.ts:10' },
      ];
      const s = await claude.send({ to: 'codex', subject: 'refs', body: '', refs, correlation: 'task-7', priority: 'urgent' });
      const m = (await codex.get(s.message_id)).message;
      assert.deepEqual(m.refs, refs);
      assert.equal(m.correlation, 'task-7');
      assert.equal(m.priority, 'urgent');
      await refused(codex.send({ to: 'claude', subject: 'x', body: '', priority: 'urgent' }), 'permission_denied', { need: 'urgent' });
    });

    it('refuses unknown recipients and messages by name', async () => {
      await refused(claude.send({ to: 'nobody', subject: 'x', body: '' }), 'unknown_participant', { participant: 'nobody' });
      await refused(claude.send({ to: '#nowhere', subject: 'x', body: '' }), 'unknown_room', { room: 'nowhere' });
      await refused(claude.send({ to: `codex/s-${'0'.repeat(64)}`, subject: 'x', body: '' }), 'unknown_session');
      await refused(claude.send({ to: 'codex', subject: 'x', body: '', reply_to: 'm-doesnotexist' }), 'unknown_message');
      await refused(claude.get('m-doesnotexist'), 'unknown_message');
      await refused(claude.ack('m-doesnotexist'), 'unknown_message');
      const s = await codex.send({ to: 'gemini', subject: 'private', body: 'between us' });
      await refused(claude.get(s.message_id), 'not_addressed_to_you');
      await refused(claude.ack(s.message_id), 'not_addressed_to_you');
      await refused(claude.send({ to: 'codex', subject: 'x', body: '', reply_to: s.message_id }), 'not_addressed_to_you');
      // A refused ack of several ids acknowledges none of them.
      const mine = await codex.send({ to: 'claude', subject: 'ok', body: '' });
      await refused(claude.ack([mine.message_id, s.message_id]), 'not_addressed_to_you');
      assert.equal((await claude.get(mine.message_id)).message.acked_at, undefined);
    });

    it('deduplicates by idempotency key per account and flags conflicts', async () => {
      const a = await claude.send({ to: 'codex', subject: 'once', body: 'b', idempotency_key: 'k-1' });
      const b = await claude.send({ to: 'codex', subject: 'once', body: 'b', idempotency_key: 'k-1' });
      assert.equal(b.message_id, a.message_id);
      assert.equal(b.duplicate, true);
      await refused(claude.send({ to: 'codex', subject: 'once', body: 'changed', idempotency_key: 'k-1' }), 'idempotency_conflict', { message_id: a.message_id });
      await refused(claude.send({ to: 'gemini', subject: 'once', body: 'b', idempotency_key: 'k-1' }), 'idempotency_conflict');
      const other = await codex.send({ to: 'claude', subject: 'once', body: 'b', idempotency_key: 'k-1' });
      assert.notEqual(other.message_id, a.message_id, 'keys are per sending account');
      const n1 = await claude.send({ to: 'codex', subject: 'twice', body: 'same' });
      const n2 = await claude.send({ to: 'codex', subject: 'twice', body: 'same' });
      assert.notEqual(n1.message_id, n2.message_id, 'without a key, the same text twice is two messages');
      const all = (await codex.inbox({ include_acked: true, limit: 256 })).messages.filter((m) => m.subject === 'once');
      assert.equal(all.length, 1);
    });

    it('delivers rooms to current members only, with the whole history', async () => {
      await d.operator.admin.roomAdd('reviewers');
      await d.operator.admin.memberAdd('reviewers', 'claude'); // members only may post
      const s1 = await claude.send({ to: '#reviewers', subject: 'before joining', body: '' });
      await d.operator.admin.memberAdd('reviewers', 'codex');
      const seen = (await codex.inbox({ include_acked: true, limit: 256 })).messages.map((m) => m.message_id);
      assert.ok(seen.includes(s1.message_id), "a current member reads the room's whole history");
      assert.ok((await codex.whoami()).rooms.includes('#reviewers'));
      await refused(gemini.get(s1.message_id), 'not_addressed_to_you');
      const unreadIn = (await codex.unread()).unread;
      await codex.ack(s1.message_id);
      assert.equal((await codex.unread()).unread, unreadIn - 1);
      await d.operator.admin.memberRemove('reviewers', 'codex');
      const after = (await codex.inbox({ include_acked: true, limit: 256 })).messages.map((m) => m.message_id);
      assert.ok(!after.includes(s1.message_id), 'a former member reads none of it');
      await refused(codex.get(s1.message_id), 'not_addressed_to_you');
      const dir = await codex.directory({ detail: true, include_ended: true });
      assert.deepEqual(
        dir.rooms.find((r) => r.name === 'reviewers'),
        { name: 'reviewers', member: false },
      );
    });

    it('declares status and lists the directory without secrets', async () => {
      const st = await claude.status({ working_on: 'the parser', role: 'reviewer' });
      assert.deepEqual(st.card.declared, { working_on: 'the parser', role: 'reviewer' });
      assert.deepEqual((await claude.whoami()).card.declared, { working_on: 'the parser', role: 'reviewer' });
      const dir = await codex.directory({ detail: true, include_ended: true });
      const c = dir.accounts.find((a) => a.id === 'claude');
      assert.ok(c);
      const sess = c.sessions.find((s) => s.address === st.address);
      assert.ok(sess?.live);
      assert.equal(sess.card.declared.working_on, 'the parser');
      assert.equal(sess.card.attested?.pid, process.pid);
      const text = JSON.stringify(dir);
      assert.ok(!/digest|secret/i.test(text), 'no digest or secret in the directory');
    });
  });
}
