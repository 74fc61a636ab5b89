// Sessions: registered on first contact from the attested process, succeeded on restart, ended
// when their process is gone, pruned from the directory after a retention time (mail stays).
import { MailError } from '../wire/errors.js';
import type { AccountRecord, SessionRecord, Store } from '../store/types.js';
import type { Attestation } from '../attest/types.js';
import type { Clock } from './clock.js';
import { slugFromCwd } from './names.js';
import { isExtensionProvider } from '../wire/capabilities.js';

export interface SessionBookOptions {
  hostId: string;
  /** Liveness of a process on this host; sessions of other hosts rely on their own daemon. */
  isAlive(pid: number, startTime: number): boolean;
  retentionMs: number;
  /** How long an ended pi or omp session stays (its conversation may resume and read what waited). */
  resumableRetentionMs?: number;
}

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

  /** The session of `account` that the attested process is, registered on first contact.
   *  `reported`: the conversation id a pi or omp extension names for its own process (taken only
   *  from the agent process itself, never from a helper it runs); the session's card follows it
   *  when the agent switches conversations, and the first one finds a resumed conversation's
   *  predecessor. */
  async sessionFor(account: AccountRecord, att: Attestation, reported?: string): Promise<SessionRecord> {
    if (account.bindProvider && att.corroborated.provider !== account.bindProvider) {
      throw new MailError('permission_denied', `account ${account.id} is bound to ${account.bindProvider} sessions`, { need: `provider:${account.bindProvider}` });
    }
    const key = `${account.id}/${att.sessionId}`;
    const now = this.clock.now();
    const own = reported !== undefined && att.peer.pid === att.session.pid && isExtensionProvider(att.corroborated.provider) ? reported : undefined;
    let rec =
      this.known.get(key) ?? (await this.firstContact(key, account, own === undefined ? att : { ...att, corroborated: { ...att.corroborated, provider_session_id: own } }, now));
    if (own !== undefined && rec.corroborated.providerSessionId !== own) {
      rec = (await this.store.setProviderSessionId(account.id, rec.id, own)) ?? rec;
      this.known.set(key, rec);
    }
    this.seen.set(key, { account: account.id, id: att.sessionId, at: now });
    if (now - this.lastFlush > TOUCH_FLUSH_MS) void this.flushTouches().catch(() => undefined);
    return rec;
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
    let predecessor: string | null = null;
    if (c.provider && c.provider_session_id) {
      for (const cand of await this.store.findByProviderSession(account.id, c.provider, c.provider_session_id)) {
        if (cand.id === att.sessionId || cand.successor) continue;
        if (cand.endedAt === null && this.isLive(cand)) continue; // a live session is nobody's predecessor
        predecessor = cand.id;
        break;
      }
    }
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
