// The store contract of search, run inside the store conformance suite against every store: the
// same data gives the same results, in the same order, on memory, SQLite and PostgreSQL. Each case
// gets a fresh store from the suite's `store()`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyOfAccount, keyOfLineage, keyOfRoom, type NewMessage, type ReaderScope, type SearchQuery, type Store } from '../../src/store/types.js';
import { parseSearchQuery } from '../../src/wire/search.js';

let n = 0;
async function put(s: Store, toKey: string, subject: string, body: string, over: Partial<NewMessage> = {}): Promise<string> {
  n++;
  const id = `m-s${n}x${Math.random().toString(36).slice(2, 8)}`;
  const out = await s.appendMessage(
    {
      id,
      threadId: id,
      fromAccount: 'zed',
      fromSession: null,
      fromKind: 'agent',
      toAddress: toKey.slice(2),
      toKey,
      subject,
      body,
      replyTo: null,
      correlation: null,
      refs: [],
      priority: 'normal',
      createdAt: 10_000 + n,
      idempotencyKey: null,
      fingerprint: null,
      ...over,
    },
    0,
  );
  assert.equal(out.kind, 'created');
  return id;
}

const reader = (account: string, lineage: string | null = null, rooms: string[] = []): ReaderScope => ({
  account,
  sessionKey: lineage === null ? null : keyOfLineage(account, lineage),
  rooms,
});

function query(text: string, over: Partial<SearchQuery> = {}): SearchQuery {
  const p = parseSearchQuery(text);
  if ('problem' in p) throw new Error(p.problem);
  return { terms: p.terms, to: null, fromAccount: null, threadId: null, after: null, before: null, beforeSeq: null, limit: 50, ...over };
}

const ids = async (s: Store, r: ReaderScope, text: string, over: Partial<SearchQuery> = {}) => (await s.search(r, query(text, over))).map((m) => m.id);

