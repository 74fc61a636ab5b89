// The surfaced facts of receipts are written behind the read; a store that fails that write (its
// connections terminated, a PostgreSQL restart) must not lose them: the write is retried, and when
// the store stays down the facts are recorded again by the next read that returns the messages.
// A real SQLite store, whose insertRecords fails as many times as the test says.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { systemClock } from '../src/engine/clock.js';
import type { Logger } from '../src/engine/log.js';
import { Receipts } from '../src/engine/receipts.js';
import { REC } from '../src/engine/wake-records.js';
import { openStore } from '../src/store/index.js';
import { keyOfAccount, type Store } from '../src/store/types.js';
import { scope } from './support/store-conformance.js';

const dir = mkdtempSync(join(tmpdir(), 'm4a-receipts-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The store, with insertRecords failing its next `failures.n` calls. */
function flaky(store: Store, failures: { n: number }): Store {
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'insertRecords')
        return (rows: Parameters<Store['insertRecords']>[0]) => {
          if (failures.n > 0) {
            failures.n--;
            return Promise.reject(new Error('connection terminated'));
          }
          return target.insertRecords(rows);
        };
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
}

function logger(): Logger & { warned: string[] } {
  const warned: string[] = [];
  return { warned, debug: () => undefined, info: () => undefined, error: () => undefined, warn: (_o: unknown, msg?: string) => void warned.push(String(msg)) };
}

const surfaced = (s: Store, id: string) => s.getRecord(REC.surfaced, `${id}|alice`);

describe('receipts: surfaced facts survive a failing store', () => {
  it('a write that fails twice is retried and kept, with the first read time', async () => {
    const store = await openStore(`sqlite:${join(dir, 'a.db')}`);
    const failures = { n: 2 };
    const log = logger();
    const r = new Receipts(flaky(store, failures), systemClock, log);
    const before = Date.now();
    r.noteSurfaced(scope('alice'), [{ id: 'm-1', toKey: keyOfAccount('alice') }]);
    await r.settled();
    assert.equal(failures.n, 0, 'both failures were met');
    const row = await surfaced(store, 'm-1');
    assert.ok(row, 'the fact is stored');
    assert.ok((JSON.parse(row.value) as { at: number }).at >= before);
    assert.deepEqual(log.warned, [], 'nothing lost, nothing to warn of');
    await store.close();
  });

  it('a store still down after the retries: a warning, and the next read records the fact', async () => {
    const store = await openStore(`sqlite:${join(dir, 'b.db')}`);
    const failures = { n: 100 };
    const log = logger();
    const r = new Receipts(flaky(store, failures), systemClock, log);
    r.noteSurfaced(scope('alice'), [{ id: 'm-2', toKey: keyOfAccount('alice') }]);
    await r.settled();
    assert.equal(await surfaced(store, 'm-2'), null);
    assert.equal(log.warned.length, 1, JSON.stringify(log.warned));
    assert.match(log.warned[0]!, /next read records them/);
    failures.n = 0; // the store is back
    r.noteSurfaced(scope('alice'), [{ id: 'm-2', toKey: keyOfAccount('alice') }]);
    await r.settled();
    assert.ok(await surfaced(store, 'm-2'), 'recorded by the next read');
    await store.close();
  });
});
