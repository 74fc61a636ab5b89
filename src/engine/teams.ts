// Teams (docs/teams.md): a team is a room with roles. Members are the room's members; leaders are
// members marked leader; a leader holds only the capabilities the operator granted it by name.
// The operator's registry and a member's own view are here; team: and leader: mail is
// team-send.ts, team reminders team-timers.ts. Every change is recorded (who, when) by the store in
// the transaction of the change itself.
import { MailError } from '../wire/errors.js';
import type * as TM from '../wire/teams.js';
import type * as W from '../wire/ops.js';
import type { Store, StoredMessage, TeamAction, TeamChange } from '../store/types.js';
import type { Clock } from './clock.js';
import { iso } from './present.js';
import type { Caller } from './mail-engine.js';
import { MAILBOX_ACCOUNT } from './timers.js';
import { getTeam, needGrant, presentTeam, teamOfMember } from './team-rules.js';
import { teamSend, type TeamSendDeps } from './team-send.js';
import { teamRemind, type TeamTimerDeps } from './team-timers.js';

export interface TeamDeps extends TeamSendDeps, TeamTimerDeps {
  store: Store;
  clock: Clock;
  /** A membership changed: the account's parked readers re-query with their new rooms. */
  roomsChanged(account: string): void;
  /** A member who leaves gives back the team's pooled tasks it holds. */
  releaseHeldBy(account: string, room: string): Promise<void>;
  /** contact_refused unless the account's contact policy takes the caller's mail (contacts.ts). */
  admitsMail(c: Caller, account: string): Promise<void>;
}

const DEFAULT_CHANGES = 50;

/** `mailbox` sends reminders and reads nothing: as a member it would only swallow team copies. */
function reservedRefused(account: string): void {
  if (account === MAILBOX_ACCOUNT) throw new MailError('malformed', 'mailbox is reserved: reminders come from it', { field: 'account', reason: 'reserved' });
}

export class TeamBook {
  constructor(private d: TeamDeps) {}

  private operatorOnly(c: Caller): void {
    if (!c.account.permissions.operator) throw new MailError('permission_denied', 'this needs the operator credential', { need: 'operator' });
  }

  private change(c: Caller, room: string, action: TeamAction, account: string | null, capability: TM.TeamCapability | null = null): TeamChange {
    return { room, at: this.d.clock.now(), by: c.account.id, action, account, capability };
  }

  private async out(team: string): Promise<TM.TeamOut> {
    return presentTeam(await getTeam(this.d.store, team));
  }

  /** Every member must exist before anything is made; the name must be free of rooms and teams.
   *  Each initial member is recorded as a `create` change naming it. */
  async create(c: Caller, req: TM.TeamCreateRequest): Promise<TM.TeamOut> {
    this.operatorOnly(c);
    const members = [...new Set(req.members ?? [])];
    for (const m of members) {
      reservedRefused(m);
      if (!(await this.d.store.getAccount(m))) throw new MailError('unknown_participant', `no account ${m}`, { participant: m });
    }
    if ((await this.d.store.addRoom(req.name, this.d.clock.now(), { team: true, everyone: false, open: !!req.open })) === 'exists')
      throw new MailError('already_exists', `a room or team named ${req.name} exists`, { field: 'name' });
    for (const m of members) {
      // An account removed since the check above is simply not a member.
      if ((await this.d.store.addMember(req.name, m, this.change(c, req.name, 'create', m))) === 'ok') this.d.roomsChanged(m);
    }
    return this.out(req.name);
  }

  async memberAdd(c: Caller, req: TM.TeamMemberRequest): Promise<TM.TeamOut> {
    this.operatorOnly(c);
    await this.addMember(c, req);
    return this.out(req.team);
  }

  async memberRemove(c: Caller, req: TM.TeamMemberRequest): Promise<TM.TeamOut> {
    this.operatorOnly(c);
    await getTeam(this.d.store, req.team);
    await this.removeMember(c, req);
    return this.out(req.team);
  }

  /** Only a member can be a leader (not_team_member {team, account}); leadership grants nothing. */
  async leaderAdd(c: Caller, req: TM.TeamMemberRequest): Promise<TM.TeamOut> {
    this.operatorOnly(c);
    await this.setLeader(c, req, true);
    return this.out(req.team);
  }

  /** Ends the leadership and with it every grant of it. */
  async leaderRemove(c: Caller, req: TM.TeamMemberRequest): Promise<TM.TeamOut> {
    this.operatorOnly(c);
    await this.setLeader(c, req, false);
    return this.out(req.team);
  }

  /** Grants go to leaders only: to anyone else malformed {field: 'leader', reason: 'not a leader'}. */
  async grant(c: Caller, req: TM.TeamGrantRequest): Promise<TM.TeamOut> {
    this.operatorOnly(c);
    await this.setGrant(c, req, true);
    return this.out(req.team);
  }

  async revoke(c: Caller, req: TM.TeamGrantRequest): Promise<TM.TeamOut> {
    this.operatorOnly(c);
    await this.setGrant(c, req, false);
    return this.out(req.team);
  }

