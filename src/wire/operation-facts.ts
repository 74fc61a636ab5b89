// Every operation of the daemon, declared once by name: its HTTP path, MCP tool, summary, who may
// call it, and whether it only reads or may be retried. Its schemas are in operations.ts under the
// same name (a name missing there fails the typecheck); the doors route from both, and the MCP tool
// list and its annotations, the client's paths, `m4a capabilities` and docs/protocol.md derive from
// them. This file loads no zod, so the CLI can read it without paying for the schemas.

/** Who may call: an agent's bearer (`/mail/*`, `/mcp`), a person logged in to the browser
 *  (`/web/api/*`), the operator credential (`/admin/*`), or the operator from this machine only. */
export type CallerKind = 'agent' | 'person' | 'operator' | 'local';

export interface OperationFacts {
  /** HTTP path (POST). Browser-only operations live under /web/api/. */
  readonly path: string;
  /** One or two sentences: the MCP tool description and the docs' summary. */
  readonly summary: string;
  readonly callers: readonly CallerKind[];
  /** Changes nothing (MCP readOnlyHint). */
  readonly readOnly: boolean;
  /** Running it twice has the effect of running it once (MCP idempotentHint; clients may retry). */
  readonly retrySafe: boolean;
  /** The MCP tool name, when the operation is one. */
  readonly tool?: string;
  /** The tool's description where the tool does more than the route (else the summary). */
  readonly toolSummary?: string;
}

const AGENT = ['agent'] as const;
const AGENT_PERSON = ['agent', 'person'] as const;
const OPERATOR = ['operator'] as const;
const OPERATOR_PERSON = ['operator', 'person'] as const;
const LOCAL = ['local'] as const;
const PERSON = ['person'] as const;

