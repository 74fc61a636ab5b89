// Named errors: one envelope on every door, one table from code to HTTP status and MCP form.

export type ErrorCode =
  | 'unauthenticated'
  | 'unattested'
  | 'foreign_user'
  | 'forbidden_origin'
  | 'permission_denied'
  | 'malformed'
  | 'too_large'
  | 'unknown_participant'
  | 'unknown_session'
  | 'unknown_room'
  | 'unknown_message'
  | 'unknown_timer'
  | 'unknown_route'
  | 'method_not_allowed'
  | 'session_ended'
  | 'not_addressed_to_you'
  | 'idempotency_conflict'
  | 'already_exists'
  | 'rate_limited'
  | 'bad_credentials'
  | 'csrf_failed'
  | 'store_unavailable'
  | 'store_corrupt'
  | 'unknown_task'
  | 'not_task_party'
  | 'invalid_transition'
  | 'task_terminal'
  | 'not_supported'
  | 'unknown_approval'
  | 'not_reviewer'
  | 'approval_decided'
  | 'approval_expired'
  | 'lease_conflict'
  | 'lease_lost'
  | 'too_many_leases'
  | 'lease_exhausted'
  | 'unknown_team'
  | 'not_team_member'
  | 'not_granted'
  | 'no_recipients'
  | 'contact_refused'
  | 'email_unavailable'
  | 'external_cap_reached'
  | 'auto_submitted'
  | 'unknown_attachment'
  | 'relay_unavailable'
  | 'node_in_use'
  | 'not_relayed'
  | 'internal';

/** How an error travels over MCP: refused at the HTTP layer before JSON-RPC is read (credential,
 *  origin, attestation), or as a tool result with `isError: true` that a model can read and act on. */
export type McpForm = 'http' | 'tool_error';

export interface ErrorSpec {
  http: number;
  mcp: McpForm;
  /** One line for docs/protocol.md. */
  meaning: string;
}

