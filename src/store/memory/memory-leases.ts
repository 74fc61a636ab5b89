// Leases in the memory store. Every call runs to completion in one turn, so each is atomic as the
// SQL stores' transactions are; epochs live in their own map so they outlive pruned leases.
import type { LeaseClaimOutcome, LeaseEndReason, LeaseQuery, LeaseRecord, NewLease } from '../types.js';
import { binaryCompare } from './binary-compare.js';

const copy = (l: LeaseRecord): LeaseRecord => ({ ...l });
const live = (l: LeaseRecord, now: number): boolean => l.endedAt === null && l.expiresAt > now;
const epochKey = (space: string, resource: string) => `${space}\n${resource}`;
const bySpaceThenId = (a: LeaseRecord, b: LeaseRecord): number => binaryCompare(a.space, b.space) || binaryCompare(a.id, b.id);

export class MemoryLeases {
  private readonly leases = new Map<string, LeaseRecord>();
  /** (space, resource) -> the last epoch handed out. */
  private readonly epochs = new Map<string, number>();

  async claimLease(l: NewLease, o: { now: number; maxPerHolder: number; conflicts(other: LeaseRecord): boolean }): Promise<LeaseClaimOutcome> {
    let held = 0;
    for (const x of this.leases.values()) {
      if (live(x, o.now) && x.holderAccount === l.holderAccount && x.holderSession === l.holderSession) held++;
    }
    if (held >= o.maxPerHolder) return { kind: 'too_many', held };
    const holders = [...this.leases.values()].filter((x) => x.space === l.space && live(x, o.now) && o.conflicts(copy(x)));
    if (holders.length > 0) {
      holders.sort((a, b) => a.createdAt - b.createdAt || binaryCompare(a.id, b.id));
      return { kind: 'conflict', holders: holders.map(copy) };
    }
    if (this.leases.has(l.id)) throw new Error(`lease id ${l.id} already exists`);
    const key = epochKey(l.space, l.resource);
    const epoch = (this.epochs.get(key) ?? 0) + 1;
    this.epochs.set(key, epoch);
    const rec: LeaseRecord = { ...l, epoch, endedAt: null, endReason: null, settled: false };
    this.leases.set(rec.id, rec);
    return { kind: 'claimed', lease: copy(rec) };
  }

  async renewLease(id: string, epoch: number, expiresAt: number, now: number): Promise<LeaseRecord | null> {
    const l = this.current(id, epoch, now);
    if (!l) return null;
    l.expiresAt = expiresAt;
    return copy(l);
  }

  async endLease(id: string, epoch: number, reason: LeaseEndReason, now: number): Promise<LeaseRecord | null> {
    const l = this.current(id, epoch, now);
    return l ? this.end(l, reason, now) : null;
  }

  async expireLeases(now: number, limit: number): Promise<LeaseRecord[]> {
    if (limit <= 0) return [];
    return [...this.leases.values()]
      .filter((l) => l.endedAt === null && l.expiresAt <= now)
      .sort((a, b) => a.expiresAt - b.expiresAt || binaryCompare(a.id, b.id))
      .slice(0, limit)
      .map((l) => this.end(l, 'expired', now));
  }

  async endSessionLeases(account: string, session: string, now: number): Promise<LeaseRecord[]> {
    return [...this.leases.values()]
      .filter((l) => l.holderAccount === account && l.holderSession === session && live(l, now))
      .sort(bySpaceThenId)
      .map((l) => this.end(l, 'session_ended', now));
  }

  async getLease(id: string): Promise<LeaseRecord | null> {
    const l = this.leases.get(id);
    return l ? copy(l) : null;
  }

  async listLeases(q: LeaseQuery): Promise<LeaseRecord[]> {
    if (q.limit <= 0) return [];
    return [...this.leases.values()]
      .filter(
        (l) =>
          live(l, q.now) &&
          (q.space === undefined || l.space === q.space) &&
          (q.spacePrefix === undefined || l.space.startsWith(q.spacePrefix)) &&
          (q.holderAccount === undefined || l.holderAccount === q.holderAccount) &&
          (q.holderSession === undefined || l.holderSession === q.holderSession),
      )
      .sort(bySpaceThenId)
      .slice(0, q.limit)
      .map(copy);
  }

  async unsettledLeases(limit: number): Promise<LeaseRecord[]> {
    if (limit <= 0) return [];
    return [...this.leases.values()]
      .filter((l) => l.endedAt !== null && !l.settled)
      .sort((a, b) => (a.endedAt as number) - (b.endedAt as number) || binaryCompare(a.id, b.id))
      .slice(0, limit)
      .map(copy);
  }

  async settleLease(id: string): Promise<void> {
    const l = this.leases.get(id);
    // Only an end is settled: a live lease's end is still to be acted on.
    if (l && l.endedAt !== null) l.settled = true;
  }

  async pruneLeases(before: number): Promise<number> {
    let n = 0;
    for (const [id, l] of this.leases) {
      if (l.settled && l.endedAt !== null && l.endedAt < before) {
        this.leases.delete(id);
        n++;
      }
    }
    return n;
  }

  /** The account is removed, or created under a name used before: every lease of it not ended yet
   *  ends (account_removed) and waits to be settled, so a pooled task it held goes back. */
  endAccountLeases(account: string, at: number): void {
    for (const l of this.leases.values()) if (l.holderAccount === account && l.endedAt === null) this.end(l, 'account_removed', at);
  }

  /** Whether a lease row (live, or ended and not pruned yet) names this lineage of the account as
   *  its holder's (joinLineage refuses then). */
  heldByLineage(account: string, lineage: string): boolean {
    for (const l of this.leases.values()) if (l.holderAccount === account && l.holderLineage === lineage) return true;
    return false;
  }

  /** The live lease `id` if its epoch is `epoch`. */
  private current(id: string, epoch: number, now: number): LeaseRecord | null {
    const l = this.leases.get(id);
    return l && l.epoch === epoch && live(l, now) ? l : null;
  }

  private end(l: LeaseRecord, reason: LeaseEndReason, at: number): LeaseRecord {
    Object.assign(l, { endedAt: at, endReason: reason, settled: false });
    return copy(l);
  }
}
