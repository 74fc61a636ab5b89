// Following a task: the blocking SendMessage and the two streams (SendStreamingMessage,
// SubscribeToTask, server-sent events) wait with engine.tasks.get(wait_secs, after_version), which
// parks on the parties' mailboxes, so nothing spins. A stream lasts until the task is terminal, at
// most STREAM_SECS; an SSE comment every HEARTBEAT_SECS keeps proxies from closing a quiet one.
import type { ServerResponse } from 'node:http';
import type { Caller, MailEngine } from '../../engine/mail-engine.js';
import { isTerminal, type TaskOut } from '../../wire/tasks.js';
import { LIMITS } from '../../wire/limits.js';
import { artifactOf, statusAt } from './a2a-mapping.js';
import type { RpcErrorBody } from './a2a-errors.js';
import type { RpcId, StreamEvent } from './a2a-wire.js';

/** How long one stream follows a task; a client resubscribes (SubscribeToTask) after that. */
export const STREAM_SECS = 300;
export const HEARTBEAT_SECS = 15;
/** A blocking SendMessage answers by then with the task as it stands. */
export const BLOCK_SECS = LIMITS.waitSecsHttp;

/** A2A's interrupted states: a blocking SendMessage answers at these as at terminal ones. */
const settledState = (t: TaskOut): boolean => isTerminal(t.state) || t.state === 'input_required' || t.state === 'auth_required';

export interface Follow {
  engine: MailEngine;
  caller: Caller;
  signal: AbortSignal;
}

/** The task's next change after `version` within `ms`; `early` when the wait ended before its
 *  time with no change (the daemon closing, the client gone, a newer wait of the same session
 *  displacing this one): the caller stops rather than parking again. */
async function nextChange(f: Follow, task: TaskOut, ms: number): Promise<{ task: TaskOut; early: boolean }> {
  const started = f.engine.clock.now();
  const secs = Math.max(0, Math.min(ms, LIMITS.waitSecsHttp * 1000)) / 1000;
  const t = await f.engine.tasks.get(f.caller, { task_id: task.task_id, wait_secs: secs, after_version: task.version }, f.signal);
  const early = t.version === task.version && f.engine.clock.now() - started < secs * 1000 - 50;
  return { task: t, early };
}

/** The blocking SendMessage: waits (at most BLOCK_SECS) until the task has changed since `from`
 *  and is terminal or interrupted. */
export async function settle(f: Follow, task: TaskOut, from: number): Promise<TaskOut> {
  const deadline = f.engine.clock.now() + BLOCK_SECS * 1000;
  let t = task;
  while (!(t.version > from && settledState(t)) && !f.signal.aborted) {
    const left = deadline - f.engine.clock.now();
    if (left <= 0) break;
    const next = await nextChange(f, t, left);
    t = next.task;
    if (next.early) break;
  }
  return t;
}

/** An SSE answer: JSON-RPC responses with the request's id, one per event. */
export class SseWriter {
  constructor(
    private res: ServerResponse,
    private id: RpcId,
  ) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', 'x-accel-buffering': 'no' });
  }

  private get open(): boolean {
    return !this.res.destroyed && !this.res.writableEnded;
  }

  event(result: StreamEvent): void {
    if (this.open) this.res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: this.id, result })}\n\n`);
  }

  error(error: RpcErrorBody): void {
    if (this.open) this.res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: this.id, error })}\n\n`);
  }

  heartbeat(): void {
    if (this.open) this.res.write(': waiting\n\n');
  }

  end(): void {
    if (this.open) this.res.end();
  }
}

/** Streams the task's changes after `first` (already sent as the opening Task event): a status
 *  update per history entry it gains, the result as an artifact update before the status that
 *  brought it, until the task is terminal, the client leaves or STREAM_SECS pass. */
export async function follow(f: Follow, out: SseWriter, first: TaskOut, streamSecs = STREAM_SECS): Promise<void> {
  const deadline = f.engine.clock.now() + streamSecs * 1000;
  let t = first;
  let result = JSON.stringify(first.result ?? null);
  while (!isTerminal(t.state) && !f.signal.aborted) {
    const left = deadline - f.engine.clock.now();
    if (left <= 0) break;
    const next = await nextChange(f, t, Math.min(left, HEARTBEAT_SECS * 1000));
    if (next.task.version === t.version) {
      if (next.early) break;
      out.heartbeat();
      continue;
    }
    const n = next.task;
    const r = JSON.stringify(n.result ?? null);
    const artifact = r !== result ? artifactOf(n) : undefined;
    const ids = { taskId: n.task_id, contextId: n.thread_id };
    for (let i = t.history.length; i < n.history.length; i++) {
      if (artifact && i === n.history.length - 1) out.event({ artifactUpdate: { ...ids, artifact, lastChunk: true } });
      out.event({ statusUpdate: { ...ids, status: statusAt(n, i) } });
    }
    result = r;
    t = n;
  }
}
