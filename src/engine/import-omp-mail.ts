// omp-mail's sessions and mail brought into an agent account (`m4a import omp-mail`). Each omp
// session becomes an ended session of provider `omp` whose provider session id is the omp
// conversation's id, so the process that resumes that conversation with the mail4agent extension
// is its successor and reads what was imported (sessions.ts, recipients.ts). Ids are derived from
// omp-mail's own, so running the import again adds nothing: a session is found by its provider
// session id, a message by its id. Everything is checked before anything is written.
import { createHash } from 'node:crypto';
import { MailError } from '../wire/errors.js';
import type * as I from '../wire/import-omp-mail.js';
import { keyOfLineage, type AccountRecord, type AckItem, type NameRecord, type SessionRecord, type Store } from '../store/types.js';
import type { Clock } from './clock.js';
import { aliasName, slugFromCwd } from './names.js';

export interface ImportDeps {
  store: Store;
  clock: Clock;
  hostId: string;
  printAddresses(compacts: Iterable<string>): Promise<Map<string, string>>;
  /** Names were added: printed forms cached before are stale. */
  namesChanged(): void;
}

export const OMP_PROVIDER = 'omp';
/** What the card shows as the executable of an imported session (no process was attested). */
export const IMPORTED_EXE = 'omp-mail (imported)';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** The session id an omp conversation gets in an account: stable, so a second run finds it. */
export const importedSessionId = (account: string, ompSession: string): string => `s-${sha256(`omp-mail\n${account}\n${ompSession}`)}`;

/** One id per (account, mailbox, omp message): a broadcast is one message in each mailbox. `omp`
 *  is never part of a generated id's length (m- and 24 base36), so the two cannot meet. */
export const importedMessageId = (account: string, mailbox: string, ompId: string): string => `m-omp${sha256(`${account}\n${mailbox}\n${ompId}`).slice(0, 40)}`;

/** A session an import made: no process attested, ended from the start. */
const madeByImport = (s: SessionRecord): boolean => s.exe === IMPORTED_EXE && s.pid === 0 && s.endedAt !== null;

/** The SQLite store answers synchronously: a full request is some 20,000 calls, seconds in which no
 *  other request would be served without a turn of the event loop every so many (as notices.ts). */
const YIELD_EVERY = 25;

class Pace {
  private calls = 0;
  /** After `n` store calls: a turn of the event loop once YIELD_EVERY have gone by. */
  async step(n = 1): Promise<void> {
    this.calls += n;
    if (this.calls < YIELD_EVERY) return;
    this.calls = 0;
    await new Promise((r) => setImmediate(r));
  }
}

const malformed = (field: string, reason: string): MailError => new MailError('malformed', `${field}: ${reason}`, { field, reason });

function checkAccount(a: AccountRecord | null, id: string): AccountRecord {
  if (!a) throw new MailError('unknown_participant', `no account ${id}`, { participant: id });
  if (a.kind !== 'agent' || a.permissions.operator) throw malformed('account', `${id} is not an agent account (omp sessions belong to one)`);
  if (a.bindProvider && a.bindProvider !== OMP_PROVIDER) throw malformed('account', `${id} is bound to ${a.bindProvider} sessions`);
  return a;
}

/** The request refers only to itself: each session once, each mailbox among them, each line once. */
function checkRequest(req: I.ImportOmpMailRequest): void {
  const ids = new Set<string>();
  req.sessions.forEach((s, i) => {
    if (ids.has(s.id)) throw malformed(`sessions[${i}].id`, 'the same session twice');
    ids.add(s.id);
  });
  const lines = new Set<string>();
  req.messages.forEach((m, i) => {
    if (!ids.has(m.mailbox)) throw malformed(`messages[${i}].mailbox`, 'not among sessions');
    const k = `${m.mailbox}\n${m.id}`;
    if (lines.has(k)) throw malformed(`messages[${i}].id`, 'the same message twice in one mailbox');
    lines.add(k);
  });
}

interface Placed {
  rec: SessionRecord;
  created: boolean;
  refused: { alias: string; reason: string }[];
}

export class OmpMailImport {
  /** One import at a time per daemon: two runs of the same files would race on the same ids. */
  private running: Promise<unknown> = Promise.resolve();

  constructor(private d: ImportDeps) {}

  run(req: I.ImportOmpMailRequest): Promise<I.ImportOmpMailResponse> {
    const next = this.running.then(() => this.importNow(req));
    this.running = next.catch(() => undefined);
    return next;
  }

