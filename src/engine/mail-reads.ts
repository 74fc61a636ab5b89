// Reading mail: the inbox page (inbox-reader.ts), acknowledging, one message or its thread, the
// unread counts, a message's receipts (receipts.ts), and the hooks' notice and listen mode
// (notices.ts).
import { MailError } from '../wire/errors.js';
import { LIMITS } from '../wire/limits.js';
import type * as W from '../wire/ops.js';
import type * as H from '../wire/hooks.js';
import type * as WK from '../wire/wake.js';
import { readKeys, type ReaderScope, type Store, type StoredMessage } from '../store/types.js';
import type { Clock } from './clock.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { iso, presentMessage } from './present.js';
import type { ShortAddresses } from './short-address.js';
import type { InboxDoor, InboxReader } from './inbox-reader.js';
import { NOTICE_LIMIT, shownKey, type NoticeBook } from './notices.js';
import type { LoopGuard } from './loop-guard.js';
import type { Receipts } from './receipts.js';
import { sentBy } from './incarnation.js';
import { callerAddress, need, type Caller } from './mail-engine.js';
import type { AttentionBook } from './attention.js';
import { noticeHeld } from './attention-notices.js';
import { readMeta } from './email-records.js';

/** What reading needs from the mail engine. */
export interface ReadDeps {
  store: Store;
  clock: Clock;
  reader: InboxReader;
  notices: NoticeBook;
  loops: LoopGuard;
  receipts: Receipts;
  addresses: ShortAddresses;
  scope(c: Caller): Promise<ReaderScope>;
  /** Quiet hours: what they hold is not announced by a notice until they end. */
  attention?: AttentionBook;
}

export class MailReads {
  constructor(private d: ReadDeps) {}

  /** The inbox read (inbox-reader.ts); `mark`: the answer counts as shown (a hook notice decides that itself). */
  read(c: Caller, req: W.InboxRequest, door: InboxDoor, mark: boolean): Promise<W.InboxResponse> {
    need(c, 'read');
    return this.d.reader.read(c, req, door, mark);
  }

  async ack(c: Caller, req: W.AckRequest): Promise<W.AckResponse> {
    need(c, 'read');
    const ids = req.message_ids ?? (req.message_id ? [req.message_id] : []);
    const scope = await this.d.scope(c);
    const keys = readKeys(scope);
    const items: { id: string; seq: number; toKey: string }[] = [];
    // Check every id before acknowledging any: a refused request changes nothing.
    for (const id of [...new Set(ids)]) {
      const m = await this.d.store.getMessage(id);
      if (!m) throw new MailError('unknown_message', `no message ${id}`, { message_id: id });
      if (!keys.includes(m.toKey)) throw new MailError('not_addressed_to_you', `message ${id} is not addressed to you`, { message_id: id });
      items.push({ id, seq: m.seq, toKey: m.toKey });
    }
    const results = await this.d.store.ack(scope, items, this.d.clock.now());
    return {
      acked: results.map((r, i) => ({ message_id: items[i]!.id, acked_at: iso(r.ackedAt) })),
      unread: await this.d.store.unread(scope),
    };
  }

