// The a2a step: the account's mail goes to a remote A2A agent, read and answered as the account.
// For each message of a wake:
//   a new task for the account (its first message) → SendMessage (non-blocking; messageId = our
//     message id, so a retry names the same message), a link recorded, the remote task followed;
//   the requester's mail in a linked task's thread → SendMessage into the remote task;
//   the requester's cancel of a linked task        → CancelTask;
//   any other mail without a task                  → SendMessage (blocking), the answer mailed
//     back to the sender as a reply from the account;
//   anything else (another task's change …)        → left for the rest of the chain.
// What it forwarded it acknowledges as the account. ok:true when it forwarded and nothing failed;
// ok:false when the remote agent could not be reached (or refused a message), so the chain goes on.
import type { Message, Part, Role, SendMessageRequest, Task } from '@a2a-js/sdk';
import { MailError } from '../wire/errors.js';
import { ReplyRequest } from '../wire/ops.js';
import { isTerminal } from '../wire/task-states.js';
import type { A2aStep } from '../wire/wake.js';
import type { Caller } from '../engine/mail-engine.js';
import type { StoredMessage, TaskRecord } from '../store/types.js';
import type { A2aBridge } from './a2a-bridge.js';
import type { A2aLink } from './a2a-links.js';
import { answerText, noteText, resultOf, stateOf, viewOf, waitsForUs } from './a2a-mirror.js';
import { checkA2aStep, failureText, OUTPUT_MODES, remoteRefusal } from './a2a-remote.js';
import { openFeed, type Feed } from './a2a-follower.js';
import type { WakeAdapter, WakeRequest, WakeResult } from './types.js';

type Outcome =
  /** Sent to the remote agent (or answered by it): acknowledged. */
  | { kind: 'forwarded'; detail: string }
  /** Nothing to send, but dealt with (a task final before it was sent): acknowledged. */
  | { kind: 'handled'; detail: string }
  /** Not this step's to forward: left unacknowledged for the rest of the chain. */
  | { kind: 'skipped'; detail: string }
  /** Not reached, or refused: left unacknowledged, and the chain goes on. */
  | { kind: 'failed'; detail: string };

const USER = 1 as Role; // A2A's ROLE_USER
const textPart = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });

function request(m: StoredMessage, text: string, into: { contextId?: string; taskId?: string }, metadata: Record<string, unknown>, returnImmediately: boolean): SendMessageRequest {
  const message: Message = {
    messageId: m.id,
    contextId: into.contextId ?? '',
    taskId: into.taskId ?? '',
    role: USER,
    parts: [textPart(text)],
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: '', message, configuration: { acceptedOutputModes: OUTPUT_MODES, taskPushNotificationConfig: undefined, returnImmediately }, metadata: undefined };
}

/** How long a task's first message may come before its row (the engine writes the message first). */
const TASK_ROW_WAIT_MS = 2_000;

export class A2aAdapter implements WakeAdapter {
  readonly kind = 'a2a';

  /** Throws MailError('malformed') for a step checkA2aStep refuses. */
  constructor(
    readonly step: A2aStep,
    private readonly b: A2aBridge,
  ) {
    checkA2aStep(step);
  }

  async wake(req: WakeRequest, signal: AbortSignal): Promise<WakeResult> {
    const e = this.b.engine;
    const account = await e.store.getAccount(req.account);
    if (!account) return { ok: false, detail: `no account ${req.account}` };
    const caller = await e.callerFor(account, null);
    const counts = { forwarded: 0, handled: 0, skipped: 0, failed: 0 };
    const notes: string[] = [];
    const acked: string[] = [];
    for (const w of req.mail) {
      if (signal.aborted) break;
      let o: Outcome;
      try {
        o = await this.one(caller, w.message_id, signal);
      } catch (err) {
        if (!remoteRefusal(err) && !(err instanceof MailError)) this.b.remote(this.step).forget();
        o = { kind: 'failed', detail: failureText(err) };
      }
      counts[o.kind]++;
      if (o.kind === 'forwarded' || o.kind === 'handled') acked.push(w.message_id);
      notes.push(`${w.message_id} ${o.kind}: ${o.detail}`);
    }
    if (acked.length) await e.ack(caller, { message_ids: acked }).catch((err: unknown) => this.b.log.warn({ err: failureText(err) }, 'a2a: acknowledging forwarded mail failed'));
    const ok = counts.forwarded + counts.handled > 0 && counts.failed === 0;
    const sum = `forwarded ${counts.forwarded}, handled ${counts.handled}, left ${counts.skipped}, failed ${counts.failed}`;
    return { ok, detail: `${sum}; ${notes.join('; ')}`.slice(0, 500) };
  }

