// The schemas of every operation of operation-facts.ts, by the same name: the request, the answer,
// and for MCP tools a narrower request for models where it differs (a plain-string address, the
// shorter wait). `OPERATIONS` joins facts and schemas for the doors and the docs.
import type { z } from 'zod';
import * as W from './ops.js';
import * as A from './admin.js';
import * as H from './hooks.js';
import * as WK from './wake.js';
import * as WW from './web.js';
import * as IM from './import-omp-mail.js';
import * as IMX from './import-mail.js';
import * as T from './tasks.js';
import * as L from './leases.js';
import * as LT from './lease-tool.js';
import * as TM from './teams.js';
import * as CT from './contacts.js';
import * as RT from './retention.js';
import * as S from './search.js';
import * as WF from './wait-for.js';
import * as EA from './email-attachment.js';
import { McpInboxWaitRequest } from './mcp-inbox.js';
import * as SP from './support.js';
import * as RL from './relay-link-ops.js';
import { OPERATION_FACTS, OPERATION_NAMES, type OperationFacts, type OperationName } from './operation-facts.js';

export * from './operation-facts.js';

export interface OperationSchemas {
  readonly input: z.ZodType;
  readonly output: z.ZodType;
  readonly mcpInput?: z.ZodType;
}

/** Over MCP an address is a plain string, and the correlation (a string for scripts, never read by
 *  the mailbox) and request_contact (m4a send --request-contact) are left out; both stay over HTTP. */
const McpSend = W.SendRequest.omit({ correlation: true, request_contact: true }).extend({ to: W.AddressString });

