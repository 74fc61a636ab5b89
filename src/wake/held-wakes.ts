// Wakes a quiet period holds (engine/attention.ts, docs/teams.md "## Quiet hours"). The dispatcher
// asks, before it wakes, which mail a period holds: each such (message, recipient) becomes a
// REC.held record and an attempt {adapter: 'attention', ok: false, detail: 'held: …'} the sender
// can read in the receipts. When a period of the account ends or changes, every held wake of the
// account that nothing holds any more is deleted and handed back to the dispatcher as if it had
// just arrived; deleteRecord's true means this daemon took it, so of several daemons one wakes it.
import { lineageKeyPrefix, type ReaderScope, type StoredMessage } from '../store/types.js';
import type { MailEngine } from '../engine/mail-engine.js';
import { heldDetail, type Period } from '../engine/attention.js';
import { heldId, REC, type AttemptRecord, type HeldWake } from '../engine/wake-records.js';

export interface HeldTarget {
  account: string;
  lineage: string | null;
}

export interface HeldWakesOptions {
  engine: MailEngine;
  /** Records attempts for these messages (the dispatcher's own writer). */
  record(mail: StoredMessage[], recipient: string, a: AttemptRecord): Promise<void>;
  eventId(): string;
  /** The lineage of the session the dispatcher would wake for this target, if any. */
  picked(t: HeldTarget): Promise<string | null>;
  /** Wakes the message for the target through its chain, as if it had just arrived. `untold`: a
   *  hook notice paged it and held it back, so its "surfaced" receipt does not mean it was read. */
  wake(t: HeldTarget, m: StoredMessage, untold: boolean): Promise<void>;
  warn(msg: string, err: unknown): void;
}

/** Held wakes released per account in one pass, at most (a longer backlog: the next end or start). */
const RELEASE_MAX = 10_000;

export class HeldWakes {
  private releasing = new Map<string, Promise<void>>();
  private again = new Set<string>();
  held = 0;
  released = 0;

  constructor(private o: HeldWakesOptions) {}

  /** Of `mail` for this recipient, what a quiet period holds is recorded as held; the rest is returned. */
  async hold(mail: StoredMessage[], recipient: string, t: HeldTarget, picked: string | null): Promise<StoredMessage[]> {
    const e = this.o.engine;
    const periods = await Promise.all(mail.map((m) => e.attention.wakeHold(m, t.account, t.lineage, picked)));
    const held = mail.flatMap((m, i) => (periods[i] ? [{ m, p: periods[i] }] : []));
    if (held.length === 0) return mail;
    const now = e.clock.now();
    const rows = held.map(({ m, p }) => {
      const v: HeldWake = { messageId: m.id, account: t.account, lineage: t.lineage, by: p.scope, at: now };
      return { kind: REC.held, id: heldId(recipient, m.id), value: JSON.stringify(v), updatedAt: now };
    });
    // First writer wins: a wake held already (by this daemon or another) is not recorded twice.
    const mine = new Set(await e.store.insertRecords(rows));
    const byDetail = new Map<string, { p: Period; mail: StoredMessage[] }>();
    for (const { m, p } of held) {
      if (!mine.has(heldId(recipient, m.id))) continue;
      const detail = heldDetail(p);
      const g = byDetail.get(detail) ?? { p, mail: [] };
      g.mail.push(m);
      byDetail.set(detail, g);
      this.held++;
    }
    for (const [detail, g] of byDetail) await this.o.record(g.mail, recipient, { eventId: this.o.eventId(), adapter: 'attention', at: now, ok: false, detail });
    return mail.filter((_, i) => !periods[i]);
  }

  /** A period of the account ended or changed: wake what nothing holds any more. One pass per
   *  account at a time; an end during a pass runs one more. */
  release(account: string): Promise<void> {
    const running = this.releasing.get(account);
    if (running) {
      this.again.add(account);
      return running;
    }
    const p = this.pass(account)
      .catch((err: unknown) => this.o.warn('releasing held wakes failed', err))
      .finally(() => {
        this.releasing.delete(account);
        if (this.again.delete(account)) void this.release(account);
      });
    this.releasing.set(account, p);
    return p;
  }

  /** At start: periods that ended while no daemon watched release their held wakes. */
  async releaseAll(): Promise<void> {
    const accounts = new Set<string>();
    for (const r of await this.o.engine.store.listRecords(REC.held, '', 100_000)) accounts.add((JSON.parse(r.value) as HeldWake).account);
    for (const a of accounts) await this.release(a);
  }

  /** Settles every release pass in flight (tests, close). */
  async idle(): Promise<void> {
    while (this.releasing.size > 0) await Promise.allSettled([...this.releasing.values()]);
  }

  private async pass(account: string): Promise<void> {
    const e = this.o.engine;
    const rows = [...(await e.store.listRecords(REC.held, `${account}|`, RELEASE_MAX)), ...(await e.store.listRecords(REC.held, `${account}/`, RELEASE_MAX))];
    const picks = new Map<string, string | null>();
    const untold = rows.length > 0 ? await this.untoldByNotices(account) : new Set<string>();
    for (const r of rows) {
      const h = JSON.parse(r.value) as HeldWake;
      const m = await e.store.getMessage(h.messageId);
      if (!m) {
        await e.store.deleteRecord(REC.held, r.id);
        continue;
      }
      const t = { account: h.account, lineage: h.lineage };
      let picked: string | null = null;
      if (!t.lineage) {
        if (!picks.has(t.account)) picks.set(t.account, await this.o.picked(t));
        picked = picks.get(t.account)!;
      }
      if (await e.attention.wakeHold(m, t.account, t.lineage, picked)) continue;
      if (!(await e.store.deleteRecord(REC.held, r.id))) continue; // another daemon took it
      // Acknowledged meanwhile: handled. (Read meanwhile: the dispatcher skips it by its receipt.)
      if ((await e.store.ackedAt(scopeOf(t.account, m), [{ seq: m.seq, toKey: m.toKey }])).size > 0) continue;
      this.released++;
      await this.o.wake(t, m, untold.has(m.id));
    }
  }

  /** Mail the account's hook notices held back (notices.ts keeps it in the lineage's record). */
  private async untoldByNotices(account: string): Promise<Set<string>> {
    const ids = new Set<string>();
    for (const r of await this.o.engine.store.listRecords(REC.notice, lineageKeyPrefix(account), 1000))
      for (const id of (JSON.parse(r.value) as { held?: string[] }).held ?? []) ids.add(id);
    return ids;
  }
}

/** The recipient's scope for this message, as its receipt reads it (receipts.ts). */
function scopeOf(account: string, m: StoredMessage): ReaderScope {
  if (m.toKey.startsWith('s:')) return { account, sessionKey: m.toKey, rooms: [] };
  return { account, sessionKey: null, rooms: m.toKey.startsWith('r:') ? [m.toKey.slice(2)] : [] };
}