export function runSearchConformance(store: () => Store): void {
  describe('search', () => {
    it('matches every word in the subject or the body, case-insensitive, newest first', async () => {
      const s = store();
      const a = await put(s, keyOfAccount('bob'), 'Deploy failed', 'the build broke on main');
      const b = await put(s, keyOfAccount('bob'), 'status', 'DEPLOY is green, build ok');
      await put(s, keyOfAccount('bob'), 'lunch', 'nothing to see');
      assert.deepEqual(await ids(s, reader('bob'), 'deploy'), [b, a]);
      assert.deepEqual(await ids(s, reader('bob'), 'deploy build'), [b, a], 'words may sit in different fields');
      assert.deepEqual(await ids(s, reader('bob'), 'deploy broke'), [a]);
      assert.deepEqual(await ids(s, reader('bob'), 'deploy missing'), []);
      assert.deepEqual(await ids(s, reader('bob'), 'depl*'), [b, a]);
      assert.deepEqual(await ids(s, reader('bob'), 'depl'), [], 'a word is whole unless it ends with *');
    });

    it('a phrase matches its words in a row within one field, never across subject and body', async () => {
      const s = store();
      const a = await put(s, keyOfAccount('bob'), 'release notes', 'ready for review today');
      const b = await put(s, keyOfAccount('bob'), 'review', 'for today: notes release');
      assert.deepEqual(await ids(s, reader('bob'), '"for review"'), [a]);
      assert.deepEqual(await ids(s, reader('bob'), '"release notes"'), [a]);
      assert.deepEqual(await ids(s, reader('bob'), '"notes ready"'), [], 'subject "…notes" then body "ready…" is no phrase');
      assert.deepEqual(await ids(s, reader('bob'), '"notes rel"*'), [b]);
      assert.deepEqual(await ids(s, reader('bob'), 'release-notes'), [a], 'punctuation inside a word makes a phrase');
    });

    it('reads only the scope: its account, its own lineage, its rooms; never a sibling lineage or others', async () => {
      const s = store();
      const direct = await put(s, keyOfAccount('bob'), 'secret plan', 'x');
      const mine = await put(s, keyOfLineage('bob', 'L1'), 'secret plan', 'y');
      await put(s, keyOfLineage('bob', 'L2'), 'secret plan', 'sibling');
      const room = await put(s, keyOfRoom('ops'), 'secret plan', 'room');
      await put(s, keyOfRoom('hr'), 'secret plan', 'not a member');
      await put(s, keyOfAccount('carol'), 'secret plan', 'carol');
      assert.deepEqual(await ids(s, reader('bob', 'L1', ['ops']), 'secret'), [room, mine, direct]);
      assert.deepEqual(await ids(s, reader('bob', null, []), 'secret'), [direct], 'without a session or rooms');
      assert.deepEqual(await ids(s, reader('bob', 'L1', ['ops']), 'secret', { to: { room: 'ops' } }), [room]);
      assert.deepEqual(await ids(s, reader('bob', 'L1', ['ops']), 'secret', { to: { room: 'hr' } }), [], 'to never widens the scope');
      assert.deepEqual(await ids(s, reader('bob', 'L1', ['ops']), 'secret', { to: { account: 'bob' } }), [mine, direct]);
      assert.deepEqual(await ids(s, reader('bob', 'L1', ['ops']), 'secret', { to: { account: 'carol' } }), []);
    });

    it('filters by sender, thread and time, and pages below a seq', async () => {
      const s = store();
      const k = keyOfAccount('bob');
      const a = await put(s, k, 'ping one', '', { fromAccount: 'alice', createdAt: 1_000 });
      const b = await put(s, k, 'ping two', '', { fromAccount: 'carol', createdAt: 2_000, threadId: a });
      const c = await put(s, k, 'ping three', '', { fromAccount: 'alice', createdAt: 3_000 });
      assert.deepEqual(await ids(s, reader('bob'), 'ping', { fromAccount: 'alice' }), [c, a]);
      assert.deepEqual(await ids(s, reader('bob'), 'ping', { threadId: a }), [b, a]);
      assert.deepEqual(await ids(s, reader('bob'), 'ping', { after: 2_000 }), [c, b], 'after is inclusive');
      assert.deepEqual(await ids(s, reader('bob'), 'ping', { before: 2_000 }), [a], 'before is exclusive');
      const first = await s.search(reader('bob'), query('ping', { limit: 2 }));
      assert.deepEqual(
        first.map((m) => m.id),
        [c, b],
      );
      const last = first[first.length - 1];
      assert.ok(last);
      assert.deepEqual(await ids(s, reader('bob'), 'ping', { beforeSeq: last.seq }), [a]);
    });

    it('keeps accents and folds case beyond ASCII; a run of CJK characters is one word', async () => {
      const s = store();
      const k = keyOfAccount('bob');
      const cafe = await put(s, k, 'Café CRÈME', 'à l’École');
      const tokyo = await put(s, k, 'trip', '東京都に行く 今日');
      assert.deepEqual(await ids(s, reader('bob'), 'café'), [cafe]);
      assert.deepEqual(await ids(s, reader('bob'), 'CAFÉ crème école'), [cafe]);
      assert.deepEqual(await ids(s, reader('bob'), 'cafe'), [], 'accents are kept: cafe is another word');
      assert.deepEqual(await ids(s, reader('bob'), '東京都に行く'), [tokyo]);
      assert.deepEqual(await ids(s, reader('bob'), '東京*'), [tokyo]);
      assert.deepEqual(await ids(s, reader('bob'), '東京'), [], 'no word boundary inside the run');
    });

    it('forgets the mail of a removed room or account with the mail', async () => {
      const s = store();
      assert.equal(await s.addRoom('ops', 1), 'ok');
      await put(s, keyOfRoom('ops'), 'incident', 'room mail');
      const kept = await put(s, keyOfAccount('bob'), 'incident', 'direct');
      assert.equal((await ids(s, reader('bob', null, ['ops']), 'incident')).length, 2);
      await s.removeRoom('ops');
      assert.deepEqual(await ids(s, reader('bob', null, ['ops']), 'incident'), [kept]);
    });

    it('stops at the limit, newest first, over many matches', async () => {
      const s = store();
      const all: string[] = [];
      for (let i = 0; i < 30; i++) all.push(await put(s, keyOfAccount('bob'), `batch ${i}`, i % 2 ? 'odd' : 'even'));
      assert.deepEqual(await ids(s, reader('bob'), 'batch', { limit: 5 }), all.slice(-5).reverse());
      assert.deepEqual(await ids(s, reader('bob'), 'batch odd', { limit: 3 }), [all[29], all[27], all[25]]);
    });
  });
}