  private async one(caller: Caller, id: string, signal: AbortSignal): Promise<Outcome> {
    const e = this.b.engine;
    const me = caller.account.id;
    try {
      // Read as the account: what it may not read, it does not forward.
      if ((await e.get(caller, { message_id: id })).message.acked_at) return { kind: 'skipped', detail: 'acknowledged already' };
    } catch (err) {
      if (err instanceof MailError) return { kind: 'skipped', detail: `not readable as ${me} (${err.code})` };
      throw err;
    }
    const m = await e.store.getMessage(id);
    if (!m) return { kind: 'skipped', detail: 'gone' };
    if (m.task?.state === 'submitted' && m.threadId === m.id) return this.newTask(caller, m, signal);
    const link = await this.b.links.get(me, m.threadId);
    if (link) {
      const task = await e.store.getTask(link.taskId);
      const fromRequester = task !== null && m.fromAccount === task.fromAccount;
      if (fromRequester && m.task?.state === 'canceled') {
        await this.b.cancelRemote(link);
        await this.b.finish(link, 'canceled by the requester');
        return { kind: 'forwarded', detail: `CancelTask ${link.remoteTaskId}` };
      }
      if (link.done === null) {
        if (!fromRequester) return { kind: 'skipped', detail: "in a forwarded task's thread, not from its requester" };
        if (m.task) return { kind: 'skipped', detail: `a task change (${m.task.state})` };
        return this.answer(link, m, signal);
      }
    }
    if (m.task) return { kind: 'skipped', detail: `a task change (${m.task.state}), not a new task for ${me}` };
    // Anyone on the internet can write it: never handed to a remote agent, whose answer would
    // leave by e-mail with nobody reading either side.
    if (m.fromKind === 'external') return { kind: 'skipped', detail: 'mail from outside (e-mail) is not forwarded to a remote agent' };
    return this.plain(caller, m, link, signal);
  }

