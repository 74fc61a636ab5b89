// Decides who to wake, when, and how; records every attempt. When mail commits, each recipient
// that has a delivery chain and is not already awake (a parked inbox read is awake: it just got
// its answer) is woken after a short debounce, one wake in flight per recipient, by the first
// adapter of its chain that succeeds. Mail stays in the inbox whatever happens: a failed wake
// loses nothing, and the agent fetches the mail itself with its own credential.
import { wakeText } from '../wire/wake-text.js';
import type { WakeStep } from '../wire/wake.js';
import { type SessionRecord, type StoredMessage } from '../store/types.js';
import type { MailEngine } from '../engine/mail-engine.js';
import type { WakeChains } from '../engine/wake-chains.js';
import { senderAddress } from '../engine/present.js';
import { attemptId, recipientOf, REC, type AttemptRecord, type ChainRecord } from '../engine/wake-records.js';
import type { WakeAdapter, WakeRequest, WakeSession } from './types.js';
import { HeldWakes } from './held-wakes.js';

export interface DispatcherOptions {
  engine: MailEngine;
  chains: WakeChains;
  /** The adapter for a step (the daemon caches them: one connection per app-server, one cap). */
  adapterFor(step: WakeStep): WakeAdapter;
  hostId: string;
  /** Extra wait before waking a session that lives on another host (its own daemon goes first). */
  foreignGraceMs?: number;
}

interface Target {
  account: string;
  /** Session mail: the lineage it was sent to; direct and room mail: null (the dispatcher picks). */
  lineage: string | null;
}

interface Pending {
  target: Target;
  mail: Map<string, StoredMessage>;
  armed: (() => void) | null;
}

/** At most this many messages are named in one wake (the rest: "and more"). */
const WAKE_LIST_MAX = 20;

export class WakeDispatcher {
  private pending = new Map<string, Pending>();
  private running = new Map<string, Promise<void>>();
  private controller = new AbortController();
  private unsubscribe: (() => void) | null = null;
  private offAttention: (() => void) | null = null;
  private seq = 0;
  /** Wakes quiet hours hold (held-wakes.ts). */
  readonly held: HeldWakes;
  /** Released held wakes whose "surfaced" came from a hook notice that held them back, not a read. */
  private untold = new Set<string>();
  /** Counters for tests and `doctor`. */
  readonly stats = { considered: 0, awake: 0, runs: 0, signalled: 0, failed: 0 };
  /** Wake attempts by `<adapter>|ok` or `<adapter>|failed` (the daemon's metrics). */
  readonly attemptCounts = new Map<string, number>();

  constructor(private o: DispatcherOptions) {
    this.held = new HeldWakes({
      engine: o.engine,
      record: (mail, recipient, a) => this.record(mail, recipient, a),
      eventId: () => this.eventId(),
      picked: async (t) => (await this.pickSession(t))?.record.lineage ?? null,
      wake: async (t, m, untold) => {
        const chain = await this.o.chains.chainFor(t.account, t.lineage);
        if (!chain || (!chain.rooms && m.toKey.startsWith('r:')) || this.controller.signal.aborted) return;
        if (untold) this.untold.add(`${m.id}|${recipientOf(t.account, t.lineage)}`);
        this.enqueue(t, m, chain);
      },
      warn: (msg, err) => this.warn(msg, err),
    });
  }

  start(): void {
    this.unsubscribe = this.o.engine.store.onCommit((e) => {
      const woken = this.o.engine.wokenBy(e.seq);
      for (const key of e.keys) void this.consider(key, e.seq, woken).catch((err: unknown) => this.warn('wake dispatch failed', err));
    });
    // Quiet hours: a period's end wakes what it held; at start, periods that ended meanwhile do.
    const attention = this.o.engine.attention;
    this.offAttention = attention.onEnd((account) => void this.held.release(account));
    void attention
      .start()
      .then(() => this.held.releaseAll())
      .catch((err: unknown) => this.warn('starting quiet hours failed', err));
  }

  async close(): Promise<void> {
    this.unsubscribe?.();
    this.offAttention?.();
    this.controller.abort();
    await this.held.idle();
    for (const p of this.pending.values()) p.armed?.();
    this.pending.clear();
    await Promise.allSettled([...this.running.values()]);
  }

  /** Waits until nothing is debouncing or running (tests). */
  async idle(): Promise<void> {
    for (;;) {
      await this.held.idle();
      if (this.running.size === 0) return;
      await Promise.allSettled([...this.running.values()]);
    }
  }

  private warn(msg: string, err: unknown): void {
    this.o.engine.log.warn({ err: err instanceof Error ? err.message : String(err) }, msg);
  }

