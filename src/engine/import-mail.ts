// Mail and timers of another mailbox (InterAgentMail, MCP Agent Mail) written into this one: the
// daemon's half of `m4a import interagentmail|agent-mail` (the CLI read the source and made the
// accounts, rooms and teams). Each copy is a message in its recipient's account mailbox whose id is
// derived from (source, source message id, recipient), so a second run finds it and adds nothing;
// a timer likewise, with a marker record that outlives it (a fired timer is deleted, and must not be
// imported again). A chat post is a message in its room (id from source and post id), acknowledged
// for those who had seen it. Everything is checked before anything is written.
import { createHash } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import type * as I from '../wire/import-mail.js';
import { keyOfAccount, keyOfRoom, type AccountKind, type AckItem, type Store } from '../store/types.js';
import type { Clock } from './clock.js';
import { MAILBOX_ACCOUNT, TIMERS_PER_ACCOUNT, type TimerRecord } from './timers.js';
import { REC } from './wake-records.js';

export interface MailImportDeps {
  store: Store;
  clock: Clock;
  /** Timers were added: the timer book looks again (one may be due already). */
  timersChanged(): void;
}

/** The marker of an imported timer: `<source>|<source timer id>`. */
export const IMPORTED_TIMER_REC = 'import.timer';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
const TAG: Record<I.MailImportSource, string> = { interagentmail: 'iam', 'agent-mail': 'amx' };

/** One id per (source, message, recipient). The tag keeps it apart from generated ids (m- and 24
 *  base36) and from omp-mail's imports (m-omp…). */
export const importedCopyId = (source: I.MailImportSource, ref: I.CopyRef): string => `m-${TAG[source]}${sha256(`${source}\n${ref.id}\n${ref.to}`).slice(0, 40)}`;
/** One id per (source, post): the source's post id names its chat, so no other post has it. */
export const importedPostId = (source: I.MailImportSource, id: string): string => `m-${TAG[source]}${sha256(`${source}\npost\n${id}`).slice(0, 40)}`;
/** Our timer id of a source timer: the shape of the timer book's own (t- and 12 hex). */
export const importedTimerId = (source: I.MailImportSource, id: string): string => `t-${sha256(`${source}\ntimer\n${id}`).slice(0, 12)}`;

const malformed = (field: string, reason: string): MailError => new MailError('malformed', `${field}: ${reason}`, { field, reason });
const YIELD_EVERY = 25;

export class MailImport {
  /** One import at a time per daemon: two runs of the same data would race on the same ids. */
  private running: Promise<unknown> = Promise.resolve();

  constructor(private d: MailImportDeps) {}

  run(source: I.MailImportSource, req: I.ImportMailRequest): Promise<I.ImportMailResponse> {
    const next = this.running.then(() => this.importNow(source, req));
    this.running = next.catch(() => undefined);
    return next;
  }

  /** Every account named exists and may be written to; each copy and timer once. */
  private async check(req: I.ImportMailRequest): Promise<Map<string, AccountKind>> {
    const kinds = new Map<string, AccountKind>();
    const need = async (id: string, field: string): Promise<void> => {
      if (kinds.has(id)) return;
      if (id === MAILBOX_ACCOUNT) throw malformed(field, `${id} is the reserved account reminders come from`);
      const a = await this.d.store.getAccount(id);
      if (!a) throw new MailError('unknown_participant', `no account ${id}`, { participant: id, field });
      kinds.set(id, a.kind);
    };
    const copies = new Set<string>();
    for (const [i, m] of req.messages.entries()) {
      await need(m.from, `messages[${i}].from`);
      await need(m.to, `messages[${i}].to`);
      const k = `${m.id}\n${m.to}`;
      if (copies.has(k)) throw malformed(`messages[${i}]`, 'the same copy twice');
      copies.add(k);
    }
    const posts = new Set<string>();
    const rooms = new Set<string>();
    for (const [i, p] of (req.posts ?? []).entries()) {
      await need(p.from, `posts[${i}].from`);
      for (const [j, a] of p.acked_by.entries()) await need(a.account, `posts[${i}].acked_by[${j}].account`);
      if (!rooms.has(p.room)) {
        if (!(await this.d.store.getRoom(p.room))) throw new MailError('unknown_room', `no room ${p.room}`, { room: p.room, field: `posts[${i}].room` });
        rooms.add(p.room);
      }
      if (posts.has(p.id)) throw malformed(`posts[${i}].id`, 'the same post twice');
      posts.add(p.id);
    }
    const timers = new Set<string>();
    for (const [i, t] of req.timers.entries()) {
      await need(t.account, `timers[${i}].account`);
      if (t.set_by !== undefined) await need(t.set_by, `timers[${i}].set_by`);
      if ((t.team === undefined) !== (t.set_by === undefined)) throw malformed(`timers[${i}]`, 'a team reminder names its team and who set it');
      if (timers.has(t.id)) throw malformed(`timers[${i}].id`, 'the same timer twice');
      timers.add(t.id);
    }
    return kinds;
  }

