// The part of the `codex app-server` JSON-RPC protocol the wake adapter speaks, pinned to
// @openai/codex 0.171.0: written from `codex app-server generate-ts` and `generate-json-schema`
// of that version (v2 types: Thread, ThreadStatus, Turn, UserInput, Thread{Read,Resume,List,
// TurnsList}Params, Turn{Start,Steer}Params, ServerRequest and the approval responses) and from
// what that build answered on loopback (error texts below). Only the fields we read or send are
// typed; the rest of each object is left open. Unknown variants are expected: the protocol moves.
//
// Wire form: JSON-RPC 2.0 without the "jsonrpc" field; JSON lines over stdio, one text frame per
// message over WebSocket (ws://, unix://).

export const CODEX_PROTOCOL_VERSION = '0.171.0';

export type RequestId = string | number;

export interface RpcRequest {
  id: RequestId;
  method: string;
  params?: unknown;
}
export interface RpcNotification {
  method: string;
  params?: unknown;
}
export interface RpcErrorBody {
  code: number;
  message: string;
  data?: unknown;
}
export type RpcResponse = { id: RequestId; result: unknown } | { id: RequestId; error: RpcErrorBody };
export type RpcMessage = RpcRequest | RpcNotification | RpcResponse;

/** Error codes the app-server uses. Most failures (not initialized, thread not loaded, no rollout,
 *  no active turn, invalid params, unknown method) come back as -32600. */
export const RPC = {
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** "Server overloaded; retry later": retry with backoff. */
  overloaded: -32001,
} as const;

/** Error texts of 0.171.0 (matched loosely: a later build may reword them). */
export const ERROR_TEXT = {
  notInitialized: 'Not initialized',
  alreadyInitialized: 'Already initialized',
  /** thread/resume of a thread that never ran a turn: "no rollout found for thread id <id>". */
  noRollout: /no rollout found/i,
  /** thread/resume of a thread another Codex process holds: "thread <id> already has an active writer". */
  activeWriter: /active writer/i,
  /** thread/read of an id this app-server has neither loaded nor on disk: "thread not loaded: <id>";
   *  turn/start on a thread not loaded here: "thread not found: <id>". */
  threadUnknown: /thread not (loaded|found)/i,
  /** turn/steer with no running turn: "no active turn to steer". */
  noActiveTurn: /no active turn/i,
} as const;

// ---- initialize -------------------------------------------------------------------------------

export interface ClientInfo {
  name: string;
  title: string | null;
  version: string;
}
export interface InitializeCapabilities {
  experimentalApi: boolean;
  requestAttestation: boolean;
  optOutNotificationMethods?: string[] | null;
}
export interface InitializeParams {
  clientInfo: ClientInfo;
  capabilities: InitializeCapabilities | null;
}
export interface InitializeResponse {
  userAgent: string;
  codexHome: string;
  platformFamily: string;
  platformOs: string;
}

// ---- threads ----------------------------------------------------------------------------------

export type ThreadActiveFlag = 'waitingOnApproval' | 'waitingOnUserInput';
/** 0.171.0: notLoaded | idle | systemError | active{activeFlags}. Other builds have had a `terminal`
 *  variant and a `running` flag: anything else is carried as `{type: string}` and handled as unknown. */
export type ThreadStatus =
  { type: 'notLoaded' } | { type: 'idle' } | { type: 'systemError' } | { type: 'active'; activeFlags: ThreadActiveFlag[] } | { type: string; [k: string]: unknown };

/** `SessionSource`: app-server threads record `vscode`, `codex exec` ones `exec`, the TUI `cli`. */
export type ThreadSourceKind = 'cli' | 'vscode' | 'exec' | 'appServer' | 'subAgent' | 'subAgentReview' | 'subAgentCompact' | 'subAgentThreadSpawn' | 'subAgentOther' | 'unknown';
/** The kinds a mail recipient's thread can have (sub-agents are not addressed by mail). */
export const TOP_LEVEL_SOURCE_KINDS: ThreadSourceKind[] = ['cli', 'vscode', 'exec', 'appServer'];

export type TurnStatus = 'completed' | 'interrupted' | 'failed' | 'inProgress';

export interface Turn {
  id: string;
  /** A TurnStatus, or one a newer Codex added. */
  status: string;
  items?: unknown[];
  error?: unknown;
}

export interface Thread {
  id: string;
  status: ThreadStatus;
  cwd: string;
  createdAt: number;
  updatedAt: number;
  recencyAt?: number | null;
  source?: unknown;
  path?: string | null;
  turns?: Turn[];
}

