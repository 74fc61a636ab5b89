// Quiet hours (docs/teams.md "## Quiet hours"): `dnd` holds every non-urgent wake, `focus` holds
// the wakes of mail not written to you alone (room mail, team: and leader: copies), `open` clears
// it. Mail is stored and readable throughout; only wakes (wake/dispatcher.ts) and hook notices
// (attention-notices.ts) wait. A period belongs to a session lineage (`<account>/<lineage>`) or
// the whole account (`<account>`) and is a store record, so a restart or a second daemon on the
// same PostgreSQL store sees it; each daemon arms one timer per period it knows and, when the
// period ends, tells its listeners (the dispatcher wakes what was held).
import { MailError } from '../wire/errors.js';
import { ATTENTION_MAX_SECS, type AttentionOut, type AttentionRequest } from '../wire/contacts.js';
import type { Store, StoredMessage } from '../store/types.js';
import type { Clock } from './clock.js';
import type { Logger } from './log.js';
import { REC, type HeldWake } from './wake-records.js';
import { need, type Caller } from './mail-engine.js';

/** A quiet period in force. until: ms since the epoch, null: until set open. */
export interface Period {
  scope: string;
  mode: 'dnd' | 'focus';
  until: number | null;
}

interface Saved {
  mode: 'dnd' | 'focus';
  until: number | null;
  at: number;
}

/** Another daemon's change reaches this one within this long; a change made here applies at once. */
const CACHE_MS = 1000;
/** Held wakes counted for one answer, at most. */
const HELD_COUNT_MAX = 10_000;

/** Whether a period in this mode holds the wake (or notice) of this message. Urgent mail always
 *  wakes; focus lets through what was written to the recipient alone (direct and session mail). */
export function holds(mode: Period['mode'], m: Pick<StoredMessage, 'priority' | 'toKey' | 'toAddress'>): boolean {
  if (m.priority === 'urgent') return false;
  if (mode === 'dnd') return true;
  return m.toKey.startsWith('r:') || m.toAddress.startsWith('team:') || m.toAddress.startsWith('leader:');
}

/** What a receipt shows for a held wake: `held: do-not-disturb until <iso>` or `held: focus until open`. */
export function heldDetail(p: Period): string {
  return `held: ${p.mode === 'dnd' ? 'do-not-disturb' : 'focus'} until ${p.until === null ? 'open' : new Date(p.until).toISOString()}`;
}

export const scopeOf = (account: string, lineage: string | null): string => (lineage ? `${account}/${lineage}` : account);
const accountOfScope = (scope: string): string => scope.split('/')[0]!;

export class AttentionBook {
  private cache = new Map<string, { p: Period | null; at: number }>();
  private timers = new Map<string, { at: number; cancel: () => void }>();
  private listeners = new Set<(account: string) => void>();
  private closed = false;

  constructor(private d: { store: Store; clock: Clock; log: Logger }) {}

