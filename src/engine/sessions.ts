// Sessions: registered on first contact from the attested process, succeeded on restart, ended
// when their process is gone, pruned from the directory after a retention time (mail stays).
import { MailError } from '../wire/errors.js';
import { keyOfLineage, type AccountRecord, type RecordSweep, type SessionRecord, type Store } from '../store/types.js';
import type { Attestation } from '../attest/types.js';
import type { Clock } from './clock.js';
import { slugFromCwd } from './names.js';
import { reportsOwnSession } from '../wire/capabilities.js';
import { chainId, heldId, recipientOf, REC } from './wake-records.js';
import type { Logger } from './log.js';

export interface SessionBookOptions {
  hostId: string;
  /** Liveness of a process on this host; sessions of other hosts rely on their own daemon. */
  isAlive(pid: number, startTime: number): boolean;
  retentionMs: number;
  /** How long an ended pi or omp session stays (its conversation may resume and read what waited). */
  resumableRetentionMs?: number;
  /** Where a late link to a predecessor, made or refused, is told. */
  log?: Logger;
}

/** The engine's records of a lineage that a session joining another must not leave behind: its
 *  wake chain, hook notice state, quiet period (attention.ts keys it as recipientOf does) and the
 *  wakes that period holds. */
export const lineageRecords = (account: string, lineage: string): RecordSweep['owned'] => [
  { kind: REC.chain, id: chainId(account, lineage) },
  { kind: REC.notice, id: keyOfLineage(account, lineage) },
  { kind: REC.attention, id: recipientOf(account, lineage) },
  { kind: REC.held, prefix: heldId(recipientOf(account, lineage), '') },
];

/** A pi or omp conversation resumed within a month still finds the mail that waited for it. */
export const RESUMABLE_RETENTION_MS = 30 * 24 * 3600_000;

const TOUCH_FLUSH_MS = 5000;

export class SessionBook {
  /** account/sessionId → record; a connection's repeated requests never touch the store. */
  private known = new Map<string, SessionRecord>();
  /** The first contact being looked up or registered: a process that opens many connections at once
   *  (their attestations come back in one batch) reads and registers its session once, and all its
   *  requests share the one record. */
  private pending = new Map<string, Promise<SessionRecord>>();
  private seen = new Map<string, { account: string; id: string; at: number }>();
  private lastFlush = 0;

  constructor(
    private store: Store,
    private clock: Clock,
    private opts: SessionBookOptions,
  ) {}

  /** One adoption of a conversation id at a time per session (two connections may report at once). */
  private adopting = new Map<string, Promise<SessionRecord>>();

  /** The session of `account` that the attested process is, registered on first contact.
   *  `reported`: the conversation id the agent's own process names (a pi or omp extension, opencode's
   *  plugin: `reportsOwnSession`), never one from a helper it runs; the card follows it when the
   *  agent switches conversations, and the first one finds a resumed conversation's predecessor.
   *  A session first met without its program's id (Gemini's and opencode's MCP bridge see none)
   *  adopts the one a later helper's environment carries (Gemini's hooks get GEMINI_SESSION_ID),
   *  or its own process reports; a helper never replaces an id the card already has. Resumed by id
   *  on its command line (what `m4a open` prints), the program names it at first contact, which
   *  links its predecessor; resumed by a picker (`gemini --resume latest`), the id adopted late
   *  links it then, while nothing hangs off the lineage the session started (`linkLate`). */
  async sessionFor(account: AccountRecord, att: Attestation, reported?: string): Promise<SessionRecord> {
    if (account.bindProvider && att.corroborated.provider !== account.bindProvider) {
      throw new MailError('permission_denied', `account ${account.id} is bound to ${account.bindProvider} sessions`, { need: `provider:${account.bindProvider}` });
    }
    const key = `${account.id}/${att.sessionId}`;
    const now = this.clock.now();
    const own = reported !== undefined && att.peer.pid === att.session.pid && reportsOwnSession(att.corroborated.provider) ? reported : undefined;
    const facts = own === undefined ? att : { ...att, corroborated: { ...att.corroborated, provider_session_id: own } };
    let rec = this.known.get(key) ?? (await this.firstContact(key, account, facts, now));
    const id = facts.corroborated.provider_session_id;
    // Attestation is per connection: each helper's is read afresh, so a later one can name the id.
    if (id !== undefined && rec.corroborated.providerSessionId !== id && rec.corroborated.provider !== undefined && rec.corroborated.provider === facts.corroborated.provider) {
      rec = await this.adopt(key, account.id, rec, id, own !== undefined);
    }
    this.seen.set(key, { account: account.id, id: att.sessionId, at: now });
    if (now - this.lastFlush > TOUCH_FLUSH_MS) void this.flushTouches().catch(() => undefined);
    return rec;
  }

  /** Sets the card's conversation id: a first one from anyone the attestation vouches for, a switch
   *  only from the agent's own process (`switching`). */
  private adopt(key: string, account: string, rec: SessionRecord, id: string, switching: boolean): Promise<SessionRecord> {
    const run = async (): Promise<SessionRecord> => {
      const cur = this.known.get(key) ?? rec;
      const had = cur.corroborated.providerSessionId;
      if (had === id || (had !== undefined && !switching)) return cur;
      let next = (await this.store.setProviderSessionId(account, cur.id, id)) ?? cur;
      // A switch keeps the process's lineage: its earlier conversation's mail stays its mail.
      if (had === undefined) next = await this.linkLate(account, next, id);
      this.known.set(key, next);
      return next;
    };
    const p = (this.adopting.get(key) ?? Promise.resolve(rec)).then(run, run);
    this.adopting.set(key, p);
    const done = (): void => {
      if (this.adopting.get(key) === p) this.adopting.delete(key);
    };
    p.then(done, done);
    return p;
  }

