// Parked inbox waits. A wait holds no lock: it registers interest in mail keys *before* the
// reader's query, so a commit between the two still wakes it; every wake is only a hint and the
// reader re-queries. Caps: per session (the oldest wait is answered empty) and in total. A wait
// whose client went away (its signal aborted) leaves at once: it holds no slot of any cap.
import { MailError } from '../wire/errors.js';
import type { MailKey } from '../store/types.js';
import type { Clock } from './clock.js';
import { Expiry } from './wait-expiry.js';

/** woken: mail committed on a watched key; refresh: the reader's rooms changed, re-query in full;
 *  removed: the reader's account is gone (a new one of the name is someone else); gone: the
 *  client closed its connection, nobody is left to answer. */
export type WaitEnd = 'woken' | 'refresh' | 'removed' | 'expired' | 'displaced' | 'closed' | 'gone';

export interface WaitCaps {
  perSession: number;
  perAccount: number;
  total: number;
}

export const DEFAULT_WAIT_CAPS: WaitCaps = { perSession: 8, perAccount: 2048, total: 20_000 };

export interface ParkedWait {
  readonly ended: Promise<WaitEnd>;
  cancel(): void;
}

/** One parked wait: its own handle (ended, cancel) and its own abort listener (handleEvent), so a
 *  wait costs one object and a promise, not closures and a timer of its own (10,000 parked waits
 *  are held for up to a minute each). */
class Waiter implements ParkedWait {
  readonly ended: Promise<WaitEnd>;
  private resolve!: (end: WaitEnd) => void;
  done = false;
  /** Index in the room's expiry heap; -1 once out of it. */
  slot = -1;

  constructor(
    private readonly room: WaitRoom,
    readonly owner: string,
    readonly account: string,
    readonly keys: MailKey[],
    readonly deadline: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.ended = new Promise<WaitEnd>((r) => (this.resolve = r));
  }

  settle(end: WaitEnd): void {
    if (this.done) return;
    this.done = true;
    this.signal?.removeEventListener('abort', this);
    this.room.leave(this);
    this.resolve(end);
  }

  cancel(): void {
    this.settle('closed');
  }

  /** The client has gone away (the signal's abort). */
  handleEvent(): void {
    this.settle('gone');
  }
}

export class WaitRoom {
  private byKey = new Map<MailKey, Set<Waiter>>();
  private byOwner = new Map<string, Waiter[]>();
  private perAccount = new Map<string, number>();
  private count = 0;
  private closed = false;
  private expiry: Expiry<Waiter>;

  constructor(
    private clock: Clock,
    private caps: WaitCaps = DEFAULT_WAIT_CAPS,
  ) {
    this.expiry = new Expiry<Waiter>(clock, (w) => w.settle('expired'));
  }

  get size(): number {
    return this.count;
  }

  /** Registers a wait on `keys` for at most `ms`. `owner` is the session (or account) waiting;
   *  `signal` aborts when its client has gone away. */
  park(owner: string, account: string, keys: MailKey[], ms: number, signal?: AbortSignal): ParkedWait {
    if (this.closed) return { ended: Promise.resolve('closed'), cancel: () => undefined };
    if (signal?.aborted) return { ended: Promise.resolve('gone'), cancel: () => undefined };
    // A session at its own cap replaces its oldest wait, which frees a slot before the totals count.
    const mine = this.byOwner.get(owner) ?? [];
    if (mine.length >= this.caps.perSession) mine[0]?.settle('displaced');
    if (this.count >= this.caps.total) throw new MailError('rate_limited', 'too many parked waits on this daemon', { retry_after: 1 });
    if ((this.perAccount.get(account) ?? 0) >= this.caps.perAccount) throw new MailError('rate_limited', `too many parked waits for account ${account}`, { retry_after: 1 });

    const w = new Waiter(this, owner, account, keys, this.clock.now() + ms, signal);
    this.expiry.add(w);
    signal?.addEventListener('abort', w, { once: true });
    for (const k of keys) {
      let set = this.byKey.get(k);
      if (!set) this.byKey.set(k, (set = new Set()));
      set.add(w);
    }
    const list = this.byOwner.get(owner) ?? [];
    list.push(w);
    this.byOwner.set(owner, list);
    this.perAccount.set(account, (this.perAccount.get(account) ?? 0) + 1);
    this.count++;
    return w;
  }

  /** Wakes every wait interested in any of `keys`; returns the owners woken (sessions or accounts). */
  notify(keys: MailKey[]): string[] {
    const woken = new Set<Waiter>();
    for (const k of keys) for (const w of this.byKey.get(k) ?? []) woken.add(w);
    for (const w of woken) w.settle('woken');
    return [...new Set([...woken].map((w) => w.owner))];
  }

  /** Membership changed: the account's parked readers re-query with their new rooms. */
  refresh(account?: string): void {
    this.end('refresh', account);
  }

  /** The account was removed: its parked readers are refused, never parked again. */
  removed(account: string): void {
    this.end('removed', account);
  }

  private end(how: WaitEnd, account?: string): void {
    for (const list of [...this.byOwner.values()]) for (const w of [...list]) if (account === undefined || w.account === account) w.settle(how);
  }

  /** Shutdown: every parked wait answers (an empty page) at once. */
  closeAll(): void {
    this.closed = true;
    for (const list of [...this.byOwner.values()]) for (const w of [...list]) w.settle('closed');
  }

  /** A settled wait leaves every index and count (called by the wait itself). */
  leave(w: Waiter): void {
    this.expiry.remove(w);
    for (const k of w.keys) {
      const set = this.byKey.get(k);
      if (!set) continue;
      set.delete(w);
      if (set.size === 0) this.byKey.delete(k);
    }
    const list = this.byOwner.get(w.owner);
    if (list) {
      const i = list.indexOf(w);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0) this.byOwner.delete(w.owner);
    }
    const n = (this.perAccount.get(w.account) ?? 1) - 1;
    if (n <= 0) this.perAccount.delete(w.account);
    else this.perAccount.set(w.account, n);
    this.count--;
  }
}
