// Reminders as the engine offers them: setting, listing, snoozing and clearing timers (the records
// and their loop are timers.ts), and the reserved `mailbox` account a due one is sent from through
// the ordinary send path.
import { createHash } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import { clipUtf8 } from '../wire/text.js';
import type { Address } from '../wire/address.js';
import type * as W from '../wire/ops.js';
import type * as WK from '../wire/wake.js';
import type { Store } from '../store/types.js';
import type { Clock, Ids } from './clock.js';
import type { Logger } from './log.js';
import { accountSweep } from './incarnation.js';
import { MAILBOX_ACCOUNT, TimerBook, type TimerRecord } from './timers.js';
import { need, type Caller } from './mail-engine.js';

/** What reminders need from the mail engine. */
export interface TimerDeps {
  store: Store;
  clock: Clock;
  ids: Ids;
  log: Logger;
  /** How often timers set through another daemon are looked for (undefined: timers.ts's default). */
  pollMs: number | undefined;
  /** The engine's send (permissions, recipient rules, loop guard, wakes). */
  send(c: Caller, req: W.SendRequest): Promise<W.SendResponse>;
}

export class TimerOps {
  private timers: TimerBook;

  constructor(private d: TimerDeps) {
    this.timers = new TimerBook(d.store, d.clock, d.log, (t, to, key) => this.deliverTimer(t, to, key), d.pollMs);
  }

  /** Makes sure the `mailbox` account exists, then arms the timer loop. */
  async start(): Promise<void> {
    await this.ensureMailbox();
    this.timers.start();
  }

  /** Sends the reminders due now. */
  tick(): ReturnType<TimerBook['tick']> {
    return this.timers.tick();
  }

  close(): void {
    this.timers.close();
  }

  /** The reserved service account reminders come from: no secret anyone holds, send only. */
  private async ensureMailbox(): Promise<void> {
    if (await this.d.store.getAccount(MAILBOX_ACCOUNT)) return;
    await this.d.store.addAccount(
      {
        id: MAILBOX_ACCOUNT,
        kind: 'service',
        label: 'mailbox (reminders)',
        permissions: { send: true, read: false, urgent: false, operator: false },
        bindProvider: null,
        secretDigest: createHash('sha256').update(this.d.ids.secret()).digest('hex'),
        createdAt: this.d.clock.now(),
      },
      accountSweep(MAILBOX_ACCOUNT),
    );
  }

  private async deliverTimer(t: TimerRecord, to: Address, idempotencyKey: string): Promise<void> {
    const account = await this.d.store.getAccount(MAILBOX_ACCOUNT);
    if (!account) throw new MailError('unknown_participant', 'the mailbox account is missing', { participant: MAILBOX_ACCOUNT });
    const set = new Date(t.createdAt).toISOString();
    const origin = t.team !== undefined ? ` (team ${t.team}, set by ${t.setBy ?? 'a leader'})` : '';
    await this.d.send(
      { account, session: null },
      // A team reminder's subject names who set it: from mailbox it would read as the member's own.
      {
        to,
        subject: t.team !== undefined ? clipUtf8(`Reminder from ${t.setBy ?? 'a leader'} (team ${t.team}): ${t.note}`, LIMITS.subjectBytes) : `Reminder: ${t.note}`,
        body: `Reminder ${t.id}${origin}, set at ${set}:\n${t.note}`,
        idempotency_key: idempotencyKey,
      },
    );
  }

  async remind(c: Caller, req: WK.TimerSetRequest): Promise<WK.TimerOut> {
    need(c, 'read');
    if (!req.account && !c.session) throw new MailError('permission_denied', 'only an attested session has its own timers; pass account: true', { need: 'session' });
    return this.timers.set({ account: c.account.id, session: c.session ? { id: c.session.id, lineage: c.session.lineage } : null }, req.in_secs, req.note, !!req.account);
  }

  /** One account-wide timer per account, set by a team's leader (team-timers.ts checks who may). */
  setForTeam(accounts: readonly string[], inSecs: number, note: string, origin: { team: string; by: string }): Promise<WK.TimerOut[]> {
    return this.timers.setForTeam(accounts, inSecs, note, origin);
  }

  async list(c: Caller): Promise<{ timers: WK.TimerOut[] }> {
    return { timers: await this.timers.list(c.account.id) };
  }

  async snooze(c: Caller, req: { id: string; in_secs: number }): Promise<WK.TimerOut> {
    return this.timers.snooze(c.account.id, req.id, req.in_secs);
  }

  async clear(c: Caller, req: { id: string }): Promise<{ ok: true }> {
    return this.timers.clear(c.account.id, req.id);
  }
}
