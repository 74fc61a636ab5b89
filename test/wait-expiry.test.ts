// Parked waits expire through one heap and one clock timer (engine/wait-expiry.ts): each at its
// deadline, never before, in deadline order; a wait that leaves early is gone from the heap at once;
// at most one timer is pending, none when nothing waits.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ManualClock } from '../src/engine/clock.js';
import { Expiry } from '../src/engine/wait-expiry.js';
import { WaitRoom, type WaitEnd } from '../src/engine/waits.js';

interface Item {
  id: number;
  deadline: number;
  slot: number;
}

test('items expire at their deadlines in order, with one timer pending at most', () => {
  const clock = new ManualClock(0);
  const fired: [number, number][] = [];
  const ex = new Expiry<Item>(clock, (it) => fired.push([it.id, clock.now()]));
  const items = [50, 10, 30, 10, 70].map((deadline, id) => ({ id, deadline, slot: -1 }));
  for (const it of items) ex.add(it);
  assert.equal(clock.pendingTimers(), 1);
  clock.advance(9);
  assert.equal(fired.length, 0);
  clock.advance(1);
  assert.deepEqual(fired.map(([id]) => id).sort(), [1, 3]);
  ex.remove(items[0] as Item); // deadline 50 leaves before it is due
  clock.advance(100);
  assert.deepEqual(
    fired.map(([id]) => id),
    [1, 3, 2, 4],
  );
  assert.equal(ex.size, 0);
  assert.equal(clock.pendingTimers(), 0);
});

test('removing the earliest re-arms for the next; removing the last leaves no timer', () => {
  const clock = new ManualClock(0);
  const fired: number[] = [];
  const ex = new Expiry<Item>(clock, (it) => fired.push(it.id));
  const a = { id: 1, deadline: 10, slot: -1 };
  const b = { id: 2, deadline: 20, slot: -1 };
  ex.add(a);
  ex.add(b);
  ex.remove(a);
  ex.remove(a); // twice is nothing
  assert.equal(clock.pendingTimers(), 1);
  clock.advance(15);
  assert.equal(fired.length, 0);
  ex.remove(b);
  assert.equal(clock.pendingTimers(), 0);
  clock.advance(100);
  assert.deepEqual(fired, []);
});

test('any sequence of adds, removes and time agrees with a sorted list', () => {
  type Op = { kind: 'add'; ms: number } | { kind: 'remove'; pick: number } | { kind: 'advance'; ms: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('add' as const), ms: fc.integer({ min: 0, max: 100 }) }),
    fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 60 }) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
      const clock = new ManualClock(0);
      const fired: Item[] = [];
      const ex = new Expiry<Item>(clock, (it) => {
        assert.ok(it.deadline <= clock.now(), 'never before its deadline');
        fired.push(it);
      });
      const live: Item[] = [];
      let id = 0;
      for (const o of ops) {
        if (o.kind === 'add') {
          const it = { id: id++, deadline: clock.now() + o.ms, slot: -1 };
          ex.add(it);
          live.push(it);
        } else if (o.kind === 'remove' && live.length > 0) {
          const [it] = live.splice(o.pick % live.length, 1);
          ex.remove(it as Item);
        } else if (o.kind === 'advance') {
          const before = fired.length;
          clock.advance(o.ms);
          const due = live.filter((it) => it.deadline <= clock.now());
          assert.deepEqual(
            fired
              .slice(before)
              .map((it) => it.id)
              .sort(),
            due.map((it) => it.id).sort(),
          );
          for (const it of due) live.splice(live.indexOf(it), 1);
          // Deadline order within one advance.
          const got = fired.slice(before).map((it) => it.deadline);
          assert.deepEqual(
            got,
            [...got].sort((x, y) => x - y),
          );
        }
        assert.equal(ex.size, live.length);
        assert.equal(clock.pendingTimers(), live.length > 0 ? 1 : 0);
      }
    }),
    { numRuns: 300 },
  );
});

test('a thousand parked waits share one timer; a cancelled or gone wait leaves none behind', async () => {
  const clock = new ManualClock(0);
  const room = new WaitRoom(clock, { perSession: 8, perAccount: 5000, total: 5000 });
  const ends: Promise<WaitEnd>[] = [];
  for (let i = 0; i < 1000; i++) ends.push(room.park(`s${i}`, 'a', [`a:${i % 7}`], 1000 + i).ended);
  assert.equal(clock.pendingTimers(), 1);
  const ac = new AbortController();
  const gone = room.park('g', 'a', ['a:g'], 10, ac.signal);
  ac.abort();
  assert.equal(await gone.ended, 'gone');
  const cancelled = room.park('c', 'a', ['a:c'], 5);
  cancelled.cancel();
  assert.equal(await cancelled.ended, 'closed');
  assert.equal(room.size, 1000);
  clock.advance(999);
  assert.equal(room.size, 1000);
  clock.advance(500);
  assert.equal(room.size, 500);
  clock.advance(500);
  assert.deepEqual(new Set(await Promise.all(ends)), new Set(['expired']));
  assert.equal(room.size, 0);
  assert.equal(clock.pendingTimers(), 0);
});