export interface ThreadReadParams {
  threadId: string;
  includeTurns?: boolean;
}
export interface ThreadReadResponse {
  thread: Thread;
}

export interface ThreadResumeParams {
  threadId: string;
  /** Only metadata: do not hydrate `thread.turns` (full hydration is deprecated). */
  excludeTurns?: boolean;
}
export interface ThreadResumeResponse {
  thread: Thread;
}

export interface ThreadListParams {
  cursor?: string | null;
  limit?: number | null;
  sortKey?: 'created_at' | 'updated_at' | 'recency_at' | 'section_position' | null;
  sortDirection?: 'asc' | 'desc' | null;
  /** Omitted or [] means interactive sources only (cli, vscode). */
  sourceKinds?: ThreadSourceKind[] | null;
  archived?: boolean | null;
  cwd?: string | string[] | null;
}
export interface ThreadListResponse {
  data: Thread[];
  nextCursor: string | null;
}

export interface ThreadTurnsListParams {
  threadId: string;
  limit?: number | null;
  /** Default: descending (newest first). */
  sortDirection?: 'asc' | 'desc' | null;
  itemsView?: 'notLoaded' | 'summary' | 'full' | null;
}
export interface ThreadTurnsListResponse {
  data: Turn[];
  nextCursor: string | null;
}

// ---- turns ------------------------------------------------------------------------------------

/** The only input we send: text. `text_elements` is required by the generated type. */
export interface TextInput {
  type: 'text';
  text: string;
  text_elements: never[];
}
export const textInput = (text: string): TextInput => ({ type: 'text', text, text_elements: [] });

export interface TurnStartParams {
  threadId: string;
  input: TextInput[];
}
export interface TurnStartResponse {
  turn: Turn;
}
export interface TurnSteerParams {
  threadId: string;
  input: TextInput[];
  /** Required: the steer fails unless this is the running turn. */
  expectedTurnId: string;
}
export interface TurnSteerResponse {
  turnId: string;
}

// ---- notifications (server → client) ----------------------------------------------------------

/** Broadcast to every initialized connection (subscribed to the thread or not). */
export interface ThreadStatusChangedNotification {
  threadId: string;
  status: ThreadStatus;
}
/** Sent to the thread's subscribers only (the connection that resumed or started it). */
export interface TurnNotification {
  threadId: string;
  turn: Turn;
}
export interface ThreadClosedNotification {
  threadId: string;
}

export const NOTIFY = {
  threadStatusChanged: 'thread/status/changed',
  turnStarted: 'turn/started',
  turnCompleted: 'turn/completed',
  threadClosed: 'thread/closed',
} as const;

/** Streams the wake adapter never reads, opted out of at initialize. */
export const NOISY_NOTIFICATIONS = [
  'item/agentMessage/delta',
  'item/commandExecution/outputDelta',
  'item/fileChange/outputDelta',
  'item/reasoning/summaryTextDelta',
  'item/reasoning/summaryPartAdded',
  'item/reasoning/textDelta',
  'item/plan/delta',
  'thread/tokenUsage/updated',
  'account/rateLimits/updated',
];

// ---- server-initiated requests ----------------------------------------------------------------

const REFUSED_BECAUSE = 'mail4agent runs this turn unattended: nobody can approve';

/** The refusal for each request that asks a person for something (0.171.0 `ServerRequest`), or
 *  undefined for a method we do not know (it gets a JSON-RPC error instead). "decline" lets the
 *  agent go on with the turn (unlike "cancel", which interrupts it). */
export function refusalFor(method: string): unknown {
  switch (method) {
    case 'item/commandExecution/requestApproval':
    case 'item/fileChange/requestApproval':
      return { decision: 'decline' };
    case 'item/permissions/requestApproval':
      // An empty grant, for this turn only.
      return { permissions: {}, scope: 'turn' };
    case 'mcpServer/elicitation/request':
      return { action: 'decline', content: null, _meta: null };
    case 'item/tool/requestUserInput':
      return { answers: {} };
    case 'item/tool/call':
      // We register no dynamic tools.
      return { contentItems: [{ type: 'inputText', text: 'no such tool: this client registers none' }], success: false };
    // Legacy v1 requests: `ReviewDecision`.
    case 'execCommandApproval':
    case 'applyPatchApproval':
      return { decision: { denied: { rejection: REFUSED_BECAUSE } } };
    default:
      return undefined;
  }
}

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
