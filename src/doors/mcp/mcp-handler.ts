// POST /mcp: JSON-RPC 2.0 over plain JSON (never SSE), single or batch, stateless. The caller is
// resolved once per HTTP request by the HTTP door and applies to every message in a batch.
import { MailError } from '../../wire/errors.js';
import { parseInput } from '../../wire/validate.js';
import { safeJson } from '../../wire/text.js';
import { LIMITS } from '../../wire/limits.js';
import type { Caller } from '../../engine/mail-engine.js';
import type { Logger } from '../../engine/log.js';
import { OPERATIONS } from '../../wire/operations.js';
import { OPERATION_BY_TOOL, runOperation, type OpContext } from '../handlers.js';
import { INSTRUCTIONS, TOOLS } from '../../wire/tool-list.js';

export { MCP_PROTOCOL_VERSIONS as PROTOCOL_VERSIONS } from '../../wire/capabilities.js';
import { MCP_PROTOCOL_VERSIONS as PROTOCOL_VERSIONS } from '../../wire/capabilities.js';

type Id = string | number | null;
interface RpcResponse {
  jsonrpc: '2.0';
  id: Id;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

const rpcError = (id: Id, code: number, message: string, data?: Record<string, unknown>): RpcResponse => ({
  jsonrpc: '2.0',
  id,
  error: { code, message, ...(data ? { data } : {}) },
});

export interface McpAnswer {
  status: number;
  body?: unknown;
}

export class McpHandler {
  constructor(
    /** The context every tool call runs in, for the HTTP request that carries it. */
    private context: (signal: AbortSignal) => OpContext,
    private version: string,
    private log: Logger,
  ) {}

  async handle(caller: Caller, payload: unknown, signal: AbortSignal = new AbortController().signal): Promise<McpAnswer> {
    const x = this.context(signal);
    if (Array.isArray(payload)) {
      if (payload.length === 0) return { status: 200, body: rpcError(null, -32600, 'empty batch') };
      if (payload.length > LIMITS.mcpBatchMessages) {
        const data = { code: 'too_large', field: '(batch)', limit: LIMITS.mcpBatchMessages, actual: payload.length };
        return { status: 200, body: rpcError(null, -32600, `a batch holds at most ${LIMITS.mcpBatchMessages} messages`, data) };
      }
      // Independent calls: run together, answered in the batch's order (JSON-RPC allows any order).
      const out = (await Promise.all(payload.map((m) => this.safeOne(x, caller, m, true)))).filter((r): r is RpcResponse => r !== null);
      return out.length ? { status: 200, body: out } : { status: 202 };
    }
    const r = await this.safeOne(x, caller, payload, false);
    return r ? { status: 200, body: r } : { status: 202 };
  }

  /** One message's failure answers that message (-32603), never the whole batch with a 500. */
  private async safeOne(x: OpContext, caller: Caller, msg: unknown, inBatch: boolean): Promise<RpcResponse | null> {
    try {
      return await this.one(x, caller, msg, inBatch);
    } catch (err) {
      this.log.error({ err: err instanceof Error ? err.message : String(err) }, 'unexpected failure in a JSON-RPC message');
      const id = typeof msg === 'object' && msg !== null ? (msg as { id?: unknown }).id : null;
      return rpcError(typeof id === 'string' || typeof id === 'number' ? id : null, -32603, 'internal error');
    }
  }

  private async one(x: OpContext, caller: Caller, msg: unknown, inBatch: boolean): Promise<RpcResponse | null> {
    if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) return rpcError(null, -32600, 'not a JSON-RPC message');
    const m = msg as Record<string, unknown>;
    const hasId = Object.hasOwn(m, 'id');
    const id = m.id;
    const validId = typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) || id === null;
    if (m.jsonrpc !== '2.0') return hasId && validId ? rpcError(id, -32600, 'jsonrpc must be "2.0"') : rpcError(null, -32600, 'jsonrpc must be "2.0"');
    if (typeof m.method !== 'string') {
      // A response from the client (to nothing we asked) or garbage: responses get no reply.
      return Object.hasOwn(m, 'result') || Object.hasOwn(m, 'error') ? null : rpcError(validId ? id : null, -32600, 'method must be a string');
    }
    if (!hasId) return null; // notification: no reply
    if (!validId) return rpcError(null, -32600, 'id must be a string or a number');
    const rid = id;
    const params = (m.params ?? {}) as Record<string, unknown>;
    if (typeof params !== 'object' || params === null || Array.isArray(params)) return rpcError(rid, -32602, 'params must be an object');
    switch (m.method) {
      case 'initialize': {
        if (inBatch) return rpcError(rid, -32600, 'initialize cannot be part of a batch');
        const asked = params.protocolVersion;
        const protocolVersion = PROTOCOL_VERSIONS.find((v) => v === asked) ?? PROTOCOL_VERSIONS[0];
        return {
          jsonrpc: '2.0',
          id: rid,
          result: {
            protocolVersion,
            capabilities: { tools: { listChanged: false } },
            serverInfo: { name: 'mail4agent', version: this.version },
            instructions: INSTRUCTIONS,
          },
        };
      }
      case 'ping':
        return { jsonrpc: '2.0', id: rid, result: {} };
      case 'tools/list':
        return { jsonrpc: '2.0', id: rid, result: { tools: TOOLS } };
      case 'tools/call':
        return this.call(x, caller, rid, params);
      default:
        return rpcError(rid, -32601, `method not found: ${m.method}`);
    }
  }

  private async call(x: OpContext, caller: Caller, id: Id, params: Record<string, unknown>): Promise<RpcResponse> {
    const name = typeof params.name === 'string' ? OPERATION_BY_TOOL.get(params.name) : undefined;
    if (!name) return rpcError(id, -32602, `unknown tool: ${typeof params.name === 'string' ? params.name.slice(0, 128) : `(a ${typeof params.name}, not a name)`}`);
    try {
      const spec = OPERATIONS[name];
      const input: unknown = parseInput(spec.mcpInput ?? spec.input, params.arguments ?? {});
      const out = await runOperation(name, x, caller, input as never);
      x.observer?.operation(x.door, name, null);
      // safeJson: a model reads this text; line separators, bidi controls and invisible characters
      // in mail arrive as \u escapes (the same value to a JSON parser).
      return { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: safeJson(out) }] } };
    } catch (err) {
      const e = err instanceof MailError ? err : this.internal(err);
      x.observer?.operation(x.door, name, e.code);
      return { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: safeJson(e.toBody()) }], isError: true } };
    }
  }

  private internal(err: unknown): MailError {
    this.log.error({ err: err instanceof Error ? (err.stack ?? err.message) : String(err) }, 'unexpected failure in tools/call');
    return new MailError('internal', 'internal error');
  }
}
