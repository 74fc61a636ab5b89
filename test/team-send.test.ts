// team: and leader: mail on a real daemon (each store kind): one copy per other member (or leader) in its own inbox,
// acknowledged per account; members only; no_recipients; idempotent retries; replies; expansion
// while the operator removes and re-adds a member mid-send; team reminders, each independent.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MailClient } from '../src/client/http-client.js';
import { ManualClock } from '../src/engine/clock.js';
import { STORE_KINDS, startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { refused } from './support/refused.js';

const MIN = 60_000;

for (const storeKind of STORE_KINDS)
  describe(`teams: team: and leader: mail, team reminders (${storeKind})`, () => {
    let d: TestDaemon;
    let op: MailClient;
    const clock = new ManualClock();
    const c: Record<string, MailClient> = {};
    before(async () => {
      d = await startTestDaemon({ storeKind, clock });
      op = d.operator;
      for (const id of ['alice', 'bob', 'carol', 'dan', 'solo']) c[id] = (await d.account(id)).client;
      await op.admin.teamCreate({ name: 'core', members: ['alice', 'bob', 'carol'] });
      await op.admin.teamLeaderAdd('core', 'alice');
      await op.admin.teamCreate({ name: 'one', members: ['solo'] });
      await op.admin.roomAdd('plain');
    });
    after(() => d.stop());

    const copiesOf = async (who: string, subject: string) =>
      (await c[who]!.inbox({ include_acked: true, limit: 256 })).messages.filter((m) => m.subject === subject && /^(team|leader):/.test(m.to ?? ''));

    it('team: stores one copy per other member, in its own inbox, one thread, acknowledged per account; the sender gets none', async () => {
      const r = await c.alice!.send({ to: 'team:core', subject: 'standup', body: 'at ten' });
      assert.equal(r.to, 'team:core');
      assert.deepEqual(
        r.expanded!.map((x) => x.to),
        ['bob', 'carol'],
      );
      assert.equal(r.message_id, r.expanded![0]!.message_id);
      assert.equal(r.duplicate, false);
      const [b] = await copiesOf('bob', 'standup');
      const [cc] = await copiesOf('carol', 'standup');
      assert.equal(b!.message_id, r.expanded![0]!.message_id);
      assert.equal(cc!.message_id, r.expanded![1]!.message_id);
      assert.equal(b!.to, 'team:core', 'each copy keeps the address it was written to');
      assert.equal(cc!.thread_id, b!.message_id, 'the copies share the first one’s thread');
      assert.deepEqual(await copiesOf('alice', 'standup'), []);
      await c.bob!.ack(b!.message_id);
      assert.ok((await copiesOf('bob', 'standup'))[0]!.acked_at, 'bob acknowledged his');
      assert.equal((await copiesOf('carol', 'standup'))[0]!.acked_at, undefined, 'carol’s is still unread');
      assert.ok((await c.carol!.unread()).unread >= 1);
    });

    it('leader: reaches the other active leaders; only members may use either form', async () => {
      const r = await c.bob!.send({ to: 'leader:core', subject: 'to the lead', body: 'x' });
      assert.deepEqual(
        r.expanded!.map((x) => x.to),
        ['alice'],
      );
      assert.equal((await copiesOf('alice', 'to the lead'))[0]!.to, 'leader:core');
      assert.deepEqual(await copiesOf('carol', 'to the lead'), []);
      for (const to of ['team:core', 'leader:core']) await refused(c.dan!.send({ to, subject: 's', body: 'b' }), 'not_team_member', { team: 'core' });
      await refused(op.send({ to: 'team:core', subject: 's', body: 'b' }), 'not_team_member', { team: 'core' });
      await refused(c.bob!.send({ to: 'team:plain', subject: 's', body: 'b' }), 'unknown_team', { team: 'plain' });
      await refused(c.bob!.send({ to: 'leader:nope', subject: 's', body: 'b' }), 'unknown_team', { team: 'nope' });
    });

    it('no_recipients: a team of one, and leader: from the only leader', async () => {
      await refused(c.solo!.send({ to: 'team:one', subject: 's', body: 'b' }), 'no_recipients', { team: 'one' });
      await refused(c.solo!.send({ to: 'leader:one', subject: 's', body: 'b' }), 'no_recipients', { team: 'one' });
      await refused(c.alice!.send({ to: 'leader:core', subject: 's', body: 'b' }), 'no_recipients', { team: 'core' });
      assert.deepEqual(await copiesOf('bob', 's'), [], 'nothing stored');
    });

    it('a retry with the same key returns the same copies and stores nothing new, even after the roster changed', async () => {
      const req = { to: 'team:core', subject: 'once', body: 'b', idempotency_key: 'k-once' };
      const first = await c.alice!.send(req);
      await op.admin.teamMemberAdd('core', 'dan');
      const again = await c.alice!.send(req);
      assert.equal(again.duplicate, true);
      assert.deepEqual(again.expanded, first.expanded);
      assert.equal(again.message_id, first.message_id);
      assert.deepEqual(await copiesOf('dan', 'once'), [], 'the new member got nothing from the retry');
      assert.equal((await copiesOf('bob', 'once')).length, 1);
      await refused(c.alice!.send({ ...req, body: 'other' }), 'idempotency_conflict', { message_id: first.message_id });
      await op.admin.teamMemberRemove('core', 'dan');
    });

    it('a member’s reply goes to the sender; the sender’s follow-up to its copy re-expands', async () => {
      const r = await c.alice!.send({ to: 'team:core', subject: 'plan', body: 'v1' });
      const ans = await c.carol!.reply({ message_id: r.expanded![1]!.message_id, body: 'ok' });
      assert.match(ans.to, /^alice(\/|$)/, 'to the sender (its session)');
      assert.equal(ans.expanded, undefined);
      assert.deepEqual(await copiesOf('bob', 'Re: plan'), [], 'a member’s answer is not team mail');
      const follow = await c.alice!.reply({ message_id: r.message_id, body: 'v2' });
      assert.equal(follow.to, 'team:core');
      assert.deepEqual(
        follow.expanded!.map((x) => x.to),
        ['bob', 'carol'],
      );
      assert.equal(follow.thread_id, r.thread_id, 'in the same thread');
    });

    it('expansion while a member is removed and re-added mid-send: each answer lists exactly the copies stored, never the sender', async () => {
      const subject = 'race';
      const sends: Promise<Awaited<ReturnType<MailClient['send']>>>[] = [];
      const churn = (async () => {
        for (let i = 0; i < 5; i++) {
          await op.admin.teamMemberRemove('core', 'carol');
          await op.admin.teamMemberAdd('core', 'carol');
        }
      })();
      for (let i = 0; i < 40; i++) sends.push(c.alice!.send({ to: 'team:core', subject, body: `n${i}` }));
      const answers = await Promise.all(sends);
      await churn;
      const stored = new Map<string, string>();
      for (const who of ['alice', 'bob', 'carol']) for (const m of await copiesOf(who, subject)) stored.set(m.message_id, who);
      const listed = new Map(answers.flatMap((a) => a.expanded!.map((x) => [x.message_id, x.to] as const)));
      assert.deepEqual([...listed].sort(), [...stored].sort(), 'the expansions are the copies, each in its recipient’s inbox');
      for (const a of answers) {
        assert.ok(!a.expanded!.some((x) => x.to === 'alice'));
        assert.ok(
          a.expanded!.some((x) => x.to === 'bob'),
          'bob stayed a member',
        );
      }
      // Once the removal has completed, no send reaches the removed member.
      await op.admin.teamMemberRemove('core', 'carol');
      const late = await Promise.all([0, 1, 2, 3].map((i) => c.alice!.send({ to: 'team:core', subject: 'late', body: `${i}` })));
      for (const a of late)
        assert.deepEqual(
          a.expanded!.map((x) => x.to),
          ['bob'],
        );
      assert.deepEqual(await copiesOf('carol', 'late'), []);
      await op.admin.teamMemberAdd('core', 'carol');
    });

    it('team reminders need timer.schedule_team; one independent timer per member; a full member refuses the whole request', async () => {
      const req = { team: 'core', in_secs: 600, note: 'retro' };
      await refused(c.alice!.team.remind(req), 'not_granted', { team: 'core', capability: 'timer.schedule_team' });
      await refused(c.dan!.team.remind(req), 'not_team_member', { team: 'core' });
      await refused(c.bob!.team.remind(req), 'not_granted', { team: 'core', capability: 'timer.schedule_team' });
      await op.admin.teamGrant({ team: 'core', leader: 'alice', capability: 'timer.schedule_team' });
      const set = await c.alice!.team.remind(req);
      assert.deepEqual(
        set.timers.map((t) => t.to),
        ['bob', 'carol'],
        'the sender is not reminded unless it asks',
      );
      assert.deepEqual((await c.alice!.timers()).timers, []);
      const bobs = (await c.bob!.timers()).timers;
      assert.deepEqual(
        bobs.map((t) => t.note),
        ['retro'],
      );
      await c.bob!.timerClear(bobs[0]!.id);
      const self = await c.alice!.team.remind({ team: 'core', in_secs: 1200, note: 'later', include_self: true });
      assert.deepEqual(
        self.timers.map((t) => t.to),
        ['alice', 'bob', 'carol'],
      );
      clock.advance(11 * MIN);
      await d.engine.tickTimers();
      // The subject names the leader: from mailbox, a team reminder must not read as one's own.
      const fired = (await c.carol!.inbox({ include_acked: true })).messages.filter((m) => m.from === 'mailbox' && m.subject === 'Reminder from alice (team core): retro');
      assert.equal(fired.length, 1, 'carol’s fired');
      assert.match((await c.carol!.get(fired[0]!.message_id)).message.body ?? '', /team core, set by alice/);
      assert.deepEqual(
        (await c.bob!.inbox({ include_acked: true })).messages.filter((m) => m.subject.endsWith('retro')),
        [],
        'bob cleared his: the others stayed',
      );
      assert.deepEqual(
        (await c.bob!.timers()).timers.map((t) => t.note),
        ['later'],
      );

      // carol is full: nobody gets the reminder.
      const room = 1000 - (await c.carol!.timers()).timers.length;
      for (let i = 0; i < room; i++) await c.carol!.remind(3600, `own ${i}`, true);
      const before = (await c.bob!.timers()).timers.length;
      await refused(c.alice!.team.remind(req), 'rate_limited', { account: 'carol' });
      assert.equal((await c.bob!.timers()).timers.length, before, 'none was made for bob');
    });
  });
