// The inbox read: one page of readable mail, and the wait that parks until there is mail after the
// cursor or above the shown mark (notices.ts), answered in batches when many readers wake at once
// (wake-batch.ts). MailEngine checks the permission and hands this its collaborators.
import { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import type * as W from '../wire/ops.js';
import { readKeys, type PagedMessage, type ReaderScope, type Store, type StoredMessage } from '../store/types.js';
import type { Clock } from './clock.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { fitToBudget } from './inbox-budget.js';
import type { IncarnationCheck } from './incarnation.js';
import { shownKey, type NoticeBook } from './notices.js';
import { presentPaged, type ReaderView } from './present.js';
import type { Receipts } from './receipts.js';
import type { ShortAddresses } from './short-address.js';
import type { WaitRoom } from './waits.js';
import type { WakeBatcher, WokenPage } from './wake-batch.js';
import type { Caller } from './mail-engine.js';

export const accountGone = (c: Caller): MailError => new MailError('unauthenticated', `account ${c.account.id} was removed while this read waited: the secret names no account`);

/** Nobody reads this: the client of a parked wait closed its connection (the door's signal). */
const clientGone = (): MailError => new MailError('malformed', 'the client closed the connection while its read waited', { field: '(request)', reason: 'client_gone' });

/** What a door says about an inbox read: its longest wait, its byte budget, and a signal that
 *  aborts when its client has gone away (a parked wait is then dropped at once). */
export interface InboxDoor {
  maxWaitSecs: number;
  budgetBytes?: number;
  signal?: AbortSignal;
}

interface AnswerOptions {
  budgetBytes?: number | undefined;
  /** A wait without a cursor: its answer must keep some mail above this mark (the shown mark). */
  newAbove: number | null;
  /** Where the answer is marked shown (null: a hook notice marks what it told itself). */
  shown: { key: string; thread: string | null } | null;
  /** A woken reader's batch (wake-batch.ts): its unread, and pages presented once for many. */
  woke?: WokenPage | undefined;
}

/** A wait's answer: the shown, still unacknowledged mail and the new, oldest first; when both do
 *  not fit in `limit`, the oldest shown mail makes room, so the new mail is always in it. */
function withShown(old: PagedMessage[], fresh: PagedMessage[], limit: number): PagedMessage[] {
  const kept = fresh.slice(0, limit);
  return [...old.slice(0, limit - kept.length), ...kept];
}

export interface ReaderDeps {
  store: Store;
  clock: Clock;
  waits: WaitRoom;
  wakes: WakeBatcher;
  notices: NoticeBook;
  receipts: Receipts;
  addresses: ShortAddresses;
  incarnations: IncarnationCheck;
  scope(c: Caller): Promise<ReaderScope>;
  /** The highest seq the engine has seen committed; -1 until it started. */
  head(): number;
}

export class InboxReader {
  constructor(private d: ReaderDeps) {}

  /** The inbox; `mark`: the answer counts as shown (a hook notice decides that itself). */
  async read(c: Caller, req: W.InboxRequest, door: InboxDoor, mark: boolean): Promise<W.InboxResponse> {
    const maxWaitSecs = door.maxWaitSecs;
    const limit = req.limit ?? LIMITS.inboxLimitDefault;
    if (limit > LIMITS.inboxLimitMax) throw new MailError('too_large', `limit is over ${LIMITS.inboxLimitMax}`, { field: 'limit', limit: LIMITS.inboxLimitMax, actual: limit });
    const after = req.after !== undefined ? decodeCursor(req.after) : null;
    const waitMs = Math.round(Math.min(Math.max(req.wait_secs ?? 0, 0), maxWaitSecs) * 1000);
    const deadline = this.d.clock.now() + waitMs;
    const owner = c.session ? `${c.account.id}/${c.session.id}` : c.account.id;
    const look: ReaderView = { includeBody: req.include_bodies ?? true, reader: c.account.id, verbose: req.verbose === true, self: c.session };
    const thread = req.thread_id ?? null;
    const key = shownKey(c.account.id, c.session?.lineage ?? null);
    const q = { after, pendingOnly: !req.include_acked, limit, threadId: thread };

    // The readers a commit woke are answered before this read queries and parks (wake-batch.ts).
    const busy = this.d.wakes.busy();
    if (busy) await busy;
    const [first, st] = await Promise.all([this.d.scope(c), this.d.notices.state(key)]);
    let scope = first;
    let waited = false;
    for (;;) {
      const remaining = deadline - this.d.clock.now();
      // Without a cursor a wait ends only on mail above the shown mark; what it was shown stays in
      // the answer (unacknowledged), so `old` is that part of the page.
      const shown = after === null ? this.d.notices.shownFor(st, thread) : null;
      // Register before the query so a commit in between still wakes us, and remember the head this
      // query is sure to see: woken readers are then answered in batches (wake-batch.ts).
      const bound = this.d.head() >= 0 ? Math.max(after ?? 0, shown ?? 0, this.d.head()) : null;
      const parked = remaining > 0 ? this.d.waits.park(owner, c.account.id, readKeys(scope), remaining, door.signal) : null;
      let rows: PagedMessage[] = [];
      let old: PagedMessage[] = [];
      // A parked wait after a cursor at or past every commit the engine has seen would query for
      // nothing: a later commit wakes it (it registered first), so it parks without the query (a
      // room's pushed subscriptions re-park together after every send).
      const caughtUp = parked !== null && after !== null && this.d.head() >= 0 && after >= this.d.head();
      try {
        if (!caughtUp) rows = await this.d.store.page(scope, q);
        if (parked && shown !== null) {
          old = rows.filter((m) => m.seq <= shown);
          let fresh = rows.slice(old.length);
          // A full page may hold back new mail behind shown mail: read on after the mark.
          if (rows.length >= limit && old.length > 0) fresh = await this.d.store.page(scope, { ...q, after: shown });
          rows = fresh.length > 0 ? withShown(old, fresh, limit) : [];
        }
      } catch (err) {
        parked?.cancel();
        throw err;
      }
      const answer = (rows: PagedMessage[], woke?: WokenPage): Promise<W.InboxResponse> =>
        this.answer(scope, rows, after, look, { budgetBytes: door.budgetBytes, newAbove: parked ? shown : null, shown: mark ? { key, thread } : null, woke });
      if (rows.length > 0 || !parked) {
        parked?.cancel();
        if (waited) await this.stillSameAccount(c);
        return answer(rows);
      }
      const end = await parked.ended;
      waited = true;
      if (end === 'gone') throw clientGone();
      if (end === 'removed') throw accountGone(c);
      let checked = false;
      if (end === 'woken' && bound !== null && !req.thread_id) {
        const woke = await this.d.wakes.page({ scope, keys: readKeys(scope), bound, limit, old });
        if (woke && woke.rows.length > 0) {
          // Checked after the mail was read: mail of a new account of the name would be newer than it.
          await this.stillSameAccount(c);
          checked = true;
          // New mail can be acknowledged already (a sibling session read it first), and so can the
          // shown mail kept in the answer: the batch asked the store.
          const now = (list: readonly StoredMessage[]): PagedMessage[] => {
            const out: PagedMessage[] = [];
            for (const m of list) {
              const at = woke.acked.get(m.seq) ?? null;
              if (req.include_acked || at === null) out.push(woke.pages ? woke.pages.paged(m, at) : { ...m, ackedAt: at });
            }
            return out;
          };
          const fresh = now(woke.rows);
          if (fresh.length > 0) return answer(withShown(now(old), fresh, limit), woke);
        }
      }
      // Whatever follows reads the account's mail, counts it or parks on it again: only for the
      // account that parked (removed through another daemon sharing the store, it is not).
      if (!checked) await this.stillSameAccount(c);
      if (end !== 'woken' && end !== 'refresh') {
        return { messages: [], next_cursor: encodeCursor(after ?? (await this.d.store.headSeq())), unread: await this.d.store.unread(scope) };
      }
      scope = await this.d.scope(c);
    }
  }

  /** Refuses a parked reader whose account another daemon sharing the store removed (and perhaps
   *  created again) meanwhile. A removal through this daemon ends its waits itself ('removed'), so a
   *  woken wait on a store no other daemon shares costs no account read. */
  private async stillSameAccount(c: Caller): Promise<void> {
    if (!this.d.store.shared) return;
    if (!(await this.d.incarnations.same(c.account))) throw accountGone(c);
  }

  private async answer(scope: ReaderScope, rows: PagedMessage[], after: number | null, look: ReaderView, o: AnswerOptions): Promise<W.InboxResponse> {
    // A woken reader's unread came with its batch, and so may its page, presented once for all
    // who see it alike (shared-page.ts; a budget cuts pages per reader, so those present alone).
    const unread = o.woke ? o.woke.unread : await this.d.store.unread(scope);
    const sharedPage = o.woke?.pages && o.budgetBytes === undefined ? await o.woke.pages.present(rows, look, this.d.addresses) : null;
    if (sharedPage) return this.finish(scope, rows, sharedPage, after, unread, o);
    // One lookup per distinct sender or recipient of the page, not per message.
    const printed = await this.d.addresses.forMessages(rows, [look.self]);
    const view = { ...look, printed };
    const show = (m: PagedMessage): W.MessageOut => presentPaged(m, view);
    let messages = rows.map(show);
    if (o.budgetBytes !== undefined) {
      messages = fitToBudget(messages, o.budgetBytes, 80);
      // A wait's answer cut down to shown mail only would be given again at once: drop that instead.
      const above = o.newAbove;
      if (above != null && !rows.slice(0, messages.length).some((m) => m.seq > above)) {
        rows = rows.filter((m) => m.seq > above);
        messages = fitToBudget(rows.map(show), o.budgetBytes, 80);
      }
    }
    return this.finish(scope, rows, messages, after, unread, o);
  }

  /** What every answer does once its messages are presented: receipts, the shown mark, the cursor. */
  private async finish(scope: ReaderScope, rows: PagedMessage[], messages: W.MessageOut[], after: number | null, unread: number, o: AnswerOptions): Promise<W.InboxResponse> {
    this.d.receipts.noteSurfaced(scope, messages.length === rows.length ? rows : rows.slice(0, messages.length));
    const last = rows[messages.length - 1];
    if (last && o.shown) this.d.notices.markShown(o.shown.key, last.seq, o.shown.thread);
    const next = last ? last.seq : (after ?? (await this.d.store.headSeq()));
    return { messages, next_cursor: encodeCursor(next), unread };
  }
}
