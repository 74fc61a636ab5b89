// The store contract of search, run inside the store conformance suite against every store: the
// same data gives the same results, in the same order, on memory, SQLite and PostgreSQL. Each case
// gets a fresh store from the suite's `store()`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyOfAccount, keyOfLineage, keyOfRoom, type NewMessage, type ReaderScope, type SearchQuery, type Store } from '../../src/store/types.js';
import { parseSearchQuery } from '../../src/wire/search.js';
import { message } from './store-conformance.js';

let n = 0;
/** A message from zed to `toKey`, its own thread (the suite's message(), with the fields search reads). */
const newMessage = (id: string, toKey: string, subject: string, body: string, createdAt: number): NewMessage => message(toKey, { id, threadId: id, subject, body, createdAt });

async function put(s: Store, toKey: string, subject: string, body: string, over: Partial<NewMessage> = {}): Promise<string> {
  n++;
  const id = `m-s${n}x${Math.random().toString(36).slice(2, 8)}`;
  const out = await s.appendMessage({ ...newMessage(id, toKey, subject, body, 10_000 + n), ...over }, 0);
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
  return { terms: p.terms, to: null, fromAccount: null, threadId: null, after: null, before: null, tier: 1, beforeSeq: null, limit: 50, window: 50, ...over };
}

const ids = async (s: Store, r: ReaderScope, text: string, over: Partial<SearchQuery> = {}) => (await s.search(r, query(text, over))).messages.map((m) => m.id);

/** Every page of a search, as the engine pages it: limit + 1 asked; more than limit: on below the
 *  last shown, in its tier; else the floor, when there is one. */
async function allPages(s: Store, r: ReaderScope, text: string, limit: number, window: number): Promise<string[][]> {
  const pages: string[][] = [];
  let at: Pick<SearchQuery, 'tier' | 'beforeSeq'> | null = { tier: 1, beforeSeq: null };
  while (at) {
    assert.ok(pages.length < 100, 'the pages end');
    const p = await s.search(r, query(text, { ...at, limit: limit + 1, window }));
    const shown = p.messages.slice(0, limit);
    pages.push(shown.map((m) => m.id));
    const last = shown[shown.length - 1];
    if (p.messages.length > limit && last) at = { tier: shown.length <= p.subjectHits ? 1 : 2, beforeSeq: last.seq };
    else at = p.floor ? { tier: p.floor.tier, beforeSeq: p.floor.seq } : null;
  }
  return pages;
}

