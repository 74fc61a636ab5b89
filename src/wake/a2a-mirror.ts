// A remote A2A task in our terms: which update of the local task its status asks for, its
// artifacts as our result, and an answer as mail text. Remote text is untrusted: it is made to fit
// the fields it lands in (one line for notes and summaries, a body's characters), within their
// limits, and checked by the same schema the doors check an update with. Only as much of it is
// read as can be used (a remote can send megabytes of text): the rest is cut, with a marker.
import type { Artifact, Message, Part, Task, TaskStatus } from '@a2a-js/sdk';
import { LIMITS } from '../wire/limits.js';
import type { TaskState } from '../wire/task-states.js';
import { TASK_LIMITS, TaskUpdateRequest } from '../wire/tasks.js';
import { clipUtf8, unsafeChar, utf8Bytes } from '../wire/text.js';
import { OVER_LIMIT } from './a2a-limits.js';

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

/** One line for a note or a summary: whitespace runs become one space, refused characters go.
 *  At most 4 characters are read per byte kept (whitespace and refused characters shrink it). */
export function oneLine(s: string, maxBytes: number): string {
  const read = Math.max(0, maxBytes) * 4;
  const flat = [...wellFormed(s.length > read ? s.slice(0, read) : s).replace(/[\s\u0085]+/g, ' ')].filter((ch) => unsafeChar(ch, 'line') === null).join('');
  return clipUtf8(flat.trim() + (s.length > read ? '…' : ''), maxBytes);
}

/** Mail body text: controls other than \n and \t go (CR LF becomes LF). */
export function bodyText(s: string, maxBytes: number): string {
  return clipUtf8(
    wellFormed(s.slice(0, maxBytes * 2))
      .replace(/\r\n?/g, '\n')
      .replace(/(?![\n\t])\p{Cc}/gu, ''),
    maxBytes,
  );
}

/** Text parts as they are, data parts as JSON blocks, up to `maxChars` (a mail body's worth);
 *  files are counted, not kept. */
export function partsText(parts: Part[], maxChars: number = LIMITS.bodyBytes): string {
  const out: string[] = [];
  let files = 0;
  let room = maxChars;
  let cut = false;
  for (const p of parts) {
    const c = p.content;
    if (c?.$case === 'text' || c?.$case === 'data') {
      if (room <= 0) {
        cut = true;
        continue;
      }
      const s = c.$case === 'text' ? c.value : '```json\n' + JSON.stringify(c.value, null, 2) + '\n```';
      if (s.length > room) cut = true;
      out.push(s.length > room ? s.slice(0, room) : s);
      room -= s.length + 2;
    } else if (c) files++;
  }
  if (cut) out.push(`(the rest ${OVER_LIMIT})`);
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
  /** What the follower dropped of the artifacts (over its limits), for the result. */
  dropped?: string;
}

export function viewOf(t: Task): RemoteView | null {
  const state = stateOf(t.status);
  return state ? { state, text: messageText(t.status?.message), artifacts: t.artifacts ?? [] } : null;
}

type Result = NonNullable<TaskUpdateRequest['result']>;

/** The artifacts as our result: the summary from their text parts (one line, ≤ 4 KiB; else the
 *  status message), the data from their data parts (one value, or a list of several; ≤ 64 KiB).
 *  Notes of what was not kept (data too large, files, `dropped`) end the summary, always shown. */
export function resultOf(artifacts: Artifact[], fallback: string, dropped?: string): Result | undefined {
  // Read only what a summary or data can hold; past that a text is cut (…) and data dropped.
  const textRoom = TASK_LIMITS.summaryBytes * 4;
  const texts: string[] = [];
  let textChars = 0;
  let textCut = false;
  const datas: unknown[] = [];
  let dataBytes = 1;
  let dataOver = false;
  let files = 0;
  for (const p of artifacts.flatMap((a) => a.parts ?? [])) {
    const c = p.content;
    if (c?.$case === 'text') {
      const room = textRoom - textChars;
      if (c.value.length > room) textCut = true;
      if (room <= 0) continue;
      const t = c.value.length > room ? c.value.slice(0, room) : c.value;
      texts.push(t);
      textChars += t.length + 1;
    } else if (c?.$case === 'data') {
      if (dataOver) continue;
      dataBytes += utf8Bytes(JSON.stringify(c.value) ?? '') + 1;
      // The list's JSON length so far (a single value is 2 less: checked exactly below).
      if (dataBytes > TASK_LIMITS.dataBytes + 2) dataOver = true;
      else datas.push(c.value as unknown);
    } else if (c) files++;
  }
  let data: unknown = dataOver || datas.length === 0 ? undefined : datas.length === 1 ? datas[0] : datas;
  if (data !== undefined && utf8Bytes(JSON.stringify(data) ?? '') > TASK_LIMITS.dataBytes) {
    data = undefined;
    dataOver = true;
  }
  const notes: string[] = [];
  if (dataOver) notes.push(`(data over ${TASK_LIMITS.dataBytes / 1024} KiB not kept)`);
  if (files) notes.push(`(${files} file part${files > 1 ? 's' : ''} not kept)`);
  if (dropped) notes.push(dropped);
  const text = (texts.join(' ').trim() + (textCut ? '…' : '')).trim() || fallback;
  const tail = oneLine(notes.join(' '), TASK_LIMITS.summaryBytes);
  const head = oneLine(text, TASK_LIMITS.summaryBytes - (tail ? utf8Bytes(tail) + 1 : 0));
  const summary = [head, tail].filter(Boolean).join(' ');
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
      const result = resultOf(v.artifacts, v.text, v.dropped);
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
