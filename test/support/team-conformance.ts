// The store contract of teams (roles on a team's memberships, recorded changes) and contact lists
// and policies, run inside the store conformance suite against every store. Each case gets a fresh
// store from the suite's `store()`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NewAccount, Store, TeamAction, TeamChange, TeamChangeRecord } from '../../src/store/types.js';
import type { TeamCapability } from '../../src/wire/teams.js';

const person = (id: string): NewAccount => ({
  id,
  kind: 'agent',
  label: id,
  permissions: { send: true, read: true, urgent: false, operator: false },
  bindProvider: null,
  secretDigest: `digest-${id}`,
  createdAt: 1_000,
});

let clock = 100;
function change(room: string, action: TeamAction, account: string | null, capability: TeamCapability | null = null): TeamChange {
  return { room, at: ++clock, by: 'operator', action, account, capability };
}

/** The changes without their store-assigned ids, newest first. */
const actions = (cs: TeamChangeRecord[]): [TeamAction, string | null, TeamCapability | null][] => cs.map((c) => [c.action, c.account, c.capability]);

async function team(s: Store, name: string, members: string[]): Promise<void> {
  assert.equal(await s.addRoom(name, 5, { team: true }), 'ok');
  for (const m of members) assert.equal(await s.addMember(name, m), 'ok');
}

