// Teams: rooms with roles (docs/teams.md). Being worked on: the rules land with issue #17.
import { MailError } from '../wire/errors.js';
import type * as TM from '../wire/teams.js';
import type * as W from '../wire/ops.js';
import type { StoredMessage } from '../store/types.js';
import type { Caller } from './mail-engine.js';

const todo = (): never => {
  throw new MailError('not_supported', 'teams are not built yet', { field: 'team' });
};

export class TeamBook {
  create(_c: Caller, _req: TM.TeamCreateRequest): Promise<TM.TeamOut> {
    return Promise.resolve(todo());
  }
  memberAdd(_c: Caller, _req: TM.TeamMemberRequest): Promise<TM.TeamOut> {
    return Promise.resolve(todo());
  }
  memberRemove(_c: Caller, _req: TM.TeamMemberRequest): Promise<TM.TeamOut> {
    return Promise.resolve(todo());
  }
  leaderAdd(_c: Caller, _req: TM.TeamMemberRequest): Promise<TM.TeamOut> {
    return Promise.resolve(todo());
  }
  leaderRemove(_c: Caller, _req: TM.TeamMemberRequest): Promise<TM.TeamOut> {
    return Promise.resolve(todo());
  }
  grant(_c: Caller, _req: TM.TeamGrantRequest): Promise<TM.TeamOut> {
    return Promise.resolve(todo());
  }
  revoke(_c: Caller, _req: TM.TeamGrantRequest): Promise<TM.TeamOut> {
    return Promise.resolve(todo());
  }
  list(_c: Caller): Promise<TM.TeamListResponse> {
    return Promise.resolve(todo());
  }
  show(_c: Caller, _req: TM.TeamShowRequest): Promise<TM.TeamShowResponse> {
    return Promise.resolve(todo());
  }
  /** m4a_team: a member's own view, and a granted leader's member changes. */
  action(_c: Caller, _req: TM.TeamActionRequest): Promise<TM.TeamActionResponse> {
    return Promise.resolve(todo());
  }
  /** team: and leader: mail: one copy per other member (or leader), each through MailPost.deliver. */
  send(_c: Caller, _req: W.SendRequest, _parent: StoredMessage | null): Promise<W.SendResponse> {
    return Promise.resolve(todo());
  }
  /** A team reminder: one timer per member. */
  remind(_c: Caller, _req: TM.TeamTimerRequest): Promise<TM.TeamTimerResponse> {
    return Promise.resolve(todo());
  }
}