  private async taskOf(m: StoredMessage): Promise<TaskRecord | null> {
    const id = m.task?.task_id;
    if (!id) return null;
    const until = Date.now() + TASK_ROW_WAIT_MS;
    for (;;) {
      const t = await this.b.engine.store.getTask(id);
      if (t || Date.now() >= until) return t;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private async newTask(caller: Caller, m: StoredMessage, signal: AbortSignal): Promise<Outcome> {
    const me = caller.account.id;
    const task = await this.taskOf(m);
    if (!task || task.toAccount !== me || task.toLineage !== null || task.threadId !== m.id) return { kind: 'skipped', detail: `not a task for the account ${me}` };
    const known = await this.b.links.get(me, task.threadId);
    if (known) {
      this.b.follow(known);
      return { kind: 'handled', detail: `sent before as remote task ${known.remoteTaskId}` };
    }
    if (isTerminal(task.state)) return { kind: 'handled', detail: `the task is ${task.state} already: not sent` };
    if (task.state !== 'submitted') return { kind: 'skipped', detail: `the task is ${task.state}: someone of ${me} has it` };
    let res: Message | Task;
    let feed: Feed | null;
    try {
      ({ res, feed } = await this.send(this.step, request(m, task.instructions ?? task.title, {}, { title: task.title }, true), signal));
    } catch (err) {
      const refused = remoteRefusal(err);
      if (!refused) throw err;
      // Reached, and refused: the requester hears it as the agent's rejection.
      await this.b.updateAs(caller, task.id, { state: 'rejected', note: noteText(`the remote agent refused the task: ${failureText(err)}`) });
      return { kind: 'handled', detail: `refused by the remote agent (${refused.name})` };
    }
    if ('messageId' in res) {
      // Answered at once, without a task of its own: that answer is the result.
      const result = resultOf([{ artifactId: 'answer', name: '', description: '', parts: res.parts, metadata: undefined, extensions: [] }], '');
      await this.b.updateAs(caller, task.id, { state: 'completed', ...(result ? { result } : {}) });
      await this.b.links.putConversation(me, task.threadId, { contextId: res.contextId, taskId: null, at: this.b.now() });
      return { kind: 'forwarded', detail: 'answered at once with a message' };
    }
    const link: A2aLink = {
      account: me,
      accountCreatedAt: caller.account.createdAt,
      taskId: task.id,
      threadId: task.threadId,
      remoteTaskId: res.id,
      contextId: res.contextId,
      step: this.step,
      remoteState: 'submitted',
      cancelRequested: false,
      done: null,
      createdAt: this.b.now(),
      activeAt: this.b.now(),
    };
    await this.b.links.put(link);
    if (feed) this.b.follow(link, { feed });
    else {
      const view = viewOf(res);
      if (view) await this.b.apply(link, view);
      this.b.follow(link);
    }
    return { kind: 'forwarded', detail: `remote task ${res.id}` };
  }

  /** A non-blocking send. To an agent that streams: SendStreamingMessage, whose events the
   *  follower then reads (every status from the first, none missed between the send and a
   *  subscription); else SendMessage with returnImmediately. */
  private async send(step: A2aStep, req: SendMessageRequest, signal: AbortSignal): Promise<{ res: Message | Task; feed: Feed | null }> {
    const { client, streaming } = await this.b.remote(step).clients();
    if (!streaming) return { res: await client.sendMessage(req, { signal }), feed: null };
    let onAbort: (() => void) | undefined;
    const opened = openFeed((s) => {
      // Until its first event the stream is part of this wake; then the follower owns it.
      const both = new AbortController();
      onAbort = () => both.abort();
      signal.addEventListener('abort', onAbort, { once: true });
      s.addEventListener('abort', onAbort, { once: true });
      return client.sendMessageStream(req, { signal: both.signal });
    });
    try {
      const { first, feed } = await opened;
      const p = first.payload;
      if (p?.$case === 'message') {
        feed.abort.abort();
        return { res: p.value, feed: null };
      }
      if (p?.$case === 'task') return { res: p.value, feed };
      const ids = p?.value ? { id: 'taskId' in p.value ? p.value.taskId : '', contextId: p.value.contextId } : null;
      if (!ids?.id) {
        feed.abort.abort();
        throw new Error('the remote agent began its stream with neither a task nor a message');
      }
      // Not as A2A says (a task comes first), but the ids are there.
      return { res: { id: ids.id, contextId: ids.contextId, status: undefined, artifacts: [], history: [], metadata: undefined }, feed };
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  /** The requester's mail into the remote task (the answer to its question, most often). */
  private async answer(link: A2aLink, m: StoredMessage, signal: AbortSignal): Promise<Outcome> {
    let feed: Feed | null;
    try {
      ({ feed } = await this.send(link.step, request(m, m.body, { contextId: link.contextId, taskId: link.remoteTaskId }, { subject: m.subject }, true), signal));
    } catch (err) {
      if (!remoteRefusal(err)) throw err;
      this.b.follow(link, { kick: true });
      return { kind: 'failed', detail: `the remote agent refused it: ${failureText(err)}` };
    }
    link.activeAt = this.b.now();
    await this.b.links.put(link);
    this.b.follow(link, feed ? { feed } : { kick: true });
    return { kind: 'forwarded', detail: `into remote task ${link.remoteTaskId}` };
  }

  /** Mail without a task: the remote agent's answer goes back to the sender as a reply from the
   *  account, in the thread; later mail of the thread continues the remote conversation. */
  private async plain(caller: Caller, m: StoredMessage, link: A2aLink | null, signal: AbortSignal): Promise<Outcome> {
    const me = caller.account.id;
    const conv = link ? { contextId: link.contextId, taskId: null } : await this.b.links.conversation(me, m.threadId);
    const { blocking } = await this.b.remote(this.step).clients();
    const send = (into: { contextId?: string; taskId?: string }) => blocking.sendMessage(request(m, m.body, into, { subject: m.subject }, false), { signal });
    let res: Message | Task;
    try {
      res = await send({ ...(conv ? { contextId: conv.contextId } : {}), ...(conv?.taskId ? { taskId: conv.taskId } : {}) });
    } catch (err) {
      // The remote task it continued may be over: a new one in the same context.
      if (!conv?.taskId || !remoteRefusal(err)) throw err;
      res = await send({ contextId: conv.contextId });
    }
    const reply = await this.b.engine.reply(caller, ReplyRequest.parse({ message_id: m.id, body: answerText(res), ack: false, to_sender: true, idempotency_key: `a2a-${m.id}` }));
    const state = 'messageId' in res ? null : stateOf(res.status);
    await this.b.links.putConversation(me, reply.thread_id, { contextId: res.contextId, taskId: state && waitsForUs(state) ? (res as Task).id : null, at: this.b.now() });
    return { kind: 'forwarded', detail: `answered in ${reply.message_id} (${state ? `remote task ${state}` : 'a message'})` };
  }
}
