// Our tasks in A2A's terms and back: a task is an A2A Task whose contextId is its thread, whose
// history is the thread's mail, and whose result is one artifact (a text part with the summary, a
// data part with the data); an A2A message's parts become a task's title and instructions.
import type { MessageOut } from '../../wire/ops.js';
import type { TaskOut } from '../../wire/tasks.js';
import { A2A_STATE, type Artifact, type Message, type MessageIn, type Part, type Task, type TaskStatus } from './a2a-wire.js';
import { A2aRpcError } from './a2a-errors.js';
import { TASK_LIMITS } from '../../wire/tasks.js';
import { unsafeChar } from '../../wire/text.js';

/** The account of a printed address (`bob`, `bob/web-ui`, `bob/@rev`, `bob/s-…`). */
export const accountOf = (printed: string): string => printed.split('/')[0] ?? printed;

const stateAt = (t: TaskOut, i: number) => t.history[i]!;

/** A history entry's note as the status message, from the agent when the assignee made it. */
function noteMessage(t: TaskOut, i: number): Message | undefined {
  const h = stateAt(t, i);
  if (!h.note) return undefined;
  return {
    messageId: `${t.task_id}-h${i + 1}`,
    contextId: t.thread_id,
    taskId: t.task_id,
    role: accountOf(h.by) === accountOf(t.to) && i > 0 ? 'ROLE_AGENT' : 'ROLE_USER',
    parts: [{ text: h.note }],
  };
}

/** The status of history entry `i` (the current status is the last). */
export function statusAt(t: TaskOut, i: number): TaskStatus {
  const h = stateAt(t, i);
  const message = noteMessage(t, i);
  return { state: A2A_STATE[h.state], ...(message ? { message } : {}), timestamp: h.at };
}

/** The result as the task's one artifact, or none before there is a result. */
export function artifactOf(t: TaskOut): Artifact | undefined {
  const r = t.result;
  if (!r) return undefined;
  const parts: Part[] = [{ text: r.summary ?? '', mediaType: 'text/plain' }];
  if (r.data !== undefined) parts.push({ data: r.data, mediaType: 'application/json' });
  return { artifactId: `${t.task_id}-result`, name: 'result', parts, ...(r.refs?.length ? { metadata: { refs: r.refs } } : {}) };
}

/** One mail of the task's thread as an A2A message: the assignee's mail is the agent's. */
export function threadMessage(t: TaskOut, m: MessageOut): Message {
  const agent = m.message_id !== t.thread_id && accountOf(m.from) === accountOf(t.to);
  return {
    messageId: m.message_id,
    contextId: t.thread_id,
    taskId: t.task_id,
    role: agent ? 'ROLE_AGENT' : 'ROLE_USER',
    parts: [{ text: m.body ?? '' }],
    metadata: { subject: m.subject, from: m.from, createdAt: m.created_at },
  };
}

export interface TaskView {
  /** The thread's mail as the caller may read it, oldest first; absent: no history. */
  thread?: MessageOut[];
  historyLength?: number;
  artifacts?: boolean;
}

export function toA2aTask(t: TaskOut, v: TaskView = {}): Task {
  const artifact = v.artifacts === false ? undefined : artifactOf(t);
  const limit = v.historyLength;
  const history = v.thread && limit !== 0 ? v.thread.slice(limit === undefined ? 0 : -limit).map((m) => threadMessage(t, m)) : undefined;
  return {
    id: t.task_id,
    contextId: t.thread_id,
    status: statusAt(t, t.history.length - 1),
    ...(artifact ? { artifacts: [artifact] } : {}),
    ...(history?.length ? { history } : {}),
    metadata: {
      title: t.title,
      from: t.from,
      to: t.to,
      version: t.version,
      createdAt: t.created_at,
      ...(t.parent_task_id ? { parentTaskId: t.parent_task_id } : {}),
      ...(t.children ? { children: t.children.map((c) => ({ taskId: c.task_id, title: c.title, state: A2A_STATE[c.state] })) } : {}),
    },
  };
}

// ---- an A2A message into our terms

const TEXT_TYPES = /^(text\/[\w.+-]+|application\/(json|[\w.-]+\+json))(;.*)?$/i;
const DATA_TYPES = /^application\/(json|[\w.-]+\+json)(;.*)?$/i;
/** A title taken from text drops the characters a one-line field refuses (tabs become spaces). */
const oneLine = (s: string): string => [...s.replace(/\t/g, ' ')].filter((ch) => unsafeChar(ch, 'line') === null).join('');

/** The message's parts as mail text: text parts as they are, data parts as JSON blocks. Files
 *  (raw, url) are refused: the mailbox keeps no files, only refs. */
export function textOf(m: MessageIn): string {
  const out: string[] = [];
  m.parts.forEach((p, i) => {
    if (p.raw !== undefined || p.url !== undefined)
      throw A2aRpcError.a2a('ContentTypeNotSupportedError', `message.parts[${i}]: files are not accepted; send text or data (${p.mediaType || 'a file'})`);
    if (p.text !== undefined) {
      if (p.mediaType && !TEXT_TYPES.test(p.mediaType))
        throw A2aRpcError.a2a('ContentTypeNotSupportedError', `message.parts[${i}]: ${p.mediaType} is not accepted; text/plain or application/json`);
      out.push(p.text);
    } else if (p.data !== undefined) {
      if (p.mediaType && !DATA_TYPES.test(p.mediaType))
        throw A2aRpcError.a2a('ContentTypeNotSupportedError', `message.parts[${i}]: ${p.mediaType} is not accepted for data; application/json`);
      out.push('```json\n' + JSON.stringify(p.data, null, 2) + '\n```');
    } else throw A2aRpcError.invalidParams(`message.parts[${i}]`, 'a part needs text or data');
  });
  return out.join('\n\n');
}

/** The title a task takes from its message: metadata.title, else the first non-empty line of its
 *  first text part, on one line within the title's limit. */
export function titleOf(m: MessageIn): string {
  const given = typeof m.metadata?.title === 'string' ? m.metadata.title : undefined;
  const firstText = m.parts.find((p) => p.text !== undefined && p.text.trim() !== '')?.text;
  const line = given ?? firstText?.split(/\r?\n/).find((l) => l.trim() !== '') ?? 'A2A task (data)';
  const title = oneLine(line).trim();
  return clipBytes(title || 'A2A task', TASK_LIMITS.titleBytes);
}

function clipBytes(s: string, limit: number): string {
  if (Buffer.byteLength(s, 'utf8') <= limit) return s;
  let out = '';
  for (const ch of s) {
    if (Buffer.byteLength(out + ch + '…', 'utf8') > limit) break;
    out += ch;
  }
  return `${out}…`;
}

/** Whether an acceptedOutputModes list admits what this door answers with. */
export function acceptsOurOutput(modes: string[] | undefined): boolean {
  if (!modes || modes.length === 0) return true;
  return modes.some((m) => /^(\*\/\*|text\/\*|text\/plain|application\/\*|application\/json)(;.*)?$/i.test(m.trim()));
}