export const OPERATION_FACTS = {
  // ---- mail: agents (MCP tools and /mail/*), most also for persons in the browser
  send: {
    path: '/mail/send',
    summary: 'Send mail as your own session.',
    callers: AGENT_PERSON,
    readOnly: false,
    retrySafe: false,
    tool: 'm4a_mail_send',
  },
  reply: {
    path: '/mail/reply',
    summary: 'Answer in the thread, to the sender (room mail: the room); acks it.',
    callers: AGENT_PERSON,
    readOnly: false,
    retrySafe: false,
    tool: 'm4a_mail_reply',
  },
  inbox: {
    path: '/mail/inbox',
    summary: 'Unacknowledged mail, oldest first.',
    callers: AGENT,
    readOnly: true,
    retrySafe: true,
    tool: 'm4a_mail_inbox',
    toolSummary: 'Unacknowledged mail, oldest first. Filters wait for the next new match, with codes and links.',
  },
  ack: {
    path: '/mail/ack',
    summary: 'Mark mail handled; account and room mail account-wide.',
    callers: AGENT_PERSON,
    readOnly: false,
    retrySafe: true,
    tool: 'm4a_mail_ack',
  },
  get: {
    path: '/mail/get',
    summary: 'One message in full.',
    callers: AGENT_PERSON,
    readOnly: true,
    retrySafe: true,
    tool: 'm4a_mail_get',
  },
  search: {
    path: '/mail/search',
    summary: 'Search your mail.',
    callers: AGENT_PERSON,
    readOnly: true,
    retrySafe: true,
    tool: 'm4a_mail_search',
  },
  wait_for: {
    path: '/mail/wait_for',
    summary: 'Wait for new mail matching all filters (from: as printed or account; any case); gives its codes and links.',
    callers: AGENT,
    readOnly: true,
    retrySafe: true,
  },
  attachment: {
    path: '/mail/attachment',
    summary: 'One kept attachment of an e-mail from outside (get lists them), base64: untrusted bytes.',
    callers: AGENT_PERSON,
    readOnly: true,
    retrySafe: true,
  },
  unread: {
    path: '/mail/unread',
    summary: 'Count your unread mail.',
    callers: AGENT,
    readOnly: true,
    retrySafe: true,
    tool: 'm4a_mail_unread',
  },
  whoami: {
    path: '/mail/whoami',
    summary: 'Your address, rooms and session card.',
    callers: AGENT,
    readOnly: true,
    retrySafe: true,
    tool: 'm4a_mail_whoami',
  },
  status: {
    path: '/mail/status',
    summary: 'Describe yourself to peers.',
    callers: AGENT,
    readOnly: false,
    retrySafe: true,
    tool: 'm4a_mail_status',
  },
  directory: {
    path: '/mail/directory',
    summary: 'Live sessions by account, and rooms.',
    callers: AGENT_PERSON,
    readOnly: true,
    retrySafe: true,
    tool: 'm4a_mail_peers',
  },
  remind: {
    path: '/mail/remind',
    summary: 'Be woken by mail after in_secs, across restarts.',
    callers: AGENT,
    readOnly: false,
    retrySafe: false,
    tool: 'm4a_mail_remind',
  },

  // ---- tasks and approvals (docs/tasks.md): over MCP one tool each plus m4a_task_get
  task: {
    path: '/task',
    summary: "Hand work over and track it: create, update (the assignee), cancel (the requester), list, claim (a room's pooled task).",
    callers: AGENT,
    readOnly: false,
    retrySafe: false,
    tool: 'm4a_task',
  },
  'task.create': {
    path: '/task/create',
    summary: 'Hand a task to an account or a session; it gets it as mail (Task: <title>).',
    callers: AGENT_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  'task.get': {
    path: '/task/get',
    summary: 'A task with its history, result and children; wait_secs waits for its next change.',
    callers: AGENT_PERSON,
    readOnly: true,
    retrySafe: true,
    tool: 'm4a_task_get',
  },
  'task.list': { path: '/task/list', summary: 'Tasks assigned to you or requested by you, newest change first.', callers: AGENT_PERSON, readOnly: true, retrySafe: true },
  'task.update': {
    path: '/task/update',
    summary: 'The assignee moves a task: working, input_required (note: the question), completed, failed or rejected, with a result.',
    callers: AGENT_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  'task.cancel': { path: '/task/cancel', summary: 'The requester cancels a task.', callers: AGENT_PERSON, readOnly: false, retrySafe: false },
  'task.claim': {
    path: '/task/claim',
    summary: 'Take a task for a room you are in (the task, or the oldest on offer in pool) under an exclusive lease; update it with the lease epoch.',
    callers: AGENT_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  approval: {
    path: '/approval',
    summary: 'Approvals the mailbox records and never executes: request, decide (the reviewer), get.',
    callers: AGENT,
    readOnly: false,
    retrySafe: false,
    tool: 'm4a_approval',
  },
  'approval.request': {
    path: '/approval/request',
    summary: 'Ask a reviewer to approve an action; a linked task waits in auth_required.',
    callers: AGENT_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  'approval.decide': { path: '/approval/decide', summary: 'The reviewer approves or rejects, once, with a reason.', callers: AGENT_PERSON, readOnly: false, retrySafe: false },
  'approval.get': { path: '/approval/get', summary: 'An approval; with wait_secs, waits for the decision.', callers: AGENT_PERSON, readOnly: true, retrySafe: true },

  // ---- leases (docs/leases.md): claims that expire; over MCP one tool for file reservations
  reserve: {
    path: '/lease/reserve',
    summary: 'File reservations others respect: claim paths under root (all or none), renew, release, list.',
    callers: AGENT,
    readOnly: false,
    retrySafe: false,
    tool: 'm4a_reserve',
  },
  'lease.claim': {
    path: '/lease/claim',
    summary: 'Claim a resource (path:<glob> under root, or a pooled task) for your session until the TTL; lease_conflict names the holders.',
    callers: AGENT_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  'lease.renew': {
    path: '/lease/renew',
    summary: 'Extend a lease you hold (the heartbeat); lease_lost once it expired or changed hands.',
    callers: AGENT_PERSON,
    readOnly: false,
    retrySafe: true,
  },
  'lease.release': { path: '/lease/release', summary: 'End a lease you hold: the resource is free at once.', callers: AGENT_PERSON, readOnly: false, retrySafe: true },
  'lease.list': { path: '/lease/list', summary: 'Live leases, whoever holds them: holder, resource, mode, expiry.', callers: AGENT_PERSON, readOnly: true, retrySafe: true },
  'lease.check': {
    path: '/lease/check',
    summary: "For the commit guard: which of these paths other sessions hold exclusively (your own session's reservations aside).",
    callers: AGENT_PERSON,
    readOnly: true,
    retrySafe: true,
  },

  // ---- agents over HTTP only: hooks, timers, receipts
  notice: {
    path: '/mail/notice',
    summary: 'For hooks: mail this session has not been shown yet (ids, senders, subjects), and whether a Stop hook should block.',
    callers: AGENT,
    readOnly: false,
    retrySafe: false,
  },
  listen: {
    path: '/mail/listen',
    summary: 'Turn listen mode on or off for this session: its Stop hook then waits for mail instead of letting the agent go idle.',
    callers: AGENT,
    readOnly: false,
    retrySafe: true,
  },
  'timer.list': {
    path: '/mail/timer/list',
    summary: "Your account's timers, soonest first.",
    callers: AGENT,
    readOnly: true,
    retrySafe: true,
  },
  'timer.snooze': {
    path: '/mail/timer/snooze',
    summary: 'Move a timer of your account to in_secs from now.',
    callers: AGENT,
    readOnly: false,
    retrySafe: true,
  },
  'timer.clear': {
    path: '/mail/timer/clear',
    summary: 'Remove a timer of your account; it will not fire.',
    callers: AGENT,
    readOnly: false,
    retrySafe: true,
  },
  'timer.team': {
    path: '/mail/timer/team',
    summary: 'A team reminder: one timer per current member (you too with include_self), each cleared or snoozed on its own. Needs the timer.schedule_team grant.',
    callers: AGENT,
    readOnly: false,
    retrySafe: false,
  },
  team: {
    path: '/team',
    summary: 'Show your team; with the team.manage_members grant, add or remove non-leader members.',
    callers: AGENT,
    readOnly: false,
    retrySafe: false,
    tool: 'm4a_team',
  },
  'contacts.list': {
    path: '/mail/contacts/list',
    summary: 'Your contact policy, your contacts, and contact requests to and from you.',
    callers: AGENT,
    readOnly: true,
    retrySafe: true,
  },
  'contacts.add': {
    path: '/mail/contacts/add',
    summary: 'Add a contact (it may write to you under contacts_only); a pending request of its is accepted and its held mail delivered.',
    callers: AGENT,
    readOnly: false,
    retrySafe: true,
  },
  'contacts.remove': { path: '/mail/contacts/remove', summary: 'Remove a contact.', callers: AGENT, readOnly: false, retrySafe: true },
  'contacts.accept': {
    path: '/mail/contacts/accept',
    summary: "Accept an account's contact request: it becomes a contact and the mail held for the request is delivered.",
    callers: AGENT,
    readOnly: false,
    retrySafe: true,
  },
  'contacts.decline': {
    path: '/mail/contacts/decline',
    summary: 'Decline a contact request: the held mail goes back to its sender once, and its further requests are refused.',
    callers: AGENT,
    readOnly: false,
    retrySafe: true,
  },
  'policy.set': {
    path: '/mail/policy',
    summary: 'Who may write to your account: open (default), contacts_only, or block_all (people only).',
    callers: AGENT,
    readOnly: false,
    retrySafe: true,
  },
  attention: {
    path: '/mail/attention',
    summary: 'Quiet hours: dnd (non-urgent wakes wait), focus (only mail to you alone wakes) or open, until a time; mail is stored as always.',
    callers: AGENT,
    readOnly: false,
    retrySafe: true,
  },
  receipts: {
    path: '/mail/receipts',
    summary:
      'Delivery facts of one message per recipient: stored, signalled (adapter, when), surfaced (first inbox read), acknowledged. For its sender, its recipients and the operator.',
    callers: AGENT,
    readOnly: true,
    retrySafe: true,
  },

  // ---- the operator's registry (/admin/*); most also for an operator person in the browser
  'account.add': {
    path: '/admin/account/add',
    summary: 'Create an account; the secret is returned once.',
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  'account.rotate': {
    path: '/admin/account/rotate',
    summary: 'Issue a new secret; the old one stops working at once.',
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  'account.remove': {
    path: '/admin/account/remove',
    summary: 'Remove an account and delete its mail, sessions, wake chains and timers; a new account of the name inherits none of it.',
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  'account.list': {
    path: '/admin/account/list',
    summary: 'Every account, never a secret or digest.',
    callers: OPERATOR,
    readOnly: true,
    retrySafe: true,
  },
  'room.add': {
    path: '/admin/room/add',
    summary: 'Create a room; with everyone, every account is a member (the only broadcast); with open, non-members may post too.',
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  'room.set': {
    path: '/admin/room/set',
    summary: 'Open a room to posts from non-members, or close it to members only.',
    callers: OPERATOR,
    readOnly: false,
    retrySafe: true,
  },
  'room.remove': {
    path: '/admin/room/remove',
    summary: 'Remove a room with its memberships and delete its mail; a room created again under the name starts empty.',
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  'room.list': {
    path: '/admin/room/list',
    summary: 'Every room with its members.',
    callers: OPERATOR,
    readOnly: true,
    retrySafe: true,
  },
  'room.member.add': {
    path: '/admin/room/member/add',
    summary: 'Grant an account membership of a room.',
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: true,
  },
  'room.member.remove': {
    path: '/admin/room/member/remove',
    summary: "Revoke a membership; the account loses the room's history.",
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: true,
  },
  'team.create': {
    path: '/admin/team/create',
    summary: 'Create a team: a room whose members can be made leaders and granted capabilities.',
    callers: OPERATOR,
    readOnly: false,
    retrySafe: false,
  },
  'team.member.add': { path: '/admin/team/member/add', summary: 'Add a member to a team.', callers: OPERATOR, readOnly: false, retrySafe: true },
  'team.member.remove': {
    path: '/admin/team/member/remove',
    summary: 'Remove a member from a team (a leader loses its leadership and grants).',
    callers: OPERATOR,
    readOnly: false,
    retrySafe: true,
  },
  'team.leader.add': {
    path: '/admin/team/leader/add',
    summary: 'Make a member a leader; leadership grants nothing by itself.',
    callers: OPERATOR,
    readOnly: false,
    retrySafe: true,
  },
  'team.leader.remove': {
    path: '/admin/team/leader/remove',
    summary: "End a member's leadership; its grants are revoked with it.",
    callers: OPERATOR,
    readOnly: false,
    retrySafe: true,
  },
  'team.grant': {
    path: '/admin/team/grant',
    summary: 'Grant a leader a capability of its team: timer.schedule_team or team.manage_members.',
    callers: OPERATOR,
    readOnly: false,
    retrySafe: true,
  },
  'team.revoke': { path: '/admin/team/revoke', summary: "Revoke a leader's capability.", callers: OPERATOR, readOnly: false, retrySafe: true },
  'team.list': { path: '/admin/team/list', summary: 'Every team with its members, leaders and grants.', callers: OPERATOR, readOnly: true, retrySafe: true },
  'team.show': { path: '/admin/team/show', summary: 'A team with its recorded changes (who, when), newest first.', callers: OPERATOR, readOnly: true, retrySafe: true },
  'account.policy': {
    path: '/admin/account/policy',
    summary: "Set an account's contact policy: open, contacts_only or block_all.",
    callers: OPERATOR,
    readOnly: false,
    retrySafe: true,
  },
  'listener.set': {
    path: '/admin/listener',
    summary: 'Set the loopback URL rung after mail for an account commits.',
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: true,
  },
  'listener.remove': {
    path: '/admin/listener/remove',
    summary: "Clear an account's listener.",
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: true,
  },
  'user.create': {
    path: '/admin/user/create',
    summary: 'Create a person (a human account) with a password for the browser door.',
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  'user.passwd': {
    path: '/admin/user/passwd',
    summary: "Set a person's password; every browser login of theirs ends.",
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: false,
  },
  'user.revoke-sessions': {
    path: '/admin/user/revoke-sessions',
    summary: 'End every browser login of a person.',
    callers: OPERATOR_PERSON,
    readOnly: false,
    retrySafe: true,
  },
  'retention.set': {
    path: '/admin/retention/set',
    summary:
      'Delete acknowledged mail of an account (or room) older than days, or with days null keep it for ever (the default). Room mail goes once every member acknowledged it; open task and pending approval threads stay. records_days (alone or with a setting) is how long wake records are kept (default 30).',
    callers: OPERATOR,
    readOnly: false,
    retrySafe: true,
  },
  'retention.list': {
    path: '/admin/retention/list',
    summary: 'Every retention setting, how long wake records are kept, and the last run with its counts.',
    callers: OPERATOR,
    readOnly: true,
    retrySafe: true,
  },
  'retention.run': {
    path: '/admin/retention/run',
    summary: 'Run retention now (the daemon also runs it hourly) and answer its counts.',
    callers: OPERATOR,
    readOnly: false,
    retrySafe: true,
  },
  'daemon.stop': {
    path: '/admin/daemon/stop',
    summary:
      'Stop the daemon: `{"when":"now"}` (default) or `{"when":"idle"}` (once no request is in flight and no wait is parked; clients use it to replace an older auto-started daemon).',
    callers: OPERATOR,
    readOnly: false,
    retrySafe: true,
  },

  // ---- wake chains run programs: the operator from this machine only
  'wake.set': {
    path: '/admin/wake/set',
    summary: 'Set the delivery chain of an account (or of one session lineage with session). Local operator only.',
    callers: LOCAL,
    readOnly: false,
    retrySafe: true,
  },
  'wake.list': {
    path: '/admin/wake/list',
    summary: 'Every delivery chain. Local operator only.',
    callers: LOCAL,
    readOnly: true,
    retrySafe: true,
  },
  'wake.clear': {
    path: '/admin/wake/clear',
    summary: 'Remove the delivery chain of an account (or of one lineage). Local operator only.',
    callers: LOCAL,
    readOnly: false,
    retrySafe: true,
  },

  // ---- the relay link (m4a connect): which relay this daemon dials, and as whom; the operator from this machine only
  'connect.configure': {
    path: '/admin/connect/configure',
    summary: 'Set the relay this daemon dials out to (wss://), its node id and token, and the human mailboxes it offers; the token is never answered back. Local operator only.',
    callers: LOCAL,
    readOnly: false,
    retrySafe: true,
  },
  'connect.update': {
    path: '/admin/connect/update',
    summary: 'Change some of the relay link settings; what is not given stays. Local operator only.',
    callers: LOCAL,
    readOnly: false,
    retrySafe: true,
  },
  'connect.removeuser': {
    path: '/admin/connect/removeuser',
    summary: 'Stop offering one human mailbox through the relay. Local operator only.',
    callers: LOCAL,
    readOnly: false,
    retrySafe: true,
  },
  'connect.start': {
    path: '/admin/connect/start',
    summary: 'Keep the relay link connected (also after restarts). Local operator only.',
    callers: LOCAL,
    readOnly: false,
    retrySafe: true,
  },
  'connect.stop': {
    path: '/admin/connect/stop',
    summary: 'Close the relay link and keep it closed (also after restarts). Local operator only.',
    callers: LOCAL,
    readOnly: false,
    retrySafe: true,
  },
  'connect.status': {
    path: '/admin/connect/status',
    summary: 'The relay link: configured, enabled, connected since, last error, heartbeat round trip, settings (the token only as set). Local operator only.',
    callers: LOCAL,
    readOnly: true,
    retrySafe: true,
  },

  // ---- support: what m4a report counts and m4a open resumes; the operator from this machine only
  'support.counts': {
    path: '/admin/support/counts',
    summary:
      'Counts for a support report: accounts by kind, sessions, rooms, the head seq, unread totals, tasks by state, live leases, delivery chains by kind. Numbers only. Local operator only.',
    callers: LOCAL,
    readOnly: true,
    retrySafe: true,
  },
  'support.sessions': {
    path: '/admin/support/sessions',
    summary: 'Sessions with their cards (provider, provider session id, cwd), most recently seen first: what m4a open resumes. Local operator only.',
    callers: LOCAL,
    readOnly: true,
    retrySafe: true,
  },

  // ---- imports write mail as sessions of an account: the operator from this machine only
  'import.omp-mail': {
    path: '/admin/import/omp-mail',
    summary:
      "Bring omp-mail's sessions and mailboxes into an agent account: ended omp sessions (successors are the resumed conversations), their aliases, and their mail (delivered mail acknowledged). Idempotent. Local operator only.",
    callers: LOCAL,
    readOnly: false,
    retrySafe: true,
  },

  'import.interagentmail': {
    path: '/admin/import/interagentmail',
    summary:
      "Bring InterAgentMail's mail and timers into this mailbox: one copy per recipient in its account's mailbox (archived mail acknowledged), threads and replies kept, timers as timers. Idempotent. Local operator only.",
    callers: LOCAL,
    readOnly: false,
    retrySafe: true,
  },
  'import.agent-mail': {
    path: '/admin/import/agent-mail',
    summary:
      "Bring MCP Agent Mail's messages into this mailbox: one copy per recipient in its account's mailbox (acknowledged or read-without-ack-required mail acknowledged), threads and replies kept. Idempotent. Local operator only.",
    callers: LOCAL,
    readOnly: false,
    retrySafe: true,
  },

  // ---- the browser only
  'web.me': {
    path: '/web/api/me',
    summary: 'The logged-in person: account, label, operator or not, unread count.',
    callers: PERSON,
    readOnly: true,
    retrySafe: true,
  },
  'web.inbox': {
    path: '/web/api/inbox',
    summary: 'Without after: the newest mail first, acknowledged or not. With after: a live update that parks until newer mail (at most 30 s).',
    callers: PERSON,
    readOnly: true,
    retrySafe: true,
  },
  'web.overview': {
    path: '/web/api/admin/overview',
    summary: "The operator's overview: accounts, rooms, listeners and delivery chains (read only).",
    callers: PERSON,
    readOnly: true,
    retrySafe: true,
  },
} as const satisfies Record<string, OperationFacts>;

export type OperationName = keyof typeof OPERATION_FACTS;
export const OPERATION_NAMES = Object.keys(OPERATION_FACTS) as OperationName[];

export const factsOf = (name: OperationName): OperationFacts => OPERATION_FACTS[name];

/** Where a person's browser reaches an operation: browser-only ones at their own path, mail ones
 *  at /web/api/<name>, operator ones at /web/api/admin/<name>. */
export function webPathOf(name: OperationName): string | null {
  const s = factsOf(name);
  if (!s.callers.includes('person')) return null;
  if (s.path.startsWith('/web/api/')) return s.path;
  if (s.path.startsWith('/mail/')) return `/web/api/${s.path.slice('/mail/'.length)}`;
  if (s.path.startsWith('/admin/')) return `/web/api/admin/${s.path.slice('/admin/'.length)}`;
  // Other families (task/create, approval/decide) keep their own path.
  return `/web/api${s.path}`;
}

/** The MCP tools, in table order. */
export const MCP_TOOL_NAMES: readonly string[] = OPERATION_NAMES.flatMap((n) => {
  const t = factsOf(n).tool;
  return t ? [t] : [];
});

/** Served over HTTP to a bearer (an agent or the operator), not only to a browser's login. */
export const servedOverBearer = (name: OperationName): boolean => factsOf(name).callers.some((c) => c !== 'person');

/** Every HTTP path a bearer can POST to. */
export const HTTP_PATHS: readonly string[] = OPERATION_NAMES.filter(servedOverBearer).map((n) => factsOf(n).path);

/** The path of an operation, for clients. */
export const pathOf = (name: OperationName): string => OPERATION_FACTS[name].path;
