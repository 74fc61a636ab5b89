// Wrong passwords slow down twice over, never lock anyone out from elsewhere:
//   per (account, client address): each wrong password doubles the wait before that address may try
//     that account again (1 s, 2 s, 4 s … at most maxMs); an attacker's address waits, others do not.
//   per account, every address together: an allowance of `accountBurst` wrong passwords that grows
//     back by one every `accountRefillMs` (never slower than maxMs). One address, held to one guess
//     per maxMs, can never use it up; only many addresses can, and then every address waits for the
//     allowance until the person, logged in elsewhere, refills it (`clear`; the guessing addresses
//     keep their own delays).
// So the bound on guesses per account stays what it was with one per-account delay (one per maxMs
// in the long run), plus a burst at the start and one per clear by the person. Kept as store records so several daemons sharing one
// store count together; names that are no account stay in memory (bounded), so guessing random
// names cannot fill the store.
import { MailError } from '../wire/errors.js';
import type { Store } from '../store/types.js';
import type { Clock } from './clock.js';

export interface ThrottleOptions {
  /** Delay after the first wrong password from one address; each further one doubles it. */
  baseMs: number;
  maxMs: number;
  /** An address's failures are forgotten this long after its last one. */
  forgetMs: number;
  /** Wrong passwords an account takes from all addresses together before its allowance is used up. */
  accountBurst: number;
  /** The allowance grows back by one this often (capped at maxMs: one address alone never empties it). */
  accountRefillMs: number;
}

export const DEFAULT_THROTTLE: ThrottleOptions = { baseMs: 1000, maxMs: 60_000, forgetMs: 15 * 60_000, accountBurst: 30, accountRefillMs: 60_000 };

/** Per (account, address): id `account/address`. */
interface AddressState {
  failures: number;
  last_failure: number;
  not_before: number;
}
/** Per account: what is left of the allowance at `at` (absent: full). */
interface AccountState {
  tokens: number;
  at: number;
}

export interface ThrottleView {
  /** Wrong passwords not yet forgotten, from every address. */
  wrong_passwords: number;
  /** Addresses they came from (IPv6 counted per /64). */
  addresses: number;
  /** > 0 while the account's allowance is used up: every address waits this long. */
  account_retry_after_ms: number;
}

export interface ClearResult {
  /** The account's allowance was used up (in part) and is full again. */
  allowance_restored: boolean;
  /** The address the person cleared from had failures; they are gone. */
  address_cleared: boolean;
  /** Guessing addresses whose own delay still runs (clearing leaves them). */
  addresses_waiting: number;
}

const KIND = { address: 'web_throttle_addr', account: 'web_throttle_account' } as const;
const MEMORY_MAX = 10_000;
const LIST_MAX = 10_000;

export class LoginThrottle {
  readonly o: ThrottleOptions;
  private memory = new Map<string, string>();
  /** One attempt per (account, address) at a time in this daemon: parallel guesses from one address
   *  cannot share one delay window. */
  private inFlight = new Set<string>();
  /** Serialises each account's allowance in this daemon, so parallel guesses from many addresses
   *  cannot all take the last unit. */
  private locks = new Map<string, Promise<void>>();

  constructor(
    private store: Store,
    private clock: Clock,
    options: Partial<ThrottleOptions> = {},
  ) {
    const o = { ...DEFAULT_THROTTLE, ...options };
    // One address's ramp to maxMs must fit in the burst, and its pace (one per maxMs) in the refill.
    const ramp = Math.ceil(Math.log2(Math.max(o.maxMs / o.baseMs, 1))) + 1;
    this.o = { ...o, accountRefillMs: Math.min(o.accountRefillMs, o.maxMs), accountBurst: Math.max(o.accountBurst, ramp + 2) };
  }

  private async get(kind: string, id: string, known: boolean): Promise<string | null> {
    if (!known) return this.memory.get(`${kind}:${id}`) ?? null;
    return (await this.store.getRecord(kind, id))?.value ?? null;
  }

  private async put(kind: string, id: string, known: boolean, value: unknown): Promise<void> {
    const v = JSON.stringify(value);
    if (known) return this.store.putRecord({ kind, id, value: v, updatedAt: this.clock.now() });
    if (this.memory.size >= MEMORY_MAX) this.memory.clear();
    this.memory.set(`${kind}:${id}`, v);
  }

  private async drop(kind: string, id: string, known: boolean): Promise<void> {
    if (known) await this.store.deleteRecord(kind, id);
    else this.memory.delete(`${kind}:${id}`);
  }

