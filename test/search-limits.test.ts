// Searches in flight on the real daemon: at most SEARCH_LIMITS.inFlightPerAccount per account and
// SEARCH_LIMITS.inFlightPerDaemon in all; one over either is refused at once with rate_limited
// {limit, scope, retry_after}, and nothing else is affected. The searches are held in flight by a
// gate in front of the store's own search (the daemon, its doors and engine are the real ones).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { SEARCH_LIMITS } from '../src/wire/search.js';
import type { ReaderScope, SearchQuery, Store } from '../src/store/types.js';

interface Answer {
  status: number;
  body: { results?: { subject: string }[]; error?: Record<string, unknown> };
  retryAfter: string | null;
}

describe('search limits', { timeout: 60_000 }, () => {
  let d: TestDaemon;
  const secrets = new Map<string, string>();
  const held = new Set<string>();
  let waiting: (() => void)[] = [];
  let parked = 0;

  before(async () => {
    d = await startTestDaemon();
    for (const id of ['alice', 'bob', 'carol', 'dave']) secrets.set(id, (await d.account(id)).secret);
    for (const id of ['alice', 'bob', 'carol', 'dave']) await d.operator.send({ to: id, subject: `kestrel for ${id}`, body: 'a searchable word' });
    // The store's search, held for the accounts in `held` until release().
    const store = d.store as Store & { search: Store['search'] };
    const real = store.search.bind(store);
    store.search = async (scope: ReaderScope, q: SearchQuery) => {
      if (held.has(scope.account)) {
        parked++;
        await new Promise<void>((r) => waiting.push(r));
        parked--;
      }
      return real(scope, q);
    };
  });
  after(async () => {
    await d?.stop();
  });

  const release = () => {
    held.clear();
    for (const r of waiting) r();
    waiting = [];
  };
  const until = async (n: number) => {
    for (let i = 0; parked < n; i++) {
      assert.ok(i < 500, `${parked} of ${n} searches parked`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const post = async (account: string, path: string, body: unknown): Promise<Answer> => {
    const r = await fetch(new URL(path, d.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${secrets.get(account) as string}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Answer['body'], retryAfter: r.headers.get('retry-after') };
  };
  const search = (account: string) => post(account, '/mail/search', { query: 'kestrel' });

  it(`refuses an account's search over ${SEARCH_LIMITS.inFlightPerAccount} in flight at once; others and other operations go on`, async () => {
    held.add('bob');
    const first = [search('bob'), search('bob')];
    await until(SEARCH_LIMITS.inFlightPerAccount);
    const third = await search('bob');
    assert.equal(third.status, 429, JSON.stringify(third.body));
    assert.deepEqual(third.body.error, {
      code: 'rate_limited',
      message: `account bob has ${SEARCH_LIMITS.inFlightPerAccount} searches in flight already`,
      retry_after: 1,
      limit: SEARCH_LIMITS.inFlightPerAccount,
      scope: 'account',
      account: 'bob',
    });
    assert.equal(third.retryAfter, '1');
    // Another account searches; bob still sends and reads his inbox.
    const alice = await search('alice');
    assert.equal(alice.status, 200, JSON.stringify(alice.body));
    assert.deepEqual(
      alice.body.results?.map((h) => h.subject),
      ['kestrel for alice'],
    );
    const sent = await post('bob', '/mail/send', { to: 'alice', subject: 'during', body: 'two searches held' });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const inbox = await post('bob', '/mail/inbox', {});
    assert.equal(inbox.status, 200, JSON.stringify(inbox.body));
    release();
    for (const r of await Promise.all(first)) {
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(
        r.body.results?.map((h) => h.subject),
        ['kestrel for bob'],
      );
    }
    // The slots came back: two at once again, and nothing refused.
    const again = await Promise.all([search('bob'), search('bob')]);
    assert.deepEqual(
      again.map((r) => r.status),
      [200, 200],
    );
  });

  it(`refuses any search over ${SEARCH_LIMITS.inFlightPerDaemon} in flight on the daemon`, async () => {
    held.add('bob');
    held.add('carol');
    const first = [search('bob'), search('bob'), search('carol'), search('carol')];
    await until(SEARCH_LIMITS.inFlightPerDaemon);
    const dave = await search('dave');
    assert.equal(dave.status, 429, JSON.stringify(dave.body));
    assert.deepEqual(dave.body.error, {
      code: 'rate_limited',
      message: `this daemon has ${SEARCH_LIMITS.inFlightPerDaemon} searches in flight already`,
      retry_after: 1,
      limit: SEARCH_LIMITS.inFlightPerDaemon,
      scope: 'daemon',
    });
    const health = await fetch(new URL('/health', d.url));
    assert.equal(health.status, 200);
    release();
    assert.deepEqual(
      (await Promise.all(first)).map((r) => r.status),
      [200, 200, 200, 200],
    );
    const later = await search('dave');
    assert.equal(later.status, 200, JSON.stringify(later.body));
    assert.deepEqual(
      later.body.results?.map((h) => h.subject),
      ['kestrel for dave'],
    );
  });

  it('gives the slot back when a search fails', async () => {
    for (let i = 0; i < SEARCH_LIMITS.inFlightPerAccount + 2; i++) {
      const bad = await post('bob', '/mail/search', { query: 'kestrel', cursor: 'nope' });
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
    }
    assert.equal((await search('bob')).status, 200);
  });
});