  /** Calls fn with the account whenever one of its periods ends or changes (the dispatcher then
   *  wakes what is no longer held). */
  onEnd(fn: (account: string) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Sets, clears (`open`) or, without a mode, reads the caller's period. */
  async set(c: Caller, req: AttentionRequest): Promise<AttentionOut> {
    need(c, 'read');
    if (!req.account && !c.session) throw new MailError('permission_denied', 'only an attested session has its own quiet hours; pass account: true', { need: 'session' });
    const lineage = req.account ? null : c.session!.lineage;
    const scope = scopeOf(c.account.id, lineage);
    const printed = req.account ? c.account.id : `${c.account.id}/${c.session!.id}`;
    const now = this.d.clock.now();
    let until: number | null = null;
    if (req.until !== undefined) {
      if (!req.mode) throw new MailError('malformed', 'until needs a mode (dnd or focus)', { field: 'until', reason: 'needs a mode' });
      if (req.mode === 'open') throw new MailError('malformed', 'open has no end', { field: 'until', reason: 'open has no end' });
      until = Date.parse(req.until);
      if (!(until > now)) throw new MailError('malformed', `until ${req.until} is not in the future`, { field: 'until', reason: 'not in the future' });
      const secs = Math.ceil((until - now) / 1000);
      if (secs > ATTENTION_MAX_SECS)
        throw new MailError('too_large', `until is at most ${ATTENTION_MAX_SECS} s ahead`, { field: 'until', limit: ATTENTION_MAX_SECS, actual: secs });
    }
    if (req.mode === 'open') {
      // The account's open ends its sessions' periods too: one set without an end by a session
      // that is gone could otherwise never be ended, and would hold the account's wakes for good.
      const lineages = req.account ? (await this.d.store.listRecords(REC.attention, `${scope}/`, HELD_COUNT_MAX)).map((r) => r.id) : [];
      for (const s of [scope, ...lineages]) {
        await this.d.store.deleteRecord(REC.attention, s);
        this.forget(s);
      }
      this.ended(scope);
    } else if (req.mode) {
      const saved: Saved = { mode: req.mode, until, at: now };
      await this.d.store.putRecord({ kind: REC.attention, id: scope, value: JSON.stringify(saved), updatedAt: now });
      this.forget(scope);
      this.remember(scope, { scope, mode: req.mode, until });
      // dnd → focus (or a nearer end) may let some held wakes go now.
      this.ended(scope);
    }
    const p = await this.period(c.account.id, lineage);
    return { scope: printed, mode: p?.mode ?? 'open', until: p?.until == null ? null : new Date(p.until).toISOString(), held: await this.heldCount(scope) };
  }

  /** The period in force for the account (lineage null) or one lineage, if any. */
  async period(account: string, lineage: string | null): Promise<Period | null> {
    const scope = scopeOf(account, lineage);
    const now = this.d.clock.now();
    const hit = this.cache.get(scope);
    let p: Period | null;
    if (hit && now - hit.at < CACHE_MS) p = hit.p;
    else {
      const r = await this.d.store.getRecord(REC.attention, scope);
      const saved = r ? (JSON.parse(r.value) as Saved) : null;
      p = saved ? { scope, mode: saved.mode, until: saved.until } : null;
      this.remember(scope, p);
    }
    return p && (p.until === null || p.until > now) ? p : null;
  }

  /** The period that holds the wake of `m` for this recipient, if any. Session mail: the lineage's
   *  period if it has one, else the account's. Account and room mail: the account's, or that of the
   *  session the dispatcher would wake (`picked`). */
  async wakeHold(m: StoredMessage, account: string, lineage: string | null, picked: string | null): Promise<Period | null> {
    if (m.priority === 'urgent') return null;
    if (lineage) {
      const p = (await this.period(account, lineage)) ?? (await this.period(account, null));
      return p && holds(p.mode, m) ? p : null;
    }
    for (const p of [await this.period(account, null), picked ? await this.period(account, picked) : null]) if (p && holds(p.mode, m)) return p;
    return null;
  }

  /** Wakes held for this scope (the dispatcher's records name the period that held them). */
  async heldCount(scope: string): Promise<number> {
    const account = accountOfScope(scope);
    const rows = [...(await this.d.store.listRecords(REC.held, `${account}|`, HELD_COUNT_MAX)), ...(await this.d.store.listRecords(REC.held, `${account}/`, HELD_COUNT_MAX))];
    return rows.filter((r) => (JSON.parse(r.value) as HeldWake).by === scope).length;
  }

  /** Arms a timer for every stored period; those that ended while no daemon watched end now. */
  async start(): Promise<void> {
    const now = this.d.clock.now();
    for (const r of await this.d.store.listRecords(REC.attention, '', 100_000)) {
      const saved = JSON.parse(r.value) as Saved;
      if (saved.until !== null && saved.until <= now) await this.expire(r.id);
      else this.remember(r.id, { scope: r.id, mode: saved.mode, until: saved.until });
    }
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers.values()) t.cancel();
    this.timers.clear();
  }

  /** The account's records are gone with it: forget what was kept of them here. */
  forgetAccount(account: string): void {
    for (const scope of [...this.cache.keys()]) if (accountOfScope(scope) === account) this.forget(scope);
  }

  private remember(scope: string, p: Period | null): void {
    this.cache.set(scope, { p, at: this.d.clock.now() });
    if (this.cache.size > 10_000) this.cache.delete(this.cache.keys().next().value as string);
    // One timer per period this daemon knows of, at its end.
    if (!p || p.until === null || this.closed) return;
    const t = this.timers.get(scope);
    if (t?.at === p.until) return;
    t?.cancel();
    const at = p.until;
    this.timers.set(scope, { at, cancel: this.d.clock.timer(Math.max(0, at - this.d.clock.now()), () => void this.expire(scope)) });
  }

  private forget(scope: string): void {
    this.cache.delete(scope);
    this.timers.get(scope)?.cancel();
    this.timers.delete(scope);
  }

  /** A period's end came: delete its record unless it was replaced by a later one meanwhile. */
  private async expire(scope: string): Promise<void> {
    this.timers.delete(scope);
    try {
      const r = await this.d.store.getRecord(REC.attention, scope);
      const saved = r ? (JSON.parse(r.value) as Saved) : null;
      if (saved && (saved.until === null || saved.until > this.d.clock.now())) {
        this.remember(scope, { scope, mode: saved.mode, until: saved.until });
        return;
      }
      if (r) await this.d.store.deleteRecord(REC.attention, scope);
      this.forget(scope);
      this.ended(scope);
    } catch (err) {
      this.d.log.warn({ err: err instanceof Error ? err.message : String(err), scope }, 'ending a quiet period failed');
    }
  }

  private ended(scope: string): void {
    if (this.closed) return;
    for (const fn of this.listeners) fn(accountOfScope(scope));
  }
}
