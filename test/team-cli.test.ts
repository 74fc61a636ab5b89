// m4a admin team … and m4a team …, run as a user runs them (the built CLI, a daemon found through
// its data directory, each party with its own account): the operator's registry with --json and as
// text, a granted leader's member changes, its refusals by name, m4a send to team:NAME printing
// the expansion, and m4a timer set --team.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './support/cli-daemon.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';

describe('m4a admin team / m4a team', () => {
  let d: TestDaemon;
  let home: string;
  let env: Record<string, string>;
  // Asynchronous: the daemon runs in this test process and must keep answering meanwhile.
  const cli = (args: string[]) => runCli(args, { env, timeout: 30_000 });
  const ok = async (args: string[]) => {
    const r = await cli(args);
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '--json']));
  const refused = async (args: string[], code: string) => {
    const text = await cli(args);
    assert.equal(text.status, 1, `${args.join(' ')}: ${text.stdout}${text.stderr}`);
    assert.match(text.stderr, new RegExp(`^m4a: ${code}: `), args.join(' '));
    const j = await cli([...args, '--json']);
    assert.equal(j.status, 1);
    assert.equal(JSON.parse(j.stderr).error.code, code, j.stderr);
  };

  before(async () => {
    d = await startTestDaemon({ storeKind: 'memory' });
    home = mkdtempSync(join(tmpdir(), 'm4a-team-cli-'));
    const accounts: Record<string, { secret: string }> = {};
    for (const id of ['alice', 'bob', 'carol', 'dan']) accounts[id] = { secret: (await d.account(id)).secret };
    mkdirSync(join(home, 'mail4agent'));
    writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts }), { mode: 0o600 });
    env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir };
  });
  after(async () => {
    await d.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('the operator creates a team, makes a leader, grants it capabilities; list and show with --json and as text', async () => {
    const t = await json(['admin', 'team', 'create', 'core', '--member', 'alice', '--member', 'bob']);
    assert.deepEqual(t.members, ['alice', 'bob']);
    await refused(['admin', 'team', 'create', 'core'], 'already_exists');
    await refused(['admin', 'team', 'create', 'x', '--member', 'nobody'], 'unknown_participant');
    assert.deepEqual((await json(['admin', 'team', 'leader-add', 'core', 'alice'])).leaders, [{ account: 'alice', grants: [] }]);
    await refused(['admin', 'team', 'leader-add', 'core', 'carol'], 'not_team_member');
    const g = await json(['admin', 'team', 'grant', 'core', '--leader', 'alice', '--capability', 'team.manage_members']);
    assert.deepEqual(g.leaders, [{ account: 'alice', grants: ['team.manage_members'] }]);
    await json(['admin', 'team', 'grant', 'core', '--leader', 'alice', '--capability', 'timer.schedule_team']);
    await refused(['admin', 'team', 'grant', 'core', '--leader', 'alice', '--capability', 'root'], 'malformed');
    assert.deepEqual((await json(['admin', 'team', 'revoke', 'core', '--leader', 'alice', '--capability', 'timer.schedule_team'])).leaders[0].grants, ['team.manage_members']);
    assert.deepEqual(
      (await json(['admin', 'team', 'list'])).teams.map((x: { name: string }) => x.name),
      ['core'],
    );
    const text = await ok(['admin', 'team', 'show', 'core']);
    assert.match(text, /leaders: alice \(team\.manage_members\)/);
    assert.match(text, /operator\s+grant\s+alice\s+team\.manage_members/);
    const s = await json(['admin', 'team', 'show', 'core', '--changes', '2']);
    assert.deepEqual(
      s.changes.map((x: { action: string }) => x.action),
      ['revoke', 'grant'],
    );
  });

  it('a granted leader adds and removes members through its own credential; a plain member is refused by name', async () => {
    const added = await json(['team', 'member-add', 'core', 'carol', '--account', 'alice']);
    assert.deepEqual(added.members, ['alice', 'bob', 'carol']);
    assert.equal(added.you, 'leader');
    assert.match(await ok(['team', 'show', 'core', '--account', 'bob']), /you: member/);
    await refused(['team', 'member-add', 'core', 'dan', '--account', 'bob'], 'not_granted');
    await refused(['team', 'member-remove', 'core', 'alice', '--account', 'alice'], 'not_granted');
    await refused(['team', 'show', 'core', '--account', 'dan'], 'not_team_member');
    const s = await json(['admin', 'team', 'show', 'core']);
    assert.deepEqual([s.changes[0].by, s.changes[0].action, s.changes[0].account], ['alice', 'member.add', 'carol']);
  });

  it('m4a send team:NAME prints each copy; m4a timer set --team sets one timer per other member', async () => {
    const out = await ok(['send', 'team:core', 'hello team', 'body', '--account', 'bob']);
    assert.match(out, /to team:core/);
    assert.match(out, /\n {2}alice: m-/);
    assert.match(out, /\n {2}carol: m-/);
    const j = await json(['send', 'leader:core', 'to lead', 'b', '--account', 'bob']);
    assert.deepEqual(
      j.expanded.map((x: { to: string }) => x.to),
      ['alice'],
    );
    await refused(['send', 'team:core', 's', 'b', '--account', 'dan'], 'not_team_member');
    await refused(['timer', 'set', '--team', 'core', '--in', '2h', '--note', 'retro', '--account', 'alice'], 'not_granted');
    await json(['admin', 'team', 'grant', 'core', '--leader', 'alice', '--capability', 'timer.schedule_team']);
    const r = await json(['timer', 'set', '--team', 'core', '--in', '2h', '--note', 'retro', '--account', 'alice']);
    assert.deepEqual(
      r.timers.map((t: { to: string }) => t.to),
      ['bob', 'carol'],
    );
    assert.match(await ok(['timer', 'set', '--team', 'core', '--in', '1h', '--note', 'x', '--include-self', '--account', 'alice']), /team core: 3 timers/);
    assert.deepEqual(
      (await json(['timer', 'list', '--account', 'bob'])).timers.map((t: { note: string }) => t.note),
      ['x', 'retro'],
    );
  });
});
