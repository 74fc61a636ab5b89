// The store contract of leases (LeaseStore), run against every store: claims in one transaction
// (too_many, then conflicts oldest first, then the next epoch), renew and release by epoch, expiry
// exactly once, session ends, settling and pruning, lists, and removal of the holder's account.
// The pooled-task fields of tasks are pool-conformance.ts, run from here. Each case gets a fresh
// store from `open`.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { LeaseClaimOutcome, LeaseQuery, LeaseRecord, NewLease, Store } from '../../src/store/types.js';
import { account } from './store-conformance.js';
import { runPoolConformance } from './pool-conformance.js';

// ---- fixtures (exported for store-specific tests)

/** A claim of pooled task t-1 by bob's session s-b1, live from 1 000 to 11 000. */
export function lease(id: string, over: Partial<NewLease> = {}): NewLease {
  return {
    id,
    space: 'task:t-1',
    resource: 't-1',
    mode: 'exclusive',
    holderAccount: 'bob',
    holderSession: 's-b1',
    holderLineage: 's-b1',
    holderAddress: 'bob/s-b1',
    reason: null,
    createdAt: 1_000,
    expiresAt: 11_000,
    attempt: 1,
    ...over,
  };
}

/** A file reservation under /repo. */
export const pathLease = (id: string, glob: string, over: Partial<NewLease> = {}): NewLease => lease(id, { space: 'path:/repo', resource: glob, ...over });

/** The engine's two rules, simplified: a task conflicts with any live lease; paths conflict when
 *  the globs are equal (the engine compares overlap) and not both shared. */
export const anyLive = (): boolean => true;
export const pathRule =
  (mine: NewLease) =>
  (other: LeaseRecord): boolean =>
    other.resource === mine.resource && (other.mode === 'exclusive' || mine.mode === 'exclusive');

export const claimOpts = (now: number, conflicts: (o: LeaseRecord) => boolean = anyLive, maxPerHolder = 64) => ({ now, maxPerHolder, conflicts });

const ids = (ls: { id: string }[]): string[] => ls.map((l) => l.id);
const sortedIds = (ls: { id: string }[]): string[] => ids(ls).sort();

/** The record a fresh claim stores. */
const stored = (l: NewLease, epoch: number): LeaseRecord => ({ ...l, epoch, endedAt: null, endReason: null, settled: false });