  /** The session becomes the successor of the ended session its adopted id names, as at first
   *  contact, if the store finds nothing addressed to the lineage it started; else it keeps it. */
  private async linkLate(account: string, rec: SessionRecord, id: string): Promise<SessionRecord> {
    const pred = await this.predecessorOf(account, rec.corroborated.provider, id, rec.id);
    if (pred === null) return rec;
    const out = await this.store.joinLineage(account, rec.id, pred, this.clock.now(), lineageRecords(account, rec.lineage));
    const facts = { account, session: rec.id, predecessor: pred };
    if ('joined' in out) {
      this.opts.log?.info({ ...facts, lineage: out.joined.lineage }, 'session joined its predecessor by a late id');
      return out.joined;
    }
    this.opts.log?.info({ ...facts, reason: out.refused }, 'session keeps its own lineage: it cannot join its predecessor');
    return rec;
  }

  /** The latest session of the account with this conversation that has no successor and is not
   *  live: the one a new session with that id succeeds. */
  private async predecessorOf(account: string, provider: string | undefined, providerSessionId: string | undefined, self: string): Promise<string | null> {
    if (!provider || !providerSessionId) return null;
    for (const cand of await this.store.findByProviderSession(account, provider, providerSessionId)) {
      if (cand.id === self || cand.successor) continue;
      if (cand.endedAt === null && this.isLive(cand)) continue; // a live session is nobody's predecessor
      return cand.id;
    }
    return null;
  }

  private firstContact(key: string, account: AccountRecord, facts: Attestation, now: number): Promise<SessionRecord> {
    let p = this.pending.get(key);
    if (p === undefined) {
      const lookup = (async () => (await this.store.getSession(account.id, facts.sessionId)) ?? (await this.register(account, facts, now)))();
      p = lookup;
      this.pending.set(key, lookup);
      lookup.then(
        (rec) => {
          // Not when the account was forgotten meanwhile (removed): its next contact reads afresh.
          if (this.pending.get(key) !== lookup) return;
          this.known.set(key, rec);
          this.pending.delete(key);
        },
        () => {
          if (this.pending.get(key) === lookup) this.pending.delete(key);
        },
      );
    }
    return p;
  }

  private async register(account: AccountRecord, att: Attestation, now: number): Promise<SessionRecord> {
    const c = att.corroborated;
    const predecessor = await this.predecessorOf(account.id, c.provider, c.provider_session_id, att.sessionId);
    return this.store.registerSession({
      account: account.id,
      id: att.sessionId,
      hostId: this.opts.hostId,
      pid: att.session.pid,
      startTime: att.session.startTime,
      exe: att.session.exe,
      uid: att.session.uid,
      corroborated: { provider: c.provider, providerSessionId: c.provider_session_id, model: c.model, cwd: c.cwd },
      createdAt: now,
      predecessor,
      slugBase: slugFromCwd(c.cwd),
    });
  }

  /** Live: not marked ended and, on this host, its process (pid, start time) still runs. */
  isLive(s: SessionRecord): boolean {
    if (s.endedAt !== null) return false;
    if (s.hostId !== this.opts.hostId) return true;
    return this.opts.isAlive(s.pid, s.startTime);
  }

  /** Refresh a cached record after the store changed it (status, successor). */
  remember(rec: SessionRecord): void {
    this.known.set(`${rec.account}/${rec.id}`, rec);
  }

  forget(account: string): void {
    for (const k of this.known.keys()) if (k.startsWith(`${account}/`)) this.known.delete(k);
    for (const k of this.pending.keys()) if (k.startsWith(`${account}/`)) this.pending.delete(k);
  }

  async flushTouches(): Promise<void> {
    this.lastFlush = this.clock.now();
    if (this.seen.size === 0) return;
    const batch = [...this.seen.values()];
    this.seen.clear();
    await this.store.touchSessions(batch);
  }

  /** Marks sessions of this host whose process is gone as ended (`sessions`: which, so their
   *  leases end too); prunes long-ended ones. */
  async sweep(): Promise<{ ended: number; pruned: number; sessions: { account: string; id: string }[] }> {
    const now = this.clock.now();
    const sessions: { account: string; id: string }[] = [];
    for (const s of await this.store.listSessions()) {
      if (s.endedAt === null && s.hostId === this.opts.hostId && !this.opts.isAlive(s.pid, s.startTime)) {
        await this.store.endSession(s.account, s.id, now);
        this.known.delete(`${s.account}/${s.id}`);
        sessions.push({ account: s.account, id: s.id });
      }
    }
    const pruned = await this.store.pruneSessions(now - this.opts.retentionMs, now - Math.max(this.opts.retentionMs, this.opts.resumableRetentionMs ?? RESUMABLE_RETENTION_MS));
    return { ended: sessions.length, pruned, sessions };
  }
}
