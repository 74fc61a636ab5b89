// Retention (docs/operations.md "Retention"): per account or room, off by default, acknowledged
// mail older than N days is deleted (the store's pruneMail decides what is acknowledged and what
// open work still holds), and wake records older than records_days (the operator's, default 30)
// are pruned whatever is set.
// Settings are records (on a shared store the last run's report and the run's lock too); the
// daemon runs it shortly after start and then hourly, one daemon at a time on a shared store.
import { MailError } from '../wire/errors.js';
import { RECORDS_DAYS_DEFAULT } from '../wire/retention.js';
import type * as RT from '../wire/retention.js';
import type { AccountRecord, MailPruneQuery, RecordRow, Store } from '../store/types.js';
import type { Clock } from './clock.js';
import type { Caller } from './mail-engine.js';
import type { Logger } from './log.js';
import { incarnationOf, roomSweep } from './incarnation.js';
import { iso } from './present.js';
import { REC } from './wake-records.js';

// The age of wake records is its own kind: listing the settings (kind `retention`) never meets it.
const KIND = { setting: 'retention', records: 'retention_records', last: 'retention_run', lock: 'retention_lock' } as const;
const DAY_MS = 24 * 3600_000;
const RECORD_KINDS = [REC.attempt, REC.claim, REC.surfaced];
/** Messages looked at (records deleted) per store call: one short transaction, so a run never holds
 *  SQLite's writer for long; the event loop gets a turn between calls. */
const BATCH = 500;
const START_DELAY_MS = 60_000;
const EVERY_MS = 3600_000;
/** A daemon that died mid-run holds the lock no longer than this. Two runs at once would only
 *  repeat work (each deletion is its own transaction), so the lock saves work, not correctness. */
const LOCK_MS = 10 * 60_000;

type Target = { account: string } | { room: string };

interface Setting {
  days: number;
  setAt: number;
  /** Accounts: incarnationOf the account it was set for; rooms: the room's createdAt. A new
   *  participant of the name never inherits it. */
  of: string;
}

/** Counters since start, for the metrics (plain numbers). */
export interface RetentionStats {
  runs: number;
  messagesDeleted: number;
  recordsPruned: number;
  failures: number;
}

export interface RetentionDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  hostId: string;
}

