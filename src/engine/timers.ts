// Durable one-shot reminders. A timer is a record in the store, so it survives restarts and every
// daemon sharing the store sees it; when due it arrives as ordinary mail from the reserved service
// account `mailbox` (so it takes the normal delivery chain), sent with an idempotency key made of
// the timer's id and due time: two daemons firing the same timer store one message.
import { randomBytes } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import type { TimerOut } from '../wire/wake.js';
import type { Address } from '../wire/address.js';
import type { Store } from '../store/types.js';
import type { Clock } from './clock.js';
import type { Logger } from './log.js';
import { iso } from './present.js';
import { REC } from './wake-records.js';

/** The reserved service account reminders come from. */
export const MAILBOX_ACCOUNT = 'mailbox';
/** How often a daemon looks for timers set through another daemon (and re-arms a long wait). */
export const TIMER_POLL_MS = 30_000;
/** Timers per account: a bound on what a caller can make the daemon keep. */
export const TIMERS_PER_ACCOUNT = 1000;
/** Of those, team reminders (set by a leader) at most: a leader cannot take all of a member's. */
export const TEAM_TIMERS_PER_ACCOUNT = 100;

export interface TimerRecord {
  id: string;
  account: string;
  /** The session lineage reminded, or null for the whole account. */
  lineage: string | null;
  /** The session that set it (the address the reminder goes to while that lineage lives). */
  session: string | null;
  due: number;
  note: string;
  createdAt: number;
  /** A team reminder (team-timers.ts): the team, and the leader who set it for this account. */
  team?: string;
  setBy?: string;
}

export interface TimerOwner {
  account: string;
  session: { id: string; lineage: string } | null;
}

/** Sends a due reminder; resolves once the mail is stored. */
export type DeliverTimer = (t: TimerRecord, to: Address, idempotencyKey: string) => Promise<void>;

export class TimerBook {
  private cancelArm: (() => void) | null = null;
  private ticking: Promise<void> | null = null;
  /** A tick was asked for while one ran (a timer set or snoozed meanwhile): scan again after it. */
  private again = false;
  private closed = false;

  constructor(
    private store: Store,
    private clock: Clock,
    private log: Logger,
    private deliver: DeliverTimer,
    private pollMs = TIMER_POLL_MS,
  ) {}

  async set(o: TimerOwner, inSecs: number, note: string, accountWide: boolean): Promise<TimerOut> {
    await this.roomFor(o.account);
    const own = accountWide ? null : o.session;
    const t = this.make(o.account, own, inSecs, note);
    await this.save(t);
    this.rearm();
    return present(t);
  }

  /** A team reminder: one account-wide timer per account, naming the team and who set it. Every
   *  account is checked first, so a full one refuses the whole request before any is made. */
  async setForTeam(accounts: readonly string[], inSecs: number, note: string, origin: { team: string; by: string }): Promise<TimerOut[]> {
    for (const a of accounts) await this.roomFor(a, true);
    const made = accounts.map((a) => ({ ...this.make(a, null, inSecs, note), team: origin.team, setBy: origin.by }));
    await Promise.all(made.map((t) => this.save(t)));
    this.rearm();
    return made.map(present);
  }

  private async roomFor(account: string, team = false): Promise<void> {
    const existing = await this.store.listRecords(REC.timer, `${account}|`, TIMERS_PER_ACCOUNT);
    if (existing.length >= TIMERS_PER_ACCOUNT)
      throw new MailError('rate_limited', `account ${account} has ${TIMERS_PER_ACCOUNT} timers; clear some first`, { limit: TIMERS_PER_ACCOUNT, account });
    if (team && existing.filter((r) => (JSON.parse(r.value) as TimerRecord).team !== undefined).length >= TEAM_TIMERS_PER_ACCOUNT)
      throw new MailError('rate_limited', `account ${account} has ${TEAM_TIMERS_PER_ACCOUNT} team reminders; it clears some first`, { limit: TEAM_TIMERS_PER_ACCOUNT, account });
  }

  private make(account: string, own: TimerOwner['session'], inSecs: number, note: string): TimerRecord {
    const now = this.clock.now();
    return {
      id: `t-${randomBytes(6).toString('hex')}`,
      account,
      lineage: own?.lineage ?? null,
      session: own?.id ?? null,
      due: now + inSecs * 1000,
      note,
      createdAt: now,
    };
  }

