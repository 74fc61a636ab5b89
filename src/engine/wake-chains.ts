// Delivery chains: per account (or per session lineage) an ordered list of wake adapters. Set by
// the local operator only: a chain runs programs and opens connections. The door refuses these
// routes from any peer that is not on this machine; the engine refuses any non-operator.
import { MailError } from '../wire/errors.js';
import type { WakeChainOut, WakeSetRequest, WakeStep } from '../wire/wake.js';
import type { AccountRecord, SessionRecord, Store } from '../store/types.js';
import type { Clock } from './clock.js';
import type { Caller } from './mail-engine.js';
import { iso } from './present.js';
import { findSession } from './names.js';
import { chainId, REC, type ChainRecord } from './wake-records.js';
import { incarnationOf } from './incarnation.js';

export const DEFAULT_DEBOUNCE_MS = 250;
/** Chains set through another daemon (shared store) are seen within this long. */
export const CHAIN_CACHE_MS = 2000;

/** Checks steps before they are stored (placeholders, URLs, listen targets). May return facts to
 *  show once, e.g. a webhook signing key created for this chain. */
export type StepCheck = (steps: WakeStep[]) => Promise<Record<string, string>>;

export class WakeChains {
  /** Every chain, by id; read from the store at most every CHAIN_CACHE_MS, so a commit for an
   *  account without a chain (most mail, most of the time) costs the dispatcher no store read. */
  private cache: { at: number; chains: Map<string, StoredChain> } | null = null;
  private loading: Promise<Map<string, StoredChain>> | null = null;

  constructor(
    private store: Store,
    private clock: Clock,
    private isLive: (s: SessionRecord) => boolean,
    private check: StepCheck = async () => ({}),
  ) {}

  private operatorOnly(c: Caller): void {
    if (!c.account.permissions.operator) throw new MailError('permission_denied', 'wake chains are set by the operator', { need: 'operator' });
  }

  private async lineageOf(account: string, session: string | undefined): Promise<{ lineage: string | null; incarnation: string }> {
    const acc = await this.store.getAccount(account);
    if (!acc) throw new MailError('unknown_participant', `no account ${account}`, { participant: account });
    const incarnation = incarnationOf(acc);
    if (session === undefined) return { lineage: null, incarnation };
    return { lineage: (await findSession(this.store, account, session, this.isLive)).lineage, incarnation };
  }

  async set(c: Caller, req: WakeSetRequest): Promise<{ chain: WakeChainOut } & Record<string, unknown>> {
    this.operatorOnly(c);
    const { lineage, incarnation } = await this.lineageOf(req.account, req.session);
    const shown = await this.check(req.steps);
    const rec: ChainRecord = { account: req.account, lineage, steps: req.steps, rooms: req.rooms ?? false, debounceMs: req.debounce_ms ?? DEFAULT_DEBOUNCE_MS, incarnation };
    const at = this.clock.now();
    await this.store.putRecord({ kind: REC.chain, id: chainId(req.account, lineage), value: JSON.stringify(rec), updatedAt: at });
    this.cache = null;
    return { chain: present(rec, at), ...shown };
  }

  async list(c: Caller): Promise<{ chains: WakeChainOut[] }> {
    this.operatorOnly(c);
    const rows = await this.store.listRecords(REC.chain, '', 10_000);
    const accounts = new Map((await this.store.listAccounts()).map((a) => [a.id, a]));
    const chains = rows.map((r) => ({ rec: JSON.parse(r.value) as ChainRecord, at: r.updatedAt }));
    return { chains: chains.filter((c) => ownChain(c, accounts.get(c.rec.account) ?? null)).map((c) => present(c.rec, c.at)) };
  }

  async clear(c: Caller, req: { account: string; session?: string | undefined }): Promise<{ ok: true }> {
    this.operatorOnly(c);
    const { lineage } = await this.lineageOf(req.account, req.session);
    const removed = await this.store.deleteRecord(REC.chain, chainId(req.account, lineage));
    this.cache = null;
    if (!removed) throw new MailError('unknown_participant', `no wake chain for ${chainId(req.account, lineage)}`, { participant: req.account });
    return { ok: true };
  }

  /** The chain that applies: the lineage's own, else the account's. */
  async chainFor(account: string, lineage: string | null): Promise<ChainRecord | null> {
    const all = await this.all();
    const chain = (lineage ? all.get(chainId(account, lineage)) : undefined) ?? all.get(account) ?? null;
    if (!chain) return null;
    // Removal (and creation) deletes the chain, but a cache (this one for CHAIN_CACHE_MS, another
    // daemon's) may still hold it: it runs only for the account it was set for.
    return ownChain(chain, await this.store.getAccount(account)) ? chain.rec : null;
  }

  /** Whether any chain (the account's or one of its lineages') exists: a cheap first filter. */
  async anyFor(account: string): Promise<boolean> {
    for (const c of (await this.all()).values()) if (c.rec.account === account) return true;
    return false;
  }

  /** Whether any chain wakes for room mail. */
  async anyForRooms(): Promise<boolean> {
    for (const c of (await this.all()).values()) if (c.rec.rooms) return true;
    return false;
  }

  private async all(): Promise<Map<string, StoredChain>> {
    if (this.cache && this.clock.now() - this.cache.at < CHAIN_CACHE_MS) return this.cache.chains;
    this.loading ??= (async () => {
      try {
        const rows = await this.store.listRecords(REC.chain, '', 100_000);
        const chains = new Map(rows.map((r) => [r.id, { rec: JSON.parse(r.value) as ChainRecord, at: r.updatedAt }]));
        this.cache = { at: this.clock.now(), chains };
        return chains;
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }
}

/** A chain as stored: the record and when it was set. */
interface StoredChain {
  rec: ChainRecord;
  at: number;
}

/** Whether the chain was set for this account, not for a removed one of the same name. A chain
 *  without an incarnation (set by an earlier build) counts only if set after the account was made. */
function ownChain(c: StoredChain, acc: AccountRecord | null): boolean {
  if (!acc) return false;
  return c.rec.incarnation === undefined ? c.at >= acc.createdAt : c.rec.incarnation === incarnationOf(acc);
}

function present(r: ChainRecord, at: number): WakeChainOut {
  return { account: r.account, lineage: r.lineage, steps: r.steps, rooms: r.rooms, debounce_ms: r.debounceMs, updated_at: iso(at) };
}