const settingId = (t: Target): string => ('account' in t ? `account:${t.account}` : `room:${t.room}`);
const targetOf = (id: string): Target => (id.startsWith('account:') ? { account: id.slice('account:'.length) } : { room: id.slice('room:'.length) });
const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export class RetentionBook {
  readonly stats: RetentionStats = { runs: 0, messagesDeleted: 0, recordsPruned: 0, failures: 0 };
  private running: Promise<RT.RetentionRunOut> | null = null;
  private cancelTimer: (() => void) | null = null;
  private closed = false;
  /** The last run's report. A store only this daemon holds keeps nothing of it (a run that finds
   *  nothing to delete writes nothing); a shared one keeps it as a record, for every daemon. */
  private last: RT.RetentionRunOut | null = null;

  constructor(private d: RetentionDeps) {}

  start(): void {
    this.arm(START_DELAY_MS);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cancelTimer?.();
    await this.running?.catch(() => undefined);
  }

  private operatorOnly(c: Caller): void {
    if (!c.account.permissions.operator) throw new MailError('permission_denied', 'this needs the operator credential', { need: 'operator' });
  }

  /** A setting of an account or a room (days), the age of wake records (records_days), or both.
   *  Everything is checked before anything is written: a refused request changes nothing. */
  async set(c: Caller, req: RT.RetentionSetRequest): Promise<RT.RetentionSetResponse> {
    this.operatorOnly(c);
    const named = (req.account !== undefined) !== (req.room !== undefined);
    if (req.account !== undefined && req.room !== undefined)
      throw new MailError('malformed', 'name one of account or room, not both', { field: 'account', reason: 'account or room' });
    if (!named && req.records_days === undefined)
      throw new MailError('malformed', 'name an account or a room (or give records_days)', { field: 'account', reason: 'account or room' });
    if (named && req.days === undefined) throw new MailError('malformed', 'days: a number of days, or null for off', { field: 'days', reason: 'required with account or room' });
    if (!named && req.days !== undefined) throw new MailError('malformed', 'days needs an account or a room', { field: 'days', reason: 'account or room' });
    const out: RT.RetentionSetResponse = {};
    if (named) {
      const target: Target = req.account !== undefined ? { account: req.account } : { room: req.room as string };
      const of = await this.incarnation(target);
      if (of === null) {
        if ('account' in target) throw new MailError('unknown_participant', `no account ${target.account}`, { participant: target.account });
        throw new MailError('unknown_room', `no room ${target.room}`, { room: target.room });
      }
      const days = req.days as number | null;
      const id = settingId(target);
      if (days === null) await this.d.store.deleteRecord(KIND.setting, id);
      else {
        const s: Setting = { days, setAt: this.d.clock.now(), of };
        await this.d.store.putRecord({ kind: KIND.setting, id, value: JSON.stringify(s), updatedAt: s.setAt });
      }
      Object.assign(out, target, { days });
    }
    if (req.records_days !== undefined) {
      const value = JSON.stringify({ days: req.records_days });
      await this.d.store.putRecord({ kind: KIND.records, id: 'days', value, updatedAt: this.d.clock.now() });
      out.records_days = req.records_days;
    }
    return out;
  }

  async list(c: Caller): Promise<RT.RetentionListResponse> {
    this.operatorOnly(c);
    const settings = (await this.settings()).map(({ id, s }) => ({ ...targetOf(id), days: s.days, set_at: iso(s.setAt) }));
    return { settings, records_days: await this.recordsDays(), last_run: await this.lastRun() };
  }

  /** How many days wake records are kept: the operator's setting (a record, so every daemon on a
   *  shared store and every restart reads the same), or the default. */
  private async recordsDays(): Promise<number> {
    const r = await this.d.store.getRecord(KIND.records, 'days');
    return r ? (JSON.parse(r.value) as { days: number }).days : RECORDS_DAYS_DEFAULT;
  }

  /** The operator's run: after any run in progress here, a full run of its own. */
  async run(c: Caller): Promise<RT.RetentionRunOut> {
    this.operatorOnly(c);
    await this.running?.catch(() => undefined);
    return this.runOnce('operator');
  }

  /** The last run's report (any daemon's), or null before the first. */
  async lastRun(): Promise<RT.RetentionRunOut | null> {
    if (!this.d.store.shared) return this.last;
    const r = await this.d.store.getRecord(KIND.last, 'last');
    return r ? (JSON.parse(r.value) as RT.RetentionRunOut) : null;
  }

  private arm(ms: number): void {
    if (this.closed) return;
    this.cancelTimer = this.d.clock.timer(ms, () => {
      void this.scheduled().finally(() => this.arm(EVERY_MS));
    });
  }

  /** The hourly run, unless another daemon sharing the store ran one within the hour. */
  private async scheduled(): Promise<void> {
    if (this.running) return; // the operator's run is at it
    try {
      const last = this.d.store.shared ? await this.d.store.getRecord(KIND.last, 'last') : null;
      if (last && this.d.clock.now() - last.updatedAt < EVERY_MS - START_DELAY_MS) return;
      await this.runOnce('schedule');
    } catch (err) {
      this.d.log.warn({ err: String(err) }, 'retention run failed: tried again at the next one');
    }
  }

  private runOnce(by: RT.RetentionRunOut['by']): Promise<RT.RetentionRunOut> {
    const p = this.locked(by).finally(() => {
      if (this.running === p) this.running = null;
    });
    this.running = p;
    return p;
  }

  private async locked(by: RT.RetentionRunOut['by']): Promise<RT.RetentionRunOut> {
    const started = this.d.clock.now();
    if (!(await this.takeLock(started))) {
      return { ran: false, by, started_at: iso(started), finished_at: iso(started), messages_deleted: 0, records_pruned: 0, targets: [], records: {}, errors: 0 };
    }
    try {
      const report = await this.pass(by, started);
      const done = this.d.clock.now();
      this.last = report;
      if (this.d.store.shared) await this.d.store.putRecord({ kind: KIND.last, id: 'last', value: JSON.stringify(report), updatedAt: done });
      this.stats.runs++;
      this.stats.messagesDeleted += report.messages_deleted;
      this.stats.recordsPruned += report.records_pruned;
      this.stats.failures += report.errors;
      this.d.log.info(
        { by, messages_deleted: report.messages_deleted, records_pruned: report.records_pruned, targets: report.targets.length, errors: report.errors, ms: done - started },
        'retention run',
      );
      return report;
    } finally {
      await this.releaseLock();
    }
  }

  private async pass(by: RT.RetentionRunOut['by'], started: number): Promise<RT.RetentionRunOut> {
    const targets: RT.RetentionRunOut['targets'] = [];
    let errors = 0;
    const byMessage = roomSweep().byMessage;
    for (const { id, s } of await this.settings()) {
      const target = targetOf(id);
      try {
        // A setting outlives nothing it was set for: a removed account or room, or a new one of the name.
        if ((await this.incarnation(target)) !== s.of) {
          await this.d.store.deleteRecord(KIND.setting, id);
          continue;
        }
        const q: MailPruneQuery = { target, before: started - s.days * DAY_MS, after: 0, limit: BATCH, byMessage };
        let deleted = 0;
        for (let after: number | null = 0; after !== null && !this.closed; await yieldTurn()) {
          const r = await this.d.store.pruneMail({ ...q, after });
          deleted += r.deleted;
          after = r.next;
        }
        targets.push({ ...target, deleted });
      } catch (err) {
        errors++;
        this.d.log.warn({ err: String(err), ...target }, 'retention of one setting failed');
      }
    }
    const records: Record<string, number> = {};
    const recordsDays = await this.recordsDays();
    for (const kind of RECORD_KINDS) {
      records[kind] = 0;
      try {
        for (let n = BATCH; n === BATCH && !this.closed; await yieldTurn()) {
          n = await this.d.store.pruneRecords(kind, started - recordsDays * DAY_MS, BATCH);
          records[kind] += n;
        }
      } catch (err) {
        errors++;
        this.d.log.warn({ err: String(err), kind }, 'pruning wake records failed');
      }
    }
    return {
      ran: true,
      by,
      started_at: iso(started),
      finished_at: iso(this.d.clock.now()),
      messages_deleted: targets.reduce((a, t) => a + t.deleted, 0),
      records_pruned: Object.values(records).reduce((a, n) => a + n, 0),
      targets,
      records,
      records_days: recordsDays,
      errors,
    };
  }

  private async settings(): Promise<{ id: string; s: Setting }[]> {
    const rows: RecordRow[] = await this.d.store.listRecords(KIND.setting, '', 100_000);
    return rows.map((r) => ({ id: r.id, s: JSON.parse(r.value) as Setting }));
  }

  /** Which participant of the name exists now (null: none). */
  private async incarnation(t: Target): Promise<string | null> {
    if ('account' in t) {
      const a: AccountRecord | null = await this.d.store.getAccount(t.account);
      return a ? incarnationOf(a) : null;
    }
    const r = await this.d.store.getRoom(t.room);
    return r ? String(r.createdAt) : null;
  }

  /** First writer wins; an expired lock (its daemon died mid-run) is taken over. */
  private async takeLock(now: number): Promise<boolean> {
    // One daemon holds a store that is not shared (the data directory's lock); this one runs once.
    if (!this.d.store.shared) return true;
    const row: RecordRow = { kind: KIND.lock, id: 'run', value: JSON.stringify({ host: this.d.hostId, until: now + LOCK_MS }), updatedAt: now };
    if ((await this.d.store.insertRecords([row])).length === 1) return true;
    const cur = await this.d.store.getRecord(KIND.lock, 'run');
    if (cur && (JSON.parse(cur.value) as { until: number }).until > now) return false;
    if (cur && !(await this.d.store.deleteRecord(KIND.lock, 'run'))) return false;
    return (await this.d.store.insertRecords([row])).length === 1;
  }

  private async releaseLock(): Promise<void> {
    if (!this.d.store.shared) return;
    const cur = await this.d.store.getRecord(KIND.lock, 'run');
    if (cur && (JSON.parse(cur.value) as { host: string }).host === this.d.hostId) await this.d.store.deleteRecord(KIND.lock, 'run');
  }
}