  private async importNow(req: I.ImportOmpMailRequest): Promise<I.ImportOmpMailResponse> {
    const { store } = this.d;
    const account = checkAccount(await store.getAccount(req.account), req.account);
    checkRequest(req);
    const now = this.d.clock.now();
    const pace = new Pace();

    const placed = new Map<string, Placed>();
    for (const s of req.sessions) placed.set(s.id, await this.place(account.id, s, now, pace));

    // The sender is the session an import made for that conversation (in this request or an earlier
    // one), never a session a process was attested as: imported mail must not read as that
    // process's. Without one the account is the sender, as for any mail without a session.
    const senders = new Map<string, string | null>();
    const senderOf = async (from: string): Promise<string | null> => {
      if (!senders.has(from)) {
        const rec = await store.getSession(account.id, importedSessionId(account.id, from));
        senders.set(from, rec && madeByImport(rec) ? rec.id : null);
      }
      return senders.get(from) ?? null;
    };

    let created = 0;
    let existing = 0;
    const acks: AckItem[] = [];
    for (const m of req.messages) {
      await pace.step(2);
      const to = placed.get(m.mailbox)!.rec;
      const id = importedMessageId(account.id, m.mailbox, m.id);
      const prior = await store.getMessage(id);
      if (prior) {
        existing++;
        if (m.delivered) acks.push({ seq: prior.seq, toKey: prior.toKey });
        continue;
      }
      const out = await store.appendMessage(
        {
          id,
          threadId: id,
          fromAccount: account.id,
          fromSession: await senderOf(m.from),
          fromKind: account.kind,
          toAddress: `${account.id}/${to.id}`,
          toKey: keyOfLineage(account.id, to.lineage),
          subject: m.subject,
          body: m.body,
          replyTo: null,
          // Marks the mail as imported (its sender was not attested here) and ties a broadcast's copies.
          correlation: `omp-mail:${m.id}`,
          refs: [],
          priority: 'normal',
          // The original time: the store's seq (arrival order) is what cursors and waits use.
          createdAt: m.ts,
          idempotencyKey: null,
          fingerprint: null,
        },
        now,
      );
      created++;
      if (m.delivered) acks.push({ seq: out.message.seq, toKey: out.message.toKey });
    }
    // Delivered in omp-mail: acknowledged, so it is history here, never delivered a second time.
    const acked = acks.length ? (await store.ack({ account: account.id, sessionKey: null, rooms: [] }, acks, now)).filter((r) => r.fresh).length : 0;

    this.d.namesChanged();
    const aliases = aliasesByLineage(await store.namesOf(account.id));
    const recs = [...placed.values()];
    const printed = await this.d.printAddresses(recs.map((p) => `${account.id}/${p.rec.id}`));
    return {
      account: account.id,
      sessions: req.sessions.map((s) => {
        const p = placed.get(s.id)!;
        return {
          omp_session: s.id,
          session: p.rec.id,
          address: printed.get(`${account.id}/${p.rec.id}`) ?? `${account.id}/${p.rec.id}`,
          slug: p.rec.slug,
          aliases: aliases.get(p.rec.lineage) ?? [],
          aliases_refused: p.refused,
          created: p.created,
        };
      }),
      sessions_created: recs.filter((p) => p.created).length,
      messages_created: created,
      messages_existing: existing,
      acknowledged: acked,
    };
  }

  /** The conversation's session here: the newest one that already names it (imported before, or
   *  run with the extension since), else a new ended one. Then its aliases. */
  private async place(account: string, s: I.OmpSessionIn, now: number, pace: Pace): Promise<Placed> {
    const { store } = this.d;
    await pace.step(4);
    let rec: SessionRecord | null = (await store.findByProviderSession(account, OMP_PROVIDER, s.id))[0] ?? null;
    const id = importedSessionId(account, s.id);
    rec ??= await store.getSession(account, id);
    let created = false;
    if (!rec) {
      const base = s.slug !== undefined ? slugFromCwd(s.slug) : s.cwd !== undefined ? slugFromCwd(s.cwd) : null;
      const at = Math.min(s.last_seen ?? now, now);
      const fresh = await store.registerSession({
        account,
        id,
        hostId: this.d.hostId,
        // No process was attested: nothing here can be live (sessions.ts isLive), it can only be succeeded.
        pid: 0,
        startTime: 0,
        exe: IMPORTED_EXE,
        uid: -1,
        corroborated: { provider: OMP_PROVIDER, providerSessionId: s.id, ...(s.cwd !== undefined ? { cwd: s.cwd } : {}) },
        createdAt: at,
        predecessor: null,
        slugBase: base,
      });
      // Ended now, not at omp-mail's last sight of it: ended sessions leave the directory after the
      // retention time, and the resumed conversation must still find this one.
      await store.endSession(account, id, now);
      rec = { ...fresh, endedAt: fresh.endedAt ?? now };
      created = true;
    }
    const refused: { alias: string; reason: string }[] = [];
    for (const raw of s.aliases ?? []) {
      await pace.step();
      let alias: string;
      try {
        alias = aliasName(raw);
      } catch (err) {
        refused.push({ alias: raw, reason: err instanceof MailError ? err.message.replace(/^alias: /, '') : String(err) });
        continue;
      }
      if ((await store.addAlias(account, rec.lineage, alias)) === 'taken') refused.push({ alias: raw, reason: `${account}/${alias} is taken by another session` });
    }
    return { rec, created, refused };
  }
}

/** The account's aliases by lineage, grouped once: an account may hold tens of thousands. */
function aliasesByLineage(names: NameRecord[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const n of names) {
    if (n.kind !== 'alias') continue;
    const list = out.get(n.lineage);
    if (list) list.push(n.name);
    else out.set(n.lineage, [n.name]);
  }
  return out;
}
