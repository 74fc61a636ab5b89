// m4a team … (a member's view of its team; a leader granted team.manage_members adds and removes
// members) and m4a admin team … (the operator's registry). docs/teams.md.
import type { Command } from 'commander';
import type { MailClient } from '../client/http-client.js';
import type { TeamCapability, TeamOut, TeamShowResponse } from '../wire/teams.js';
import { UsageError } from './connect.js';
import { common, run, type Common } from './agent-command.js';
import { asOperator, operatorCommon, type OperatorOptions } from './admin-commands.js';
import { fail } from './output.js';
import { dim, table } from './format.js';

const leaderLine = (t: TeamOut): string =>
  t.leaders.length === 0 ? dim('no leaders') : t.leaders.map((l) => `${l.account}${l.grants.length ? ` (${l.grants.join(', ')})` : ''}`).join(', ');

/** The team as text: members, leaders with their grants, and (for the operator) its changes. */
export function teamText(t: TeamOut | TeamShowResponse): string {
  const lines = [`team ${t.name}${t.open ? ' (anyone may post to #' + t.name + ')' : ''}`, `members: ${t.members.join(', ') || '-'}`, `leaders: ${leaderLine(t)}`];
  if ('changes' in t && t.changes.length > 0)
    lines.push('', table([['AT', 'BY', 'CHANGE', 'ACCOUNT', 'CAPABILITY'], ...t.changes.map((x) => [x.at, x.by, x.action, x.account ?? '-', x.capability ?? '-'])]));
  return lines.join('\n');
}

export function registerTeam(program: Command): void {
  const team = program.command('team').description('your team: its members and leaders; a leader granted team.manage_members adds and removes members');
  common(team.command('show <team>').description('the team, as a member sees it')).action((name: string, o: Common) =>
    run(
      o,
      (c) => c.team.show(name),
      (t) => `${teamText(t)}\nyou: ${t.you}`,
    ),
  );
  common(team.command('member-add <team> <account>').description('add a member (needs team.manage_members)')).action((name: string, acc: string, o: Common) =>
    run(
      o,
      (c) => c.team.memberAdd(name, acc),
      () => `${acc} is now a member of team ${name}`,
    ),
  );
  common(team.command('member-remove <team> <account>').description('remove a member who is not a leader (needs team.manage_members)')).action(
    (name: string, acc: string, o: Common) =>
      run(
        o,
        (c) => c.team.memberRemove(name, acc),
        () => `${acc} is no longer a member of team ${name}`,
      ),
  );
}

/** m4a admin team …: registered under `admin` by admin-commands.ts. */
export function registerAdminTeam(admin: Command): void {
  const common = operatorCommon;
  type O = OperatorOptions;
  const team = admin.command('team').description('teams: rooms whose members can be leaders holding named grants');
  common(team.command('create <name>').description('create a team (members only may post to #NAME, unless --open)'))
    .option('--member <account>', 'a member (repeat)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--open', 'anyone may post to #NAME')
    .action((name: string, o: O & { member: string[]; open?: boolean }) =>
      asOperator(
        o,
        (c) => c.admin.teamCreate({ name, members: o.member, ...(o.open ? { open: true } : {}) }),
        (t) => `team ${name} created\n${teamText(t)}`,
      ),
    );
  const pair = (verb: string, what: string, call: (c: MailClient, name: string, acc: string) => Promise<TeamOut>, done: (name: string, acc: string) => string) =>
    common(team.command(`${verb} <name> <account>`).description(what)).action((name: string, acc: string, o: O) =>
      asOperator(
        o,
        (c) => call(c, name, acc),
        () => done(name, acc),
      ),
    );
  pair(
    'member-add',
    'add a member',
    (c, n, a) => c.admin.teamMemberAdd(n, a),
    (n, a) => `${a} is now a member of team ${n}`,
  );
  pair(
    'member-remove',
    'remove a member (a leader loses its leadership and grants)',
    (c, n, a) => c.admin.teamMemberRemove(n, a),
    (n, a) => `${a} is no longer a member of team ${n}`,
  );
  pair(
    'leader-add',
    'make a member a leader (it holds no grant until given one)',
    (c, n, a) => c.admin.teamLeaderAdd(n, a),
    (n, a) => `${a} now leads team ${n} (no grants)`,
  );
  pair(
    'leader-remove',
    "end a leader's leadership, revoking its grants",
    (c, n, a) => c.admin.teamLeaderRemove(n, a),
    (n, a) => `${a} no longer leads team ${n}; its grants are revoked`,
  );
  for (const [verb, what] of [
    ['grant', 'grant a leader a capability'],
    ['revoke', "revoke a leader's capability"],
  ] as const)
    common(team.command(`${verb} <name>`).description(what))
      .requiredOption('--leader <account>', 'the leader')
      .requiredOption('--capability <capability>', 'timer.schedule_team or team.manage_members')
      .action((name: string, o: O & { leader: string; capability: string }) => {
        // The daemon checks the name (malformed {field: 'capability'}): the wire's list stays its own.
        const input = { team: name, leader: o.leader, capability: o.capability as TeamCapability };
        return asOperator(
          o,
          (c) => (verb === 'grant' ? c.admin.teamGrant(input) : c.admin.teamRevoke(input)),
          () => `${o.leader} ${verb === 'grant' ? 'now holds' : 'no longer holds'} ${o.capability} in team ${name}`,
        );
      });
  common(team.command('list').description('every team with its members, leaders and grants')).action((o: O) =>
    asOperator(
      o,
      (c) => c.admin.teamList(),
      (r) => (r.teams.length === 0 ? dim('no teams') : table([['TEAM', 'MEMBERS', 'LEADERS'], ...r.teams.map((t) => [t.name, t.members.join(', ') || '-', leaderLine(t)])])),
    ),
  );
  common(team.command('show <name>').description('a team and its recorded changes (who, when), newest first'))
    .option('--changes <n>', 'how many changes (default 50)')
    .action((name: string, o: O & { changes?: string }) => {
      const n = o.changes === undefined ? undefined : Number(o.changes);
      if (n !== undefined && !(Number.isInteger(n) && n >= 0)) fail(new UsageError('--changes: a whole number'), !!o.json);
      return asOperator(
        o,
        (c) => c.admin.teamShow({ team: name, ...(n !== undefined ? { changes: n } : {}) }),
        (t) => teamText(t),
      );
    });
}
