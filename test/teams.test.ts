// Teams on a real daemon (each store kind): the operator's registry (create, members, leaders, grants) and a member's
// own m4a_team, every role and grant rule at its boundary: a leader without a grant, a removed
// leader, a delegated leader removing a leader or itself, leadership a leader cannot give, a
// non-member; every change recorded (who, when); #NAME room mail to a team.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MailClient } from '../src/client/http-client.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { raw, STORE_KINDS, startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { refused } from './support/refused.js';

/** m4a_team over MCP: the parsed answer, or the error object of a refusal. */
async function mcpTeam(url: string, secret: string, args: Record<string, unknown>): Promise<{ ok: boolean; body: any }> {
  const client = new Client({ name: 'teams-test', version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { requestInit: { headers: { Authorization: `Bearer ${secret}` } } }));
  try {
    const r = (await client.callTool({ name: 'm4a_team', arguments: args })) as { isError?: boolean; content: { text: string }[] };
    return { ok: r.isError !== true, body: JSON.parse(r.content[0]!.text) };
  } finally {
    await client.close();
  }
}

for (const storeKind of STORE_KINDS)
  describe(`teams: registry and roles (${storeKind})`, () => {
    let d: TestDaemon;
    let op: MailClient;
    const c: Record<string, MailClient> = {};
    const secret: Record<string, string> = {};
    before(async () => {
      d = await startTestDaemon({ storeKind });
      op = d.operator;
      for (const id of ['alice', 'bob', 'carol', 'dan', 'eve']) {
        const a = await d.account(id);
        c[id] = a.client;
        secret[id] = a.secret;
      }
    });
    after(() => d.stop());

    it('create: every member must exist, the name must be free, only the operator; a team is never an everyone-room', async () => {
      await refused(op.admin.teamCreate({ name: 'core', members: ['alice', 'nobody'] }), 'unknown_participant', { participant: 'nobody' });
      assert.deepEqual((await op.admin.teamList()).teams, [], 'nothing was made');
      await refused(c.alice!.admin.teamCreate({ name: 'core' }), 'permission_denied', { need: 'operator' });
      await op.admin.roomAdd('plain');
      await refused(op.admin.teamCreate({ name: 'plain' }), 'already_exists', { field: 'name' });
      const t = await op.admin.teamCreate({ name: 'core', members: ['alice', 'bob', 'carol', 'bob'] });
      assert.deepEqual(t.members, ['alice', 'bob', 'carol']);
      assert.deepEqual(t.leaders, []);
      assert.equal(t.open, false);
      await refused(op.admin.teamCreate({ name: 'core' }), 'already_exists', { field: 'name' });
      await refused(op.admin.roomAdd('core'), 'already_exists');
      const rooms = (await op.admin.roomList()).rooms;
      assert.equal(rooms.find((r) => r.name === 'core')!.everyone, false);
      assert.deepEqual(
        (await op.admin.teamList()).teams.map((x) => x.name),
        ['core'],
        'a plain room is not listed as a team',
      );
      for (const p of [op.admin.teamShow({ team: 'plain' }), op.admin.teamLeaderAdd('plain', 'alice'), op.admin.teamMemberAdd('nope', 'alice')]) await refused(p, 'unknown_team');
    });

    it('leaders are members; grants go to leaders only and are explicit; the operator ops need the operator', async () => {
      await refused(op.admin.teamLeaderAdd('core', 'dan'), 'not_team_member', { team: 'core', account: 'dan' });
      await refused(op.admin.teamGrant({ team: 'core', leader: 'bob', capability: 'team.manage_members' }), 'malformed', { field: 'leader' });
      const t = await op.admin.teamLeaderAdd('core', 'alice');
      assert.deepEqual(t.leaders, [{ account: 'alice', grants: [] }], 'leadership implies no grant');
      for (const p of [
        c.alice!.admin.teamLeaderAdd('core', 'bob'),
        c.alice!.admin.teamGrant({ team: 'core', leader: 'alice', capability: 'team.manage_members' }),
        c.alice!.admin.teamMemberAdd('core', 'dan'),
        c.alice!.admin.teamShow({ team: 'core' }),
      ])
        await refused(p, 'permission_denied', { need: 'operator' });
      assert.deepEqual((await op.admin.teamShow({ team: 'core' })).leaders, [{ account: 'alice', grants: [] }], 'nothing changed');
    });

    it('a leader without a grant may not change members; with team.manage_members it adds and removes plain members only', async () => {
      await refused(c.alice!.team.memberAdd('core', 'dan'), 'not_granted', { team: 'core', capability: 'team.manage_members' });
      await refused(c.bob!.team.memberAdd('core', 'dan'), 'not_granted', { team: 'core', capability: 'team.manage_members' });
      await op.admin.teamGrant({ team: 'core', leader: 'alice', capability: 'team.manage_members' });
      const added = await c.alice!.team.memberAdd('core', 'dan');
      assert.deepEqual(added.members, ['alice', 'bob', 'carol', 'dan']);
      assert.equal(added.you, 'leader');
      await refused(c.alice!.team.memberAdd('core', 'nobody'), 'unknown_participant', { participant: 'nobody' });
      await refused(c.alice!.team.memberRemove('core', 'alice'), 'not_granted', { team: 'core', capability: 'team.manage_members' });
      await op.admin.teamLeaderAdd('core', 'bob');
      await op.admin.teamGrant({ team: 'core', leader: 'bob', capability: 'team.manage_members' });
      await refused(c.alice!.team.memberRemove('core', 'bob'), 'not_granted', { team: 'core', capability: 'team.manage_members' });
      await refused(c.bob!.team.memberRemove('core', 'alice'), 'not_granted', { team: 'core', capability: 'team.manage_members' });
      // Leadership and grants are the operator's: the agent's tool has no action for them.
      const r = await raw(d.url, '/team', { token: secret.alice!, body: JSON.stringify({ action: 'leader-add', team: 'core', account: 'dan' }) });
      assert.equal(r.status, 400);
      assert.equal(r.json.error.code, 'malformed');
      const after = await c.alice!.team.memberRemove('core', 'dan');
      assert.deepEqual(after.members, ['alice', 'bob', 'carol']);
      assert.deepEqual(
        after.leaders.map((l) => l.account),
        ['alice', 'bob'],
        'both leaders stay',
      );
      // Its grant is for this team only.
      await op.admin.teamCreate({ name: 'ops', members: ['alice', 'carol'] });
      await refused(c.alice!.team.memberAdd('ops', 'dan'), 'not_granted', { team: 'ops', capability: 'team.manage_members' });
      await refused(c.alice!.team.memberAdd('plain', 'dan'), 'unknown_team', { team: 'plain' });
    });

    it('a removed leader loses its grants: its member changes are refused, and leadership again grants nothing', async () => {
      const t = await op.admin.teamLeaderRemove('core', 'alice');
      assert.deepEqual(t.leaders, [{ account: 'bob', grants: ['team.manage_members'] }]);
      await refused(c.alice!.team.memberAdd('core', 'dan'), 'not_granted', { capability: 'team.manage_members' });
      assert.equal((await c.alice!.team.show('core')).you, 'member');
      const again = await op.admin.teamLeaderAdd('core', 'alice');
      assert.deepEqual(again.leaders[0], { account: 'alice', grants: [] });
      // A leader removed as a member loses leadership and grants; back as a member it is a plain one.
      await op.admin.teamMemberRemove('core', 'bob');
      await op.admin.teamMemberAdd('core', 'bob');
      assert.deepEqual((await op.admin.teamShow({ team: 'core' })).leaders, [{ account: 'alice', grants: [] }]);
      await refused(c.bob!.team.memberAdd('core', 'dan'), 'not_granted');
      // Revoking what is not held is already the case.
      assert.deepEqual((await op.admin.teamRevoke({ team: 'core', leader: 'bob', capability: 'team.manage_members' })).leaders, [{ account: 'alice', grants: [] }]);
    });

    it('m4a_team over MCP: the granted leader adds and removes through its own credential; a plain member is refused by name', async () => {
      await op.admin.teamGrant({ team: 'core', leader: 'alice', capability: 'team.manage_members' });
      const add = await mcpTeam(d.url, secret.alice!, { action: 'member-add', team: 'core', account: 'eve' });
      assert.equal(add.ok, true, JSON.stringify(add.body));
      assert.deepEqual(add.body.members, ['alice', 'bob', 'carol', 'eve']);
      const no = await mcpTeam(d.url, secret.carol!, { action: 'member-remove', team: 'core', account: 'eve' });
      assert.equal(no.ok, false);
      assert.equal(no.body.error.code, 'not_granted');
      assert.equal(no.body.error.capability, 'team.manage_members');
      assert.equal((await mcpTeam(d.url, secret.dan!, { action: 'show', team: 'core' })).body.error.code, 'not_team_member');
      const rm = await mcpTeam(d.url, secret.alice!, { action: 'member-remove', team: 'core', account: 'eve' });
      assert.deepEqual(rm.body.members, ['alice', 'bob', 'carol']);
      await op.admin.teamRevoke({ team: 'core', leader: 'alice', capability: 'team.manage_members' });
    });

    it('a non-member sees nothing of the team; a member sees it; bad actions are named', async () => {
      await refused(c.dan!.team.show('core'), 'not_team_member', { team: 'core' });
      await refused(c.dan!.team.memberAdd('core', 'dan'), 'not_team_member', { team: 'core' });
      await refused(c.dan!.team.show('nope'), 'unknown_team', { team: 'nope' });
      const v = await c.carol!.team.show('core');
      assert.equal(v.you, 'member');
      assert.deepEqual(v.members, ['alice', 'bob', 'carol']);
    });

    it('every change is recorded, newest first, with who and when, the room commands too', async () => {
      await op.admin.memberAdd('core', 'eve');
      await op.admin.memberRemove('core', 'eve');
      await op.admin.memberAdd('plain', 'eve'); // a plain room records nothing
      const s = await op.admin.teamShow({ team: 'core', changes: 1000 });
      const log = s.changes.map((x) => [x.by, x.action, x.account ?? null, x.capability ?? null]);
      assert.deepEqual(log.slice(0, 2), [
        ['operator', 'member.remove', 'eve', null],
        ['operator', 'member.add', 'eve', null],
      ]);
      assert.deepEqual(log.reverse(), [
        ['operator', 'create', 'alice', null],
        ['operator', 'create', 'bob', null],
        ['operator', 'create', 'carol', null],
        ['operator', 'leader.add', 'alice', null],
        ['operator', 'grant', 'alice', 'team.manage_members'],
        ['alice', 'member.add', 'dan', null],
        ['operator', 'leader.add', 'bob', null],
        ['operator', 'grant', 'bob', 'team.manage_members'],
        ['alice', 'member.remove', 'dan', null],
        ['operator', 'leader.remove', 'alice', null],
        ['operator', 'leader.add', 'alice', null],
        ['operator', 'member.remove', 'bob', null],
        ['operator', 'member.add', 'bob', null],
        ['operator', 'grant', 'alice', 'team.manage_members'],
        ['alice', 'member.add', 'eve', null],
        ['alice', 'member.remove', 'eve', null],
        ['operator', 'revoke', 'alice', 'team.manage_members'],
        ['operator', 'member.add', 'eve', null],
        ['operator', 'member.remove', 'eve', null],
      ]);
      for (const x of s.changes) assert.match(x.at, /^\d{4}-\d\d-\d\dT/);
      assert.equal((await op.admin.teamShow({ team: 'core', changes: 2 })).changes.length, 2);
      // Refused and unchanged requests record nothing.
      await op.admin.teamLeaderAdd('core', 'alice');
      await refused(c.carol!.team.memberAdd('core', 'dan'), 'not_granted');
      assert.equal((await op.admin.teamShow({ team: 'core', changes: 1000 })).changes.length, s.changes.length);
    });

    it('#NAME mail to a team is room mail: members read it, a non-member of a closed team may not post', async () => {
      const sent = await c.bob!.send({ to: '#core', subject: 'room mail', body: 'hi' });
      assert.equal(sent.to, '#core');
      assert.equal(sent.expanded, undefined);
      const got = (await c.carol!.inbox()).messages.find((m) => m.message_id === sent.message_id);
      assert.equal(got?.to, '#core');
      await refused(c.dan!.send({ to: '#core', subject: 'x', body: 'y' }), 'permission_denied');
    });
  });
