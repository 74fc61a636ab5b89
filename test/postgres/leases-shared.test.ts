// Leases on one schema shared by two PostgresStore instances (two daemons): concurrent claims of
// one resource have exactly one winner, concurrent expiry sweeps return each lease once, epochs
// only grow, and a renew whose `now` is stale cannot revive a lease another daemon already replaced.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { LeaseClaimOutcome, LeaseRecord, NewLease } from '../../src/store/types.js';
import { freshSchema, noteFailure, pgSkip } from './support/pg.js';

const opened: PostgresStore[] = [];
after(async () => {
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

const kept = (fn: () => Promise<void>) => async (): Promise<void> => {
  try {
    await fn();
  } catch (err) {
    noteFailure();
    throw err;
  }
};

function lease(id: string, over: Partial<NewLease> = {}): NewLease {
  return {
    id,
    space: 'task:t-1',
    resource: 't-1',
    mode: 'exclusive',
    holderAccount: 'bob',
    holderSession: `s-${id}`,
    holderLineage: `s-${id}`,
    holderAddress: `bob/s-${id}`,
    reason: null,
    createdAt: 1_000,
    expiresAt: 11_000,
    attempt: 1,
    ...over,
  };
}

/** The engine's rule for a task: any live lease conflicts. */
const opts = (now: number) => ({ now, maxPerHolder: 64, conflicts: () => true });

describe('postgres: leases shared by two stores on one schema', { skip: pgSkip }, () => {
  let a: PostgresStore;
  let b: PostgresStore;
  before(async () => {
    const { spec } = await freshSchema('leases');
    a = await openPostgresStore({ spec, max: 4 });
    opened.push(a);
    b = await openPostgresStore({ spec, max: 4 });
    opened.push(b);
  });

  it(
    'of 200 claims of one exclusive resource from both at once, exactly one wins; the others conflict with it, no other error',
    kept(async () => {
      const claims = Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).claimLease(lease(`l-c${i}`, { space: 'task:t-race', resource: 't-race' }), opts(1_000)));
      const settled = await Promise.allSettled(claims);
      const failed = settled.filter((s) => s.status === 'rejected');
      assert.deepEqual(failed, [], 'no error of another kind');
      const outs = settled.map((s) => (s as PromiseFulfilledResult<LeaseClaimOutcome>).value);
      const won = outs.filter((o) => o.kind === 'claimed');
      assert.equal(won.length, 1, JSON.stringify(outs.map((o) => o.kind)));
      const winner = (won[0] as Extract<LeaseClaimOutcome, { kind: 'claimed' }>).lease;
      assert.equal(winner.epoch, 1);
      const conflicts = outs.filter((o) => o.kind === 'conflict');
      assert.equal(conflicts.length, 199);
      for (const c of conflicts) assert.deepEqual(c.holders, [winner]);
      assert.deepEqual(
        (await b.listLeases({ space: 'task:t-race', now: 1_000, limit: 10 })).map((l) => l.id),
        [winner.id],
      );
    }),
  );

  it(
    'expiry swept from both at once returns each expired lease exactly once',
    kept(async () => {
      const n = 120;
      for (let i = 0; i < n; i++)
        await (i % 2 ? a : b).claimLease(lease(`l-e${String(i).padStart(3, '0')}`, { space: `task:e-${i}`, resource: `e-${i}`, expiresAt: 2_000 + i }), opts(1_000));
      const live = await a.claimLease(lease('l-e-live', { space: 'task:e-live', resource: 'e-live', expiresAt: 50_000 }), opts(1_000));
      assert.equal(live.kind, 'claimed');
      // Rounds of four sweeps at once, two from each store, until a round finds nothing.
      const fromA: string[] = [];
      const fromB: string[] = [];
      for (let round = 0; ; round++) {
        assert.ok(round < n, 'the sweeps end');
        const outs = await Promise.all([a, a, b, b].map((s) => s.expireLeases(10_000, 7)));
        if (outs.every((o) => o.length === 0)) break;
        for (const [i, ended] of outs.entries()) {
          assert.ok(ended.length <= 7, `at most limit: ${ended.length}`);
          for (const l of ended) assert.deepEqual([l.endReason, l.endedAt, l.settled], ['expired', 10_000, false]);
          (i < 2 ? fromA : fromB).push(...ended.map((l) => l.id));
        }
      }
      const all = [...fromA, ...fromB];
      assert.equal(all.length, n, 'every expired lease returned');
      assert.equal(new Set(all).size, n, 'none twice');
      assert.ok(fromA.length > 0 && fromB.length > 0, `both swept: ${fromA.length} and ${fromB.length}`);
      assert.equal((await b.getLease('l-e-live'))?.endedAt, null, 'a live lease is not expired');
      assert.deepEqual(await a.expireLeases(10_000, 100), []);
    }),
  );

  it(
    'epochs of one resource strictly increase while claimants on both take turns, and never two hold it at once',
    kept(async () => {
      const epochs: number[] = [];
      let holding = 0;
      let most = 0;
      let seq = 0;
      const worker = async (store: PostgresStore, w: number) => {
        for (let round = 0; round < 15; round++) {
          const out = await store.claimLease(lease(`l-w${w}-${seq++}`, { space: 'task:t-turns', resource: 't-turns', holderSession: `s-w${w}` }), opts(1_000));
          if (out.kind !== 'claimed') {
            assert.equal(out.kind, 'conflict');
            continue;
          }
          holding++;
          most = Math.max(most, holding);
          epochs.push(out.lease.epoch);
          holding--; // before the release commits: a next claim can only succeed after it
          const ended = await store.endLease(out.lease.id, out.lease.epoch, 'released', 1_000);
          assert.equal(ended?.endReason, 'released');
        }
      };
      await Promise.all([0, 1, 2, 3, 4, 5].map((w) => worker(w % 2 ? a : b, w)));
      assert.equal(most, 1, 'one holder at a time');
      assert.ok(epochs.length >= 6, `${epochs.length} claims won`);
      assert.deepEqual(
        epochs,
        epochs.map((_, i) => i + 1),
        'in the order the claims won: 1, 2, 3 … (a refused claim takes none)',
      );
    }),
  );

  it(
    'a renew whose now was read before the lease expired cannot revive it once another store claimed the resource after its expiry',
    kept(async () => {
      const first = await a.claimLease(lease('l-r1', { space: 'task:t-renew', resource: 't-renew', expiresAt: 2_000 }), opts(1_000));
      assert.equal(first.kind, 'claimed');
      const second = await b.claimLease(lease('l-r2', { space: 'task:t-renew', resource: 't-renew', holderAccount: 'carol', createdAt: 2_000, expiresAt: 12_000 }), opts(2_000));
      assert.equal(second.kind, 'claimed');
      assert.equal((second as { lease: LeaseRecord }).lease.epoch, 2);
      // A's renew was decided at 1 500 (live then) but reaches the database after B's claim.
      assert.equal(await a.renewLease('l-r1', 1, 20_000, 1_500), null);
      assert.equal((await a.getLease('l-r1'))?.expiresAt, 2_000);
      assert.deepEqual(
        (await a.listLeases({ space: 'task:t-renew', now: 2_500, limit: 10 })).map((l) => l.id),
        ['l-r2'],
      );
      // A renew that comes first extends the lease, and the later claim sees it.
      const c = await a.claimLease(lease('l-r3', { space: 'task:t-renew2', resource: 't-renew2', expiresAt: 2_000 }), opts(1_000));
      assert.equal(c.kind, 'claimed');
      assert.equal((await a.renewLease('l-r3', 1, 20_000, 1_500))?.expiresAt, 20_000);
      const d = await b.claimLease(lease('l-r4', { space: 'task:t-renew2', resource: 't-renew2', createdAt: 2_000 }), opts(2_000));
      assert.deepEqual(d.kind === 'conflict' && d.holders.map((l) => l.id), ['l-r3']);
    }),
  );
});