  async list(c: Caller): Promise<TM.TeamListResponse> {
    this.operatorOnly(c);
    return { teams: (await this.d.store.listRooms()).filter((r) => r.team).map(presentTeam) };
  }

  async show(c: Caller, req: TM.TeamShowRequest): Promise<TM.TeamShowResponse> {
    this.operatorOnly(c);
    const r = await getTeam(this.d.store, req.team);
    const changes = await this.d.store.teamChanges(req.team, null, req.changes ?? DEFAULT_CHANGES);
    return {
      ...presentTeam(r),
      changes: changes.map((x) => ({
        at: iso(x.at),
        by: x.by,
        action: x.action,
        ...(x.account !== null ? { account: x.account } : {}),
        ...(x.capability !== null ? { capability: x.capability } : {}),
      })),
    };
  }

  /** m4a_team: any member sees its team; a leader granted team.manage_members adds and removes
   *  members who are not leaders (never itself), and nothing else. */
  async action(c: Caller, req: TM.TeamActionRequest): Promise<TM.TeamActionResponse> {
    const r = await teamOfMember(this.d.store, c, req.team);
    if (req.action !== 'show') {
      needGrant(r, c, 'team.manage_members');
      if (req.account === undefined) throw new MailError('malformed', `${req.action} needs account`, { field: 'account', reason: 'missing' });
      const target = { team: req.team, account: req.account };
      if (req.action === 'member-add') {
        // A teammate is known to contacts_only: a leader adds only who takes its mail already.
        await this.d.admitsMail(c, req.account);
        await this.addMember(c, target);
      } else {
        if (req.account === c.account.id || r.leaders.some((l) => l.account === req.account))
          throw new MailError('not_granted', `removing ${req.account === c.account.id ? 'yourself' : `the leader ${req.account}`} from team ${req.team} is the operator's`, {
            team: req.team,
            capability: 'team.manage_members',
          });
        await this.removeMember(c, target);
      }
    }
    const now = await getTeam(this.d.store, req.team);
    return { ...presentTeam(now), you: now.leaders.some((l) => l.account === c.account.id) ? 'leader' : 'member' };
  }

  /** team: and leader: mail (team-send.ts). */
  send(c: Caller, req: W.SendRequest, parent: StoredMessage | null): Promise<W.SendResponse> {
    return teamSend(this.d, c, req, parent);
  }

  /** A team reminder: one timer per member (team-timers.ts). */
  remind(c: Caller, req: TM.TeamTimerRequest): Promise<TM.TeamTimerResponse> {
    return teamRemind(this.d, c, req);
  }

  // ---- the changes themselves

  private async addMember(c: Caller, req: TM.TeamMemberRequest): Promise<void> {
    await getTeam(this.d.store, req.team);
    reservedRefused(req.account);
    const r = await this.d.store.addMember(req.team, req.account, this.change(c, req.team, 'member.add', req.account));
    if (r === 'no_room') throw new MailError('unknown_team', `no team ${req.team}`, { team: req.team });
    if (r === 'no_account') throw new MailError('unknown_participant', `no account ${req.account}`, { participant: req.account });
    if (r === 'ok') this.d.roomsChanged(req.account);
  }

  private async removeMember(c: Caller, req: TM.TeamMemberRequest): Promise<void> {
    if (!(await this.d.store.removeMember(req.team, req.account, this.change(c, req.team, 'member.remove', req.account)))) return;
    this.d.roomsChanged(req.account);
    await this.d.releaseHeldBy(req.account, req.team);
  }

  private async setLeader(c: Caller, req: TM.TeamMemberRequest, leader: boolean): Promise<void> {
    const r = await this.d.store.setLeader(req.team, req.account, leader, this.change(c, req.team, leader ? 'leader.add' : 'leader.remove', req.account));
    if (r === 'no_room' || r === 'not_team') throw new MailError('unknown_team', `no team ${req.team}`, { team: req.team });
    // Ending the leadership of a non-member is already the case: nothing to do.
    if (r === 'not_member' && leader)
      throw new MailError('not_team_member', `${req.account} is not a member of team ${req.team}; only a member can lead it`, { team: req.team, account: req.account });
  }

  private async setGrant(c: Caller, req: TM.TeamGrantRequest, granted: boolean): Promise<void> {
    const r = await this.d.store.setGrant(req.team, req.leader, req.capability, granted, this.change(c, req.team, granted ? 'grant' : 'revoke', req.leader, req.capability));
    if (r === 'no_room' || r === 'not_team') throw new MailError('unknown_team', `no team ${req.team}`, { team: req.team });
    // A revoke from a non-leader holds already; a grant needs a leader (leadership is the operator's to give).
    if (r === 'not_leader' && granted)
      throw new MailError('malformed', `${req.leader} is not a leader of team ${req.team}; make it one first`, { field: 'leader', reason: 'not a leader' });
  }
}
