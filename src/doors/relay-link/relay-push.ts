// New-mail notices for the relay: per offered mailbox, a loop of the inbox wait the browser's live
// update runs, from the cursor the relay last acknowledged (its welcome), sending `mail` with the
// newest cursor and waiting for the relay's ack before the next. One notice in flight a mailbox,
// nothing queued here: mail committed meanwhile is in the store, so a reconnect loses nothing.
import { MailError } from '../../wire/errors.js';
import type { NodeFrame } from '../../wire/relay-link.js';
import type { Caller, MailEngine } from '../../engine/mail-engine.js';
import type { Logger } from '../../engine/log.js';
import { decodeCursor, encodeCursor } from '../../engine/cursor.js';

/** A parked wait lasts at most this long, then parks again (as the browser's live update does). */
const WAIT_SECS = 30;
/** After a passing failure (the store, the wait cap) or a mailbox that is no person's now. */
const RETRY_MS = 1_000;
const GONE_RETRY_MS = 30_000;

export interface RelayPushOptions {
  engine: MailEngine;
  mailboxes: readonly string[];
  /** welcome.cursors: where the relay's view of each mailbox stands. */
  cursors: Readonly<Record<string, string>>;
  log: Logger;
  send(frame: NodeFrame): void;
  /** Fires when the connection closes: every loop ends, a parked wait at once. */
  signal: AbortSignal;
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

export class RelayPush {
  /** Per mailbox: the cursor sent and not yet acknowledged, and who waits for its ack. */
  private readonly pending = new Map<string, { cursor: string; acked: () => void }>();

  constructor(private readonly o: RelayPushOptions) {}

  start(): void {
    for (const mb of this.o.mailboxes) void this.loop(mb);
  }

  /** The relay took the notice: the loop of that mailbox reads on. A stale or unknown ack is
   *  ignored (logged), so a relay cannot make the node send faster than it acknowledges. */
  ack(mailbox: string, cursor: string): void {
    const p = this.pending.get(mailbox);
    if (!p || p.cursor !== cursor) {
      this.o.log.warn({ mailbox, cursor }, 'relay link: an ack for no notice in flight; ignored');
      return;
    }
    this.pending.delete(mailbox);
    p.acked();
  }

  private startCursor(mailbox: string, head: number): string {
    const given = this.o.cursors[mailbox];
    if (given === undefined) return encodeCursor(head);
    try {
      decodeCursor(given);
      return given;
    } catch {
      this.o.log.warn({ mailbox }, "relay link: the relay's cursor is not one of ours; notices start at the head");
      return encodeCursor(head);
    }
  }

  private async callerOf(mailbox: string): Promise<Caller | null> {
    const account = await this.o.engine.store.getAccount(mailbox);
    return account?.kind === 'human' ? { account, session: null } : null;
  }

  private async loop(mailbox: string): Promise<void> {
    const { engine, signal } = this.o;
    let cursor: string | null = null;
    while (!signal.aborted) {
      try {
        cursor ??= this.startCursor(mailbox, await engine.store.headSeq());
        const caller = await this.callerOf(mailbox);
        if (!caller) {
          this.o.log.warn({ mailbox }, 'relay link: an offered mailbox is no human account now; no notices for it');
          await sleep(GONE_RETRY_MS, signal);
          continue;
        }
        const r = await engine.inbox(caller, { after: cursor, include_acked: true, include_bodies: false, limit: 1, wait_secs: WAIT_SECS }, { maxWaitSecs: WAIT_SECS, signal });
        if (signal.aborted || r.messages.length === 0 || !r.next_cursor) continue;
        // The newest cursor, so a burst is one notice: anything committed up to the head is readable.
        const newest = encodeCursor(Math.max(decodeCursor(r.next_cursor), await engine.store.headSeq()));
        await new Promise<void>((acked) => {
          const done = (): void => {
            signal.removeEventListener('abort', done);
            acked();
          };
          this.pending.set(mailbox, { cursor: newest, acked: done });
          signal.addEventListener('abort', done, { once: true });
          this.o.send({ t: 'mail', mailbox, cursor: newest });
        });
        cursor = newest;
      } catch (err) {
        if (signal.aborted) return;
        const code = err instanceof MailError ? err.code : 'internal';
        this.o.log.warn({ mailbox, code, err: err instanceof Error ? err.message : String(err) }, 'relay link: a notice read failed; retrying');
        await sleep(RETRY_MS, signal);
      }
    }
  }
}
