// Delivery facts per recipient: stored, signalled (which adapter, when), surfaced (first returned
// by an inbox read), acknowledged. Facts are metadata: recording "surfaced" changes no read or
// acknowledgement state, and it is written in batches off the read's path.
import { MailError } from '../wire/errors.js';
import type { ReceiptOut, ReceiptsResponse } from '../wire/wake.js';
import { isEmailKey, readKeys, recordNamesRecipient, type AccountRecord, type MailKey, type ReaderScope, type RecordRow, type Store, type StoredMessage } from '../store/types.js';
import type { Clock } from './clock.js';
import type { Logger } from './log.js';
import { iso } from './present.js';
import { REC, recipientOf, type AttemptRecord } from './wake-records.js';
import { sentBy } from './incarnation.js';
import { emailReceipt } from './email-receipt.js';

/** The recipient a message counts for when `scope` reads it. */
export function recipientFor(scope: ReaderScope, toKey: MailKey): string {
  return toKey.startsWith('s:') ? toKey.slice(2) : scope.account;
}

/** Attempts the dispatcher records itself, not an adapter: their detail is safe for the sender. */
const OWN_VERDICTS = new Set(['wait', 'loop-guard', 'attention']);

/** Surfaced facts this daemon knows are stored (re-reading a page writes nothing): a bounded set. */
const KNOWN_MAX = 100_000;

/** Surfaced facts wait this long, so a woken room's are written in one transaction after its
 *  answers, not one per slice of readers in between them (wake-batch.ts). */
const SURFACED_WRITE_BEHIND_MS = 200;
/** Pauses before the retries of a failed write of surfaced facts (a lost connection, a restart). */
const SURFACED_RETRIES_MS = [100, 500, 2_000];

export class Receipts {
  private pending: RecordRow[] = [];
  private flushing: Promise<void> | null = null;
  /** Starts the queued write before its time. */
  private due: (() => void) | null = null;
  private known = new Set<string>();

  constructor(
    private store: Store,
    private clock: Clock,
    private log: Logger,
  ) {}

  /** An inbox read returned these messages: the first such read per recipient is "surfaced". */
  noteSurfaced(scope: ReaderScope, messages: { id: string; toKey: MailKey }[]): void {
    if (messages.length === 0) return;
    const at = this.clock.now();
    for (const m of messages) {
      const id = `${m.id}|${recipientFor(scope, m.toKey)}`;
      if (this.known.has(id)) continue;
      this.remember(id);
      this.pending.push({ kind: REC.surfaced, id, value: JSON.stringify({ at }), updatedAt: at });
    }
    if (this.pending.length === 0 || this.flushing) return;
    const due = new Promise<void>((resolve) => (this.due = resolve));
    const timer = setTimeout(() => this.due?.(), SURFACED_WRITE_BEHIND_MS);
    timer.unref();
    this.flushing = due.then(() => {
      clearTimeout(timer);
      this.due = null;
      return this.write();
    });
  }

  /** The account was removed (its records went with it): forget what was kept of them here, so a
   *  new account of the name gets its own receipts. */
  forget(account: string): void {
    for (const id of this.known) if (recordNamesRecipient(id, account)) this.known.delete(id);
    this.pending = this.pending.filter((r) => !recordNamesRecipient(r.id, account));
  }

  private remember(id: string): void {
    if (this.known.size >= KNOWN_MAX) this.known.delete(this.known.values().next().value as string);
    this.known.add(id);
  }

  /** Writes what is queued (one transaction per 500); settled() awaits it. */
  private async write(): Promise<void> {
    while (this.pending.length > 0) {
      const rows = this.pending.splice(0, 500);
      // Insert-if-absent, so a retry is safe: the first read's time stays. A store that is still
      // down after the retries loses these facts to the log, and the next read that returns the
      // messages records them again (the ids are forgotten here).
      for (let attempt = 0; ; attempt++) {
        try {
          await this.store.insertRecords(rows);
          break;
        } catch (err) {
          if (attempt < SURFACED_RETRIES_MS.length) {
            await new Promise((r) => setTimeout(r, SURFACED_RETRIES_MS[attempt]));
            continue;
          }
          // The rest would wait out the same retries (settled() and shutdown with them): all of it
          // is left to the next reads.
          const left = [...rows, ...this.pending.splice(0)];
          for (const r of left) this.known.delete(r.id);
          this.log.warn({ err: err instanceof Error ? err.message : String(err), count: left.length }, 'recording surfaced receipts failed: the next read records them');
          break;
        }
      }
    }
    this.flushing = null;
  }

  /** Writes what is queued now (a receipts read, shutdown), instead of after the write-behind. */
  async settled(): Promise<void> {
    this.due?.();
    await this.flushing;
  }

  /** The sender, a recipient or the operator may ask. Room mail: one receipt per current member. */
  async receipts(caller: { account: AccountRecord; operator: boolean; scope: ReaderScope }, m: StoredMessage | null, messageId: string): Promise<ReceiptsResponse> {
    if (!m) throw new MailError('unknown_message', `no message ${messageId}`, { message_id: messageId });
    const addressed = readKeys(caller.scope).includes(m.toKey);
    if (!caller.operator && !addressed && !sentBy(caller.account, m))
      throw new MailError('not_addressed_to_you', `message ${messageId} is neither from nor to you`, { message_id: messageId });
    await this.settled();
    if (isEmailKey(m.toKey)) return { message_id: m.id, receipts: [await emailReceipt(this.store, m)] };
    const scopes: { recipient: string; scope: ReaderScope }[] = [];
    if (m.toKey.startsWith('a:')) {
      const account = m.toKey.slice(2);
      scopes.push({ recipient: account, scope: { account, sessionKey: null, rooms: [] } });
    } else if (m.toKey.startsWith('s:')) {
      const rest = m.toKey.slice(2);
      const account = rest.slice(0, rest.indexOf('/'));
      scopes.push({ recipient: rest, scope: { account, sessionKey: m.toKey, rooms: [] } });
    } else {
      const room = m.toKey.slice(2);
      const members = (await this.store.getRoom(room))?.members ?? [];
      for (const account of members) scopes.push({ recipient: account, scope: { account, sessionKey: null, rooms: [room] } });
    }
    const receipts: ReceiptOut[] = [];
    for (const { recipient, scope } of scopes) {
      // An adapter's why can hold the recipient's setup (a command's stderr, paths, thread ids): it
      // is for that recipient and the operator; others learn which adapter, when, and whether it worked.
      const seesWhy = caller.operator || (addressed && scope.account === caller.account.id);
      const [attempts, surfaced, acked] = await Promise.all([
        this.store.listRecords(REC.attempt, `${m.id}|${recipient}|`, 100),
        this.store.getRecord(REC.surfaced, `${m.id}|${recipient}`),
        this.store.ackedAt(scope, [{ seq: m.seq, toKey: m.toKey }]),
      ]);
      const ackedAt = acked.get(m.seq) ?? null;
      receipts.push({
        recipient,
        stored_at: iso(m.createdAt),
        signalled: attempts.map((r) => {
          const a = JSON.parse(r.value) as AttemptRecord;
          const detail = seesWhy || OWN_VERDICTS.has(a.adapter) ? a.detail : 'withheld: only the recipient and the operator see why';
          return { event_id: a.eventId, adapter: a.adapter, at: iso(a.at), ok: a.ok, detail };
        }),
        surfaced_at: surfaced ? iso((JSON.parse(surfaced.value) as { at: number }).at) : null,
        acked_at: ackedAt === null ? null : iso(ackedAt),
      });
    }
    return { message_id: m.id, receipts };
  }
}

export { recipientOf };