export const OPERATION_SCHEMAS = {
  // ---- mail: agents (MCP tools and /mail/*), most also for persons in the browser
  send: { input: W.SendRequest, output: W.SendResponse, mcpInput: McpSend },
  reply: { input: W.ReplyRequest, output: W.ReplyResponse },
  inbox: { input: W.InboxRequest, output: W.InboxResponse, mcpInput: McpInboxWaitRequest },
  ack: { input: W.AckRequest, output: W.AckResponse },
  get: { input: W.GetRequest, output: W.GetResponse, mcpInput: W.McpGetRequest },
  search: { input: S.SearchRequest, output: S.SearchResponse, mcpInput: S.McpSearchRequest },
  wait_for: { input: WF.WaitForRequest, output: WF.WaitForResponse },
  attachment: { input: EA.AttachmentRequest, output: EA.AttachmentResponse },
  unread: { input: W.EmptyRequest, output: W.UnreadResponse },
  whoami: { input: W.EmptyRequest, output: W.WhoamiResponse },
  status: { input: W.StatusRequest, output: W.StatusResponse },
  directory: { input: W.DirectoryRequest, output: W.DirectoryResponse },
  remind: { input: WK.TimerSetRequest, output: WK.TimerOut },

  // ---- tasks and approvals
  task: { input: T.McpTaskRequest, output: T.TaskActionResponse },
  'task.create': { input: T.TaskCreateRequest, output: T.TaskOut },
  'task.get': { input: T.TaskGetRequest, output: T.TaskOut, mcpInput: T.McpTaskGetRequest },
  'task.list': { input: T.TaskListRequest, output: T.TaskListResponse },
  'task.update': { input: T.TaskUpdateRequest, output: T.TaskOut },
  'task.cancel': { input: T.TaskCancelRequest, output: T.TaskOut },
  'task.claim': { input: T.TaskClaimRequest, output: T.TaskClaimResponse },
  approval: { input: T.McpApprovalRequest, output: T.ApprovalOut },
  'approval.request': { input: T.ApprovalRequest, output: T.ApprovalOut },
  'approval.decide': { input: T.ApprovalDecideRequest, output: T.ApprovalOut },
  'approval.get': { input: T.ApprovalGetRequest, output: T.ApprovalOut },

  // ---- leases
  reserve: { input: LT.McpReserveRequest, output: LT.ReserveResponse },
  'lease.claim': { input: L.LeaseClaimRequest, output: L.LeaseOut },
  'lease.renew': { input: L.LeaseRenewRequest, output: L.LeaseOut },
  'lease.release': { input: L.LeaseReleaseRequest, output: L.LeaseOut },
  'lease.list': { input: L.LeaseListRequest, output: L.LeaseListResponse },
  'lease.check': { input: L.LeaseCheckRequest, output: L.LeaseCheckResponse },

  // ---- agents over HTTP only: hooks, timers, receipts
  notice: { input: H.NoticeRequest, output: H.NoticeResponse },
  listen: { input: H.ListenRequest, output: H.ListenResponse },
  'timer.list': { input: W.EmptyRequest, output: WK.TimerListResponse },
  'timer.snooze': { input: WK.TimerSnoozeRequest, output: WK.TimerOut },
  'timer.clear': { input: WK.TimerIdRequest, output: WK.OkResponse },
  'timer.team': { input: TM.TeamTimerRequest, output: TM.TeamTimerResponse },
  team: { input: TM.TeamActionRequest, output: TM.TeamActionResponse },
  'contacts.list': { input: W.EmptyRequest, output: CT.ContactsListResponse },
  'contacts.add': { input: CT.ContactRequest, output: CT.ContactAddResponse },
  'contacts.remove': { input: CT.ContactRequest, output: WK.OkResponse },
  'contacts.accept': { input: CT.ContactRequest, output: CT.ContactAddResponse },
  'contacts.decline': { input: CT.ContactRequest, output: CT.ContactDeclineResponse },
  'policy.set': { input: CT.PolicySetRequest, output: CT.PolicyOut },
  attention: { input: CT.AttentionRequest, output: CT.AttentionOut },
  receipts: { input: WK.ReceiptsRequest, output: WK.ReceiptsResponse },

  // ---- the operator's registry (/admin/*); most also for an operator person in the browser
  'account.add': { input: A.AccountAddRequest, output: A.AccountSecretResponse },
  'account.rotate': { input: A.AccountIdRequest, output: A.AccountSecretResponse },
  'account.remove': { input: A.AccountIdRequest, output: A.RemovedResponse },
  'account.list': { input: A.AccountIdRequest.partial(), output: A.AccountListResponse },
  'room.add': { input: A.RoomAddRequest, output: A.OkResponse },
  'room.set': { input: A.RoomSetRequest, output: A.OkResponse },
  'room.remove': { input: A.RoomRequest, output: A.RemovedResponse },
  'room.list': { input: A.RoomRequest.partial(), output: A.RoomListResponse },
  'room.member.add': { input: A.MemberRequest, output: A.OkResponse },
  'room.member.remove': { input: A.MemberRequest, output: A.OkResponse },
  'team.create': { input: TM.TeamCreateRequest, output: TM.TeamOut },
  'team.member.add': { input: TM.TeamMemberRequest, output: TM.TeamOut },
  'team.member.remove': { input: TM.TeamMemberRequest, output: TM.TeamOut },
  'team.leader.add': { input: TM.TeamMemberRequest, output: TM.TeamOut },
  'team.leader.remove': { input: TM.TeamMemberRequest, output: TM.TeamOut },
  'team.grant': { input: TM.TeamGrantRequest, output: TM.TeamOut },
  'team.revoke': { input: TM.TeamGrantRequest, output: TM.TeamOut },
  'team.list': { input: W.EmptyRequest, output: TM.TeamListResponse },
  'team.show': { input: TM.TeamShowRequest, output: TM.TeamShowResponse },
  'account.policy': { input: CT.AdminPolicySetRequest, output: CT.PolicyOut },
  'listener.set': { input: A.ListenerSetRequest, output: A.OkResponse },
  'listener.remove': { input: A.ListenerRemoveRequest, output: A.OkResponse },
  'user.create': { input: WW.UserCreateRequest, output: WW.UserCreateResponse },
  'user.passwd': { input: WW.UserPasswordRequest, output: A.OkResponse },
  'user.revoke-sessions': { input: WW.UserIdRequest, output: WW.UserRevokeResponse },
  'daemon.stop': { input: A.DaemonStopRequest, output: A.OkResponse },
  'retention.set': { input: RT.RetentionSetRequest, output: RT.RetentionSetResponse },
  'retention.list': { input: W.EmptyRequest, output: RT.RetentionListResponse },
  'retention.run': { input: W.EmptyRequest, output: RT.RetentionRunOut },

  // ---- wake chains run programs: the operator from this machine only
  'wake.set': { input: WK.WakeSetRequest, output: WK.WakeSetResponse },
  'wake.list': { input: WK.WakeTargetRequest.partial(), output: WK.WakeListResponse },
  'wake.clear': { input: WK.WakeTargetRequest, output: WK.OkResponse },

  // ---- the relay link: the operator from this machine only
  'connect.configure': { input: RL.ConnectConfigureRequest, output: RL.ConnectStatusResponse },
  'connect.update': { input: RL.ConnectUpdateRequest, output: RL.ConnectStatusResponse },
  'connect.removeuser': { input: RL.ConnectRemoveUserRequest, output: RL.ConnectStatusResponse },
  'connect.start': { input: W.EmptyRequest, output: RL.ConnectStatusResponse },
  'connect.stop': { input: W.EmptyRequest, output: RL.ConnectStatusResponse },
  'connect.status': { input: W.EmptyRequest, output: RL.ConnectStatusResponse },

  // ---- support: the operator from this machine only
  'support.counts': { input: W.EmptyRequest, output: SP.SupportCountsResponse },
  'support.sessions': { input: SP.SupportSessionsRequest, output: SP.SupportSessionsResponse },

  // ---- imports: the operator from this machine only
  'import.omp-mail': { input: IM.ImportOmpMailRequest, output: IM.ImportOmpMailResponse },
  'import.interagentmail': { input: IMX.ImportMailRequest, output: IMX.ImportMailResponse },
  'import.agent-mail': { input: IMX.ImportMailRequest, output: IMX.ImportMailResponse },

  // ---- the browser only
  'web.me': { input: W.EmptyRequest, output: WW.WebMeResponse },
  'web.inbox': { input: WW.WebInboxRequest, output: WW.WebInboxResponse },
  'web.overview': { input: W.EmptyRequest, output: WW.WebOverviewResponse },
} as const satisfies { readonly [K in OperationName]: OperationSchemas };

export type OperationSpec = OperationFacts & OperationSchemas;
export type OpInput<K extends OperationName> = z.output<(typeof OPERATION_SCHEMAS)[K]['input']>;
export type OpOutput<K extends OperationName> = z.infer<(typeof OPERATION_SCHEMAS)[K]['output']>;

export const OPERATIONS = Object.fromEntries(OPERATION_NAMES.map((n) => [n, { ...OPERATION_FACTS[n], ...OPERATION_SCHEMAS[n] }])) as unknown as {
  readonly [K in OperationName]: OperationSpec;
};
