// The attacker's pass over issue #17 (teams, contact requests, quiet hours): each test is a hole
// that was found and closed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import type { MailClient } from '../src/client/http-client.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { refused } from './support/refused.js';
import { TEAM_TIMERS_PER_ACCOUNT } from '../src/engine/timers.js';

const mail = (to: string, subject: string, body = `about ${subject}`) => ({ to, subject, body });
const all = async (c: MailClient) => (await c.inbox({ include_acked: true, limit: 200 })).messages;

describe('teams, contacts and quiet hours against a hostile caller', () => {
  let d: TestDaemon;
  const clock = new ManualClock(Date.now());
  let n = 0;
  const fresh = async (name: string): Promise<[string, MailClient]> => {
    const id = `${name}${++n}`;
    return [id, (await d.account(id)).client];
  };

  before(async () => {
    d = await startTestDaemon({ clock });
  });
  after(async () => {
    await d.stop();
  });

  it('a held message retried with its idempotency key after acceptance is the delivered one, not a second copy', async () => {
    const [bob, b] = await fresh('bob');
    const [carol, cc] = await fresh('carol');
    await b.contacts.setPolicy('contacts_only');
    const send = { ...mail(bob, 'once'), request_contact: true, idempotency_key: 'k-once' };
    const held = await cc.send(send);
    assert.ok(held.held);
    assert.deepEqual((await b.contacts.accept(carol)).delivered, [held.message_id]);
    // The sender never saw the first answer (a timeout) and retries: the contact admits it now.
    const retry = await cc.send(send);
    assert.equal(retry.message_id, held.message_id);
    assert.equal(retry.duplicate, true);
    assert.deepEqual(
      (await all(b)).filter((m) => m.subject === 'once').map((m) => m.message_id),
      [held.message_id],
    );
  });

  it("a held message the sender's retry stored first (admitted meanwhile) is not delivered again on acceptance", async () => {
    const [bob, b] = await fresh('bob');
    const [carol, cc] = await fresh('carol');
    await b.contacts.setPolicy('contacts_only');
    const send = { ...mail(bob, 'twice?'), request_contact: true, idempotency_key: 'k-twice' };
    assert.ok((await cc.send(send)).held);
    // A shared room admits carol now: its retry is stored as mail.
    await d.operator.admin.roomAdd(`both${n}`);
    await d.operator.admin.memberAdd(`both${n}`, bob);
    await d.operator.admin.memberAdd(`both${n}`, carol);
    const stored = await cc.send(send);
    assert.equal(stored.held, undefined);
    assert.deepEqual((await b.contacts.accept(carol)).delivered, [stored.message_id]);
    assert.deepEqual(
      (await all(b)).filter((m) => m.subject === 'twice?').map((m) => m.message_id),
      [stored.message_id],
    );
  });

  it("removing an account that is a team member records the end of its membership in the team's changes", async () => {
    const [ann] = await fresh('ann');
    const [ben] = await fresh('ben');
    const team = `crew${n}`;
    await d.operator.admin.teamCreate({ name: team, members: [ann, ben] });
    await d.operator.admin.teamLeaderAdd(team, ben);
    await d.operator.admin.accountRemove(ben);
    const shown = await d.operator.admin.teamShow({ team });
    assert.deepEqual(shown.members, [ann]);
    assert.deepEqual(shown.leaders, []);
    assert.deepEqual(
      shown.changes.slice(0, 1).map((x) => [x.action, x.account, x.by]),
      [['member.remove', ben, 'operator']],
    );
  });

  it("a leader's team reminders take at most TEAM_TIMERS_PER_ACCOUNT of a member's timers: the member can still set its own", async () => {
    const [lea, l] = await fresh('lea');
    const [mo, m] = await fresh('mo');
    const team = `squad${n}`;
    await d.operator.admin.teamCreate({ name: team, members: [lea, mo] });
    await d.operator.admin.teamLeaderAdd(team, lea);
    await d.operator.admin.teamGrant({ team, leader: lea, capability: 'timer.schedule_team' });
    for (let i = 0; i < TEAM_TIMERS_PER_ACCOUNT; i++) await l.team.remind({ team, in_secs: 3600, note: `spam ${i}` });
    await refused(l.team.remind({ team, in_secs: 3600, note: 'one more' }), 'rate_limited', { limit: TEAM_TIMERS_PER_ACCOUNT, account: mo });
    assert.equal((await m.timers()).timers.length, TEAM_TIMERS_PER_ACCOUNT);
    await m.remind(60, 'my own', true);
  });

  it('a granted leader cannot pull an account past its contact policy into the team (teammates are known to contacts_only)', async () => {
    const [lou, l] = await fresh('lou');
    const [vic, v] = await fresh('vic');
    const [ned, nn] = await fresh('ned');
    const team = `pull${n}`;
    await d.operator.admin.teamCreate({ name: team, members: [lou] });
    await d.operator.admin.teamLeaderAdd(team, lou);
    await d.operator.admin.teamGrant({ team, leader: lou, capability: 'team.manage_members' });
    await v.contacts.setPolicy('contacts_only');
    await refused(l.send(mail(vic, 'hi')), 'contact_refused');
    await refused(l.team.memberAdd(team, vic), 'contact_refused', { recipient: vic, policy: 'contacts_only' });
    assert.deepEqual((await d.operator.admin.teamShow({ team })).members, [lou], 'nothing changed');
    await refused(l.send(mail(vic, 'hi again')), 'contact_refused');
    // An account that takes the leader's mail can be added; the operator adds anyone.
    await nn.contacts.setPolicy('contacts_only');
    await nn.contacts.add(lou);
    assert.deepEqual((await l.team.memberAdd(team, ned)).members, [lou, ned]);
    await d.operator.admin.teamMemberAdd(team, vic);
  });

  it('the reserved mailbox account joins no team: it reads nothing, so a copy to it would be swallowed', async () => {
    const [lou, l] = await fresh('lou');
    const team = `mbx${n}`;
    await refused(d.operator.admin.teamCreate({ name: team, members: [lou, 'mailbox'] }), 'malformed', { field: 'account', reason: 'reserved' });
    assert.equal(await d.store.getRoom(team), null, 'nothing made');
    await d.operator.admin.teamCreate({ name: team, members: [lou] });
    await d.operator.admin.teamLeaderAdd(team, lou);
    await d.operator.admin.teamGrant({ team, leader: lou, capability: 'team.manage_members' });
    await refused(d.operator.admin.teamMemberAdd(team, 'mailbox'), 'malformed', { reason: 'reserved' });
    await refused(l.team.memberAdd(team, 'mailbox'), 'malformed', { reason: 'reserved' });
    assert.deepEqual((await d.operator.admin.teamShow({ team })).members, [lou]);
  });

  it("open for the account also ends its sessions' periods: a session's dnd without an end is never left holding the account's wakes", async () => {
    const [, b] = await fresh('bea');
    assert.equal((await b.attention({ mode: 'dnd' })).mode, 'dnd');
    // Any credential of the account can undo it, even when the session that set it is gone.
    assert.equal((await b.attention({ mode: 'open', account: true })).mode, 'open');
    assert.equal((await b.attention({})).mode, 'open', 'the session period ended too');
  });
});
