// The Codex app-server wake adapter: reaches the `codex app-server` that holds (or can resume) a
// Codex session's thread and gives the agent the fixed wake text as a turn.
//
//   idle thread            → turn/start                      ok, "turn <id> started …"
//   active turn, urgent    → turn/steer {expectedTurnId}     ok, "steered turn <id> …"
//   active turn, normal    → not interrupted: queued here; a turn starts when the thread goes idle
//                            (thread/status/changed, turn/completed, or a poll), for up to
//                            `deferForMs`                    ok, "… deferred …"
//   notLoaded here         → thread/resume, then as above (a thread that never ran a turn has no
//                            rollout: ok:false)
//   no thread id           → thread/list by the session's cwd, the most recently updated thread
//
// One connection per adapter (per configured listen target), opened lazily, initialized once,
// reopened on the next use after it closes. Every request times out. Requests from the server
// that ask a person for something (approvals, elicitations, user input) are refused: these turns
// run unattended. The app-server routes those only to the thread's subscribers, i.e. to us only
// for threads this adapter resumed; a thread a person's client holds keeps its own approvals.
import type { CodexStep } from '../wire/wake.js';
import {
  ERROR_TEXT,
  NOISY_NOTIFICATIONS,
  NOTIFY,
  RPC,
  TOP_LEVEL_SOURCE_KINDS,
  isRecord,
  refusalFor,
  textInput,
  type InitializeParams,
  type InitializeResponse,
  type Thread,
  type ThreadListParams,
  type ThreadListResponse,
  type ThreadReadResponse,
  type ThreadResumeResponse,
  type ThreadStatus,
  type ThreadTurnsListResponse,
  type TurnStartResponse,
  type TurnSteerResponse,
} from './codex-protocol.js';
import { RpcConnection, RpcError, RpcTransportError, openTransport } from './codex-rpc.js';
import type { ListenerOwner, WakeAdapter, WakeRequest, WakeResult } from './types.js';

export interface CodexAdapterOptions {
  /** Every request (default 10 s). */
  requestTimeoutMs?: number;
  /** Opening the transport and `initialize` (default 10 s). */
  connectTimeoutMs?: number;
  /** How long normal mail waits for an active turn to end (default 10 min). */
  deferForMs?: number;
  /** While mail waits: re-read the thread's status this often, in case a notification is missed
   *  (default 5 s). */
  pollMs?: number;
  /** For listen=spawn (and to find the default unix socket): the environment, the cwd. */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** clientInfo.version (default the package version as known to the daemon, or "0"). */
  clientVersion?: string;
  /** Structured events: codex.connected, codex.closed, codex.refused, codex.deferred.started … */
  log?: (event: string, fields: Record<string, unknown>) => void;
  /** ws://: a loopback port another OS user holds gets no handshake (no token_file bearer). */
  listenerOwner?: ListenerOwner;
}

export interface DeferredWake {
  threadId: string;
  eventIds: string[];
  since: number;
  until: number;
}

export interface CodexAdapter extends WakeAdapter {
  readonly kind: 'codex-app-server';
  /** Wakes waiting for a thread's active turn to end. */
  deferred(): DeferredWake[];
  /** Closes the connection (a spawned app-server is stopped) and drops waiting wakes. */
  close(): Promise<void>;
}

interface Deferral extends DeferredWake {
  texts: string[];
  timer: NodeJS.Timeout;
  running: boolean;
  again: boolean;
}

/** A wake that ends without reaching the agent, with the reason. */
class NotReached extends Error {}

const fail = (detail: string): never => {
  throw new NotReached(detail);
};

function describe(err: unknown): string {
  if (err instanceof NotReached) return err.message;
  if (err instanceof RpcError) return `${err.method} failed: ${err.serverMessage} (${err.code})`;
  if (err instanceof RpcTransportError) return err.reason === 'aborted' ? `aborted: ${err.message}` : err.message;
  return `unexpected: ${err instanceof Error ? err.message : String(err)}`;
}

const statusOf = (s: unknown): ThreadStatus => (isRecord(s) && typeof s.type === 'string' ? (s as ThreadStatus) : { type: 'unknown' });

