// What each session lineage has been shown, and the rules of the hook notices built on it.
// One mark per lineage (per account for a caller without a session, e.g. a person in the
// browser): the highest seq an inbox page, a wait or a hook notice showed it. "New mail" is mail
// above the mark: only that ends a wait or is announced by a hook, so mail read and left
// unacknowledged never becomes a standing nag or a wait that returns at once forever.
// Kept in memory and in the store (one REC.notice record per key), so a daemon restart neither
// re-tells old mail nor drops listen mode. Inbox reads only mark: the record is written behind
// them (coalesced per key, flushed on close); hooks and listen mode write it before they answer.
import type { RecordRow, Store } from '../store/types.js';
import { keyOfLineage } from '../store/types.js';
import type * as H from '../wire/hooks.js';
import type { Clock } from './clock.js';
import type { Logger } from './log.js';
import { REC } from './wake-records.js';
import { HELD_NOTICES_MAX, type NoticeHeld } from './attention-notices.js';

export interface NoticeState {
  /** Highest seq shown: by an inbox page, a wait, or listed by a hook notice. */
  shown: number;
  /** Stop hooks blocked in a row (Claude Code ends the turn after 8; we stop at MAX_BLOCKS). */
  blocks: number;
  lastToolNotice: number;
  listening: boolean;
  /** A hook (or listen) of this lineage has called this daemon since it started. */
  hooked: boolean;
  /** Highest seq a page filtered to one thread showed, for the last few threads (memory only): such
   *  a page says nothing of other threads, so it cannot move `shown`. */
  threads: Map<string, number>;
  /** Mail a quiet period kept from a notice that moved `shown` past it (attention-notices.ts): told
   *  by the first notice after the period. */
  held: string[];
  /** Waiting Stop notices of this lineage in flight (memory only): a live notice leaves mail to
   *  them, so a listening Stop hook and the extension's live wait never both tell it. */
  stops: number;
  /** Called when one of those ends: a live notice that left mail to it reads again. */
  stopEnded: (() => void)[];
}

/** One fewer than Claude Code's own cap of 8, so our guard always decides first. */
export const MAX_CONSECUTIVE_BLOCKS = 7;
/** PostToolUse fires after every tool call; tell about mail at most this often. */
export const TOOL_NOTICE_EVERY_MS = 60_000;
/** A notice lists at most this many messages (`more` says when there were more). */
export const NOTICE_LIMIT = 20;
/** How long a mark moved by an inbox read waits before its record is written: every read of a key
 *  within it costs one write. Losing it (a crash) re-tells old mail once, nothing worse. */
export const WRITE_BEHIND_MS = 5_000;
const THREADS_KEPT = 16;

/** The key of a caller's mark: its lineage's mail key, or for a caller without a session the
 *  account's lineage prefix (`s:<account>/`, no lineage is empty) so that removing the account
 *  sweeps and forgets it with its lineages. */
export const shownKey = (account: string, lineage: string | null): string => keyOfLineage(account, lineage ?? '');

/** What a notice needs from the engine: a page of mail after a seq (waiting up to `waitSecs` for
 *  some), and the loop guard's verdict on one message. */
export interface NoticeDeps {
  page(afterSeq: number, waitSecs: number): Promise<{ items: H.NoticeItem[]; nextSeq: number | null }>;
  quiet(messageId: string): Promise<boolean>;
  /** Quiet hours (engine/attention.ts): which mail a period holds, and held mail to tell after it. */
  held?: NoticeHeld;
}

interface Saved {
  noticed: number;
  listening: boolean;
  held?: string[];
}