  private async consider(key: string, seq: number, woken: string[]): Promise<void> {
    // Most mail goes to accounts without a chain: decide that from the key, without a store read.
    if (key.startsWith('r:') ? !(await this.o.chains.anyForRooms()) : !(await this.o.chains.anyFor(accountOfKey(key)))) return;
    const [m] = await this.o.engine.store.messagesAfter(key, seq - 1, 1);
    if (!m || m.seq !== seq) return;
    for (const target of await this.targetsOf(m)) {
      this.stats.considered++;
      const chain = await this.o.chains.chainFor(target.account, target.lineage);
      if (!chain) continue;
      if (m.toKey.startsWith('r:') && !chain.rooms) continue;
      const owner = await this.awakeOwner(target, woken);
      if (owner) {
        this.stats.awake++;
        await this.record([m], recipientOf(target.account, target.lineage), {
          eventId: this.eventId(),
          adapter: 'wait',
          at: this.o.engine.clock.now(),
          ok: true,
          detail: `answered the parked inbox read of ${owner}`,
        });
        continue;
      }
      this.enqueue(target, m, chain);
    }
  }

  /** Direct mail: the account; session mail: that lineage; room mail: every other member. */
  private async targetsOf(m: StoredMessage): Promise<Target[]> {
    if (m.toKey.startsWith('a:')) return [{ account: m.toKey.slice(2), lineage: null }];
    if (m.toKey.startsWith('s:')) {
      const rest = m.toKey.slice(2);
      const slash = rest.indexOf('/');
      return [{ account: rest.slice(0, slash), lineage: rest.slice(slash + 1) }];
    }
    const room = await this.o.engine.store.getRoom(m.toKey.slice(2));
    return (room?.members ?? []).filter((a) => a !== m.fromAccount).map((account) => ({ account, lineage: null }));
  }

  /** A reader of the target that this very commit answered, if any. */
  private async awakeOwner(t: Target, woken: string[]): Promise<string | null> {
    for (const owner of woken) {
      const slash = owner.indexOf('/');
      const account = slash < 0 ? owner : owner.slice(0, slash);
      if (account !== t.account) continue;
      if (t.lineage === null) return owner;
      if (slash < 0) continue; // a reader without a session does not read session mail
      const s = await this.o.engine.store.getSession(account, owner.slice(slash + 1));
      if (s?.lineage === t.lineage) return owner;
    }
    return null;
  }

  private enqueue(target: Target, m: StoredMessage, chain: ChainRecord): void {
    const key = recipientOf(target.account, target.lineage);
    let p = this.pending.get(key);
    if (!p) this.pending.set(key, (p = { target, mail: new Map(), armed: null }));
    p.mail.set(m.id, m);
    // Debounce: a burst becomes one wake; a wake already running picks the rest up when it ends.
    if (!p.armed && !this.running.has(key)) p.armed = this.o.engine.clock.timer(chain.debounceMs, () => this.launch(key));
  }

  private launch(key: string): void {
    const p = this.pending.get(key);
    if (!p || this.running.has(key)) return;
    this.pending.delete(key);
    p.armed = null;
    const run = this.run(key, p)
      .catch((err: unknown) => this.warn('wake run failed', err))
      .finally(() => {
        this.running.delete(key);
        const next = this.pending.get(key);
        if (next && !next.armed && !this.controller.signal.aborted) next.armed = this.o.engine.clock.timer(0, () => this.launch(key));
      });
    this.running.set(key, run);
  }

