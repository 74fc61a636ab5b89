// Teams (docs/teams.md): a team is a room with roles. Members are the room's members; leaders are
// members marked leader; a leader holds only the capabilities granted to it by name. `team:NAME`
// and `leader:NAME` (wire/address.ts) expand at send time to the other members or leaders.
import { z } from 'zod';
import { LIMITS } from './limits.js';
import { Selector, text } from './fields.js';
import { TimerOut } from './wake.js';

/** The capabilities a leader can be granted; leadership alone holds none. */
export const TEAM_CAPABILITIES = ['timer.schedule_team', 'team.manage_members'] as const;
export const TeamCapability = z.enum(TEAM_CAPABILITIES);
export type TeamCapability = z.infer<typeof TeamCapability>;

/** Members a team is created with, at most. */
export const TEAM_CREATE_MEMBERS_MAX = 256;

const Team = Selector.describe('team name');
const Account = Selector.describe('an account id');

export const TeamCreateRequest = z.strictObject({
  name: Team,
  members: z.array(Account).max(TEAM_CREATE_MEMBERS_MAX).optional(),
  /** Like a room: anyone may post to #NAME (team: and leader: stay members only). */
  open: z.boolean().optional(),
});
export const TeamMemberRequest = z.strictObject({ team: Team, account: Account });
export const TeamGrantRequest = z.strictObject({ team: Team, leader: Account, capability: TeamCapability });
export const TeamShowRequest = z.strictObject({
  team: Team,
  changes: z.number().int().min(0).max(1000).optional().describe('how many recorded changes, newest first (default 50)'),
});

export const TeamLeaderOut = z.object({ account: z.string(), grants: z.array(TeamCapability) });
export const TeamChangeOut = z.object({
  at: z.string(),
  by: z.string().describe('the account that made the change (operator, or a leader with team.manage_members)'),
  action: z.enum(['create', 'member.add', 'member.remove', 'leader.add', 'leader.remove', 'grant', 'revoke']),
  account: z.string().optional(),
  capability: TeamCapability.optional(),
});
export const TeamOut = z.object({
  name: z.string(),
  members: z.array(z.string()),
  leaders: z.array(TeamLeaderOut),
  open: z.boolean(),
  created_at: z.string(),
});
export const TeamShowResponse = TeamOut.extend({ changes: z.array(TeamChangeOut) });
export const TeamListResponse = z.object({ teams: z.array(TeamOut) });

/** m4a_team: what a member may do with its own team through its agent credential. */
export const TeamActionRequest = z.strictObject({
  action: z.enum(['show', 'member-add', 'member-remove']).describe('what to do'),
  team: Team,
  account: Account.optional().describe('member-add/-remove'),
});
export const TeamActionResponse = TeamOut.extend({ you: z.enum(['member', 'leader']) });

/** A team reminder: one independent timer per current member (the caller only with include_self). */
export const TeamTimerRequest = z.strictObject({
  team: Team,
  in_secs: z
    .number()
    .int()
    .min(1)
    .max(366 * 24 * 3600)
    .describe('seconds from now'),
  note: text(LIMITS.subjectBytes).describe('what to remind of'),
  include_self: z.boolean().optional().describe('also remind yourself'),
});
export const TeamTimerResponse = z.object({ team: z.string(), timers: z.array(TimerOut) });

export type TeamCreateRequest = z.output<typeof TeamCreateRequest>;
export type TeamMemberRequest = z.output<typeof TeamMemberRequest>;
export type TeamGrantRequest = z.output<typeof TeamGrantRequest>;
export type TeamShowRequest = z.output<typeof TeamShowRequest>;
export type TeamOut = z.infer<typeof TeamOut>;
export type TeamChangeOut = z.infer<typeof TeamChangeOut>;
export type TeamShowResponse = z.infer<typeof TeamShowResponse>;
export type TeamListResponse = z.infer<typeof TeamListResponse>;
export type TeamActionRequest = z.output<typeof TeamActionRequest>;
export type TeamActionResponse = z.infer<typeof TeamActionResponse>;
export type TeamTimerRequest = z.output<typeof TeamTimerRequest>;
export type TeamTimerResponse = z.infer<typeof TeamTimerResponse>;