  async get(c: Caller, req: W.GetRequest): Promise<W.GetResponse> {
    need(c, 'read');
    const m = await this.d.store.getMessage(req.message_id);
    if (!m) throw new MailError('unknown_message', `no message ${req.message_id}`, { message_id: req.message_id });
    const scope = await this.d.scope(c);
    const keys = readKeys(scope);
    const mayRead = (x: StoredMessage): boolean => keys.includes(x.toKey) || sentBy(c.account, x);
    if (!mayRead(m)) throw new MailError('not_addressed_to_you', `message ${req.message_id} is not addressed to you`, { message_id: req.message_id });
    const visible = req.thread ? (await this.d.store.getThread(m.threadId)).filter(mayRead) : [m];
    const acked = await this.d.store.ackedAt(
      scope,
      visible.filter((x) => keys.includes(x.toKey)).map((x) => ({ seq: x.seq, toKey: x.toKey })),
    );
    const printed = await this.d.addresses.forMessages(visible, [c.session]);
    // Mail from outside lists its attachments (email-records.ts); `m4a attachment` fetches one.
    const attachments = new Map<string, NonNullable<W.MessageOut['attachments']>>();
    for (const x of visible) {
      if (x.fromKind !== 'external') continue;
      const listed = (await readMeta(this.d.store, x.id))?.attachments ?? [];
      if (listed.length > 0) attachments.set(x.id, listed);
    }
    const out = (x: StoredMessage, fromSession = false): W.MessageOut => {
      const o = presentMessage(x, acked.get(x.seq) ?? null, { reader: c.account.id, printed, verbose: req.verbose === true, fromSession });
      const a = attachments.get(x.id);
      return a ? { ...o, attachments: a.map((y) => ({ n: y.n, name: y.name, type: y.type, size: y.size, kept: y.kept })) } : o;
    };
    return req.thread ? { message: out(m, true), thread: visible.map((x) => out(x)) } : { message: out(m, true) };
  }

  async unread(c: Caller): Promise<W.UnreadResponse> {
    need(c, 'read');
    return { unread: await this.d.store.unread(await this.d.scope(c)) };
  }

  async receiptsOf(c: Caller, req: { message_id: string }): Promise<WK.ReceiptsResponse> {
    const scope = await this.d.scope(c);
    const m = await this.d.store.getMessage(req.message_id);
    const r = await this.d.receipts.receipts({ account: c.account, operator: c.account.permissions.operator, scope }, m, req.message_id);
    const names = await this.d.addresses.printAll(
      r.receipts.map((x) => x.recipient),
      [c.session],
    );
    return { ...r, receipts: r.receipts.map((x) => ({ ...x, recipient: names.get(x.recipient) ?? x.recipient })) };
  }

  /** For hooks: mail this session has not been shown, and whether a Stop hook should block
   *  (the rules are in notices.ts). `signal` ends a listening Stop hook's wait when it has gone. */
  async notice(c: Caller, req: H.NoticeRequest, door: { signal?: AbortSignal } = {}): Promise<H.NoticeResponse> {
    need(c, 'read');
    const session = c.session;
    if (!session) throw new MailError('permission_denied', 'hooks speak for an attested session', { need: 'session' });
    return this.d.notices.notice(shownKey(c.account.id, session.lineage), req, {
      page: async (afterSeq, waitSecs) => {
        const inboxDoor: InboxDoor = { maxWaitSecs: LIMITS.waitSecsHttp, ...(door.signal ? { signal: door.signal } : {}) };
        const page = await this.read(c, { after: encodeCursor(afterSeq), limit: NOTICE_LIMIT, include_bodies: false, wait_secs: waitSecs }, inboxDoor, false);
        const items = page.messages.map((m) => ({
          message_id: m.message_id,
          from: m.from,
          subject: m.subject,
          ...(m.priority ? { priority: m.priority } : {}),
          ...(m.from_kind === 'external' ? { external: true as const } : {}),
          ...(m.via ? { delegate: m.via.delegate } : {}),
        }));
        return { items, nextSeq: page.next_cursor ? decodeCursor(page.next_cursor) : null };
      },
      quiet: (id) => this.d.loops.verdict(id),
      ...(this.d.attention
        ? {
            held: noticeHeld({
              attention: this.d.attention,
              store: this.d.store,
              account: c.account.id,
              lineage: session.lineage,
              scope: () => this.d.scope(c),
              printAll: (compacts) => this.d.addresses.printAll(compacts),
            }),
          }
        : {}),
    });
  }

  async listen(c: Caller, on: boolean): Promise<{ address: string; listening: boolean }> {
    if (!c.session) throw new MailError('permission_denied', 'listen mode belongs to an attested session', { need: 'session' });
    await this.d.notices.listen(shownKey(c.account.id, c.session.lineage), on);
    return { address: callerAddress(c), listening: on };
  }
}
