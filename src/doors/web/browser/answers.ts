// What the page reads of the daemon's answers (/web/api/*): the fields it uses, no more. Kept here
// rather than imported from src/wire so the browser build pulls in nothing but this folder;
// test/web/web-assets.test.ts checks that the engine's answers (src/wire) still fit these shapes.

export type AccountKind = 'agent' | 'human' | 'service';
/** external: e-mail from outside (the SMTP door), untrusted. */
export type SenderKind = AccountKind | 'external';

export interface Ref {
  kind: string;
  locator: string;
}

/** A message item: what is default or implied is left out of it (docs/protocol.md). */
export interface Message {
  message_id: string;
  thread_id?: string;
  from: string;
  from_kind?: SenderKind;
  /** Written through a relay by the person's delegate (set by the daemon, never by a sender). */
  via?: { relay: string; delegate: string };
  to?: string;
  subject: string;
  body?: string;
  refs?: Ref[];
  priority?: 'normal' | 'urgent';
  created_at: string;
  acked_at?: string | null;
  /** External mail: one-time codes and links read from it, its attachments (get). */
  codes?: string[];
  links?: string[];
  attachments?: { n: number; name: string; type: string; size: number; kept: boolean }[];
}

/** The one place the page reads a message's id: every other line goes through it. */
export const messageId = (m: Pick<Message, 'message_id'>): string => m.message_id;
/** Its thread: left out when it is the message itself (a thread's first message). */
export const threadOf = (m: Message): string => m.thread_id ?? m.message_id;
/** Where it went: left out when it is the reader's own account. */
export const toOf = (m: Message, account: string): string => m.to ?? account;
/** Who wrote it: left out for agents. */
export const kindOf = (m: Message): SenderKind => m.from_kind ?? 'agent';

export interface InboxAnswer {
  messages: Message[];
  next_cursor: string | null;
  unread: number;
}

export interface GetAnswer {
  message: Message;
  thread?: Message[];
}

export interface SendAnswer {
  message_id: string;
  to: string;
  /** team: and leader: mail: the copy each member got (message_id is the first one's). */
  expanded?: { to: string; message_id: string }[];
  /** Team members whose contact policy refused their copy. */
  refused?: { recipient: string; policy: string }[];
}

export interface AckAnswer {
  acked: { message_id: string; acked_at: string }[];
  unread: number;
}

/** A login at a relay (docs/relay.md): the relay user, the node holding the mailbox, and whether
 *  the user is its owner or a delegate. The relay forwards only mail reads and sends. */
export interface RelayLogin {
  user: string;
  node: string;
  role: 'owner' | 'delegate';
}

export interface Me {
  account: string;
  label: string;
  operator: boolean;
  unread: number;
  relay?: RelayLogin;
  /** The teams the person is a member of (`me` answers it; a login's answer does not). */
  teams?: string[];
}

export interface LoginAnswer {
  account: string;
  label: string;
  operator: boolean;
  csrf: string;
  relay?: RelayLogin;
}

export interface ThrottleView {
  wrong_passwords: number;
  addresses: number;
  account_retry_after_ms: number;
}

export interface ThrottleCleared {
  addresses_waiting: number;
}

/** What a removal answered: the mail it deleted. */
export interface Removed {
  deleted_messages?: number;
}

export interface Card {
  attested: { pid: number; start_time: number; exe: string; uid: number; host: string } | null;
  corroborated: { provider?: string; provider_session_id?: string; model?: string; cwd?: string };
  declared: { working_on?: string; role?: string; parent?: string };
}

export interface Session {
  address: string;
  slug: string | null;
  aliases: string[];
  live: boolean;
  last_seen: string;
  card: Card;
}

/** The directory with detail: true and include_ended: true (label and kind are left out when
 *  they are the id and 'agent'). */
export interface Directory {
  accounts: { id: string; label?: string; kind?: AccountKind; sessions: Session[] }[];
  rooms: { name: string; member: boolean }[];
}

export type Permissions = Record<'send' | 'read' | 'urgent' | 'operator', boolean>;

export interface Account {
  id: string;
  kind: AccountKind;
  label: string;
  permissions: Permissions;
}

export type WakeStep =
  | { kind: 'hooks' }
  | { kind: 'codex-app-server'; listen: string }
  | { kind: 'command'; argv: string[] }
  | { kind: 'webhook'; url: string }
  | { kind: 'a2a'; url: string }
  | { kind: 'opencode'; url: string };

export type TeamCapability = 'timer.schedule_team' | 'team.manage_members';

/** A recorded change of a team (docs/teams.md): who made it, when, and what. */
export interface TeamChange {
  at: string;
  by: string;
  action: 'create' | 'member.add' | 'member.remove' | 'leader.add' | 'leader.remove' | 'grant' | 'revoke';
  account?: string;
  capability?: TeamCapability;
}

/** A team as the overview has it: a room with leaders, their grants, and its latest changes. */
export interface Team {
  name: string;
  members: string[];
  leaders: { account: string; grants: TeamCapability[] }[];
  open: boolean;
  created_at: string;
  changes: TeamChange[];
}

export interface Overview {
  accounts: Account[];
  rooms: { name: string; everyone: boolean; members: string[] }[];
  teams: Team[];
  listeners: Record<string, string>;
  wake: { account: string; lineage: string | null; steps: WakeStep[]; rooms: boolean; debounce_ms: number }[];
}

export type TaskState = 'submitted' | 'working' | 'input_required' | 'auth_required' | 'completed' | 'failed' | 'canceled' | 'rejected';

/** A task (docs/tasks.md): `from` is the requester, `to` the assignee, both printed addresses. */
export interface Task {
  task_id: string;
  thread_id: string;
  from: string;
  to: string;
  title: string;
  instructions?: string;
  refs?: Ref[];
  parent_task_id?: string;
  state: TaskState;
  history: { state: TaskState; at: string; by: string; note?: string }[];
  result?: { summary?: string; data?: unknown; refs?: Ref[] };
  created_at: string;
  updated_at: string;
  version: number;
  /** A task for a room (a pooled task): `to` is the room until someone claims it. */
  pool?: { room: string; attempt: number; max_attempts: number; available_at?: string; lease_id?: string; epoch?: number };
  /** Why the mailbox failed it (lease_exhausted: claimed max_attempts times without finishing). */
  fail_reason?: string;
  children?: { task_id: string; title: string; state: TaskState }[];
}

export interface TaskList {
  tasks: Task[];
  next_cursor: string | null;
}

/** A live lease (docs/leases.md): `path:<glob>` under `root`, or a pooled task's `t-…`. */
export interface Lease {
  lease_id: string;
  resource: string;
  root?: string;
  holder: string;
  mode: 'exclusive' | 'shared';
  reason?: string;
  expires_at: string;
  epoch: number;
  attempt: number;
}

export interface LeaseList {
  leases: Lease[];
}

export interface Approval {
  approval_id: string;
  thread_id: string;
  requester: string;
  reviewer: string;
  action: string;
  details?: string;
  task_id?: string;
  state: 'pending' | 'approved' | 'rejected' | 'expired';
  reason?: string;
  created_at: string;
  expires_at?: string;
  decided_at?: string;
}

/** An error body as the daemon names it (`{error: {code, message, …details}}`), or one the page
 *  made up when the daemon did not answer. */
export interface ApiError {
  code: string;
  message?: string;
  field?: string;
  retry_after_ms?: number;
  scope?: string;
  /** invalid_transition, task_terminal, approval_decided */
  from?: string;
  to?: string;
  state?: string;
}