  async list(account: string): Promise<TimerOut[]> {
    const rows = await this.store.listRecords(REC.timer, `${account}|`, TIMERS_PER_ACCOUNT);
    return rows.map((r) => present(JSON.parse(r.value) as TimerRecord)).sort((a, b) => a.due_at.localeCompare(b.due_at));
  }

  async snooze(account: string, id: string, inSecs: number): Promise<TimerOut> {
    const t = await this.get(account, id);
    t.due = this.clock.now() + inSecs * 1000;
    await this.save(t);
    this.rearm();
    return present(t);
  }

  async clear(account: string, id: string): Promise<{ ok: true }> {
    if (!(await this.store.deleteRecord(REC.timer, `${account}|${id}`))) throw new MailError('unknown_timer', `no timer ${id}`, { id });
    return { ok: true };
  }

  /** Fires what is due (after a restart: what fell due while down) and keeps watching. */
  start(): void {
    this.rearm(0);
  }

  close(): void {
    this.closed = true;
    this.cancelArm?.();
  }

  /** One pass: deliver every due timer, then arm for the next one (at most pollMs away). */
  async tick(): Promise<void> {
    if (this.ticking) {
      // The scan in flight may have read the list before the change that asked for this tick.
      this.again = true;
      return this.ticking;
    }
    this.ticking = (async () => {
      do {
        this.again = false;
        await this.runTick();
      } while (this.again && !this.closed);
    })().finally(() => (this.ticking = null));
    return this.ticking;
  }

  private async runTick(): Promise<void> {
    let next = Infinity;
    try {
      const rows = await this.store.listRecords(REC.timer, '', 1_000_000);
      const now = this.clock.now();
      for (const r of rows) {
        const t = JSON.parse(r.value) as TimerRecord;
        if (t.due > now) {
          next = Math.min(next, t.due);
          continue;
        }
        try {
          await this.fire(t);
        } catch (err) {
          this.log.warn({ timer: t.id, err: err instanceof Error ? err.message : String(err) }, 'timer delivery failed; retrying later');
        }
      }
    } catch (err) {
      this.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'timer scan failed');
    }
    if (!this.closed) this.rearm(Math.max(0, Math.min(next - this.clock.now(), this.pollMs)));
  }

  private async fire(t: TimerRecord): Promise<void> {
    // The scan read it a while ago: cleared or snoozed since, it is not due (or not this one).
    const latest = await this.store.getRecord(REC.timer, `${t.account}|${t.id}`);
    if (!latest || (JSON.parse(latest.value) as TimerRecord).due !== t.due) return;
    const key = `timer.${t.id}.${t.due}`;
    const to: Address = t.session ? { kind: 'session', participant: t.account, session: t.session } : { kind: 'direct', participant: t.account };
    try {
      try {
        await this.deliver(t, to, key);
      } catch (err) {
        // The session (and its successors) ended, or its record was pruned since: the account gets it.
        if (!(err instanceof MailError && (err.code === 'session_ended' || err.code === 'unknown_session'))) throw err;
        await this.deliver(t, { kind: 'direct', participant: t.account }, key);
      }
    } catch (err) {
      // The account was removed: nobody can ever get it (and a new account of that name must not).
      if (!(err instanceof MailError && err.code === 'unknown_participant' && err.details?.['participant'] === t.account)) throw err;
      this.log.warn({ timer: t.id, account: t.account }, 'timer dropped: its account no longer exists');
    }
    // Delivered (or a duplicate of a delivery by another daemon): only now does the timer go.
    const cur = await this.store.getRecord(REC.timer, `${t.account}|${t.id}`);
    if (cur && (JSON.parse(cur.value) as TimerRecord).due === t.due) await this.store.deleteRecord(REC.timer, `${t.account}|${t.id}`);
  }

  private rearm(ms = 0): void {
    if (this.closed) return;
    this.cancelArm?.();
    this.cancelArm = this.clock.timer(ms, () => void this.tick());
  }

  private async get(account: string, id: string): Promise<TimerRecord> {
    const r = await this.store.getRecord(REC.timer, `${account}|${id}`);
    if (!r) throw new MailError('unknown_timer', `no timer ${id}`, { id });
    return JSON.parse(r.value) as TimerRecord;
  }

  private save(t: TimerRecord): Promise<void> {
    return this.store.putRecord({ kind: REC.timer, id: `${t.account}|${t.id}`, value: JSON.stringify(t), updatedAt: this.clock.now() });
  }
}

function present(t: TimerRecord): TimerOut {
  return { id: t.id, to: t.session ? `${t.account}/${t.session}` : t.account, due_at: iso(t.due), note: t.note, created_at: iso(t.createdAt) };
}
