// The A2A door (A2A 1.0, JSON-RPC binding) under /a2a/<account>: the account's agent card at
// /a2a/<account>/.well-known/agent-card.json (public), and JSON-RPC at /a2a/<account> with the
// caller named by its bearer secret and attested process, exactly as on every other door.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import type { Caller, MailEngine } from '../../engine/mail-engine.js';
import type { Logger } from '../../engine/log.js';
import type { AccountRecord } from '../../store/types.js';
import { parseCompactAddress } from '../../wire/address.js';
import { MailError } from '../../wire/errors.js';
import { readJsonBody } from '../http/body.js';
import { clientGoneSignal, sendJson } from '../http/respond.js';
import { agentCard } from './agent-card.js';
import { PushConfigList, PushConfigRef, type PushConfigs } from './a2a-push.js';
import { A2aRpcError, RPC, toRpcError, type FailedOp } from './a2a-errors.js';
import { A2aMethods } from './a2a-rpc.js';
import { SseWriter, follow } from './a2a-stream.js';
import { A2A_PROTOCOL_VERSION, A2A_VERSION_HEADER, ListTasksParams, SendMessageParams, TaskIdParams, type RpcId, type StreamEvent } from './a2a-wire.js';

export interface A2aDoorOptions {
  engine: MailEngine;
  log: Logger;
  version: string;
  /** The caller of a request, as the HTTP door resolves it for mail (bearer + attestation). */
  caller(req: IncomingMessage): Promise<Caller>;
  /** Push-notification configs; absent: the card says pushNotifications false and the methods
   *  answer PushNotificationNotSupportedError. */
  push?: PushConfigs;
}

const CARD = '/.well-known/agent-card.json';
/** A2A 0.3's method names: a 0.3 client is told which version this agent speaks. */
const V03_METHODS = /^(message\/(send|stream)|tasks\/(get|list|cancel|resubscribe|pushNotificationConfig\/\w+)|agent\/getAuthenticatedExtendedCard)$/;