  private async locked<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(name) ?? Promise.resolve();
    let release = (): void => undefined;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.locks.set(name, tail);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.locks.get(name) === tail) this.locks.delete(name);
    }
  }

  private tokens(raw: string | null, now: number): number {
    if (!raw) return this.o.accountBurst;
    const s = JSON.parse(raw) as AccountState;
    return Math.min(this.o.accountBurst, s.tokens + Math.max(0, now - s.at) / this.o.accountRefillMs);
  }

  /** Takes one unit of the account's allowance (given back if the password was right). */
  private reserve(name: string, known: boolean): Promise<void> {
    return this.locked(name, async () => {
      const now = this.clock.now();
      const t = this.tokens(await this.get(KIND.account, name, known), now);
      if (t < 1) throw this.refusal('account', Math.ceil((1 - t) * this.o.accountRefillMs));
      await this.put(KIND.account, name, known, { tokens: t - 1, at: now } satisfies AccountState);
    });
  }

  private giveBack(name: string, known: boolean): Promise<void> {
    return this.locked(name, async () => {
      const now = this.clock.now();
      const t = this.tokens(await this.get(KIND.account, name, known), now) + 1;
      if (t >= this.o.accountBurst) await this.drop(KIND.account, name, known);
      else await this.put(KIND.account, name, known, { tokens: t, at: now } satisfies AccountState);
    });
  }

  /** Runs one login attempt for `name` from `address` (an opaque key of the client's address) under
   *  the throttle; `attempt` says whether the password was right. Refused while this address's delay
   *  runs or the account's allowance is used up, without checking the password. */
  async run<T>(name: string, address: string, known: boolean, attempt: () => Promise<T | null>): Promise<T> {
    const key = `${name}/${address}`;
    if (this.inFlight.has(key)) throw this.refusal('address', this.o.baseMs);
    // Taken before the first await: a second attempt arriving meanwhile must see it.
    this.inFlight.add(key);
    try {
      const raw = await this.get(KIND.address, key, known);
      const st = raw ? (JSON.parse(raw) as AddressState) : null;
      if (st && st.not_before > this.clock.now()) throw this.refusal('address', st.not_before - this.clock.now());
      await this.reserve(name, known);
      const ok = await attempt();
      if (ok !== null) {
        await this.giveBack(name, known);
        if (st) await this.drop(KIND.address, key, known);
        return ok;
      }
      const now = this.clock.now();
      const failures = st && now - st.last_failure < this.o.forgetMs ? st.failures + 1 : 1;
      const delay = Math.min(this.o.baseMs * 2 ** Math.min(failures - 1, 30), this.o.maxMs);
      await this.put(KIND.address, key, known, { failures, last_failure: now, not_before: now + delay } satisfies AddressState);
      // A new address's first failure sweeps the account's forgotten ones (at most one per refill
      // in the long run), so records do not pile up.
      if (known && failures === 1) await this.sweep(name, now).catch(() => undefined);
      throw new MailError('bad_credentials', 'unknown account or wrong password', { retry_after: Math.ceil(delay / 1000), retry_after_ms: delay, failures });
    } finally {
      this.inFlight.delete(key);
    }
  }

  private async addressRecords(name: string): Promise<{ id: string; st: AddressState }[]> {
    const rows = await this.store.listRecords(KIND.address, `${name}/`, LIST_MAX);
    return rows.map((r) => ({ id: r.id, st: JSON.parse(r.value) as AddressState }));
  }

  private async sweep(name: string, now: number): Promise<void> {
    for (const r of await this.addressRecords(name)) if (now - r.st.last_failure >= this.o.forgetMs) await this.store.deleteRecord(KIND.address, r.id);
  }

  /** What a logged-in person sees of the guessing at their account. */
  async view(name: string): Promise<ThrottleView> {
    const now = this.clock.now();
    const live = (await this.addressRecords(name)).filter((r) => now - r.st.last_failure < this.o.forgetMs);
    const t = this.tokens(await this.get(KIND.account, name, true), now);
    return {
      wrong_passwords: live.reduce((n, r) => n + r.st.failures, 0),
      addresses: live.length,
      account_retry_after_ms: t < 1 ? Math.ceil((1 - t) * this.o.accountRefillMs) : 0,
    };
  }

  /** The person, logged in, clears what keeps them out: the account's allowance is full again and
   *  the delay of the address they clear from (`address`) ends. The guessing addresses keep their
   *  own delays and counts, so each click gives a guesser at most one fresh allowance, at the pace
   *  its addresses' delays allow. Only ever for the person's own account (the caller sees to that). */
  async clear(name: string, address: string): Promise<ClearResult> {
    return this.locked(name, async () => {
      const now = this.clock.now();
      const allowance_restored = this.tokens(await this.get(KIND.account, name, true), now) < this.o.accountBurst;
      const own = `${name}/${address}`;
      const address_cleared = (await this.store.getRecord(KIND.address, own)) !== null;
      if (allowance_restored) await this.store.deleteRecord(KIND.account, name);
      if (address_cleared) await this.store.deleteRecord(KIND.address, own);
      const addresses_waiting = (await this.addressRecords(name)).filter((r) => r.st.not_before > now).length;
      return { allowance_restored, address_cleared, addresses_waiting };
    });
  }

  private refusal(scope: 'address' | 'account', ms: number): MailError {
    const s = Math.ceil(ms / 1000);
    const msg =
      scope === 'address'
        ? `too many wrong passwords for this account from this address: try again in ${s} s`
        : `too many wrong passwords for this account from several addresses: try again in ${s} s, or clear the delay from a browser where you are logged in`;
    return new MailError('rate_limited', msg, { retry_after: s, retry_after_ms: ms, scope });
  }
}