export function runTeamConformance(store: () => Store): void {
  describe('teams', () => {
    it('creates a team with no leaders; a plain room is no team and has none', async () => {
      const s = store();
      for (const id of ['alice', 'bob']) await s.addAccount(person(id));
      await team(s, 'crew', ['bob', 'alice']);
      await s.addRoom('lobby', 6);
      assert.deepEqual(await s.getRoom('crew'), { name: 'crew', createdAt: 5, members: ['alice', 'bob'], everyone: false, open: false, team: true, leaders: [] });
      assert.deepEqual(
        (await s.listRooms()).map((r) => [r.name, r.team, r.leaders]),
        [
          ['crew', true, []],
          ['lobby', false, []],
        ],
      );
      assert.deepEqual(await s.teamChanges('crew', null, 10), [], 'addMember without a change records none');
    });

    it('marks leaders (members only), reports each outcome, and records exactly the changes made', async () => {
      const s = store();
      for (const id of ['alice', 'bob', 'carol']) await s.addAccount(person(id));
      await team(s, 'crew', ['alice', 'bob']);
      await s.addRoom('lobby', 6);
      await s.addMember('lobby', 'alice');
      assert.equal(await s.setLeader('nowhere', 'alice', true, change('nowhere', 'leader.add', 'alice')), 'no_room');
      assert.equal(await s.setLeader('lobby', 'alice', true, change('lobby', 'leader.add', 'alice')), 'not_team');
      assert.equal(await s.setLeader('crew', 'carol', true, change('crew', 'leader.add', 'carol')), 'not_member');
      assert.equal(await s.setLeader('crew', 'nobody', true, change('crew', 'leader.add', 'nobody')), 'not_member');
      assert.equal(await s.setLeader('crew', 'bob', false, change('crew', 'leader.remove', 'bob')), 'unchanged');
      assert.equal(await s.setLeader('crew', 'bob', true, change('crew', 'leader.add', 'bob')), 'ok');
      assert.equal(await s.setLeader('crew', 'bob', true, change('crew', 'leader.add', 'bob')), 'unchanged');
      assert.equal(await s.setLeader('crew', 'alice', true, change('crew', 'leader.add', 'alice')), 'ok');
      assert.deepEqual((await s.getRoom('crew'))?.leaders, [
        { account: 'alice', grants: [] },
        { account: 'bob', grants: [] },
      ]);
      assert.deepEqual((await s.getRoom('lobby'))?.leaders, []);
      assert.deepEqual(actions(await s.teamChanges('crew', null, 10)), [
        ['leader.add', 'alice', null],
        ['leader.add', 'bob', null],
      ]);
      assert.deepEqual(await s.teamChanges('lobby', null, 10), [], 'a refused change records nothing');
    });

    it('grants and revokes capabilities of leaders only, sorted; ending leadership revokes them', async () => {
      const s = store();
      for (const id of ['alice', 'bob']) await s.addAccount(person(id));
      await team(s, 'crew', ['alice', 'bob']);
      await s.addRoom('lobby', 6);
      await s.addMember('lobby', 'alice');
      const grant = (room: string, who: string, cap: TeamCapability, on: boolean) => s.setGrant(room, who, cap, on, change(room, on ? 'grant' : 'revoke', who, cap));
      assert.equal(await grant('nowhere', 'alice', 'team.manage_members', true), 'no_room');
      assert.equal(await grant('lobby', 'alice', 'team.manage_members', true), 'not_team');
      assert.equal(await grant('crew', 'alice', 'team.manage_members', true), 'not_leader', 'a member that is no leader');
      assert.equal(await grant('crew', 'nobody', 'team.manage_members', true), 'not_leader', 'not even a member');
      await s.setLeader('crew', 'alice', true, change('crew', 'leader.add', 'alice'));
      assert.equal(await grant('crew', 'alice', 'timer.schedule_team', true), 'ok');
      assert.equal(await grant('crew', 'alice', 'team.manage_members', true), 'ok');
      assert.equal(await grant('crew', 'alice', 'team.manage_members', true), 'unchanged');
      assert.deepEqual((await s.getRoom('crew'))?.leaders, [{ account: 'alice', grants: ['team.manage_members', 'timer.schedule_team'] }]);
      assert.equal(await grant('crew', 'alice', 'timer.schedule_team', false), 'ok');
      assert.equal(await grant('crew', 'alice', 'timer.schedule_team', false), 'unchanged');
      assert.deepEqual((await s.listRooms()).find((r) => r.name === 'crew')?.leaders, [{ account: 'alice', grants: ['team.manage_members'] }]);

      assert.equal(await s.setLeader('crew', 'alice', false, change('crew', 'leader.remove', 'alice')), 'ok');
      assert.deepEqual((await s.getRoom('crew'))?.leaders, []);
      assert.equal(await grant('crew', 'alice', 'team.manage_members', false), 'not_leader');
      await s.setLeader('crew', 'alice', true, change('crew', 'leader.add', 'alice'));
      assert.deepEqual((await s.getRoom('crew'))?.leaders, [{ account: 'alice', grants: [] }], 'a leader again holds nothing it held before');
      assert.deepEqual(actions(await s.teamChanges('crew', null, 10)), [
        ['leader.add', 'alice', null],
        ['leader.remove', 'alice', null],
        ['revoke', 'alice', 'timer.schedule_team'],
        ['grant', 'alice', 'team.manage_members'],
        ['grant', 'alice', 'timer.schedule_team'],
        ['leader.add', 'alice', null],
      ]);
    });

    it('records a member change with the membership only when the membership changed', async () => {
      const s = store();
      for (const id of ['alice', 'bob']) await s.addAccount(person(id));
      await s.addRoom('crew', 5, { team: true });
      assert.equal(await s.addMember('crew', 'alice', change('crew', 'member.add', 'alice')), 'ok');
      assert.equal(await s.addMember('crew', 'alice', change('crew', 'member.add', 'alice')), 'exists');
      assert.equal(await s.addMember('crew', 'nobody', change('crew', 'member.add', 'nobody')), 'no_account');
      assert.equal(await s.addMember('nowhere', 'alice', change('nowhere', 'member.add', 'alice')), 'no_room');
      assert.equal(await s.removeMember('crew', 'bob', change('crew', 'member.remove', 'bob')), false);
      assert.equal(await s.removeMember('crew', 'alice', change('crew', 'member.remove', 'alice')), true);
      assert.equal(await s.removeMember('crew', 'alice', change('crew', 'member.remove', 'alice')), false);
      assert.deepEqual(actions(await s.teamChanges('crew', null, 10)), [
        ['member.remove', 'alice', null],
        ['member.add', 'alice', null],
      ]);
      assert.deepEqual(await s.teamChanges('nowhere', null, 10), []);
      const [c] = await s.teamChanges('crew', null, 1);
      assert.deepEqual(
        c && { ...c, id: 0 },
        { id: 0, room: 'crew', at: clock - 1, by: 'operator', action: 'member.remove', account: 'alice', capability: null },
        'every field kept',
      );
    });

    it('ends the leadership and its grants with the membership, by removeMember or removeAccount', async () => {
      const s = store();
      for (const id of ['alice', 'bob']) await s.addAccount(person(id));
      await team(s, 'crew', ['alice', 'bob']);
      for (const who of ['alice', 'bob']) {
        await s.setLeader('crew', who, true, change('crew', 'leader.add', who));
        await s.setGrant('crew', who, 'team.manage_members', true, change('crew', 'grant', who, 'team.manage_members'));
      }
      assert.equal(await s.removeMember('crew', 'alice'), true);
      assert.deepEqual((await s.getRoom('crew'))?.leaders, [{ account: 'bob', grants: ['team.manage_members'] }]);
      assert.equal(await s.setGrant('crew', 'alice', 'timer.schedule_team', true, change('crew', 'grant', 'alice', 'timer.schedule_team')), 'not_leader');
      assert.equal(await s.addMember('crew', 'alice'), 'ok');
      assert.deepEqual((await s.getRoom('crew'))?.leaders, [{ account: 'bob', grants: ['team.manage_members'] }], 'joining again is no leadership');
      assert.ok(await s.removeAccount('bob'));
      assert.deepEqual(await s.getRoom('crew'), { name: 'crew', createdAt: 5, members: ['alice'], everyone: false, open: false, team: true, leaders: [] });
      await s.addAccount(person('bob'));
      await s.addMember('crew', 'bob');
      assert.deepEqual((await s.getRoom('crew'))?.leaders, [], 'a new account of the name is no leader');
    });

    it('pages the changes newest first with `before`, and deletes them with the room', async () => {
      const s = store();
      await s.addAccount(person('alice'));
      await s.addRoom('crew', 5, { team: true });
      await s.addRoom('other', 5, { team: true });
      await s.addMember('other', 'alice', change('other', 'member.add', 'alice'));
      for (let i = 0; i < 3; i++) {
        await s.addMember('crew', 'alice', change('crew', 'member.add', 'alice'));
        await s.removeMember('crew', 'alice', change('crew', 'member.remove', 'alice'));
      }
      const all = await s.teamChanges('crew', null, 100);
      assert.equal(all.length, 6);
      const ids = all.map((c) => c.id);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => b - a),
        'newest first',
      );
      assert.equal(new Set(ids).size, 6);
      assert.deepEqual(await s.teamChanges('crew', null, 2), all.slice(0, 2));
      assert.deepEqual(await s.teamChanges('crew', (all[1] as TeamChangeRecord).id, 3), all.slice(2, 5));
      assert.deepEqual(await s.teamChanges('crew', (all[5] as TeamChangeRecord).id, 3), []);
      assert.deepEqual(await s.teamChanges('crew', null, 0), []);

      assert.ok(await s.removeRoom('crew'));
      assert.deepEqual(await s.teamChanges('crew', null, 100), []);
      assert.equal((await s.teamChanges('other', null, 100)).length, 1, "another team's stay");
      assert.equal(await s.addRoom('crew', 9, { team: true }), 'ok');
      assert.deepEqual(await s.teamChanges('crew', null, 100), [], 'a team made again under the name starts with no changes');
      assert.deepEqual((await s.getRoom('crew'))?.leaders, []);
      await s.addMember('crew', 'alice', change('crew', 'member.add', 'alice'));
      const [fresh] = await s.teamChanges('crew', null, 1);
      assert.ok(fresh && fresh.id > (all[0] as TeamChangeRecord).id, 'ids are never handed out again');
    });

    it('starts a room made again under the name of a team as a plain room without leaders', async () => {
      const s = store();
      await s.addAccount(person('alice'));
      await team(s, 'crew', ['alice']);
      await s.setLeader('crew', 'alice', true, change('crew', 'leader.add', 'alice'));
      assert.ok(await s.removeRoom('crew'));
      await s.addRoom('crew', 9);
      await s.addMember('crew', 'alice');
      assert.deepEqual(await s.getRoom('crew'), { name: 'crew', createdAt: 9, members: ['alice'], everyone: false, open: false, team: false, leaders: [] });
      assert.equal(await s.setLeader('crew', 'alice', true, change('crew', 'leader.add', 'alice')), 'not_team');
    });
  });

  describe('contacts and contact policies', () => {
    it("starts every account 'open', keeps a given policy, and changes it", async () => {
      const s = store();
      await s.addAccount(person('alice'));
      await s.addAccount({ ...person('bob'), contactPolicy: 'block_all' });
      assert.equal((await s.getAccount('alice'))?.contactPolicy, 'open');
      assert.equal((await s.getAccount('bob'))?.contactPolicy, 'block_all');
      assert.equal(await s.setContactPolicy('alice', 'contacts_only'), true);
      assert.equal(await s.setContactPolicy('nobody', 'contacts_only'), false);
      assert.equal(await s.getAccount('nobody'), null, 'setting a policy makes no account');
      assert.deepEqual(
        (await s.listAccounts()).map((a) => [a.id, a.contactPolicy]),
        [
          ['alice', 'contacts_only'],
          ['bob', 'block_all'],
        ],
      );
      assert.equal((await s.findAccountByDigest('digest-alice'))?.contactPolicy, 'contacts_only');
    });

    it('adds a contact between existing accounts once, lists them in contact order, and removes one', async () => {
      const s = store();
      for (const id of ['alice', 'bob', 'carol', 'dave']) await s.addAccount(person(id));
      assert.equal(await s.addContact('alice', 'nobody', 1), 'no_account');
      assert.equal(await s.addContact('nobody', 'alice', 1), 'no_account');
      assert.deepEqual(await s.listContacts('nobody'), []);
      assert.equal(await s.addContact('alice', 'dave', 10), 'ok');
      assert.equal(await s.addContact('alice', 'bob', 11), 'ok');
      assert.equal(await s.addContact('alice', 'carol', 12), 'ok');
      assert.equal(await s.addContact('alice', 'bob', 13), 'exists');
      assert.deepEqual(await s.listContacts('alice'), [
        { contact: 'bob', addedAt: 11 },
        { contact: 'carol', addedAt: 12 },
        { contact: 'dave', addedAt: 10 },
      ]);
      assert.equal(await s.hasContact('alice', 'bob'), true);
      assert.equal(await s.hasContact('bob', 'alice'), false, 'one direction only');
      assert.deepEqual(await s.listContacts('bob'), []);
      assert.equal(await s.removeContact('alice', 'bob'), true);
      assert.equal(await s.removeContact('alice', 'bob'), false);
      assert.equal(await s.removeContact('bob', 'alice'), false);
      assert.equal(await s.hasContact('alice', 'bob'), false);
      assert.deepEqual(
        (await s.listContacts('alice')).map((c) => c.contact),
        ['carol', 'dave'],
      );
    });

    it('removes the contacts in both directions with either account; a new account of the name has none and is open', async () => {
      const s = store();
      for (const id of ['alice', 'bob', 'carol']) await s.addAccount(person(id));
      await s.addContact('alice', 'bob', 1);
      await s.addContact('bob', 'alice', 2);
      await s.addContact('bob', 'carol', 3);
      await s.addContact('carol', 'bob', 4);
      await s.addContact('carol', 'alice', 5);
      await s.setContactPolicy('bob', 'contacts_only');
      assert.ok(await s.removeAccount('bob'));
      assert.deepEqual(await s.listContacts('bob'), []);
      assert.equal(await s.hasContact('alice', 'bob'), false);
      assert.deepEqual(await s.listContacts('alice'), []);
      assert.deepEqual(await s.listContacts('carol'), [{ contact: 'alice', addedAt: 5 }], 'contacts not naming it stay');
      assert.equal(await s.addAccount(person('bob')), 'ok');
      assert.equal((await s.getAccount('bob'))?.contactPolicy, 'open');
      assert.deepEqual(await s.listContacts('bob'), []);
      assert.equal(await s.hasContact('carol', 'bob'), false);
      assert.equal(await s.addContact('carol', 'bob', 6), 'ok', 'the new account can be added');
    });
  });
}