function params<S extends z.ZodType>(schema: S, v: unknown): z.output<S> {
  const r = schema.safeParse(v ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw A2aRpcError.invalidParams(issue?.path.length ? issue.path.map(String).join('.') : '(params)', issue?.message ?? 'invalid');
}

/** Version negotiation (specification §3.6): 1.0 only. A request that names no version but a
 *  1.0 method is taken as 1.0 (0.3 had no such methods). */
function checkVersion(req: IncomingMessage): void {
  const query = new URL(req.url ?? '/', 'http://x').searchParams.get('A2A-Version');
  const v = req.headers[A2A_VERSION_HEADER] ?? query ?? undefined;
  if (v === undefined || v === '') return;
  const s = Array.isArray(v) ? v.join(',') : v;
  if (!/^\s*1\.0(\.\d+)?\s*$/.test(s))
    throw A2aRpcError.a2a('VersionNotSupportedError', `A2A version ${s.slice(0, 16)} is not supported: this agent speaks ${A2A_PROTOCOL_VERSION}`, {
      supportedVersions: A2A_PROTOCOL_VERSION,
    });
}

export class A2aDoor {
  constructor(private o: A2aDoorOptions) {}

  static owns(path: string): boolean {
    return path === '/a2a' || path.startsWith('/a2a/');
  }

  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const m = /^\/a2a\/([^/]+)(\/.*)?$/.exec(path);
    const rest = m?.[2] ?? '';
    if (!m || (rest !== '' && rest !== '/' && rest !== CARD)) throw new MailError('unknown_route', `no route ${path}`);
    const account = await this.account(m[1]!);
    if (rest === CARD) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return sendJson(res, 405, new MailError('method_not_allowed', `use GET ${path}`).toBody(), { allow: 'GET, HEAD' });
      const base = `http://${req.headers.host ?? 'localhost'}/a2a/${encodeURIComponent(account.id)}`;
      return sendJson(res, 200, await agentCard(this.o.engine, account, base, this.o.version, this.o.push !== undefined), { 'cache-control': 'max-age=30' });
    }
    if (req.method !== 'POST') return sendJson(res, 405, new MailError('method_not_allowed', `POST JSON-RPC to ${path}`).toBody(), { allow: 'POST' });
    return this.rpc(req, res, account);
  }

  private async account(segment: string): Promise<AccountRecord> {
    let name: string;
    try {
      name = decodeURIComponent(segment);
    } catch {
      throw new MailError('unknown_participant', 'no such account', { participant: segment.slice(0, 64) });
    }
    const a = parseCompactAddress(name);
    const acc = a.ok && a.address.kind === 'direct' ? await this.o.engine.store.getAccount(a.address.participant) : null;
    if (!acc) throw new MailError('unknown_participant', `no account ${name.slice(0, 64)}`, { participant: name.slice(0, 64) });
    return acc;
  }

  private answer(res: ServerResponse, id: RpcId, out: { result: unknown } | { error: A2aRpcError }): void {
    if ('result' in out) return sendJson(res, 200, { jsonrpc: '2.0', id, result: out.result });
    sendJson(res, out.error.httpStatus, { jsonrpc: '2.0', id, error: out.error.body }, out.error.headers);
  }

  private async rpc(req: IncomingMessage, res: ServerResponse, account: AccountRecord): Promise<void> {
    let caller: Caller;
    try {
      caller = await this.o.caller(req);
    } catch (e) {
      return this.answer(res, null, { error: toRpcError(e, 'other', this.o.log) });
    }
    let body: unknown;
    try {
      body = await readJsonBody(req);
    } catch (e) {
      if (!(e instanceof MailError)) throw e;
      const err =
        e.code === 'too_large' ? new A2aRpcError({ code: RPC.invalidRequest, message: e.message }, 200, { connection: 'close' }) : A2aRpcError.plain(RPC.parse, e.message);
      return this.answer(res, null, { error: err });
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return this.answer(res, null, {
        error: A2aRpcError.plain(RPC.invalidRequest, Array.isArray(body) ? 'A2A takes one request per call, not a batch' : 'not a JSON-RPC request'),
      });
    const env = body as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };
    const idOk = env.id === undefined || env.id === null || typeof env.id === 'string' || (typeof env.id === 'number' && Number.isInteger(env.id));
    const id: RpcId = idOk ? ((env.id as RpcId | undefined) ?? null) : null;
    if (env.jsonrpc !== '2.0' || typeof env.method !== 'string' || !idOk)
      return this.answer(res, id, { error: A2aRpcError.plain(RPC.invalidRequest, 'a JSON-RPC 2.0 request has jsonrpc "2.0", a string method and a string or integer id') });
    const method = env.method;
    const op: FailedOp = method === 'CancelTask' ? 'cancel' : method === 'SubscribeToTask' ? 'subscribe' : method.startsWith('Send') ? 'send' : 'other';
    const signal = clientGoneSignal(res);
    try {
      checkVersion(req);
      const methods = new A2aMethods(this.o.engine, caller, account.id, signal, this.o.push ?? null);
      if (method === 'SendStreamingMessage' || method === 'SubscribeToTask') return await this.stream(res, id, methods, method, env.params);
      this.answer(res, id, { result: await this.call(methods, method, env.params) });
    } catch (e) {
      this.answer(res, id, { error: toRpcError(e, op, this.o.log) });
    }
  }

  private async call(methods: A2aMethods, method: string, p: unknown): Promise<unknown> {
    switch (method) {
      case 'SendMessage':
        return methods.sendMessage(params(SendMessageParams, p));
      case 'GetTask':
        return methods.getTask(params(TaskIdParams, p));
      case 'ListTasks':
        return methods.listTasks(params(ListTasksParams, p));
      case 'CancelTask':
        return methods.cancelTask(params(TaskIdParams, p));
      case 'CreateTaskPushNotificationConfig':
        return methods.createPush(p ?? {});
      case 'GetTaskPushNotificationConfig':
        return methods.getPush(params(PushConfigRef, p));
      case 'ListTaskPushNotificationConfigs':
        return methods.listPush(params(PushConfigList, p));
      case 'DeleteTaskPushNotificationConfig':
        return methods.deletePush(params(PushConfigRef, p));
      case 'GetExtendedAgentCard':
        throw A2aRpcError.a2a('UnsupportedOperationError', 'this agent has no extended card: its card is public');
    }
    if (V03_METHODS.test(method))
      throw A2aRpcError.a2a('VersionNotSupportedError', `${method} is A2A 0.3: this agent speaks ${A2A_PROTOCOL_VERSION} (SendMessage, GetTask …)`, {
        supportedVersions: A2A_PROTOCOL_VERSION,
      });
    throw A2aRpcError.plain(RPC.methodNotFound, `method not found: ${method.slice(0, 64)}`);
  }

  /** The two streams: refusals before the first event answer as plain JSON-RPC errors; once the
   *  stream has begun, a failure is its last event. */
  private async stream(res: ServerResponse, id: RpcId, methods: A2aMethods, method: string, p: unknown): Promise<void> {
    let first;
    let history: number | undefined;
    if (method === 'SendStreamingMessage') {
      const sp = params(SendMessageParams, p);
      history = sp.configuration?.historyLength;
      first = await this.o.engine.tasks.get(methods.follow.caller, { task_id: (await methods.deliver(sp)).task.task_id });
    } else first = await methods.subscribable(params(TaskIdParams, p));
    const opening: StreamEvent = { task: await methods.present(first, history !== undefined ? { historyLength: history } : {}) };
    const out = new SseWriter(res, id);
    out.event(opening);
    try {
      await follow(methods.follow, out, first);
    } catch (e) {
      out.error(toRpcError(e, 'subscribe', this.o.log).body);
    }
    out.end();
  }
}