  private async run(key: string, p: Pending): Promise<void> {
    const e = this.o.engine;
    const recipient = key;
    let mail = [...p.mail.values()].sort((a, b) => a.seq - b.seq);
    // The loop guard stored these but lets them wake nobody.
    // The commit that queued them can come before the verdict (debounce 0): wait for it.
    const verdicts = await Promise.all(mail.map((m) => e.loopVerdict(m.id)));
    const quiet = mail.filter((_, i) => verdicts[i]);
    if (quiet.length > 0)
      await this.record(quiet, recipient, { eventId: this.eventId(), adapter: 'loop-guard', at: e.clock.now(), ok: false, detail: 'loop guard: stored, wakes nobody' });
    mail = mail.filter((_, i) => !verdicts[i]);
    // Read or acknowledged meanwhile: the agent is at it already.
    const seen = await Promise.all(mail.map((m) => e.store.getRecord(REC.surfaced, `${m.id}|${recipient}`)));
    mail = mail.filter((m, i) => this.untold.delete(`${m.id}|${recipient}`) || !seen[i]);
    if (mail.length === 0) return;

    const chain = await this.o.chains.chainFor(p.target.account, p.target.lineage);
    if (!chain) return;
    const session = await this.pickSession(p.target);
    // Quiet hours: what a period holds waits for its end (held-wakes.ts); urgent mail never does.
    mail = await this.held.hold(mail, recipient, p.target, session?.record.lineage ?? null);
    if (mail.length === 0) return;
    if (session && session.record.hostId !== this.o.hostId) await this.sleep(this.o.foreignGraceMs ?? 2000);
    // Several daemons may share the store: the first to claim a (message, recipient) wakes it. A
    // store that is not shared has one daemon (the data directory's lock): nothing to claim.
    if (e.store.shared) {
      const now = e.clock.now();
      const claimed = new Set(
        await e.store.insertRecords(mail.map((m) => ({ kind: REC.claim, id: `${m.id}|${recipient}`, value: JSON.stringify({ host: this.o.hostId, at: now }), updatedAt: now }))),
      );
      mail = mail.filter((m) => claimed.has(`${m.id}|${recipient}`));
      if (mail.length === 0) return;
    }

    this.stats.runs++;
    const listed = mail.slice(0, WAKE_LIST_MAX);
    // Senders as every answer prints them (account/slug …): the form the agent writes back.
    const names = await e.printAddresses(listed.map(senderAddress));
    const shown = listed.map((m) => ({
      message_id: m.id,
      from: names.get(senderAddress(m)) ?? senderAddress(m),
      subject: m.subject,
      priority: m.priority,
      thread_id: m.threadId,
      ...(m.fromKind === 'external' ? { external: true as const } : {}),
      ...(m.via ? { delegate: m.via.delegate } : {}),
    }));
    const base: Omit<WakeRequest, 'eventId'> = {
      account: p.target.account,
      session: session?.wake ?? null,
      mail: shown,
      urgent: mail.some((m) => m.priority === 'urgent'),
      text: wakeText(
        shown.map((m) => ({ message_id: m.message_id, from: m.from, subject: m.subject, priority: m.priority, external: m.external, delegate: m.delegate })),
        mail.length > shown.length,
      ),
    };
    // Every attempt of this run is written in one transaction at its end (one fsync, not one per step).
    const attempts: AttemptRecord[] = [];
    try {
      for (const step of chain.steps) {
        if (this.controller.signal.aborted) return;
        const eventId = this.eventId();
        let result: { ok: boolean; detail: string };
        try {
          result = await this.o.adapterFor(step).wake({ ...base, eventId }, this.controller.signal);
        } catch (err) {
          result = { ok: false, detail: `adapter failed: ${err instanceof Error ? err.message : String(err)}` };
        }
        attempts.push({ eventId, adapter: step.kind, at: e.clock.now(), ok: result.ok, detail: result.detail.slice(0, 500) });
        const counted = `${step.kind}|${result.ok ? 'ok' : 'failed'}`;
        this.attemptCounts.set(counted, (this.attemptCounts.get(counted) ?? 0) + 1);
        if (result.ok) {
          this.stats.signalled++;
          return;
        }
      }
      this.stats.failed++;
    } finally {
      await this.recordAll(mail, recipient, attempts);
    }
  }

  /** Session mail: the lineage's newest session. Account mail: a listening live session, else the
   *  most recently active live one, else the most recent one (a command may resume it). */
  private async pickSession(t: Target): Promise<{ record: SessionRecord; wake: WakeSession } | null> {
    const e = this.o.engine;
    let sessions: SessionRecord[];
    if (t.lineage) sessions = await e.store.lineageSessions(t.account, t.lineage);
    else sessions = (await e.store.listSessions()).filter((s) => s.account === t.account);
    if (sessions.length === 0) return null;
    const listening = (s: SessionRecord) => e.hookState(s.account, s.lineage).listening;
    const live = sessions.filter((s) => e.isLive(s));
    const byRecent = (a: SessionRecord, b: SessionRecord) => b.lastSeen - a.lastSeen || b.createdAt - a.createdAt;
    const chosen = live.find(listening) ?? [...live].sort(byRecent)[0] ?? [...sessions].sort((a, b) => b.createdAt - a.createdAt)[0]!;
    return {
      record: chosen,
      wake: {
        id: chosen.id,
        lineage: chosen.lineage,
        slug: chosen.slug,
        pid: chosen.pid,
        live: e.isLive(chosen),
        provider: chosen.corroborated.provider ?? null,
        providerSessionId: chosen.corroborated.providerSessionId ?? null,
        cwd: chosen.corroborated.cwd ?? null,
        listening: listening(chosen),
      },
    };
  }

  private record(mail: StoredMessage[], recipient: string, a: AttemptRecord): Promise<void> {
    return this.recordAll(mail, recipient, [a]);
  }

  private async recordAll(mail: StoredMessage[], recipient: string, attempts: AttemptRecord[]): Promise<void> {
    if (attempts.length === 0 || mail.length === 0) return;
    const rows = attempts.flatMap((a) => {
      const value = JSON.stringify(a);
      const n = this.seq++;
      return mail.map((m) => ({ kind: REC.attempt, id: attemptId(m.id, recipient, a.at, n), value, updatedAt: a.at }));
    });
    await this.o.engine.store.insertRecords(rows).catch((err: unknown) => this.warn('recording a wake attempt failed', err));
  }

  private eventId(): string {
    return `ev-${this.o.engine.clock.now().toString(36)}-${(this.seq++).toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((r) => this.o.engine.clock.timer(ms, r));
  }
}

/** The account of an `a:` or `s:` mail key. */
function accountOfKey(key: string): string {
  const rest = key.slice(2);
  const slash = rest.indexOf('/');
  return slash < 0 ? rest : rest.slice(0, slash);
}