export const ERROR_TABLE: Readonly<Record<ErrorCode, ErrorSpec>> = {
  unauthenticated: { http: 401, mcp: 'http', meaning: 'no bearer secret, or one that names no account' },
  unattested: { http: 403, mcp: 'http', meaning: 'the connection could not be attested to one process {reason}' },
  foreign_user: { http: 403, mcp: 'http', meaning: 'the peer process belongs to another OS user' },
  forbidden_origin: { http: 403, mcp: 'http', meaning: "Host or Origin is not exactly the daemon's own {field}" },
  permission_denied: { http: 403, mcp: 'tool_error', meaning: 'the account lacks a permission {need}' },
  malformed: { http: 400, mcp: 'tool_error', meaning: 'a field is missing, of the wrong type, or not allowed {field, reason, code_point?}' },
  too_large: { http: 413, mcp: 'tool_error', meaning: 'a field is over its byte or count limit {field, limit, actual}' },
  unknown_participant: { http: 404, mcp: 'tool_error', meaning: 'no such account {participant}' },
  unknown_session: { http: 404, mcp: 'tool_error', meaning: 'no such session of that account {participant, session, candidates?}' },
  unknown_room: { http: 404, mcp: 'tool_error', meaning: 'no such room {room}' },
  unknown_message: { http: 404, mcp: 'tool_error', meaning: 'no such message {message_id}' },
  unknown_timer: { http: 404, mcp: 'tool_error', meaning: 'no such timer of your account {id}' },
  unknown_route: { http: 404, mcp: 'http', meaning: 'no such route' },
  method_not_allowed: { http: 405, mcp: 'http', meaning: 'the route exists but not for this method' },
  session_ended: { http: 410, mcp: 'tool_error', meaning: 'the session ended and has no successor; write to {account}' },
  not_addressed_to_you: { http: 403, mcp: 'tool_error', meaning: 'the message exists but the caller may not read it' },
  idempotency_conflict: { http: 409, mcp: 'tool_error', meaning: 'the idempotency key was used for a different message {message_id}' },
  already_exists: { http: 409, mcp: 'tool_error', meaning: 'the name is taken {field}' },
  rate_limited: { http: 429, mcp: 'tool_error', meaning: 'too many parked waits or requests; retry {retry_after} seconds later' },
  bad_credentials: { http: 401, mcp: 'http', meaning: "browser login: unknown account, not a person's account, or wrong password (never says which)" },
  csrf_failed: { http: 403, mcp: 'http', meaning: "browser request without this login's CSRF token, or from another origin" },
  store_unavailable: { http: 503, mcp: 'tool_error', meaning: 'the store failed {operation}; the cause is logged, not returned' },
  store_corrupt: { http: 503, mcp: 'tool_error', meaning: "the store's file is damaged or holds no mailbox {path, reason}: `m4a serve` refuses to start (exit 7)" },
  unknown_task: { http: 404, mcp: 'tool_error', meaning: 'no such task {task_id}' },
  not_task_party: { http: 403, mcp: 'tool_error', meaning: 'the caller is neither the requester nor the assignee of the task {task_id}' },
  invalid_transition: { http: 409, mcp: 'tool_error', meaning: 'that party may not move the task from this state to that one {from, to}' },
  task_terminal: { http: 409, mcp: 'tool_error', meaning: 'the task is completed, failed, canceled or rejected: it never changes again {task_id, state}' },
  not_supported: { http: 400, mcp: 'tool_error', meaning: 'this build does not do that yet {field}' },
  unknown_approval: { http: 404, mcp: 'tool_error', meaning: 'no such approval {approval_id}' },
  not_reviewer: { http: 403, mcp: 'tool_error', meaning: 'only the named reviewer decides {approval_id}' },
  approval_decided: { http: 409, mcp: 'tool_error', meaning: 'the approval was decided already {approval_id, state}' },
  approval_expired: { http: 410, mcp: 'tool_error', meaning: 'the approval expired before it was decided {approval_id}' },
  lease_conflict: { http: 409, mcp: 'tool_error', meaning: 'another session holds the resource {holders: [{holder, mode, resource, expires_at, reason?}]}' },
  lease_lost: { http: 409, mcp: 'tool_error', meaning: 'the lease expired, was released or changed hands (its epoch is stale) {lease_id}' },
  too_many_leases: { http: 429, mcp: 'tool_error', meaning: 'the session, its account or the repository holds the most live leases it may {limit}' },
  lease_exhausted: { http: 409, mcp: 'tool_error', meaning: 'the pooled task was claimed max_attempts times without ending: it failed {task_id, attempts}' },
  unknown_team: { http: 404, mcp: 'tool_error', meaning: 'no team of that name (a room without roles is not a team) {team}' },
  not_team_member: { http: 403, mcp: 'tool_error', meaning: 'only a current member of the team may do that {team}' },
  not_granted: {
    http: 403,
    mcp: 'tool_error',
    meaning: 'the caller is not a leader of the team holding that capability, or the change is reserved to the operator {team, capability}',
  },
  no_recipients: { http: 409, mcp: 'tool_error', meaning: 'team: or leader: reaches nobody but the sender {team}' },
  contact_refused: { http: 403, mcp: 'tool_error', meaning: "the recipient's contact policy refuses mail from the caller; nothing was stored {recipient, policy}" },
  email_unavailable: { http: 409, mcp: 'tool_error', meaning: 'this daemon has no mail domain, or no relay to send e-mail through' },
  external_cap_reached: { http: 507, mcp: 'tool_error', meaning: 'the account holds the most mail from outside it may; the SMTP door answers 452 {account, limit}' },
  auto_submitted: { http: 409, mcp: 'tool_error', meaning: 'the mail was sent automatically (Auto-Submitted): it is never answered by e-mail {message_id}' },
  unknown_attachment: { http: 404, mcp: 'tool_error', meaning: 'the message has no kept attachment of that number {message_id, n}' },
  relay_unavailable: { http: 503, mcp: 'tool_error', meaning: "the node holding this login's mailbox is not connected to the relay now {node}" },
  node_in_use: { http: 409, mcp: 'http', meaning: 'another live connection holds this node id at the relay {node}' },
  not_relayed: { http: 403, mcp: 'tool_error', meaning: "the relay carries only a configured person's mailbox reads, sends and acknowledgements {mailbox?, call?}" },
  internal: { http: 500, mcp: 'tool_error', meaning: 'a bug; nothing about it is returned' },
};

export type ErrorDetails = Record<string, string | number | boolean | string[] | Record<string, string>[] | null>;

export interface ErrorBody {
  error: { code: ErrorCode; message: string } & ErrorDetails;
}

/** The one error type that crosses layers. Inputs go in `details` and appear beside `code`. */
export class MailError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
  ) {
    super(message);
    this.name = 'MailError';
  }

  toBody(): ErrorBody {
    return { error: { ...this.details, code: this.code, message: this.message } };
  }

  get httpStatus(): number {
    return ERROR_TABLE[this.code].http;
  }
}

/** A detail as text: strings and numbers as they are, anything else as JSON. */
export function detailText(v: ErrorDetails[string] | undefined): string {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : v === undefined ? '' : JSON.stringify(v);
}

export function isErrorCode(s: unknown): s is ErrorCode {
  return typeof s === 'string' && Object.hasOwn(ERROR_TABLE, s);
}

/** Rebuild a MailError from an envelope received over the wire (clients use this). */
export function errorFromBody(body: unknown, fallbackStatus: number): MailError {
  const e = (body as { error?: Record<string, unknown> } | null)?.error;
  if (e && isErrorCode(e.code)) {
    const { code, message, ...rest } = e;
    return new MailError(code, typeof message === 'string' ? message : code, rest as ErrorDetails);
  }
  return new MailError('internal', `unexpected response (HTTP ${fallbackStatus})`);
}