export function runSearchConformance(store: () => Store): void {
  describe('search', () => {
    it('matches every word in the subject or the body, case-insensitive; the subject hits first', async () => {
      const s = store();
      const a = await put(s, keyOfAccount('bob'), 'Deploy failed', 'the build broke on main');
      const b = await put(s, keyOfAccount('bob'), 'status', 'DEPLOY is green, build ok');
      await put(s, keyOfAccount('bob'), 'lunch', 'nothing to see');
      assert.deepEqual(await ids(s, reader('bob'), 'deploy'), [a, b], 'the subject hit, older, first');
      assert.deepEqual(await ids(s, reader('bob'), 'deploy build'), [b, a], 'words may sit in different fields; neither has both in its subject');
      assert.deepEqual(await ids(s, reader('bob'), 'deploy broke'), [a]);
      assert.deepEqual(await ids(s, reader('bob'), 'deploy missing'), []);
      assert.deepEqual(await ids(s, reader('bob'), 'depl*'), [a, b]);
      assert.deepEqual(await ids(s, reader('bob'), 'depl'), [], 'a word is whole unless it ends with *');
    });

    it('a phrase matches its words in a row within one field, never across subject and body', async () => {
      const s = store();
      const a = await put(s, keyOfAccount('bob'), 'release notes', 'ready for review today');
      const b = await put(s, keyOfAccount('bob'), 'review', 'for today: notes release');
      assert.deepEqual(await ids(s, reader('bob'), '"for review"'), [a]);
      assert.deepEqual(await ids(s, reader('bob'), 'review'), [b, a]);
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
      const first = (await s.search(reader('bob'), query('ping', { limit: 2 }))).messages;
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

    it('ranks the whole query in the subject first, then the rest, each newest first, across pages', async () => {
      const s = store();
      const bob = keyOfAccount('bob');
      const s1 = await put(s, bob, 'Heron sighting', 'by the lake');
      const b1 = await put(s, bob, 'birds', 'a heron, then another heron');
      await put(s, keyOfAccount('carol'), 'heron for carol', 'not bob');
      const b2 = await put(s, bob, 'lake', 'grey heron sighting at dawn');
      const s2 = await put(s, bob, 'heron again', 'the heron came back');
      const b3 = await put(s, bob, 'notes', 'HERON');
      await put(s, keyOfAccount('carol'), 'more', 'heron, carol only');
      const b4 = await put(s, bob, 'herons', 'one heron');
      await put(s, bob, 'unrelated', 'nothing');
      const ranked = [s2, s1, b4, b3, b2, b1];
      assert.deepEqual(await ids(s, reader('bob'), 'heron'), ranked, 'a subject hit older than every body hit comes first');
      for (const [limit, window] of [
        [1, 50],
        [2, 50],
        [1, 2],
        [2, 3],
        [3, 1],
        [10, 4],
      ] as const) {
        const pages = await allPages(s, reader('bob'), 'heron', limit, window);
        assert.deepEqual(pages.flat(), ranked, `limit ${limit}, window ${window}: every match once, in rank order`);
        assert.ok(
          pages.every((p) => p.length <= limit),
          `limit ${limit}`,
        );
      }
      assert.deepEqual(await ids(s, reader('bob'), 'heron sighting'), [s1, b2], 'both words in the subject only for s1');
      assert.deepEqual(await ids(s, reader('bob'), '"heron again"'), [s2]);
      assert.deepEqual(await ids(s, reader('bob'), 'her*'), [b4, s2, s1, b3, b2, b1], 'a prefix: "herons" is a subject hit too');
      assert.deepEqual(await ids(s, reader('bob'), 'heron', { tier: 2, beforeSeq: null }), [b4, b3, b2, b1], 'tier 2 alone from its top');
      const s2seq = (await s.getMessage(s2))?.seq ?? -1;
      assert.deepEqual(await ids(s, reader('bob'), 'heron', { tier: 1, beforeSeq: s2seq }), [s1, b4, b3, b2, b1], 'below s2 in tier 1, then all of tier 2');
      assert.deepEqual(await ids(s, reader('bob'), 'heron', { tier: 2, beforeSeq: s2seq }), [b2, b1], 'below s2 in tier 2');
    });

    it('ranks alike past the newest rows a store may test first (6,000 messages)', async () => {
      const s = store();
      // PostgreSQL tests the newest 5,000 rows by the key, then goes on by the key or the GIN index:
      // a sparse tier 1 (every 1,000th subject) and a dense tier 2 (every 3rd body) cross that edge.
      const made: { id: string; seq: number; tier: 1 | 2 | null }[] = [];
      for (let i = 0; i < 6000; i += 500) {
        const batch = Array.from({ length: 500 }, (_, j) => {
          const k = i + j;
          const id = `m-k${k}x${Math.random().toString(36).slice(2, 8)}`;
          const subject = k % 1000 === 0 ? 'kingfisher report' : 'daily';
          const body = k % 3 === 0 ? 'kingfisher seen' : 'nothing';
          const tier = k % 1000 === 0 ? 1 : k % 3 === 0 ? 2 : null;
          const m = newMessage(id, keyOfAccount('bob'), subject, body, 1_000 + k);
          return s.appendMessage(m, 0).then((out) => made.push({ id, seq: out.message.seq, tier }));
        });
        await Promise.all(batch);
      }
      const byTier = (t: 1 | 2) =>
        made
          .filter((m) => m.tier === t)
          .sort((a, b) => b.seq - a.seq)
          .map((m) => m.id);
      const ranked = [...byTier(1), ...byTier(2)];
      assert.equal(byTier(1).length, 6);
      assert.deepEqual(await ids(s, reader('bob'), 'kingfisher', { limit: 3000, window: 3000 }), ranked);
      const pages = await allPages(s, reader('bob'), 'kingfisher', 700, 900);
      assert.deepEqual(pages.flat(), ranked, 'paged: every match once, in rank order');
    });

    it('examines at most the window of index matches, newest first, whatever the scope keeps', async () => {
      const s = store();
      const mine: { id: string; seq: number }[] = [];
      const seqOf = async (id: string) => (await s.getMessage(id))?.seq ?? -1;
      // 13 matches, bob's at 0, 6 and 12 (newest last), carol's between; then one that does not match.
      for (let i = 0; i < 13; i++) {
        const id = await put(s, keyOfAccount(i % 6 === 0 ? 'bob' : 'carol'), `heron ${i}`, 'x');
        if (i % 6 === 0) mine.push({ id, seq: await seqOf(id) });
      }
      await put(s, keyOfAccount('bob'), 'no match', 'x');
      const page = async (beforeSeq: number | null) => s.search(reader('bob'), query('heron', { window: 4, limit: 10, beforeSeq }));
      const p1 = await page(null); // 12 11 10 9
      assert.deepEqual(
        p1.messages.map((m) => m.id),
        [mine[2]!.id],
        'the 4 newest matches hold one of bob',
      );
      assert.ok(p1.floor !== null && p1.floor.tier === 1 && p1.floor.seq < mine[2]!.seq && p1.floor.seq > mine[1]!.seq);
      const p2 = await page(p1.floor.seq); // 8 7 6 5
      assert.deepEqual(
        p2.messages.map((m) => m.id),
        [mine[1]!.id],
      );
      assert.ok(p2.floor !== null && p2.floor.seq < mine[1]!.seq);
      const p3 = await page(p2.floor.seq); // 4 3 2 1
      assert.deepEqual(
        p3.messages.map((m) => m.id),
        [],
        'a full window of others: nothing, and a floor',
      );
      assert.ok(p3.floor !== null && p3.floor.seq > mine[0]!.seq);
      const p4 = await page(p3.floor.seq); // 0
      assert.deepEqual(
        p4.messages.map((m) => m.id),
        [mine[0]!.id],
        'the last matches: fewer than the window',
      );
      assert.equal(p4.floor, null, 'the window not full: nothing below');
      const whole = await s.search(reader('bob'), query('heron', { window: 13, limit: 10 }));
      assert.deepEqual(
        whole.messages.map((m) => m.id),
        [mine[2]!.id, mine[1]!.id, mine[0]!.id],
      );
      assert.deepEqual(whole.floor, { tier: 1, seq: mine[0]!.seq }, 'exactly full: the floor is the oldest match');
      const capped = await s.search(reader('bob'), query('heron', { window: 13, limit: 2 }));
      assert.deepEqual(
        capped.messages.map((m) => m.id),
        [mine[2]!.id, mine[1]!.id],
        'the limit within the window',
      );
    });
  });
}
