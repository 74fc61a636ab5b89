// A2A's errors in the JSON-RPC binding (specification §5.4, §9.5): a code, a message, and details
// as google.rpc.ErrorInfo. Our named errors map onto them; a stranger's task and a missing one are
// the same TaskNotFoundError (the specification asks not to tell them apart).
import { MailError } from '../../wire/errors.js';
import type { Logger } from '../../engine/log.js';

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';

export const A2A_ERRORS = {
  TaskNotFoundError: { code: -32001, reason: 'TASK_NOT_FOUND' },
  TaskNotCancelableError: { code: -32002, reason: 'TASK_NOT_CANCELABLE' },
  PushNotificationNotSupportedError: { code: -32003, reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED' },
  UnsupportedOperationError: { code: -32004, reason: 'UNSUPPORTED_OPERATION' },
  ContentTypeNotSupportedError: { code: -32005, reason: 'CONTENT_TYPE_NOT_SUPPORTED' },
  VersionNotSupportedError: { code: -32009, reason: 'VERSION_NOT_SUPPORTED' },
} as const;
export type A2aErrorName = keyof typeof A2A_ERRORS;

/** JSON-RPC's own codes. Our errors with no A2A counterpart (unauthenticated, rate_limited …) are
 *  -32000, the first implementation-defined server error, with our code in the ErrorInfo. */
export const RPC = { parse: -32700, invalidRequest: -32600, methodNotFound: -32601, invalidParams: -32602, internal: -32603, server: -32000 } as const;

export interface RpcErrorBody {
  code: number;
  message: string;
  data?: Record<string, unknown>[];
}

export class A2aRpcError extends Error {
  constructor(
    readonly body: RpcErrorBody,
    /** The HTTP status the answer carries: 200 for every JSON-RPC error but a refused credential. */
    readonly httpStatus = 200,
    readonly headers: Record<string, string> = {},
  ) {
    super(body.message);
  }

  static a2a(name: A2aErrorName, message: string, metadata: Record<string, string> = {}): A2aRpcError {
    const e = A2A_ERRORS[name];
    return new A2aRpcError({
      code: e.code,
      message,
      data: [{ '@type': ERROR_INFO, reason: e.reason, domain: 'a2a-protocol.org', ...(Object.keys(metadata).length ? { metadata } : {}) }],
    });
  }

  static invalidParams(field: string, description: string): A2aRpcError {
    return new A2aRpcError({
      code: RPC.invalidParams,
      message: `invalid params: ${field}: ${description}`,
      data: [{ '@type': BAD_REQUEST, fieldViolations: [{ field, description }] }],
    });
  }

  static plain(code: number, message: string): A2aRpcError {
    return new A2aRpcError({ code, message });
  }
}

const AUTH_CODES = new Set(['unauthenticated', 'unattested', 'foreign_user', 'permission_denied']);

/** Which A2A operation failed decides what a refused transition means. */
export type FailedOp = 'send' | 'cancel' | 'subscribe' | 'other';

/** Any failure as the JSON-RPC error it answers with. */
export function toRpcError(err: unknown, op: FailedOp, log: Logger): A2aRpcError {
  if (err instanceof A2aRpcError) return err;
  if (!(err instanceof MailError)) {
    log.error({ err: err instanceof Error ? (err.stack ?? err.message) : String(err) }, 'unexpected failure on the A2A door');
    return A2aRpcError.plain(RPC.internal, 'internal error');
  }
  const d = err.details as Record<string, unknown>;
  const taskId: Record<string, string> = typeof d.task_id === 'string' ? { taskId: d.task_id } : {};
  switch (err.code) {
    case 'unknown_task':
    case 'not_task_party':
      return A2aRpcError.a2a('TaskNotFoundError', 'task not found', taskId);
    case 'task_terminal':
    case 'invalid_transition':
      if (op === 'cancel') return A2aRpcError.a2a('TaskNotCancelableError', err.message, typeof d.state === 'string' ? { ...taskId, state: d.state } : taskId);
      return A2aRpcError.a2a('UnsupportedOperationError', err.message, taskId);
    case 'not_supported':
      return A2aRpcError.a2a('UnsupportedOperationError', err.message);
    case 'malformed':
    case 'too_large':
      return A2aRpcError.invalidParams(typeof d.field === 'string' ? d.field : '(params)', err.message);
    case 'internal':
      return A2aRpcError.plain(RPC.internal, 'internal error');
    default: {
      const metadata: Record<string, string> = { code: err.code };
      for (const [k, v] of Object.entries(d)) if (v !== undefined) metadata[k] = typeof v === 'string' ? v : JSON.stringify(v);
      const body = { code: RPC.server, message: err.message, data: [{ '@type': ERROR_INFO, reason: err.code.toUpperCase(), domain: 'mail4agent', metadata }] };
      const headers: Record<string, string> = {};
      if (err.code === 'unauthenticated') headers['www-authenticate'] = 'Bearer';
      if (err.code === 'rate_limited') headers['retry-after'] = typeof d.retry_after === 'number' ? String(d.retry_after) : '1';
      return new A2aRpcError(body, AUTH_CODES.has(err.code) ? err.httpStatus : 200, headers);
    }
  }
}
