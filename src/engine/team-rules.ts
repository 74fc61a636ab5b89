// The rules every team operation shares: which room is a team, who is a member, who holds a grant.
import { MailError } from '../wire/errors.js';
import type * as TM from '../wire/teams.js';
import type { RoomRecord, Store } from '../store/types.js';
import { iso } from './present.js';
import type { Caller } from './mail-engine.js';

export function presentTeam(r: RoomRecord): TM.TeamOut {
  return { name: r.name, members: [...r.members], leaders: r.leaders.map((l) => ({ account: l.account, grants: [...l.grants] })), open: r.open, created_at: iso(r.createdAt) };
}

/** The team of that name; a plain room is not one. */
export async function getTeam(store: Store, team: string): Promise<RoomRecord> {
  const r = await store.getRoom(team);
  if (!r || !r.team) throw new MailError('unknown_team', `no team ${team}`, { team });
  return r;
}

/** The caller's team, refused unless it is a current member. */
export async function teamOfMember(store: Store, c: Caller, team: string): Promise<RoomRecord> {
  const r = await getTeam(store, team);
  if (!r.members.includes(c.account.id)) throw new MailError('not_team_member', `${c.account.id} is not a member of team ${team}`, { team });
  return r;
}

/** Refuses a member that is not a leader of the team holding the capability. */
export function needGrant(r: RoomRecord, c: Caller, capability: TM.TeamCapability): void {
  const l = r.leaders.find((x) => x.account === c.account.id);
  if (!l || !l.grants.includes(capability))
    throw new MailError('not_granted', `${c.account.id} is not a leader of team ${r.name} holding ${capability}`, { team: r.name, capability });
}
