// Contact policies on a real daemon: open, contacts_only and block_all at their boundaries (who is
// refused, who always gets through), a refusal stores nothing, and contact requests: the held mail
// delivered once on acceptance (also under concurrent accepts), returned once on a decline, the
// limit of held messages, a declined pair refused, a removed sender, tasks, and who sets a policy.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { MailError } from '../src/wire/errors.js';
import { HELD_PER_REQUEST_MAX } from '../src/wire/contacts.js';
import type { MailClient } from '../src/client/http-client.js';
import { raw, startTestDaemon, STORE_KINDS, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

const refusedWith =
  (code: string, details: Record<string, unknown> = {}) =>
  (err: unknown): boolean => {
    assert.ok(err instanceof MailError, String(err));
    assert.equal(err.code, code, err.message);
    for (const [k, v] of Object.entries(details)) assert.deepEqual(err.details[k], v, k);
    return true;
  };

const mail = (to: string, subject: string, body = `about ${subject}`) => ({ to, subject, body });
const account = (from: string): string => from.split('/')[0]!;
const all = async (c: MailClient) => (await c.inbox({ include_acked: true, limit: 200 })).messages;

for (const storeKind of STORE_KINDS) {
  describe(`contact policies (${storeKind} store)`, () => {
    let d: TestDaemon;
    const clock = new ManualClock(Date.now());
    const c: Record<string, MailClient> = {};
    let n = 0;
    /** A fresh account per test, so tests share a daemon without sharing mailboxes. */
    const fresh = async (name: string, kind?: 'agent' | 'human'): Promise<[string, MailClient]> => {
      const id = `${name}${++n}`;
      c[id] = (await d.account(id, kind ? { kind } : {})).client;
      return [id, c[id]];
    };
    const head = () => d.store.headSeq();

    before(async () => {
      d = await startTestDaemon({ storeKind, clock });
    });
    after(async () => {
      await d.stop();
    });

    it('contacts_only refuses a stranger and stores nothing; admits a contact, a room-mate, a teammate, a person, a timer and answers to its own mail', async () => {
      const [bob, b] = await fresh('bob');
      const [carol, cc] = await fresh('carol');
      const [dave, dd] = await fresh('dave');
      const [erin, ee] = await fresh('erin');
      const [frank, ff] = await fresh('frank');
      const [, pp] = await fresh('pat', 'human');
      assert.deepEqual(await b.contacts.setPolicy('contacts_only'), { account: bob, policy: 'contacts_only' });

      const before = await head();
      await assert.rejects(cc.send(mail(bob, 'hello')), refusedWith('contact_refused', { recipient: bob, policy: 'contacts_only' }));
      assert.equal(await head(), before, 'a refused send stores nothing');

      // An everyone-room is shared by all: it makes nobody known.
      await d.operator.admin.roomAdd(`all${n}`, { everyone: true });
      await assert.rejects(cc.send(mail(bob, 'via everyone')), refusedWith('contact_refused'));

      await b.contacts.add(dave);
      await dd.send(mail(bob, 'from a contact'));
      await d.operator.admin.roomAdd(`ops${n}`);
      await d.operator.admin.memberAdd(`ops${n}`, bob);
      await d.operator.admin.memberAdd(`ops${n}`, erin);
      await ee.send(mail(bob, 'from a room-mate'));
      await d.store.addRoom(`squad${n}`, clock.now(), { team: true });
      await d.store.addMember(`squad${n}`, bob);
      await d.store.addMember(`squad${n}`, frank);
      await ff.send(mail(bob, 'from a teammate'));
      await pp.send(mail(bob, 'from a person'));
      // The stranger may answer what bob sent it.
      const sent = await b.send(mail(carol, 'a question'));
      await cc.reply({ message_id: sent.message_id, body: 'an answer' });
      await b.remind(60, 'look again', true);
      clock.advance(61_000);
      await until('the reminder', async () => (await all(b)).some((m) => m.from === 'mailbox'), 5_000);

      const subjects = (await all(b)).map((m) => m.subject);
      assert.deepEqual(subjects, ['from a contact', 'from a room-mate', 'from a teammate', 'from a person', 'Re: a question', 'Reminder: look again']);
      // Removing the contact ends it.
      await b.contacts.remove(dave);
      await assert.rejects(dd.send(mail(bob, 'again')), refusedWith('contact_refused'));
    });

    it('block_all admits only people, timers and answers to its own mail; open admits anyone again', async () => {
      const [bob, b] = await fresh('bob');
      const [carol, cc] = await fresh('carol');
      const [dave, dd] = await fresh('dave');
      const [, pp] = await fresh('pat', 'human');
      await b.contacts.add(dave);
      await d.operator.admin.roomAdd(`ops${n}`);
      await d.operator.admin.memberAdd(`ops${n}`, bob);
      await d.operator.admin.memberAdd(`ops${n}`, carol);
      await b.contacts.setPolicy('block_all');
      const before = await head();
      await assert.rejects(dd.send(mail(bob, 'from a contact')), refusedWith('contact_refused', { recipient: bob, policy: 'block_all' }));
      await assert.rejects(cc.send(mail(bob, 'from a room-mate')), refusedWith('contact_refused', { policy: 'block_all' }));
      // Nothing is held under block_all.
      await assert.rejects(cc.send({ ...mail(bob, 'asking'), request_contact: true }), refusedWith('contact_refused', { policy: 'block_all' }));
      assert.equal(await head(), before);
      // Room mail is never subject to a policy.
      await cc.send(mail(`#ops${n}`, 'to the room'));
      await pp.send(mail(bob, 'from a person'));
      const sent = await b.send(mail(carol, 'a question'));
      await cc.reply({ message_id: sent.message_id, body: 'an answer' });
      await b.remind(30, 'break', true);
      clock.advance(31_000);
      await until('the reminder', async () => (await all(b)).some((m) => m.from === 'mailbox'), 5_000);
      assert.deepEqual(
        (await all(b)).map((m) => m.subject),
        ['to the room', 'from a person', 'Re: a question', 'Reminder: break'],
      );
      await b.contacts.setPolicy('open');
      await dd.send(mail(bob, 'open again'));
    });

    it('a contact request: one request mail, the held messages delivered once on acceptance, in order, with the ids the sender was told', async () => {
      const [bob, b] = await fresh('bob');
      const [carol, cc] = await fresh('carol');
      await b.contacts.setPolicy('contacts_only');
      const before = await head();
      const first = await cc.send({ ...mail(bob, 'first'), request_contact: true });
      assert.deepEqual(first.held, { recipient: bob, policy: 'contacts_only' });
      assert.equal(first.duplicate, false);
      const second = await cc.send({ ...mail(bob, 'second', 'line one\nline two'), request_contact: true, idempotency_key: 'k2' });
      assert.ok(second.held);
      // A retry with the same key is the same held message.
      const retry = await cc.send({ ...mail(bob, 'second', 'line one\nline two'), request_contact: true, idempotency_key: 'k2' });
      assert.equal(retry.message_id, second.message_id);
      assert.equal(retry.duplicate, true);
      await assert.rejects(cc.send({ ...mail(bob, 'other'), request_contact: true, idempotency_key: 'k2' }), refusedWith('idempotency_conflict'));
      assert.equal(await head(), before + 1, 'only the request mail is stored');

      const asked = await all(b);
      assert.equal(asked.length, 1);
      assert.equal(account(asked[0]!.from), carol, 'the request comes from the sender');
      assert.equal(asked[0]!.subject, `Contact request from ${carol}`);
      assert.match(asked[0]!.body!, /"first"/);
      assert.match(asked[0]!.body!, new RegExp(`m4a contacts accept ${carol}`));
      assert.match(asked[0]!.body!, new RegExp(`m4a contacts decline ${carol}`));

      const mine = await b.contacts.list();
      assert.equal(mine.policy, 'contacts_only');
      assert.deepEqual(
        mine.incoming.map((r) => [r.account, r.held, r.state]),
        [[carol, 2, 'pending']],
      );
      assert.deepEqual(
        (await cc.contacts.list()).outgoing.map((r) => [r.account, r.held, r.state]),
        [[bob, 2, 'pending']],
      );

      const accepted = await b.contacts.accept(carol);
      assert.deepEqual(accepted.delivered, [first.message_id, second.message_id]);
      const got = (await all(b)).slice(1);
      assert.deepEqual(
        got.map((m) => [m.message_id, account(m.from), m.subject, m.body]),
        [
          [first.message_id, carol, 'first', 'about first'],
          [second.message_id, carol, 'second', 'line one\nline two'],
        ],
      );
      assert.deepEqual((await b.contacts.accept(carol)).delivered, [], 'accepting again delivers nothing');
      assert.equal(await head(), before + 3);
      const now = await b.contacts.list();
      assert.deepEqual(
        now.contacts.map((x) => x.account),
        [carol],
      );
      assert.deepEqual(now.incoming, []);
      assert.deepEqual((await cc.contacts.list()).outgoing, []);
      await cc.send(mail(bob, 'as a contact'));
    });

    it('a declined request returns each held message once, from mailbox; declining again returns nothing; the pair is refused until added', async () => {
      const [bob, b] = await fresh('bob');
      const [carol, cc] = await fresh('carol');
      await b.contacts.setPolicy('contacts_only');
      await cc.send({ ...mail(bob, 'one', 'please\nlook'), request_contact: true });
      await cc.send({ ...mail(bob, 'two'), request_contact: true });
      const before = await head();
      assert.deepEqual(await b.contacts.decline(carol), { ok: true, returned: 2 });
      const back = (await all(cc)).filter((m) => m.from === 'mailbox');
      assert.deepEqual(
        back.map((m) => m.subject),
        [`Your message to ${bob} was declined: one`, `Your message to ${bob} was declined: two`],
      );
      assert.match(back[0]!.body!, /> please\n> look/);
      assert.deepEqual(await b.contacts.decline(carol), { ok: true, returned: 0 });
      assert.equal(await head(), before + 2, 'returned once; the second decline sends nothing');
      assert.deepEqual(
        (await b.contacts.list()).incoming.map((r) => [r.account, r.held, r.state]),
        [[carol, 0, 'declined']],
      );
      await assert.rejects(
        cc.send({ ...mail(bob, 'three'), request_contact: true }),
        refusedWith('contact_refused', { recipient: bob, policy: 'contacts_only', request: 'declined' }),
      );
      assert.equal(await head(), before + 2);
      await b.contacts.add(carol);
      await cc.send(mail(bob, 'after all'));
      assert.deepEqual((await b.contacts.list()).incoming, []);
    });

    it('concurrent accepts deliver each held message exactly once', async () => {
      const [bob, b] = await fresh('bob');
      const [carol, cc] = await fresh('carol');
      await b.contacts.setPolicy('contacts_only');
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await cc.send({ ...mail(bob, `m${i}`), request_contact: true })).message_id);
      const before = await head();
      // Over HTTP and straight into the engine at once, so the accepts interleave at every await.
      const me = { account: (await d.store.getAccount(bob))!, session: null };
      const answers = await Promise.all([
        ...Array.from({ length: 3 }, () => b.contacts.accept(carol)),
        ...Array.from({ length: 3 }, () => d.engine.contacts.accept(me, { account: carol })),
      ]);
      assert.deepEqual(answers.flatMap((a) => a.delivered).sort(), [...ids].sort());
      assert.equal(await head(), before + 5);
      const got = (await all(b)).filter((m) => ids.includes(m.message_id));
      assert.deepEqual(
        got.map((m) => m.subject),
        ['m0', 'm1', 'm2', 'm3', 'm4'],
      );
    });

    it('a held message claimed by a daemon that died is taken over once its claim is stale, and delivered once', async () => {
      const [bob, b] = await fresh('bob');
      const [carol, cc] = await fresh('carol');
      await b.contacts.setPolicy('contacts_only');
      const held = await cc.send({ ...mail(bob, 'stuck'), request_contact: true });
      const [row] = await d.store.listRecords('contact_held', `${bob}|${carol}|`, 10);
      assert.ok(row);
      // Another daemon claimed it and has not finished: it is not delivered twice.
      await d.store.insertRecords([{ kind: 'contact_claim', id: row.id, value: '{}', updatedAt: clock.now() }]);
      assert.deepEqual((await b.contacts.accept(carol)).delivered, []);
      assert.deepEqual(
        (await b.contacts.list()).incoming.map((r) => [r.account, r.held]),
        [[carol, 1]],
        'still held, so the request stays listed',
      );
      clock.advance(6 * 60_000);
      assert.deepEqual((await b.contacts.accept(carol)).delivered, [held.message_id]);
      assert.deepEqual((await b.contacts.list()).incoming, []);
      assert.deepEqual((await cc.contacts.list()).outgoing, []);
      assert.deepEqual(
        (await all(b)).filter((m) => m.subject === 'stuck').map((m) => m.message_id),
        [held.message_id],
      );
      assert.deepEqual(await d.store.listRecords('contact_claim', `${bob}|`, 10), []);
    });

    it(`holds at most ${HELD_PER_REQUEST_MAX} messages per request`, async () => {
      const [bob, b] = await fresh('bob');
      const [, cc] = await fresh('carol');
      await b.contacts.setPolicy('contacts_only');
      for (let i = 0; i < HELD_PER_REQUEST_MAX; i++) await cc.send({ ...mail(bob, `m${i}`), request_contact: true });
      const before = await head();
      await assert.rejects(cc.send({ ...mail(bob, 'one more'), request_contact: true }), refusedWith('rate_limited', { limit: HELD_PER_REQUEST_MAX }));
      assert.equal(await head(), before);
      assert.equal((await b.contacts.list()).incoming[0]!.held, HELD_PER_REQUEST_MAX);
    });

    it('a sender removed (its name used again) before the accept gets nothing delivered', async () => {
      const [bob, b] = await fresh('bob');
      const [carol, cc] = await fresh('carol');
      await b.contacts.setPolicy('contacts_only');
      await cc.send({ ...mail(bob, 'old'), request_contact: true });
      await d.operator.admin.accountRemove(carol);
      assert.deepEqual((await b.contacts.list()).incoming, [], 'the request went with its sender');
      const again = (await d.account(carol)).client;
      assert.deepEqual((await b.contacts.accept(carol)).delivered, []);
      assert.ok(!(await all(b)).some((m) => m.subject === 'old'));
      assert.deepEqual((await again.contacts.list()).outgoing, []);
      again.close();
    });

    it('a removed recipient takes its requests with it', async () => {
      const [bob, b] = await fresh('bob');
      const [, cc] = await fresh('carol');
      await b.contacts.setPolicy('contacts_only');
      await cc.send({ ...mail(bob, 'old'), request_contact: true });
      await d.operator.admin.accountRemove(bob);
      assert.deepEqual((await cc.contacts.list()).outgoing, []);
      for (const kind of ['contact_request', 'contact_asked', 'contact_held']) assert.deepEqual(await d.store.listRecords(kind, `${bob}|`, 10), [], kind);
    });

    it('tasks follow the policy: a refused task is not created; an assignee answers its requester under block_all', async () => {
      const [bob, b] = await fresh('bob');
      const [carol, cc] = await fresh('carol');
      await b.contacts.setPolicy('contacts_only');
      const before = await head();
      await assert.rejects(cc.task.create({ to: bob, title: 'do it' }), refusedWith('contact_refused', { recipient: bob }));
      assert.equal(await head(), before);
      assert.deepEqual((await cc.task.list({ role: 'requested' })).tasks, []);
      // The assignee's answers to a task its requester handed it always get through.
      const t = await b.task.create({ to: carol, title: 'for carol' });
      await b.contacts.setPolicy('block_all');
      await cc.task.update({ task_id: t.task_id, state: 'working' });
      // A task that exists keeps its parties talking: its requester cancels it after the assignee
      // shut its door, and the change and its mail both land (never the task changed, the mail refused).
      await b.contacts.setPolicy('open');
      const mine = await cc.task.create({ to: bob, title: 'cancel me later' });
      await b.contacts.setPolicy('block_all');
      const at = await head();
      assert.equal((await cc.task.cancel({ task_id: mine.task_id })).state, 'canceled');
      assert.equal(await head(), at + 1, 'the cancel is one message in the task thread');
      assert.equal((await b.task.get({ task_id: mine.task_id })).state, 'canceled');
    });

    it('the operator sets any policy; an agent only its own; mailbox stays open', async () => {
      const [bob, b] = await fresh('bob');
      const [carol, cc] = await fresh('carol');
      assert.deepEqual(await d.operator.admin.policySet(bob, 'block_all'), { account: bob, policy: 'block_all' });
      assert.equal((await b.contacts.list()).policy, 'block_all');
      await assert.rejects(cc.send(mail(bob, 'hi')), refusedWith('contact_refused', { policy: 'block_all' }));
      await assert.rejects(d.operator.admin.policySet('nobody', 'open'), refusedWith('unknown_participant', { participant: 'nobody' }));
      await assert.rejects(d.operator.admin.policySet('mailbox', 'block_all'), refusedWith('malformed', { field: 'account', reason: 'reserved' }));
      // An agent's credential is no operator's: the admin route refuses it, and the engine too.
      const r = await raw(d.url, '/admin/account/policy', { token: (await d.account(`zed${n}`)).secret, body: JSON.stringify({ account: bob, policy: 'open' }) });
      assert.ok(r.status === 401 || r.status === 403, String(r.status));
      const carolRec = (await d.store.getAccount(carol))!;
      await assert.rejects(
        d.engine.contacts.adminSetPolicy({ account: carolRec, session: null }, { account: bob, policy: 'open' }),
        refusedWith('permission_denied', { need: 'operator' }),
      );
      assert.equal((await d.store.getAccount(bob))!.contactPolicy, 'block_all');
      await assert.rejects(b.contacts.add(bob), refusedWith('malformed', { field: 'account', reason: 'self' }));
      await assert.rejects(b.contacts.add('nobody'), refusedWith('unknown_participant'));
    });
  });
}
