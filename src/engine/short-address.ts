// The printed form of an address: what agents and people read in answers, and may write back as
// `to`. A session prints as account/slug; a lineage without a slug (an earlier build's) as
// account/@alias; a session without either, or gone from the directory, as account/s- plus the
// shortest prefix of at least 8 hex digits that no other session of the account shares.
// Slug before alias because a slug stays with its lineage for as long as the lineage is in the
// directory (a new lineage from the same directory gets slug-2), while an alias can be dropped
// and taken by another lineage while a message that printed it still sits in an inbox.
// Accounts and rooms print as they are.
import type { SessionRecord, Store, StoredMessage } from '../store/types.js';
import type { Clock } from './clock.js';

export const PREFIX_MIN_HEX = 8;
const SESSION = /^([^/]+)\/s-([0-9a-f]{1,64})$/;
/** Long enough that a room's readers woken together share one lookup per sender. */
const TTL_MS = 5000;
const MAX_ENTRIES = 4096;

interface Entry {
  at: number;
  form: Promise<string>;
}

type Known = readonly (SessionRecord | null | undefined)[];

/** An answer's printed addresses of its messages. */
export interface Printed {
  from(m: StoredMessage): string;
  to(m: StoredMessage): string;
}

export class ShortAddresses {
  private cache = new Map<string, Entry>();

  constructor(
    private store: Store,
    private clock: Clock,
    /** How long ended sessions stay in the directory: a lineage near its end is never cached. */
    private retentionMs: number,
  ) {}

  /** Forgets every printed form (an alias was added or dropped, an account removed). */
  clear(): void {
    this.cache.clear();
  }

  /** The printed form of a compact address as stored (`claude/s-…`, `claude`, `#room`).
   *  `known`: session records the caller holds already, which then cost no read. */
  print(compact: string, known: Known = []): Promise<string> {
    const m = SESSION.exec(compact);
    if (!m) return Promise.resolve(compact);
    return this.session(m[1]!, `s-${m[2]!}`, known, compact);
  }

  /** The printed form of each distinct address, one lookup each, side by side. */
  async printAll(compacts: Iterable<string>, known: Known = []): Promise<Map<string, string>> {
    const distinct = [...new Set(compacts)];
    const forms = await Promise.all(distinct.map((a) => this.print(a, known)));
    return new Map(distinct.map((a, i) => [a, forms[i]!]));
  }

  /** The printed sender and recipient of each message: one lookup per distinct session, and no
   *  string is built per message (a page of 256 pays for its few senders only). */
  async forMessages(ms: readonly StoredMessage[], known: Known = []): Promise<Printed> {
    const senders = new Map<string, Map<string, string>>();
    const recipients = new Map<string, string>();
    const jobs: Promise<void>[] = [];
    for (const m of ms) {
      const sid = m.fromSession;
      if (sid !== null) {
        let ids = senders.get(m.fromAccount);
        if (!ids) senders.set(m.fromAccount, (ids = new Map<string, string>()));
        if (!ids.has(sid)) {
          const into = ids;
          into.set(sid, `${m.fromAccount}/${sid}`);
          jobs.push(this.session(m.fromAccount, sid, known).then((f) => void into.set(sid, f)));
        }
      }
      const to = m.toAddress;
      if (!recipients.has(to)) {
        recipients.set(to, to);
        if (to.includes('/')) jobs.push(this.print(to, known).then((f) => void recipients.set(to, f)));
      }
    }
    await Promise.all(jobs);
    return {
      from: (m) => (m.fromSession === null ? m.fromAccount : (senders.get(m.fromAccount)?.get(m.fromSession) ?? `${m.fromAccount}/${m.fromSession}`)),
      to: (m) => recipients.get(m.toAddress) ?? m.toAddress,
    };
  }

  private session(account: string, id: string, known: Known, key = `${account}/${id}`): Promise<string> {
    const rec = known.find((s) => s && s.account === account && s.id === id) ?? null;
    if (rec?.slug) return Promise.resolve(`${account}/${rec.slug}`);
    const now = this.clock.now();
    const hit = this.cache.get(key);
    if (hit && now - hit.at < TTL_MS) return hit.form;
    // Concurrent readers of the same sender (a room's readers woken together) share one lookup.
    const entry: Entry = { at: now, form: this.compute(account, id, id.slice(2), rec, now).then((r) => (r.cache ? r.form : this.drop(key, entry, r.form))) };
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(key, entry);
    entry.form.catch(() => this.drop(key, entry, ''));
    return entry.form;
  }

  private drop(key: string, entry: Entry, form: string): string {
    if (this.cache.get(key) === entry) this.cache.delete(key);
    return form;
  }

  private async compute(account: string, id: string, hex: string, known: SessionRecord | null, now: number): Promise<{ form: string; cache: boolean }> {
    const first = await this.store.findSessionsByPrefix(account, `s-${hex.slice(0, PREFIX_MIN_HEX)}`, 2);
    const self = known ?? first.find((s) => s.id === id) ?? null;
    // Names go with a lineage pruned from the directory: a session ended nearly that long ago is
    // looked up afresh every time, so its slug is never printed once another lineage may hold it.
    const cache = !self || self.endedAt === null || self.endedAt > now - this.retentionMs + 2 * TTL_MS;
    if (self?.slug) return { form: `${account}/${self.slug}`, cache };
    if (self) {
      const alias = (await this.store.namesOf(account)).find((n) => n.kind === 'alias' && n.lineage === self.lineage);
      if (alias) return { form: `${account}/${alias.name}`, cache };
    }
    let others = first.filter((s) => s.id !== id);
    let n = PREFIX_MIN_HEX;
    while (others.length > 0 && n < hex.length) {
      n++;
      others = (await this.store.findSessionsByPrefix(account, `s-${hex.slice(0, n)}`, 2)).filter((s) => s.id !== id);
    }
    return { form: `${account}/s-${hex.slice(0, n)}`, cache };
  }
}
