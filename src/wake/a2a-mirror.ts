// A remote A2A task in our terms: which update of the local task its status asks for, its
// artifacts as our result, and an answer as mail text. Remote text is untrusted: it is made to fit
// the fields it lands in (one line for notes and summaries, a body's characters), within their
// limits, and checked by the same schema the doors check an update with.
import type { Artifact, Message, Part, Task, TaskStatus } from '@a2a-js/sdk';
import { LIMITS } from '../wire/limits.js';
import type { TaskState } from '../wire/task-states.js';
import { TASK_LIMITS, TaskUpdateRequest } from '../wire/tasks.js';
import { clipUtf8, unsafeChar, utf8Bytes } from '../wire/text.js';

// A2A 1.0's TaskState numbers (the SDK's proto enum), in our names.
const STATE_OF: Record<number, TaskState> = {
  1: 'submitted',
  2: 'working',
  3: 'completed',
  4: 'failed',
  5: 'canceled',
  6: 'input_required',
  7: 'rejected',
  8: 'auth_required',
};

export const stateOf = (s: TaskStatus | undefined): TaskState | null => (s ? (STATE_OF[s.state] ?? null) : null);
export const isRemoteFinal = (s: TaskState): boolean => s === 'completed' || s === 'failed' || s === 'canceled' || s === 'rejected';
/** The remote agent waits for the requester (or for credentials): nothing moves until we send. */
export const waitsForUs = (s: TaskState): boolean => s === 'input_required' || s === 'auth_required';

const wellFormed = (s: string): string => (s as unknown as { toWellFormed(): string }).toWellFormed();

/** One line for a note or a summary: whitespace runs become one space, refused characters go. */
export function oneLine(s: string, maxBytes: number): string {
  const flat = [...wellFormed(s).replace(/[\s\u0085]+/g, ' ')].filter((ch) => unsafeChar(ch, 'line') === null).join('');
  return clipUtf8(flat.trim(), maxBytes);
}

/** Mail body text: controls other than \n and \t go (CR LF becomes LF). */
export function bodyText(s: string, maxBytes: number): string {
  return clipUtf8(
    wellFormed(s)
      .replace(/\r\n?/g, '\n')
      .replace(/(?![\n\t])\p{Cc}/gu, ''),
    maxBytes,
  );
}

/** Text parts as they are, data parts as JSON blocks; files are counted, not kept. */
export function partsText(parts: Part[]): string {
  const out: string[] = [];
  let files = 0;
  for (const p of parts) {
    const c = p.content;
    if (c?.$case === 'text') out.push(c.value);
    else if (c?.$case === 'data') out.push('```json\n' + JSON.stringify(c.value, null, 2) + '\n```');
    else if (c) files++;
  }
  if (files) out.push(`(${files} file part${files > 1 ? 's' : ''} not kept: the mailbox keeps text, data and refs only)`);
  return out.join('\n\n');
}

export const messageText = (m: Message | undefined): string => (m ? partsText(m.parts) : '');

/** What a remote task says now. */
export interface RemoteView {
  state: TaskState;
  /** The status message's text. */
  text: string;
  artifacts: Artifact[];
}

export function viewOf(t: Task): RemoteView | null {
  const state = stateOf(t.status);
  return state ? { state, text: messageText(t.status?.message), artifacts: t.artifacts ?? [] } : null;
}

type Result = NonNullable<TaskUpdateRequest['result']>;

/** The artifacts as our result: the summary from their text parts (one line, ≤ 4 KiB; else the
 *  status message), the data from their data parts (one value, or a list of several; ≤ 64 KiB). */
export function resultOf(artifacts: Artifact[], fallback: string): Result | undefined {
  const parts = artifacts.flatMap((a) => a.parts ?? []);
  const texts = parts.flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : []));
  const datas = parts.flatMap((p) => (p.content?.$case === 'data' ? [p.content.value as unknown] : []));
  const files = parts.filter((p) => p.content?.$case === 'raw' || p.content?.$case === 'url').length;
  const notes: string[] = [];
  let data: unknown = datas.length === 0 ? undefined : datas.length === 1 ? datas[0] : datas;
  if (data !== undefined && utf8Bytes(JSON.stringify(data) ?? '') > TASK_LIMITS.dataBytes) {
    data = undefined;
    notes.push(`(data over ${TASK_LIMITS.dataBytes / 1024} KiB not kept)`);
  }
  if (files) notes.push(`(${files} file part${files > 1 ? 's' : ''} not kept)`);
  const text = texts.join(' ').trim() || fallback;
  const summary = oneLine([text, ...notes].filter(Boolean).join(' '), TASK_LIMITS.summaryBytes);
  if (!summary && data === undefined) return undefined;
  return { ...(summary ? { summary } : {}), ...(data !== undefined ? { data } : {}) };
}

export type LocalUpdate = Omit<TaskUpdateRequest, 'task_id'>;

/** A task note: one line, within its limit. */
export const noteText = (s: string): string => oneLine(s, TASK_LIMITS.noteBytes);
const note = noteText;

/** The update of our task that a remote status asks for, or null (nothing to tell: submitted, or
 *  the cancel we asked for). Remote `canceled` we did not ask for is a failure to the requester;
 *  `auth_required` is a question to the requester (our auth_required means an approval). */
export function updateFor(v: RemoteView, cancelRequested: boolean): LocalUpdate | null {
  const said = note(v.text);
  switch (v.state) {
    case 'submitted':
      return null;
    case 'working':
      return { state: 'working', ...(said ? { note: said } : {}) };
    case 'input_required':
      return { state: 'input_required', note: said || 'the remote agent needs more input: answer in this thread' };
    case 'auth_required':
      return { state: 'input_required', note: note(`the remote agent needs authorization${said ? `: ${said}` : ''}`) };
    case 'completed': {
      const result = resultOf(v.artifacts, v.text);
      return { state: 'completed', ...(result ? { result } : {}) };
    }
    case 'failed':
      return { state: 'failed', note: said || 'the remote agent reported a failure' };
    case 'rejected':
      return { state: 'rejected', note: said || 'the remote agent rejected the task' };
    case 'canceled':
      return cancelRequested ? null : { state: 'failed', note: note(`the remote agent canceled the task${said ? `: ${said}` : ''}`) };
  }
}

/** The update as the doors would accept it; an answer that still does not fit keeps only its state
 *  (with a note where the state needs one). */
export function checkedUpdate(taskId: string, u: LocalUpdate): TaskUpdateRequest {
  const parsed = TaskUpdateRequest.safeParse({ task_id: taskId, ...u });
  if (parsed.success) return parsed.data;
  return { task_id: taskId, state: u.state, ...(u.state === 'input_required' ? { note: 'the remote agent needs more input (its text could not be kept)' } : {}) };
}

/** A remote answer to plain mail, as the text of our reply. */
export function answerText(r: Message | Task): string {
  let text: string;
  if ('messageId' in r) text = partsText(r.parts);
  else {
    const state = stateOf(r.status) ?? 'submitted';
    const fromArtifacts = partsText((r.artifacts ?? []).flatMap((a) => a.parts ?? []));
    const said = messageText(r.status?.message);
    text = [fromArtifacts, said].filter(Boolean).join('\n\n');
    if (state !== 'completed') text += `${text ? '\n\n' : ''}(the remote agent's task is ${state}${waitsForUs(state) ? ': answer in this thread' : ''})`;
  }
  return bodyText(text.trim() || '(the remote agent answered with no text)', LIMITS.bodyBytes);
}
