// What the a2a step remembers, in the store's records so it survives a restart: which local task
// went to which remote task (a link, followed until either side is final), and which remote
// context a thread of plain mail talks in (a conversation). Ids start with the account, so one
// account's records sit together.
import type { TaskState } from '../wire/task-states.js';
import type { A2aStep } from '../wire/wake.js';
import type { Logger } from '../engine/log.js';
import type { Store } from '../store/types.js';

export const A2A_RECORDS = {
  /** id `<account>|<task thread id>` → A2aLink */
  link: 'a2a_link',
  /** id `<account>|<thread id>` → A2aConversation */
  conversation: 'a2a_conversation',
} as const;

/** Open links resumed at start, at most (the rest wait for the next start). */
const RESUME_MAX = 10_000;

export interface A2aLink {
  account: string;
  /** The account's createdAt when linked: a later account of the same name never continues it. */
  accountCreatedAt: number;
  taskId: string;
  threadId: string;
  remoteTaskId: string;
  contextId: string;
  /** The step that forwarded it (the card, allow_remote, token_file path): followed with it. */
  step: A2aStep;
  /** The remote state last seen, in our names. */
  remoteState: TaskState;
  /** We sent CancelTask: the remote's `canceled` is our own doing, not news for the requester. */
  cancelRequested: boolean;
  /** Why it is no longer followed (final here or there, expired, gone), or null while it is. */
  done: string | null;
  createdAt: number;
  /** The last change seen or message forwarded: following stops a day after it. */
  activeAt: number;
}

export interface A2aConversation {
  contextId: string;
  /** A remote task that answered plain mail and waits for more input (input_required). */
  taskId: string | null;
  at: number;
}

export const recordId = (account: string, threadId: string): string => `${account}|${threadId}`;

function parse<T>(value: string, check: (v: Record<string, unknown>) => boolean): T | null {
  try {
    const v = JSON.parse(value) as unknown;
    return v && typeof v === 'object' && check(v as Record<string, unknown>) ? (v as T) : null;
  } catch {
    return null;
  }
}

const isLink = (v: Record<string, unknown>): boolean =>
  typeof v.account === 'string' && typeof v.taskId === 'string' && typeof v.remoteTaskId === 'string' && typeof v.threadId === 'string' && typeof v.step === 'object';

/** Links held once in memory (the follower and a wake change the same object), written through. */
export class LinkBook {
  private live = new Map<string, A2aLink>();

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  async get(account: string, threadId: string): Promise<A2aLink | null> {
    const id = recordId(account, threadId);
    const held = this.live.get(id);
    if (held) return held;
    const row = await this.store.getRecord(A2A_RECORDS.link, id);
    if (!row) return null;
    const link = parse<A2aLink>(row.value, isLink);
    if (!link) {
      this.log.warn({ id }, 'a2a: an unreadable link record is ignored');
      return null;
    }
    return this.live.get(id) ?? (this.live.set(id, link), link);
  }

  async put(link: A2aLink): Promise<void> {
    const id = recordId(link.account, link.threadId);
    this.live.set(id, link);
    await this.store.putRecord({ kind: A2A_RECORDS.link, id, value: JSON.stringify(link), updatedAt: link.activeAt });
  }

  /** Links still followed, as the store has them (for the start). */
  async open(): Promise<A2aLink[]> {
    const rows = await this.store.listRecords(A2A_RECORDS.link, '', RESUME_MAX);
    const out: A2aLink[] = [];
    for (const row of rows) {
      const link = this.live.get(row.id) ?? parse<A2aLink>(row.value, isLink);
      if (!link || link.done !== null) continue;
      this.live.set(row.id, link);
      out.push(link);
    }
    return out;
  }

  async conversation(account: string, threadId: string): Promise<A2aConversation | null> {
    const row = await this.store.getRecord(A2A_RECORDS.conversation, recordId(account, threadId));
    return row ? parse<A2aConversation>(row.value, (v) => typeof v.contextId === 'string') : null;
  }

  async putConversation(account: string, threadId: string, c: A2aConversation): Promise<void> {
    await this.store.putRecord({ kind: A2A_RECORDS.conversation, id: recordId(account, threadId), value: JSON.stringify(c), updatedAt: c.at });
  }
}