export function createCodexAdapter(step: CodexStep, opts: CodexAdapterOptions = {}): CodexAdapter {
  const requestTimeoutMs = opts.requestTimeoutMs ?? 10_000;
  const connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
  const deferForMs = opts.deferForMs ?? 10 * 60_000;
  const pollMs = opts.pollMs ?? 5_000;
  const log = opts.log ?? (() => {});
  const life = new AbortController();
  const deferrals = new Map<string, Deferral>();
  /** Threads this connection resumed (so it is subscribed) → the turn we started there, if any. */
  const subscribed = new Map<string, string | null>();
  let current: RpcConnection | null = null;
  let connecting: Promise<RpcConnection> | null = null;
  let closed = false;

  const target = step.listen === 'spawn' ? `spawn ${(step.argv ?? ['codex', 'app-server']).join(' ')}` : step.listen;

  function onServerRequest(method: string, params: unknown): { result: unknown } | { error: { code: number; message: string } } {
    const refusal = refusalFor(method);
    const threadId = isRecord(params) && typeof params.threadId === 'string' ? params.threadId : null;
    log('codex.refused', { method, threadId, known: refusal !== undefined });
    if (refusal === undefined) return { error: { code: RPC.methodNotFound, message: `m4a does not handle ${method}` } };
    return { result: refusal };
  }

  function onNotification(rpc: RpcConnection, method: string, params: unknown): void {
    if (!isRecord(params) || typeof params.threadId !== 'string') return;
    const threadId = params.threadId;
    if (method === NOTIFY.threadStatusChanged) {
      if (statusOf(params.status).type !== 'active') kick(threadId);
    } else if (method === NOTIFY.turnCompleted) {
      kick(threadId);
      // Our own turn on a thread we resumed has ended: stop holding the thread (it unloads after
      // the app-server's idle delay, and later approvals go to whoever holds it then).
      const turnId = isRecord(params.turn) ? params.turn.id : undefined;
      if (subscribed.get(threadId) === turnId && !deferrals.has(threadId)) {
        subscribed.delete(threadId);
        rpc.request('thread/unsubscribe', { threadId }, { timeoutMs: requestTimeoutMs }).catch(() => {});
      }
    } else if (method === NOTIFY.threadClosed) {
      subscribed.delete(threadId);
      kick(threadId);
    }
  }

  async function connect(): Promise<RpcConnection> {
    const started = Date.now();
    const transport = await openTransport(step.listen, {
      ...(step.argv ? { argv: step.argv } : {}),
      ...(step.token_file !== undefined ? { tokenFile: step.token_file } : {}),
      ...(step.env ? { envNames: step.env } : {}),
      ...(opts.env ? { env: opts.env } : {}),
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
      ...(opts.listenerOwner ? { listenerOwner: opts.listenerOwner } : {}),
      timeoutMs: connectTimeoutMs,
      signal: life.signal,
    });
    const rpc = new RpcConnection(transport, requestTimeoutMs);
    rpc.onServerRequest(onServerRequest);
    rpc.onNotification((method, params) => onNotification(rpc, method, params));
    rpc.onClose((why) => {
      if (current === rpc) current = null;
      subscribed.clear();
      log('codex.closed', { target, why });
    });
    const params: InitializeParams = {
      clientInfo: { name: 'm4a', title: 'm4a mailbox', version: opts.clientVersion ?? '0' },
      capabilities: { experimentalApi: false, requestAttestation: false, optOutNotificationMethods: NOISY_NOTIFICATIONS },
    };
    try {
      const init = await rpc.request<InitializeResponse>('initialize', params, { timeoutMs: connectTimeoutMs, signal: life.signal });
      rpc.notify('initialized');
      log('codex.connected', { target, userAgent: init?.userAgent ?? null, ms: Date.now() - started });
    } catch (err) {
      rpc.close();
      throw err;
    }
    return rpc;
  }

  /** The live connection, or a new one; a caller's abort stops its own wait, not the connect. */
  async function connection(signal?: AbortSignal): Promise<RpcConnection> {
    if (closed) fail('the adapter is closed');
    if (current && current.closedWhy === null) return current;
    if (!connecting) {
      connecting = connect().then(
        (rpc) => {
          connecting = null;
          if (closed) {
            rpc.close();
            fail('the adapter is closed');
          }
          current = rpc;
          return rpc;
        },
        (err: unknown) => {
          connecting = null;
          throw err;
        },
      );
    }
    const pending = connecting;
    if (!signal) return pending;
    if (signal.aborted) throw new RpcTransportError('aborted', 'aborted before connecting');
    return new Promise<RpcConnection>((resolve, reject) => {
      const onAbort = (): void => reject(new RpcTransportError('aborted', 'aborted while connecting'));
      signal.addEventListener('abort', onAbort, { once: true });
      pending.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  const call = <T>(rpc: RpcConnection, method: string, params: unknown, signal?: AbortSignal): Promise<T> =>
    rpc.request<T>(method, params, { timeoutMs: requestTimeoutMs, ...(signal ? { signal } : {}) });

  /** The thread's status on this app-server; one it does not know reads as notLoaded (resume
   *  then says why: no rollout, held by another process …). */
  async function readStatus(rpc: RpcConnection, threadId: string, signal?: AbortSignal): Promise<ThreadStatus> {
    try {
      const r = await call<ThreadReadResponse>(rpc, 'thread/read', { threadId }, signal);
      return statusOf(r?.thread?.status);
    } catch (err) {
      if (err instanceof RpcError && ERROR_TEXT.threadUnknown.test(err.serverMessage)) return { type: 'notLoaded' };
      throw err;
    }
  }

  async function resume(rpc: RpcConnection, threadId: string, signal?: AbortSignal): Promise<ThreadStatus> {
    try {
      const r = await call<ThreadResumeResponse>(rpc, 'thread/resume', { threadId, excludeTurns: true }, signal);
      if (!subscribed.has(threadId)) subscribed.set(threadId, null);
      return statusOf(r?.thread?.status);
    } catch (err) {
      if (err instanceof RpcError && ERROR_TEXT.noRollout.test(err.serverMessage))
        return fail(`thread ${threadId} has no rollout (it never ran a turn), so no app-server can resume it: ${err.serverMessage}`);
      if (err instanceof RpcError && ERROR_TEXT.activeWriter.test(err.serverMessage))
        return fail(`thread ${threadId} is held by another Codex process, not by the app-server at ${target}: ${err.serverMessage}`);
      throw err;
    }
  }

  async function startTurn(rpc: RpcConnection, threadId: string, text: string, signal?: AbortSignal): Promise<string> {
    let r: TurnStartResponse;
    try {
      r = await call<TurnStartResponse>(rpc, 'turn/start', { threadId, input: [textInput(text)] }, signal);
    } catch (err) {
      // Unloaded between our read and the start: resume once and start again.
      if (!(err instanceof RpcError && ERROR_TEXT.threadUnknown.test(err.serverMessage))) throw err;
      await resume(rpc, threadId, signal);
      r = await call<TurnStartResponse>(rpc, 'turn/start', { threadId, input: [textInput(text)] }, signal);
    }
    const turnId = typeof r?.turn?.id === 'string' ? r.turn.id : '?';
    if (subscribed.has(threadId)) subscribed.set(threadId, turnId);
    return turnId;
  }

  /** The running turn's id (the newest turn, if it is in progress). */
  async function activeTurnId(rpc: RpcConnection, threadId: string, signal?: AbortSignal): Promise<string | null> {
    const r = await call<ThreadTurnsListResponse>(rpc, 'thread/turns/list', { threadId, limit: 1, sortDirection: 'desc', itemsView: 'notLoaded' }, signal);
    const turn = Array.isArray(r?.data) ? r.data[0] : undefined;
    return turn && turn.status === 'inProgress' && typeof turn.id === 'string' ? turn.id : null;
  }

  async function findThread(rpc: RpcConnection, req: WakeRequest, signal: AbortSignal): Promise<string> {
    const s = req.session;
    if (s === null) return fail('no session on record for this account: no Codex thread to wake');
    if (s.provider !== null && s.provider !== 'codex') return fail(`session ${s.id} is not a Codex session (provider ${s.provider})`);
    if (s.providerSessionId) return s.providerSessionId;
    if (!s.cwd) return fail(`session ${s.id} has no Codex thread id and no cwd to look one up by`);
    const params: ThreadListParams = { cwd: s.cwd, sourceKinds: TOP_LEVEL_SOURCE_KINDS, sortKey: 'updated_at', sortDirection: 'desc', archived: false, limit: 1 };
    const r = await call<ThreadListResponse>(rpc, 'thread/list', params, signal);
    const thread: Thread | undefined = Array.isArray(r?.data) ? r.data[0] : undefined;
    if (!thread || typeof thread.id !== 'string') return fail(`no Codex thread recorded for ${s.cwd} at ${target}`);
    return thread.id;
  }

  async function deliver(rpc: RpcConnection, threadId: string, req: WakeRequest, signal: AbortSignal, status: ThreadStatus, depth = 0): Promise<WakeResult> {
    const again = async (): Promise<WakeResult> => {
      if (depth >= 2) return fail(`thread ${threadId} keeps changing state; gave up`);
      return deliver(rpc, threadId, req, signal, await readStatus(rpc, threadId, signal), depth + 1);
    };
    switch (status.type) {
      case 'notLoaded': {
        const after = await resume(rpc, threadId, signal);
        if (after.type === 'notLoaded') return fail(`thread ${threadId} is still notLoaded after thread/resume`);
        return deliver(rpc, threadId, req, signal, after, depth + 1);
      }
      case 'idle': {
        const turnId = await startTurn(rpc, threadId, req.text, signal);
        return { ok: true, detail: `turn ${turnId} started on thread ${threadId}` };
      }
      case 'active': {
        if (!req.urgent) return defer(threadId, req);
        const turnId = await activeTurnId(rpc, threadId, signal);
        if (turnId === null) return again();
        try {
          const r = await call<TurnSteerResponse>(rpc, 'turn/steer', { threadId, input: [textInput(req.text)], expectedTurnId: turnId }, signal);
          return { ok: true, detail: `urgent: steered turn ${r?.turnId ?? turnId} on thread ${threadId}` };
        } catch (err) {
          if (!(err instanceof RpcError) || err.code === RPC.overloaded) throw err;
          // The turn ended, or another one began, meanwhile ("no active turn to steer", an id
          // mismatch): look once more. A turn that cannot be steered (a review, a compaction)
          // gets the mail when it ends.
          if (depth < 1) return again();
          const r = defer(threadId, req);
          return { ok: true, detail: `${r.detail} (turn/steer refused: ${err.serverMessage})` };
        }
      }
      case 'systemError':
        return fail(`thread ${threadId} is in systemError: Codex cannot run a turn on it`);
      default:
        return fail(`thread ${threadId} has status ${JSON.stringify(status.type)}, which this adapter (pinned to codex 0.171.0) does not know`);
    }
  }

  function defer(threadId: string, req: WakeRequest): WakeResult {
    const now = Date.now();
    let d = deferrals.get(threadId);
    if (!d) {
      const timer = setInterval(() => kick(threadId), pollMs);
      timer.unref();
      d = { threadId, eventIds: [], since: now, until: now + deferForMs, texts: [], timer, running: false, again: false };
      deferrals.set(threadId, d);
    }
    d.eventIds.push(req.eventId);
    d.until = now + deferForMs;
    if (!d.texts.includes(req.text)) d.texts.push(req.text);
    log('codex.deferred', { threadId, eventId: req.eventId, waiting: d.eventIds.length });
    return {
      ok: true,
      detail: `turn active on thread ${threadId}: not interrupted; deferred, a turn starts when the thread is idle (waiting up to ${Math.round(deferForMs / 1000)} s)`,
    };
  }

  function drop(d: Deferral, event: string, fields: Record<string, unknown>): void {
    clearInterval(d.timer);
    if (deferrals.get(d.threadId) === d) deferrals.delete(d.threadId);
    log(event, { threadId: d.threadId, eventIds: d.eventIds, waitedMs: Date.now() - d.since, ...fields });
  }

  /** Starts the deferred turn for a thread if it is idle now (one attempt at a time). */
  function kick(threadId: string): void {
    const d = deferrals.get(threadId);
    if (!d || closed) return;
    if (d.running) {
      d.again = true;
      return;
    }
    d.running = true;
    void (async () => {
      try {
        if (Date.now() > d.until) return drop(d, 'codex.deferred.expired', {});
        const rpc = await connection(life.signal);
        let status = await readStatus(rpc, threadId, life.signal);
        if (status.type === 'notLoaded') status = await resume(rpc, threadId, life.signal);
        if (status.type !== 'idle') return;
        const turnId = await startTurn(rpc, threadId, d.texts.join('\n\n'), life.signal);
        drop(d, 'codex.deferred.started', { turnId });
      } catch (err) {
        if (err instanceof NotReached) drop(d, 'codex.deferred.failed', { detail: err.message });
        else log('codex.deferred.retry', { threadId, detail: describe(err) });
      } finally {
        d.running = false;
        if (d.again && deferrals.get(threadId) === d) {
          d.again = false;
          kick(threadId);
        }
      }
    })();
  }

  return {
    kind: 'codex-app-server',
    async wake(req: WakeRequest, signal: AbortSignal): Promise<WakeResult> {
      try {
        if (signal.aborted) return { ok: false, detail: 'aborted before start' };
        const rpc = await connection(signal);
        const threadId = await findThread(rpc, req, signal);
        return await deliver(rpc, threadId, req, signal, await readStatus(rpc, threadId, signal));
      } catch (err) {
        return { ok: false, detail: describe(err) };
      }
    },
    deferred: () => [...deferrals.values()].map(({ threadId, eventIds, since, until }) => ({ threadId, eventIds: [...eventIds], since, until })),
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      life.abort();
      for (const d of [...deferrals.values()]) drop(d, 'codex.deferred.dropped', { why: 'adapter closed' });
      const rpc = current ?? (await connecting?.catch(() => null)) ?? null;
      current = null;
      rpc?.close();
    },
  };
}
