// 15. Teams and contact policies, on their own daemon (SQLite, the default store). One client sends
// one request at a time, the variants interleaved (loadgen/teams.ts): what a contact policy adds to
// a direct send (a contact on the list; a room-mate, the longest check), and what a `team:` send to
// N other members costs (N copies, each its own message) beside a post to a room of the same members
// (one message). Each copy count the answers listed is checked here.
import type { Ctx, ScenarioResult, Row } from '../lib/context.js';
import { startDaemon } from '../lib/daemon.js';
import type { TeamRttResult } from '../loadgen/teams.js';
import { pct, ratio } from '../lib/format.js';

const TEAM = 'bt-team';
const ROOM = 'bt-room';
const SHARED = 'bt-shared';

export async function teams(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const d = await startDaemon(ctx.dataDir('teams'));
  try {
    const members = Array.from({ length: z.teamMembers }, (_, i) => `bt-m${String(i).padStart(4, '0')}`);
    ctx.phase('15 teams · accounts');
    const secrets = await d.accounts(['bt-s', 'bt-open', 'bt-contact', 'bt-mate', ...members], 8, (n) => ctx.tick(n, members.length + 4, 'accounts'));
    const a = d.operator.admin;
    await a.teamCreate({ name: TEAM, members: ['bt-s', ...members] });
    await a.roomAdd(ROOM);
    for (const m of ['bt-s', ...members]) await a.memberAdd(ROOM, m);
    await a.roomAdd(SHARED);
    for (const m of ['bt-s', 'bt-mate']) await a.memberAdd(SHARED, m);
    await a.policySet('bt-contact', 'contacts_only');
    await a.policySet('bt-mate', 'contacts_only');
    const { MailClient } = await import('../../src/client/http-client.js');
    const contact = new MailClient({ url: d.url, token: secrets.get('bt-contact')! });
    await contact.contacts.add('bt-s');
    contact.close();
    const r = await ctx.loadgen<TeamRttResult>(
      {
        mode: 'team-rtt',
        port: d.port,
        sender: secrets.get('bt-s')!,
        open: 'bt-open',
        contact: 'bt-contact',
        roomMate: 'bt-mate',
        room: ROOM,
        team: TEAM,
        members: members.length,
        count: z.teamRounds,
        warmup: 20,
      },
      `15 teams · sends by policy, room post and team: send to ${members.length}, interleaved`,
    );
    if (r.copies.length !== 1 || r.copies[0] !== members.length) throw new Error(`team sends listed ${r.copies.join(', ')} copies, expected ${members.length}`);
    const s = '15 teams and contact policies (one client, interleaved)';
    const rows: Row[] = [
      { scenario: s, system: 'mail4agent HTTP', metric: 'send to an open account (baseline)', value: pct(r.open) },
      {
        scenario: s,
        system: 'mail4agent HTTP',
        metric: 'send to contacts_only, sender on its list',
        value: `${pct(r.contact)} · ${ratio(r.contact.p50, r.open.p50)} the baseline`,
      },
      { scenario: s, system: 'mail4agent HTTP', metric: 'send to contacts_only, a room-mate', value: `${pct(r.roomMate)} · ${ratio(r.roomMate.p50, r.open.p50)} the baseline` },
      {
        scenario: s,
        system: 'mail4agent HTTP',
        metric: `post to a room of ${r.members} others (1 message)`,
        value: `${pct(r.room)} · ${ratio(r.room.p50, r.open.p50)} the baseline`,
      },
      {
        scenario: s,
        system: 'mail4agent HTTP',
        metric: `team: send to ${r.members} others (${r.members} copies)`,
        value: `${pct(r.team)} · ${ratio(r.team.p50, r.open.p50)} the baseline · ${ratio(r.team.p50, r.room.p50)} the room post`,
      },
    ];
    return { name: 'teams', data: r, rows, targets: [] };
  } finally {
    await d.stop();
  }
}