export class NoticeBook {
  private states = new Map<string, NoticeState>();
  private loading = new Map<string, Promise<NoticeState>>();
  private dirty = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  /** Writes run one after another, so an older value never lands after a newer one. */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private store: Pick<Store, 'getRecord' | 'putRecord'>,
    private clock: Clock,
    private log: Logger,
    private writeBehindMs = WRITE_BEHIND_MS,
  ) {}

  /** A hook of this lineage has called the daemon (since it started). */
  known(key: string): boolean {
    return this.states.get(key)?.hooked ?? false;
  }

  /** The state in memory (fresh if none): for readers that must not wait on the store. */
  get(key: string): NoticeState {
    let s = this.states.get(key);
    if (!s) this.states.set(key, (s = { shown: 0, blocks: 0, lastToolNotice: 0, listening: false, hooked: false, threads: new Map(), held: [], stops: 0, stopEnded: [] }));
    return s;
  }

  /** Forgets every key that starts with `prefix` (an account removed: `s:<account>/`). */
  forget(prefix: string): void {
    for (const key of this.states.keys()) if (key.startsWith(prefix)) this.states.delete(key);
    for (const key of this.dirty) if (key.startsWith(prefix)) this.dirty.delete(key);
  }

  /** The state from memory or, the first time this daemon needs it, merged with the store's record
   *  (after a restart, or written by another daemon). One read per key however many ask at once. */
  state(key: string): Promise<NoticeState> {
    const known = this.states.get(key);
    if (known) return Promise.resolve(known);
    let p = this.loading.get(key);
    if (!p) {
      p = this.store.getRecord(REC.notice, key).then(
        (r) => {
          this.loading.delete(key);
          const st = this.get(key);
          if (r) {
            const saved = JSON.parse(r.value) as Saved;
            st.shown = Math.max(st.shown, saved.noticed);
            st.listening = saved.listening;
            st.held = saved.held ?? [];
          }
          return st;
        },
        (err: unknown) => {
          this.loading.delete(key);
          throw err;
        },
      );
      this.loading.set(key, p);
    }
    return p;
  }

  /** An inbox answer showed mail up to `seq` (of `thread` only, when the page was filtered to one). */
  markShown(key: string, seq: number, thread: string | null): void {
    const st = this.get(key);
    if (thread !== null) {
      if (seq <= st.shown || seq <= (st.threads.get(thread) ?? 0)) return;
      st.threads.delete(thread);
      st.threads.set(thread, seq);
      if (st.threads.size > THREADS_KEPT) st.threads.delete(st.threads.keys().next().value as string);
      return;
    }
    if (seq <= st.shown) return;
    st.shown = seq;
    this.dirty.add(key);
    this.timer ??= setTimeout(() => void this.flush(), this.writeBehindMs).unref();
  }

  /** The mark a wait compares with: the lineage's, or within one thread the higher of it and the
   *  thread's own. */
  shownFor(st: NoticeState, thread: string | null): number {
    return thread === null ? st.shown : Math.max(st.shown, st.threads.get(thread) ?? 0);
  }

  /** Writes every key marked since the last write. Never fails: a lost write re-tells old mail once. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const keys = [...this.dirty];
    this.dirty.clear();
    const rows: RecordRow[] = [];
    for (const key of keys) {
      const st = this.states.get(key);
      if (!st) continue;
      const value: Saved = { noticed: st.shown, listening: st.listening, ...(st.held.length > 0 ? { held: st.held } : {}) };
      rows.push({ kind: REC.notice, id: key, value: JSON.stringify(value), updatedAt: this.clock.now() });
    }
    this.writing = this.writing.then(async () => {
      for (const [i, row] of rows.entries()) {
        // A store may write synchronously (SQLite): let requests run between the rows of a long flush.
        if (i > 0) await new Promise((r) => setImmediate(r));
        await this.store.putRecord(row).catch((err: unknown) => this.log.warn({ err: err instanceof Error ? err.message : String(err), key: row.id }, 'notice state not saved'));
      }
    });
    return this.writing;
  }

  /** Writes the key now (with any others pending): hooks answer only once it is stored. */
  async save(key: string): Promise<void> {
    this.dirty.add(key);
    await this.flush();
  }

  close(): Promise<void> {
    return this.flush();
  }

  /** Turns listen mode on or off for the lineage, stored before the answer. */
  async listen(key: string, on: boolean): Promise<void> {
    const st = await this.state(key);
    st.hooked = true;
    st.listening = on;
    await this.save(key);
  }

  /** For hooks: mail above the mark, and whether a Stop hook should block. */
  async notice(key: string, req: H.NoticeRequest, deps: NoticeDeps): Promise<H.NoticeResponse> {
    const st = await this.state(key);
    st.hooked = true;
    const before = { shown: st.shown, listening: st.listening, held: st.held };
    const stopWaits = req.event === 'stop' && (req.wait_secs ?? 0) > 0;
    if (stopWaits) st.stops++;
    try {
      return await this.rules(st, req, deps);
    } finally {
      if (stopWaits) {
        st.stops--;
        for (const f of st.stopEnded.splice(0)) f();
      }
      if (st.shown !== before.shown || st.listening !== before.listening || st.held !== before.held) await this.save(key);
    }
  }

  private async rules(st: NoticeState, req: H.NoticeRequest, deps: NoticeDeps): Promise<H.NoticeResponse> {
    const now = this.clock.now();
    if (req.event === 'prompt') st.blocks = 0;
    const answer = (mail: H.NoticeItem[], block: boolean): H.NoticeResponse => ({
      mail,
      more: mail.length === NOTICE_LIMIT,
      block,
      listening: st.listening,
      consecutive_blocks: st.blocks,
    });
    if (req.event === 'tool' && now - st.lastToolNotice < TOOL_NOTICE_EVERY_MS) return answer([], false);
    const waits = req.event === 'stop' || req.event === 'live';
    // Quiet hours: mail a period held from earlier notices is told once no period is in force; a
    // wait ends no later than the period, so what it holds is told at its end.
    const quietHours = (await deps.held?.quiet()) ?? null;
    const releasing = !quietHours && st.held.length > 0 && deps.held !== undefined;
    const released = releasing ? await deps.held!.items(st.held) : [];
    let waitSecs = waits && released.length === 0 ? (req.wait_secs ?? 0) : 0;
    if (quietHours?.until != null) waitSecs = Math.min(waitSecs, Math.max(0, (quietHours.until - now) / 1000));
    const deadline = now + waitSecs * 1000;
    let page: { items: H.NoticeItem[]; nextSeq: number | null };
    let mail: H.NoticeItem[];
    let heldNow: string[] = [];
    const showAll = (): void => {
      if (page.nextSeq !== null) st.shown = Math.max(st.shown, page.nextSeq);
      // Consumed: what was released is told now; what this page held waits for the period's end.
      if (releasing || heldNow.length > 0) st.held = [...(releasing ? [] : st.held), ...heldNow].slice(-HELD_NOTICES_MAX);
    };
    // Mail another notice of this lineage told meanwhile is not told again (untold: nothing consumed).
    let untold = false;
    for (let round = 0; ; round++) {
      const from = st.shown;
      page = await deps.page(from, waitSecs);
      // Mail the loop guard quieted is in the inbox but wakes nobody.
      const quiet = await Promise.all(page.items.map((m) => deps.quiet(m.message_id)));
      const items = page.items.filter((_, i) => !quiet[i]);
      const held = quietHours && items.length > 0 ? await quietHours.holds(items.map((m) => m.message_id)) : [];
      heldNow = items.filter((_, i) => held[i]).map((m) => m.message_id);
      mail = [...released, ...items.filter((_, i) => !held[i])];
      // Only held mail came: a waiting hook passes over it (kept in `held`) and waits on, so a
      // listening Stop hook neither blocks for it nor returns at once to ask again.
      const left = (deadline - this.clock.now()) / 1000;
      // Two notices parked at once (a listening Stop hook and the live wait) wake for the same mail:
      // one tells it. The mark moved while this page was read: read again from it (waiting on).
      // A live notice leaves mail to a waiting Stop (which blocks with it, so the agent goes on):
      // it waits for that to end, then reads again, taking the mail only if the Stop did not.
      const moved = st.shown > from;
      const yields = !moved && req.event === 'live' && st.stops > 0 && mail.length > 0;
      if (moved || yields) {
        if (round >= 8 || (yields && left <= 0)) {
          untold = true;
          mail = [];
          break;
        }
        if (yields) await this.stopEnd(st, left);
        waitSecs = Math.max(0, (deadline - this.clock.now()) / 1000);
        continue;
      }
      if (mail.length > 0 || heldNow.length === 0 || !waits || left <= 0 || round >= 8) break;
      showAll();
      waitSecs = left;
    }
    if (mail.length === 0) {
      // Only quieted mail (or none): pass over it silently, so a listening hook waits for real news.
      if (req.event !== 'peek' && !untold) showAll();
      if (req.event === 'stop') st.blocks = 0; // the agent stops: the chain of blocks is over
      return answer([], false);
    }
    // A peek looks without consuming; a Stop hook past the guard lets the agent stop, untold.
    if (req.event === 'peek') return answer(mail, false);
    if (req.event === 'stop' && st.blocks >= MAX_CONSECUTIVE_BLOCKS) return answer(mail, false);
    showAll();
    if (req.event === 'tool') st.lastToolNotice = now;
    if (req.event === 'stop') st.blocks++;
    // live: the extension injects the mail as a message of its own, so there is no stop to block
    // and no chain of blocks to count; the loop guard above is what stops two agents' ping-pong.
    return answer(mail, req.event === 'stop' || req.event === 'live');
  }

  /** Until a waiting Stop notice of the lineage ends, or `secs` pass. */
  private stopEnd(st: NoticeState, secs: number): Promise<void> {
    return new Promise((resolve) => {
      const cancel = this.clock.timer(secs * 1000, done);
      st.stopEnded.push(done);
      function done(): void {
        cancel();
        resolve();
      }
    });
  }
}
