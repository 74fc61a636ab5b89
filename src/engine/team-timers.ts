// Team reminders (docs/teams.md): a leader granted timer.schedule_team sets one timer per current
// member (itself only with include_self). Each is an ordinary account-wide timer of that member
// (timers.ts) that also names the team and who set it, so every member lists, snoozes and clears
// its own and the others stay.
import { MailError } from '../wire/errors.js';
import type * as TM from '../wire/teams.js';
import type { TimerOut } from '../wire/wake.js';
import type { Store } from '../store/types.js';
import { need, type Caller } from './mail-engine.js';
import { needGrant, teamOfMember } from './team-rules.js';

export interface TeamTimerDeps {
  store: Store;
  /** Sets one account-wide timer per account, or none when one of them is full (rate_limited). */
  setTeamTimers(accounts: string[], inSecs: number, note: string, origin: { team: string; by: string }): Promise<TimerOut[]>;
}

export async function teamRemind(d: TeamTimerDeps, c: Caller, req: TM.TeamTimerRequest): Promise<TM.TeamTimerResponse> {
  need(c, 'read');
  const team = await teamOfMember(d.store, c, req.team);
  needGrant(team, c, 'timer.schedule_team');
  const accounts = req.include_self ? [...team.members] : team.members.filter((m) => m !== c.account.id);
  if (accounts.length === 0) throw new MailError('no_recipients', `team ${req.team} has no member to remind but you`, { team: req.team });
  return { team: req.team, timers: await d.setTeamTimers(accounts, req.in_secs, req.note, { team: req.team, by: c.account.id }) };
}
