// Team roles and contacts on one schema shared by two PostgresStore instances (two daemons): a
// grant racing the end of its leadership never survives it, a leader marked while its membership is
// removed never outlives it, the recorded changes follow the order the changes took effect, and a
// contact added while an account is removed never outlives the account.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { NewAccount, TeamAction, TeamChange } from '../../src/store/types.js';
import type { TeamCapability } from '../../src/wire/teams.js';
import { freshSchema, noteFailure, pgSkip } from './support/pg.js';

const opened: PostgresStore[] = [];
after(async () => {
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

const kept = (fn: () => Promise<void>) => async (): Promise<void> => {
  try {
    await fn();
  } catch (err) {
    noteFailure();
    throw err;
  }
};

const person = (id: string): NewAccount => ({
  id,
  kind: 'agent',
  label: id,
  permissions: { send: true, read: true, urgent: false, operator: false },
  bindProvider: null,
  secretDigest: `digest-${id}`,
  createdAt: 1_000,
});

const change = (room: string, action: TeamAction, account: string, capability: TeamCapability | null = null): TeamChange => ({
  room,
  at: 1,
  by: 'operator',
  action,
  account,
  capability,
});

const ROUNDS = 25;

describe('postgres: teams and contacts across two daemons', { skip: pgSkip }, () => {
  let a: PostgresStore;
  let b: PostgresStore;
  before(async () => {
    if (pgSkip) return;
    const { spec } = await freshSchema('teams_shared');
    a = await openPostgresStore({ spec, max: 4 });
    b = await openPostgresStore({ spec, max: 4 });
    opened.push(a, b);
    for (const id of ['alice', 'bob']) await a.addAccount(person(id));
  });

  it(
    'never leaves a grant on a leadership another daemon ended at the same moment',
    kept(async () => {
      for (let i = 0; i < ROUNDS; i++) {
        const room = `g${i}`;
        await a.addRoom(room, 1, { team: true });
        await a.addMember(room, 'alice');
        await a.setLeader(room, 'alice', true, change(room, 'leader.add', 'alice'));
        const [granted, ended] = await Promise.all([
          a.setGrant(room, 'alice', 'team.manage_members', true, change(room, 'grant', 'alice', 'team.manage_members')),
          b.setLeader(room, 'alice', false, change(room, 'leader.remove', 'alice')),
        ]);
        assert.equal(ended, 'ok');
        assert.ok(granted === 'ok' || granted === 'not_leader', granted);
        assert.deepEqual((await b.getRoom(room))?.leaders, [], `round ${i}: no leader, no grant`);
        assert.equal(await a.setLeader(room, 'alice', true, change(room, 'leader.add', 'alice')), 'ok');
        assert.deepEqual((await b.getRoom(room))?.leaders, [{ account: 'alice', grants: [] }], `round ${i}: leading again holds no old grant`);
        // Oldest first: a grant that took effect came before the end that revoked it.
        const order = (await a.teamChanges(room, null, 10)).reverse().map((c) => c.action);
        assert.deepEqual(order, granted === 'ok' ? ['leader.add', 'grant', 'leader.remove', 'leader.add'] : ['leader.add', 'leader.remove', 'leader.add']);
      }
    }),
  );

  it(
    'never leaves a leader whose membership another daemon removed at the same moment',
    kept(async () => {
      for (let i = 0; i < ROUNDS; i++) {
        const room = `m${i}`;
        await a.addRoom(room, 1, { team: true });
        await a.addMember(room, 'bob');
        const [marked, removed] = await Promise.all([
          a.setLeader(room, 'bob', true, change(room, 'leader.add', 'bob')),
          b.removeMember(room, 'bob', change(room, 'member.remove', 'bob')),
        ]);
        assert.equal(removed, true);
        assert.ok(marked === 'ok' || marked === 'not_member', marked);
        assert.deepEqual((await a.getRoom(room))?.leaders, [], `round ${i}`);
        await b.addMember(room, 'bob');
        assert.deepEqual((await a.getRoom(room))?.leaders, [], `round ${i}: a member again is no leader`);
        const order = (await a.teamChanges(room, null, 10)).reverse().map((c) => c.action);
        assert.deepEqual(order, marked === 'ok' ? ['leader.add', 'member.remove'] : ['member.remove']);
      }
    }),
  );

  it(
    'never keeps a contact added while one of its accounts is removed',
    kept(async () => {
      for (let i = 0; i < ROUNDS; i++) {
        const id = `c${i}`;
        await a.addAccount(person(id));
        const [added, removal] = await Promise.all([a.addContact('alice', id, 5), b.removeAccount(id)]);
        assert.ok(removal);
        assert.ok(added === 'ok' || added === 'no_account', added);
        assert.equal(await a.hasContact('alice', id), false, `round ${i}`);
      }
      assert.deepEqual(await b.listContacts('alice'), []);
    }),
  );
});