export function runLeaseConformance(name: string, open: () => Promise<Store>): void {
  describe(`lease conformance: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    /** Claims and insists it was claimed. */
    async function claim(l: NewLease, now = l.createdAt, conflicts = l.space.startsWith('path:') ? pathRule(l) : anyLive, max = 64): Promise<LeaseRecord> {
      const out = await store.claimLease(l, claimOpts(now, conflicts, max));
      if (out.kind !== 'claimed') throw new Error(`expected claimed, got ${JSON.stringify(out)}`);
      return out.lease;
    }

    describe('claimLease', () => {
      it('stores the lease with every field, epoch 1, not ended, not settled; getLease reads it back', async () => {
        const full = lease('l-1', { reason: 'refactor « ü » 🚀', attempt: 3, holderLineage: 's-b0' });
        assert.deepEqual(await store.claimLease(full, claimOpts(1_000)), { kind: 'claimed', lease: stored(full, 1) });
        assert.deepEqual(await store.getLease('l-1'), stored(full, 1));
        const bare = lease('l-2', { space: 'task:t-2', resource: 't-2', holderSession: null, holderLineage: null, holderAddress: 'bob' });
        assert.deepEqual(await claim(bare), stored(bare, 1));
        assert.deepEqual(await store.getLease('l-2'), stored(bare, 1));
        assert.equal(await store.getLease('l-none'), null);
      });

      it('hands back copies: changing what came out changes nothing stored', async () => {
        const got = await claim(lease('l-1'));
        got.expiresAt = 99;
        got.holderAccount = 'mallory';
        const read = (await store.getLease('l-1')) as LeaseRecord;
        assert.equal(read.expiresAt, 11_000);
        read.endedAt = 5;
        assert.deepEqual(await store.getLease('l-1'), stored(lease('l-1'), 1));
      });

      it('refuses a conflicting claim with the live holders, oldest first (id breaking ties), and stores nothing', async () => {
        // Shared reservations of one glob coexist; an exclusive one conflicts with all of them.
        for (const [id, at] of [
          ['l-c', 3_000],
          ['l-b2', 2_000],
          ['l-a', 1_000],
          ['l-b1', 2_000],
        ] as const) {
          const l = pathLease(id, 'src/**', { mode: 'shared', createdAt: at, expiresAt: 20_000 });
          await claim(l, 3_000, pathRule(l));
        }
        const ex = pathLease('l-x', 'src/**', { createdAt: 4_000 });
        const out = await store.claimLease(ex, claimOpts(4_000, pathRule(ex)));
        assert.equal(out.kind, 'conflict');
        assert.deepEqual(ids(out.holders), ['l-a', 'l-b1', 'l-b2', 'l-c']);
        assert.deepEqual(out.holders[0], await store.getLease('l-a'), 'whole records');
        assert.equal(await store.getLease('l-x'), null, 'a refused claim stores nothing');
        // A task lease conflicts with the live one.
        await claim(lease('l-t1'));
        const again = await store.claimLease(lease('l-t2', { holderAccount: 'carol', holderSession: 's-c1', createdAt: 2_000 }), claimOpts(2_000));
        assert.deepEqual(again, { kind: 'conflict', holders: [stored(lease('l-t1'), 1)] });
        assert.equal(await store.getLease('l-t2'), null);
      });

      it('asks the predicate about the live leases of its space only, and obeys it', async () => {
        await claim(pathLease('l-1', 'a/**'));
        await claim(pathLease('l-2', 'b/**'));
        await claim(pathLease('l-gone', 'c/**', { expiresAt: 1_500 }));
        const ended = await claim(pathLease('l-ended', 'd/**'));
        await store.endLease('l-ended', ended.epoch, 'released', 1_200);
        await claim(lease('l-task'));
        await claim(pathLease('l-other', 'a/**', { space: 'path:/other' }));
        const seen: string[] = [];
        const out = await store.claimLease(
          pathLease('l-3', 'x/**', { createdAt: 2_000 }),
          claimOpts(2_000, (o) => {
            seen.push(o.id);
            return o.id === 'l-2';
          }),
        );
        assert.deepEqual(seen.sort(), ['l-1', 'l-2'], 'not ended, not expired, not of another space');
        assert.deepEqual(out.kind === 'conflict' && ids(out.holders), ['l-2'], 'the predicate decides, whatever the resources');
        // Exclusive leases of one resource coexist when the predicate says they do not conflict.
        await claim(pathLease('l-4', 'a/**', { createdAt: 2_000 }), 2_000, () => false);
        assert.deepEqual(sortedIds(await store.listLeases({ space: 'path:/repo', now: 2_000, limit: 10 })), ['l-1', 'l-2', 'l-4']);
      });

      it('lets an expired lease conflict with nothing, even before expireLeases ends it', async () => {
        await claim(lease('l-1', { expiresAt: 5_000 }));
        const early = await store.claimLease(lease('l-2', { holderSession: 's-b2', createdAt: 4_999 }), claimOpts(4_999));
        assert.equal(early.kind, 'conflict', 'live until expiresAt');
        const l2 = await claim(lease('l-2', { holderSession: 's-b2', createdAt: 5_000, expiresAt: 15_000 }), 5_000);
        assert.equal(l2.epoch, 2);
        assert.equal((await store.getLease('l-1'))?.endedAt, null, 'the expired lease is not ended by the claim');
      });

      it('refuses a holder at its limit (too_many), per session, before looking for conflicts', async () => {
        const max = 2;
        await claim(lease('l-1', { space: 'task:t-1' }), 1_000, anyLive, max);
        await claim(lease('l-2', { space: 'task:t-2' }), 1_000, anyLive, max);
        assert.deepEqual(await store.claimLease(lease('l-3', { space: 'task:t-3' }), claimOpts(1_000, anyLive, max)), { kind: 'too_many', held: 2 });
        assert.deepEqual(await store.claimLease(lease('l-3', { space: 'task:t-1' }), claimOpts(1_000, anyLive, max)), { kind: 'too_many', held: 2 }, 'before the conflict');
        assert.equal(await store.getLease('l-3'), null);
        // Another session of the account, another account with the same session id, and the
        // account without a session are other holders.
        await claim(lease('l-s2', { space: 'task:t-4', holderSession: 's-b2' }), 1_000, anyLive, max);
        await claim(lease('l-c', { space: 'task:t-5', holderAccount: 'carol' }), 1_000, anyLive, max);
        await claim(lease('l-n', { space: 'task:t-6', holderSession: null, holderLineage: null }), 1_000, anyLive, max);
        // Ended and expired leases are not held.
        const l1 = (await store.getLease('l-1')) as LeaseRecord;
        await store.endLease('l-1', l1.epoch, 'released', 1_000);
        await claim(lease('l-4', { space: 'task:t-7', expiresAt: 2_000 }), 1_000, anyLive, max);
        assert.equal((await store.claimLease(lease('l-5', { space: 'task:t-8' }), claimOpts(1_999, anyLive, max))).kind, 'too_many');
        await claim(lease('l-5', { space: 'task:t-8' }), 2_000, anyLive, max);
      });

      it('counts a holder without a session by its account, among its leases without a session', async () => {
        const none = { holderSession: null, holderLineage: null, holderAddress: 'bob' };
        await claim(lease('l-1', { space: 'task:t-1', ...none }), 1_000, anyLive, 1);
        assert.deepEqual(await store.claimLease(lease('l-2', { space: 'task:t-2', ...none }), claimOpts(1_000, anyLive, 1)), { kind: 'too_many', held: 1 });
        await claim(lease('l-3', { space: 'task:t-3' }), 1_000, anyLive, 1);
        await claim(lease('l-4', { space: 'task:t-4', ...none, holderAccount: 'carol' }), 1_000, anyLive, 1);
        assert.deepEqual(await store.claimLease(lease('l-5', { space: 'task:t-5', ...none }), claimOpts(1_000, anyLive, 2)), {
          kind: 'claimed',
          lease: stored(lease('l-5', { space: 'task:t-5', ...none }), 1),
        });
      });

      it('numbers the claims of each (space, resource) 1, 2, 3 … and never hands out an epoch twice, even after pruning', async () => {
        const a = await claim(lease('l-1'));
        await store.endLease('l-1', a.epoch, 'released', 1_100);
        const b = await claim(lease('l-2', { createdAt: 1_200 }));
        assert.equal(b.epoch, 2);
        assert.equal((await claim(lease('l-r', { resource: 't-other' }), 1_200, () => false)).epoch, 1, 'another resource of the space');
        assert.equal((await claim(lease('l-s', { space: 'task:t-9' }))).epoch, 1, 'the same resource in another space');
        // A refused claim takes no epoch.
        assert.equal((await store.claimLease(lease('l-no', { createdAt: 1_300 }), claimOpts(1_300))).kind, 'conflict');
        await store.endLease('l-2', b.epoch, 'released', 1_400);
        for (const id of ['l-1', 'l-2']) await store.settleLease(id);
        assert.equal(await store.pruneLeases(10_000), 2);
        assert.equal(await store.getLease('l-1'), null);
        assert.equal((await claim(lease('l-3', { createdAt: 20_000, expiresAt: 30_000 }), 20_000)).epoch, 3, 'the epoch outlives the rows');
        // Shared claims that coexist each take the next epoch.
        for (const [i, id] of ['l-p1', 'l-p2', 'l-p3'].entries()) {
          const l = pathLease(id, 'src/**', { mode: 'shared' });
          assert.equal((await claim(l, 1_000, pathRule(l))).epoch, i + 1);
        }
      });

      it('of claims made at once on one resource, exactly one wins and the others see it', async () => {
        const claims = Array.from({ length: 20 }, (_, i) => lease(`l-${i}`, { holderSession: `s-${i}` }));
        const outs = await Promise.all(claims.map((l) => store.claimLease(l, claimOpts(1_000))));
        const won = outs.filter((o) => o.kind === 'claimed');
        assert.equal(won.length, 1, JSON.stringify(outs.map((o) => o.kind)));
        const winner = (won[0] as Extract<LeaseClaimOutcome, { kind: 'claimed' }>).lease;
        assert.equal(winner.epoch, 1);
        for (const o of outs) if (o.kind === 'conflict') assert.deepEqual(o.holders, [winner]);
        assert.equal(outs.filter((o) => o.kind === 'conflict').length, 19);
      });
    });

    describe('renewLease and endLease', () => {
      it('renews a live lease of the current epoch; a stale epoch, an expired, ended or unknown lease is null and unchanged', async () => {
        const l = await claim(lease('l-1'));
        assert.deepEqual(await store.renewLease('l-1', 1, 20_000, 5_000), { ...l, expiresAt: 20_000 });
        assert.deepEqual(await store.getLease('l-1'), { ...l, expiresAt: 20_000 });
        assert.equal(await store.renewLease('l-1', 2, 30_000, 5_000), null, 'an epoch it never had');
        assert.equal(await store.renewLease('l-1', 0, 30_000, 5_000), null);
        assert.equal(await store.renewLease('l-1', 1, 30_000, 20_000), null, 'expired at expiresAt');
        assert.equal((await store.getLease('l-1'))?.expiresAt, 20_000);
        assert.equal(await store.renewLease('l-none', 1, 30_000, 5_000), null);
        const m = await claim(lease('l-2', { space: 'task:t-2' }));
        await store.endLease('l-2', m.epoch, 'released', 2_000);
        assert.equal(await store.renewLease('l-2', m.epoch, 30_000, 2_000), null, 'ended');
        assert.equal((await store.getLease('l-2'))?.expiresAt, 11_000);
      });

      it('lets a holder whose lease expired not renew it once the resource changed hands', async () => {
        await claim(lease('l-1', { expiresAt: 2_000 }));
        await claim(lease('l-2', { holderAccount: 'carol', holderSession: 's-c1', createdAt: 3_000, expiresAt: 13_000 }), 3_000);
        assert.equal(await store.renewLease('l-1', 1, 20_000, 3_000), null);
        assert.equal(await store.endLease('l-1', 1, 'released', 3_000), null);
        assert.equal((await store.getLease('l-2'))?.endedAt, null);
      });

      it('ends a live lease of the current epoch once (released, unsettled), which frees the resource at once', async () => {
        const l = await claim(lease('l-1'));
        assert.equal(await store.endLease('l-1', 2, 'released', 2_000), null, 'a stale epoch');
        const ended = { ...l, endedAt: 2_000, endReason: 'released' as const };
        assert.deepEqual(await store.endLease('l-1', 1, 'released', 2_000), ended);
        assert.deepEqual(await store.getLease('l-1'), ended);
        assert.equal(await store.endLease('l-1', 1, 'released', 2_001), null, 'once');
        assert.deepEqual(await store.getLease('l-1'), ended);
        assert.equal(await store.endLease('l-none', 1, 'released', 2_000), null);
        assert.equal((await claim(lease('l-2', { createdAt: 2_000 }), 2_000)).epoch, 2);
        const x = await claim(lease('l-x', { space: 'task:t-x', expiresAt: 3_000 }));
        assert.equal(await store.endLease('l-x', x.epoch, 'released', 3_000), null, 'expired: only expireLeases ends it');
        assert.equal((await store.getLease('l-x'))?.endedAt, null);
      });
    });

    describe('expireLeases', () => {
      it('ends the leases expired by now (expired), oldest expiry first, at most limit, each once', async () => {
        for (const [id, exp] of [
          ['l-b', 2_000],
          ['l-c', 3_000],
          ['l-a', 1_500],
          ['l-a2', 1_500],
          ['l-d', 5_000],
        ] as const) {
          await claim(lease(id, { space: `task:${id}`, expiresAt: exp }));
        }
        const rel = await claim(lease('l-rel', { space: 'task:rel', expiresAt: 1_200 }));
        await store.endLease('l-rel', rel.epoch, 'released', 1_100);
        const first = await store.expireLeases(3_000, 2);
        assert.deepEqual(ids(first), ['l-a', 'l-a2'], 'the oldest expiry first, id breaking ties');
        assert.deepEqual(first[0], { ...stored(lease('l-a', { space: 'task:l-a', expiresAt: 1_500 }), 1), endedAt: 3_000, endReason: 'expired' });
        assert.deepEqual(ids(await store.expireLeases(3_000, 10)), ['l-b', 'l-c'], 'expiresAt ≤ now');
        assert.deepEqual(await store.expireLeases(3_000, 10), [], 'each once');
        assert.deepEqual(await store.expireLeases(4_999, 0), []);
        assert.equal((await store.getLease('l-d'))?.endedAt, null);
        assert.equal((await store.getLease('l-rel'))?.endReason, 'released', 'an ended lease is not expired again');
        assert.deepEqual(ids(await store.expireLeases(5_000, 10)), ['l-d']);
        assert.deepEqual(await store.getLease('l-b'), { ...stored(lease('l-b', { space: 'task:l-b', expiresAt: 2_000 }), 1), endedAt: 3_000, endReason: 'expired' });
      });

      it('of sweeps made at once, each expired lease is returned by exactly one', async () => {
        for (let i = 0; i < 30; i++) await claim(lease(`l-${String(i).padStart(2, '0')}`, { space: `task:t-${i}`, expiresAt: 1_000 + i }));
        const outs = await Promise.all(Array.from({ length: 5 }, () => store.expireLeases(2_000, 8)));
        const all = outs.flatMap(ids);
        assert.equal(all.length, 30, JSON.stringify(outs.map(ids)));
        assert.equal(new Set(all).size, 30, 'none twice');
        assert.deepEqual(await store.expireLeases(2_000, 100), []);
        assert.equal((await store.unsettledLeases(100)).length, 30);
      });
    });

    it('endSessionLeases ends the live leases of that session only (session_ended)', async () => {
      await claim(lease('l-1', { space: 'task:1' }));
      await claim(pathLease('l-2', 'src/**'));
      await claim(lease('l-exp', { space: 'task:exp', expiresAt: 1_500 }));
      const rel = await claim(lease('l-rel', { space: 'task:rel' }));
      await store.endLease('l-rel', rel.epoch, 'released', 1_100);
      await claim(lease('l-s2', { space: 'task:2', holderSession: 's-b2' }));
      await claim(lease('l-c', { space: 'task:3', holderAccount: 'carol' }), 1_000);
      await claim(lease('l-n', { space: 'task:4', holderSession: null, holderLineage: null }));
      const ended = await store.endSessionLeases('bob', 's-b1', 2_000);
      assert.deepEqual(sortedIds(ended), ['l-1', 'l-2']);
      for (const l of ended) assert.deepEqual([l.endedAt, l.endReason, l.settled], [2_000, 'session_ended', false]);
      assert.deepEqual(await store.getLease('l-1'), { ...stored(lease('l-1', { space: 'task:1' }), 1), endedAt: 2_000, endReason: 'session_ended' });
      assert.equal((await store.getLease('l-exp'))?.endedAt, null, 'an expired lease is left to expireLeases');
      assert.equal((await store.getLease('l-rel'))?.endReason, 'released');
      for (const id of ['l-s2', 'l-c', 'l-n']) assert.equal((await store.getLease(id))?.endedAt, null, id);
      assert.deepEqual(await store.endSessionLeases('bob', 's-b1', 2_000), [], 'once');
      assert.deepEqual(await store.endSessionLeases('nobody', 's-b1', 2_000), []);
    });

    it('lists ended leases until settled (oldest end first), and prunes settled ones ended before a time', async () => {
      const end = async (id: string, at: number) => {
        const l = await claim(lease(id, { space: `task:${id}` }));
        await store.endLease(id, l.epoch, 'released', at);
      };
      await end('l-c', 3_000);
      await end('l-a', 1_000);
      await end('l-b2', 2_000);
      await end('l-b1', 2_000);
      await claim(lease('l-live', { space: 'task:live' }));
      assert.deepEqual(ids(await store.unsettledLeases(10)), ['l-a', 'l-b1', 'l-b2', 'l-c']);
      assert.deepEqual(ids(await store.unsettledLeases(2)), ['l-a', 'l-b1']);
      assert.deepEqual(await store.unsettledLeases(0), []);
      await store.settleLease('l-b1');
      await store.settleLease('l-b1');
      await store.settleLease('l-none');
      await store.settleLease('l-live'); // a live lease is not settled: its end is still to act on
      assert.deepEqual(ids(await store.unsettledLeases(10)), ['l-a', 'l-b2', 'l-c']);
      assert.equal((await store.getLease('l-b1'))?.settled, true);
      await store.settleLease('l-a');
      await store.settleLease('l-c');
      assert.equal(await store.pruneLeases(2_500), 2, 'settled and ended before 2 500: l-a, l-b1');
      assert.equal(await store.getLease('l-a'), null);
      assert.equal(await store.getLease('l-b1'), null);
      assert.notEqual(await store.getLease('l-b2'), null, 'unsettled: kept');
      assert.notEqual(await store.getLease('l-c'), null, 'ended at 3 000: kept');
      assert.equal(await store.pruneLeases(2_500), 0);
      assert.equal(await store.pruneLeases(1e15), 1, 'l-c; never l-b2 or the live one');
      const live = (await store.getLease('l-live')) as LeaseRecord;
      assert.equal(live.settled, false);
      await store.endLease('l-live', live.epoch, 'released', 4_000);
      assert.deepEqual(ids(await store.unsettledLeases(10)), ['l-b2', 'l-live']);
    });

    it('lists live leases by space, space prefix, holder account and session: space then id, at most limit', async () => {
      await claim(pathLease('l-r2', 'b/**'));
      await claim(pathLease('l-r1', 'a/**', { holderSession: 's-b2' }));
      await claim(pathLease('l-z', 'a/**', { space: 'path:/repo2', holderAccount: 'carol', holderSession: 's-c1' }));
      await claim(lease('l-t', { space: 'task:t-1' }));
      await claim(lease('l-n', { space: 'task:t-2', holderSession: null, holderLineage: null }));
      await claim(lease('l-exp', { space: 'path:/repo', resource: 'c/**', expiresAt: 1_500 }));
      const rel = await claim(pathLease('l-rel', 'd/**'));
      await store.endLease('l-rel', rel.epoch, 'released', 1_200);
      const list = async (q: Partial<LeaseQuery> = {}) => ids(await store.listLeases({ now: 2_000, limit: 100, ...q }));
      assert.deepEqual(await list(), ['l-r1', 'l-r2', 'l-z', 'l-t', 'l-n'], 'live only, space then id');
      assert.deepEqual(await list({ space: 'path:/repo' }), ['l-r1', 'l-r2']);
      assert.deepEqual(await list({ spacePrefix: 'path:/repo' }), ['l-r1', 'l-r2', 'l-z'], 'a prefix');
      assert.deepEqual(await list({ spacePrefix: 'task:' }), ['l-t', 'l-n']);
      assert.deepEqual(await list({ spacePrefix: 'path:/repo', holderAccount: 'bob' }), ['l-r1', 'l-r2']);
      assert.deepEqual(await list({ holderAccount: 'bob' }), ['l-r1', 'l-r2', 'l-t', 'l-n']);
      assert.deepEqual(await list({ holderAccount: 'bob', holderSession: 's-b1' }), ['l-r2', 'l-t']);
      assert.deepEqual(await list({ holderSession: 's-c1' }), ['l-z']);
      assert.deepEqual(await list({ space: 'path:/repo', holderSession: 's-b2' }), ['l-r1']);
      assert.deepEqual(await list({ space: 'path:/nowhere' }), []);
      assert.deepEqual(await list({ limit: 2 }), ['l-r1', 'l-r2']);
      assert.deepEqual(await list({ limit: 0 }), []);
      assert.deepEqual(ids(await store.listLeases({ space: 'path:/repo', now: 1_000, limit: 10 })), ['l-exp', 'l-r1', 'l-r2'], 'live at another time; ended is never live');
      assert.deepEqual((await store.listLeases({ space: 'task:t-1', now: 2_000, limit: 1 }))[0], stored(lease('l-t'), 1), 'whole records');
    });

    describe('the holder account removed or its name used again', () => {
      async function fill(): Promise<void> {
        for (const id of ['bob', 'bobx', 'carol']) await store.addAccount(account(id));
        await claim(lease('l-1', { space: 'task:1' }));
        await claim(lease('l-n', { space: 'task:2', holderSession: null, holderLineage: null }));
        await claim(lease('l-exp', { space: 'task:3', expiresAt: 1_500 }));
        const rel = await claim(lease('l-rel', { space: 'task:4' }));
        await store.endLease('l-rel', rel.epoch, 'released', 1_100);
        await store.settleLease('l-rel');
        await claim(lease('l-x', { space: 'task:5', holderAccount: 'bobx' }));
        await claim(lease('l-c', { space: 'task:6', holderAccount: 'carol' }));
      }

      async function assertBobsEnded(): Promise<void> {
        for (const id of ['l-1', 'l-n', 'l-exp']) {
          const l = (await store.getLease(id)) as LeaseRecord;
          assert.equal(l.endReason, 'account_removed', id);
          assert.equal(typeof l.endedAt, 'number', id);
          assert.equal(l.settled, false, id);
        }
        assert.deepEqual(sortedIds(await store.unsettledLeases(10)), ['l-1', 'l-exp', 'l-n'], 'to be acted on: a pooled task goes back');
        assert.equal((await store.getLease('l-rel'))?.endReason, 'released', 'an ended lease keeps its end');
        assert.deepEqual(await store.listLeases({ holderAccount: 'bob', now: 1_000, limit: 10 }), []);
        assert.deepEqual(ids(await store.listLeases({ now: 1_000, limit: 10 })), ['l-x', 'l-c'], 'a name it prefixes is another account');
        assert.deepEqual(await store.expireLeases(2_000, 10), [], 'ended once');
        assert.equal((await claim(lease('l-new', { space: 'task:1', createdAt: 2_000 }), 2_000, anyLive, 1)).epoch, 2, 'the resource is free');
      }

      it('removing the account ends every lease of it not ended yet (account_removed, unsettled)', async () => {
        await fill();
        assert.deepEqual(await store.removeAccount('bob'), { messages: 0 });
        await assertBobsEnded();
      });

      it('a new account of the name holds none of the leases left under it', async () => {
        await fill();
        assert.equal(await store.addAccount(account('bob')), 'exists');
        assert.equal((await store.getLease('l-1'))?.endedAt, null, 'a refused creation ends nothing');
        await store.removeAccount('bob');
        for (const id of ['l-1', 'l-n', 'l-exp']) await store.settleLease(id);
        // A claim that raced the removal left a lease under the name.
        await claim(lease('l-late', { space: 'task:7', createdAt: 1_000 }));
        assert.equal(await store.addAccount(account('bob')), 'ok');
        const late = (await store.getLease('l-late')) as LeaseRecord;
        assert.equal(late.endReason, 'account_removed');
        assert.deepEqual(ids(await store.unsettledLeases(10)), ['l-late']);
      });
    });

    runPoolConformance(() => store);
  });
}