  private async importNow(source: I.MailImportSource, req: I.ImportMailRequest): Promise<I.ImportMailResponse> {
    const { store } = this.d;
    const kinds = await this.check(req);
    const now = this.d.clock.now();
    const timersToMake = await this.newTimers(source, req.timers);
    let calls = 0;
    const pace = async (): Promise<void> => {
      if (++calls % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
    };

    let created = 0;
    let existing = 0;
    // Acks by (account, time): one store call each, at the source's time of handling.
    const acks = new Map<string, { account: string; room: string | null; at: number; items: AckItem[] }>();
    const ackLater = (account: string, at: number, item: AckItem, room: string | null = null): void => {
      const k = `${account}\n${room ?? ''}\n${at}`;
      const g = acks.get(k) ?? { account, room, at, items: [] };
      g.items.push(item);
      acks.set(k, g);
    };
    const known = new Map<string, boolean>();
    const stored = async (id: string): Promise<boolean> => {
      if (!known.has(id)) known.set(id, (await store.getMessage(id)) !== null);
      return known.get(id)!;
    };
    for (const m of req.messages) {
      await pace();
      const id = importedCopyId(source, m);
      const prior = await store.getMessage(id);
      if (prior) {
        existing++;
        if (m.acked_at !== null) ackLater(m.to, m.acked_at, { seq: prior.seq, toKey: prior.toKey });
        continue;
      }
      // A thread root or parent the source lost (or never sent us) leaves this copy a root.
      const root = m.thread ? importedCopyId(source, m.thread) : id;
      const parent = m.reply_to ? importedCopyId(source, m.reply_to) : null;
      const out = await store.appendMessage(
        {
          id,
          threadId: root !== id && (await stored(root)) ? root : id,
          fromAccount: m.from,
          fromSession: null,
          fromKind: kinds.get(m.from)!,
          toAddress: m.to,
          toKey: keyOfAccount(m.to),
          subject: m.subject,
          body: m.body,
          replyTo: parent !== null && (await stored(parent)) ? parent : null,
          correlation: m.origin,
          refs: [],
          priority: m.priority,
          createdAt: m.created_at,
          idempotencyKey: null,
          fingerprint: null,
        },
        now,
      );
      known.set(id, true);
      created++;
      if (m.acked_at !== null) ackLater(m.to, m.acked_at, { seq: out.message.seq, toKey: out.message.toKey });
    }
    let postsCreated = 0;
    let postsExisting = 0;
    for (const p of req.posts ?? []) {
      await pace();
      const id = importedPostId(source, p.id);
      let m = await store.getMessage(id);
      if (m) postsExisting++;
      else {
        const out = await store.appendMessage(
          {
            id,
            threadId: id,
            fromAccount: p.from,
            fromSession: null,
            fromKind: kinds.get(p.from)!,
            toAddress: `#${p.room}`,
            toKey: keyOfRoom(p.room),
            subject: p.subject,
            body: p.body,
            replyTo: null,
            correlation: p.origin,
            refs: [],
            priority: 'normal',
            createdAt: p.created_at,
            idempotencyKey: null,
            fingerprint: null,
          },
          now,
        );
        m = out.message;
        postsCreated++;
      }
      for (const a of p.acked_by) ackLater(a.account, a.at, { seq: m.seq, toKey: m.toKey }, p.room);
    }

    let acked = 0;
    for (const g of acks.values())
      acked += (await store.ack({ account: g.account, sessionKey: null, rooms: g.room === null ? [] : [g.room] }, g.items, Math.min(g.at, now))).filter((r) => r.fresh).length;

    for (const t of timersToMake) {
      await pace();
      // The timer first, its marker after: cut between the two, the next run makes the same timer
      // again (first writer wins), never a second one.
      await store.insertRecords([{ kind: REC.timer, id: `${t.account}|${t.id}`, value: JSON.stringify(t.rec), updatedAt: now }]);
      await store.insertRecords([{ kind: IMPORTED_TIMER_REC, id: t.marker, value: JSON.stringify({ account: t.account, timer: t.id }), updatedAt: now }]);
    }
    if (timersToMake.length) this.d.timersChanged();
    return {
      messages_created: created,
      messages_existing: existing,
      acknowledged: acked,
      timers_created: timersToMake.length,
      timers_existing: req.timers.length - timersToMake.length,
      posts_created: postsCreated,
      posts_existing: postsExisting,
    };
  }

  /** The timers not imported before, each account's bound checked before any is written. */
  private async newTimers(source: I.MailImportSource, timers: I.ImportedTimer[]): Promise<{ account: string; id: string; marker: string; rec: TimerRecord }[]> {
    const out: { account: string; id: string; marker: string; rec: TimerRecord }[] = [];
    const perAccount = new Map<string, number>();
    for (const t of timers) {
      const marker = `${source}|${t.id}`;
      if (await this.d.store.getRecord(IMPORTED_TIMER_REC, marker)) continue;
      const id = importedTimerId(source, t.id);
      const rec: TimerRecord = {
        id,
        account: t.account,
        lineage: null,
        session: null,
        due: t.due,
        note: t.note,
        createdAt: t.created_at,
        ...(t.team !== undefined && t.set_by !== undefined ? { team: t.team, setBy: t.set_by } : {}),
      };
      out.push({ account: t.account, id, marker, rec });
      perAccount.set(t.account, (perAccount.get(t.account) ?? 0) + 1);
    }
    for (const [account, n] of perAccount) {
      const have = (await this.d.store.listRecords(REC.timer, `${account}|`, TIMERS_PER_ACCOUNT)).length;
      if (have + n > TIMERS_PER_ACCOUNT)
        throw new MailError('rate_limited', `account ${account} would have more than ${TIMERS_PER_ACCOUNT} timers; clear some first`, { limit: TIMERS_PER_ACCOUNT, account });
    }
    return out;
  }
}
