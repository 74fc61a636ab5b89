// The store contract of retention (pruneMail, pruneRecords), run inside the store conformance
// suite against every store: what goes, what stays, and that counters, cursors and records agree
// afterwards. Each case gets a fresh store from the suite's `store()`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyOfAccount, keyOfLineage, keyOfRoom, type MailPruneQuery, type NewAccount, type ReaderScope, type Store, type StoredMessage } from '../../src/store/types.js';
import { approval, task } from './task-conformance.js';
import { message } from './store-conformance.js';

const person = (id: string): NewAccount => ({
  id,
  kind: 'agent',
  label: id,
  permissions: { send: true, read: true, urgent: false, operator: false },
  bindProvider: null,
  secretDigest: `digest-${id}`,
  createdAt: 1_000,
});

let n = 0;
async function post(s: Store, toKey: string, createdAt: number, threadId?: string): Promise<StoredMessage> {
  n++;
  const id = `rm-${n}-${Math.random().toString(36).slice(2, 8)}`;
  const out = await s.appendMessage(message(toKey, { id, threadId: threadId ?? id, subject: 's', body: 'b', createdAt }), 0);
  assert.equal(out.kind, 'created');
  return out.message;
}

const scope = (account: string, lineage: string | null = null, rooms: string[] = []): ReaderScope => ({
  account,
  sessionKey: lineage === null ? null : keyOfLineage(account, lineage),
  rooms,
});
const ackAll = (s: Store, sc: ReaderScope, ms: StoredMessage[]) =>
  s.ack(
    sc,
    ms.map((m) => ({ seq: m.seq, toKey: m.toKey })),
    50_000,
  );
const q = (target: MailPruneQuery['target'], over: Partial<MailPruneQuery> = {}): MailPruneQuery => ({
  target,
  before: 20_000,
  after: 0,
  limit: 100,
  byMessage: ['wake_attempt', 'surfaced'],
  ...over,
});
const present = async (s: Store, ms: StoredMessage[]): Promise<boolean[]> => Promise.all(ms.map(async (m) => (await s.getMessage(m.id)) !== null));

/** Every call until it says nothing is left; the messages deleted in all. */
async function pruneAll(s: Store, query: MailPruneQuery): Promise<{ deleted: number; calls: number }> {
  let deleted = 0;
  let calls = 0;
  for (let after: number | null = query.after; after !== null; calls++) {
    const r = await s.pruneMail({ ...query, after });
    deleted += r.deleted;
    assert.ok(r.next === null || r.next > after, 'the cursor moves on');
    after = r.next;
  }
  return { deleted, calls };
}

export function runRetentionConformance(store: () => Store): void {
  describe('retention', () => {
    it('deletes acknowledged direct and session mail older than the time, nothing else, with its records', async () => {
      const s = store();
      await s.addAccount(person('alice'));
      const oldAcked = await post(s, keyOfAccount('alice'), 10_000);
      const oldUnacked = await post(s, keyOfAccount('alice'), 10_000);
      const newAcked = await post(s, keyOfAccount('alice'), 30_000);
      const sessAcked = await post(s, keyOfLineage('alice', 's-1'), 10_000);
      const sessUnacked = await post(s, keyOfLineage('alice', 's-1'), 10_000);
      await ackAll(s, scope('alice'), [oldAcked, newAcked]);
      await ackAll(s, scope('alice', 's-1'), [sessAcked]);
      for (const m of [oldAcked, oldUnacked]) await s.putRecord({ kind: 'wake_attempt', id: `${m.id}|alice|0`, value: '{}', updatedAt: 1 });
      await s.putRecord({ kind: 'surfaced', id: `${oldAcked.id}|alice`, value: '{}', updatedAt: 1 });
      await s.putRecord({ kind: 'wake_claim', id: `${oldAcked.id}|alice`, value: '{}', updatedAt: 1 });
      const reader = scope('alice', 's-1');
      const unreadBefore = await s.unread(reader);
      const head = await s.headSeq();

      assert.deepEqual(await s.pruneMail(q({ account: 'alice' })), { deleted: 2, next: null });
      assert.deepEqual(await present(s, [oldAcked, oldUnacked, newAcked, sessAcked, sessUnacked]), [false, true, true, false, true]);
      assert.equal(await s.unread(reader), unreadBefore, 'unread is what it was');
      assert.equal(await s.headSeq(), head, 'no seq is given back');
      assert.equal(await s.getRecord('wake_attempt', `${oldAcked.id}|alice|0`), null);
      assert.equal(await s.getRecord('surfaced', `${oldAcked.id}|alice`), null);
      assert.notEqual(await s.getRecord('wake_attempt', `${oldUnacked.id}|alice|0`), null, 'a kept message keeps its records');
      assert.notEqual(await s.getRecord('wake_claim', `${oldAcked.id}|alice`), null, 'only the kinds named go');
      // A page after a deleted seq starts at the next one that is there.
      const page = await s.page(reader, { after: oldAcked.seq - 1, pendingOnly: false, limit: 10, threadId: null });
      assert.deepEqual(
        page.map((m) => m.seq),
        [oldUnacked.seq, newAcked.seq, sessUnacked.seq],
      );
      // New mail still counts, and seqs go on from the head.
      const later = await post(s, keyOfAccount('alice'), 40_000);
      assert.ok(later.seq > head);
      assert.equal(await s.unread(reader), unreadBefore + 1);
      assert.deepEqual(await s.pruneMail(q({ account: 'alice' })), { deleted: 0, next: null }, 'a second pass finds nothing');
    });

    it('deletes room mail only once every current member acknowledged it, and a rejoin counts right', async () => {
      const s = store();
      for (const id of ['alice', 'bob', 'carol']) await s.addAccount(person(id));
      await s.addRoom('lobby', 1);
      await s.addMember('lobby', 'alice');
      await s.addMember('lobby', 'bob');
      await s.addMember('lobby', 'carol');
      const both = await post(s, keyOfRoom('lobby'), 10_000);
      const aliceOnly = await post(s, keyOfRoom('lobby'), 10_000);
      await ackAll(s, scope('alice', null, ['lobby']), [both, aliceOnly]);
      await ackAll(s, scope('bob', null, ['lobby']), [both]);
      await ackAll(s, scope('carol', null, ['lobby']), [both]);
      // carol leaves having acknowledged `both`: her ack goes with it, so a rejoin counts right.
      assert.equal(await s.removeMember('lobby', 'carol'), true);
      const unread = async () => Promise.all(['alice', 'bob', 'carol'].map((a) => s.unread(scope(a, null, a === 'carol' ? [] : ['lobby']))));
      const before = await unread();

      assert.deepEqual(await s.pruneMail(q({ room: 'lobby' })), { deleted: 1, next: null });
      assert.deepEqual(await present(s, [both, aliceOnly]), [false, true]);
      assert.deepEqual(await unread(), before);
      await s.addMember('lobby', 'carol');
      assert.equal(await s.unread(scope('carol', null, ['lobby'])), 1, 'carol rejoins to the one message left, unacknowledged by her');
      await ackAll(s, scope('bob', null, ['lobby']), [aliceOnly]);
      assert.deepEqual(await s.pruneMail(q({ room: 'lobby' })), { deleted: 0, next: null }, 'carol has not acknowledged it');
      await ackAll(s, scope('carol', null, ['lobby']), [aliceOnly]);
      assert.deepEqual(await s.pruneMail(q({ room: 'lobby' })), { deleted: 1, next: null });
      for (const a of ['alice', 'bob', 'carol']) assert.equal(await s.unread(scope(a, null, ['lobby'])), 0);
      await post(s, keyOfRoom('lobby'), 60_000);
      for (const a of ['alice', 'bob', 'carol']) assert.equal(await s.unread(scope(a, null, ['lobby'])), 1, 'new room mail counts for each');
    });

    it('keeps a room without members, and the threads of open tasks and pending approvals', async () => {
      const s = store();
      for (const id of ['alice', 'bob', 'carol']) await s.addAccount(person(id));
      await s.addRoom('empty', 1);
      const lonely = await post(s, keyOfRoom('empty'), 10_000);
      assert.deepEqual(await s.pruneMail(q({ room: 'empty' })), { deleted: 0, next: null });
      assert.deepEqual(await present(s, [lonely]), [true]);

      const open = await s.createTask(task('t-open', { threadId: 'th-open' }), 0);
      await s.createTask(task('t-done', { threadId: 'th-done', state: 'completed' }), 0);
      await s.createApproval(approval('a-pending', { threadId: 'th-appr' }));
      const inOpen = await post(s, keyOfAccount('bob'), 10_000, 'th-open');
      const inDone = await post(s, keyOfAccount('bob'), 10_000, 'th-done');
      const inAppr = await post(s, keyOfAccount('bob'), 10_000, 'th-appr');
      await ackAll(s, scope('bob'), [inOpen, inDone, inAppr]);
      assert.deepEqual(await s.pruneMail(q({ account: 'bob' })), { deleted: 1, next: null });
      assert.deepEqual(await present(s, [inOpen, inDone, inAppr]), [true, false, true]);

      assert.equal(open.kind, 'created');
      const t = open.task;
      await s.updateTask({ ...t, state: 'canceled', version: t.version + 1 }, t.version);
      await s.decideApproval('a-pending', 'rejected', 'no', 2_000);
      assert.deepEqual(await s.pruneMail(q({ account: 'bob' })), { deleted: 2, next: null }, 'once terminal or decided they go');
    });

    it('looks at no more than the limit per call and walks on from its cursor', async () => {
      const s = store();
      await s.addAccount(person('alice'));
      const ms: StoredMessage[] = [];
      for (let i = 0; i < 7; i++) ms.push(await post(s, i % 2 ? keyOfAccount('alice') : keyOfLineage('alice', 's-1'), 10_000));
      const kept = await post(s, keyOfAccount('alice'), 10_000);
      await ackAll(
        s,
        scope('alice'),
        ms.filter((m) => m.toKey === keyOfAccount('alice')),
      );
      await ackAll(
        s,
        scope('alice', 's-1'),
        ms.filter((m) => m.toKey !== keyOfAccount('alice')),
      );
      const first = await s.pruneMail(q({ account: 'alice' }, { limit: 3 }));
      assert.deepEqual(first, { deleted: 3, next: (ms[2] as StoredMessage).seq });
      const rest = await pruneAll(s, q({ account: 'alice' }, { limit: 3, after: first.next }));
      assert.equal(rest.deleted, 4);
      assert.deepEqual(await present(s, [...ms, kept]), [...ms.map(() => false), true]);
      assert.equal(await s.unread(scope('alice', 's-1')), 1);
    });

    it('an ack racing the deletion of its message leaves no ack row and moves no counter', async () => {
      const s = store();
      for (const id of ['alice', 'bob']) await s.addAccount(person(id));
      await s.addRoom('lobby', 1);
      await s.addMember('lobby', 'alice');
      await s.addMember('lobby', 'bob');
      const alice = scope('alice', null, ['lobby']);
      const bob = scope('bob', null, ['lobby']);
      // Unacknowledged mail that stays, so a counter moved by a stray ack shows in unread.
      for (let i = 0; i < 3; i++) {
        await post(s, keyOfAccount('alice'), 10_000);
        await post(s, keyOfRoom('lobby'), 10_000);
      }
      const before = [await s.unread(alice), await s.unread(bob)];
      assert.deepEqual(before, [6, 3]);
      const ROUNDS = 25;
      let deleted = 0;
      const gone: StoredMessage[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const direct = await post(s, keyOfAccount('alice'), 10_000);
        const room = await post(s, keyOfRoom('lobby'), 10_000);
        await ackAll(s, alice, [direct, room]);
        await ackAll(s, bob, [room]);
        // The acks were looked up before the deletion (as the engine does: message, then ack):
        // depending on who wins, each finds its ack standing or the message gone.
        const order = round % 2 === 0;
        const prunes = () => [s.pruneMail(q({ account: 'alice' })), s.pruneMail(q({ room: 'lobby' }))];
        const acks = () => [ackAll(s, alice, [direct, room]), ackAll(s, bob, [room]), ackAll(s, alice, [room, direct])];
        const all = await Promise.all(order ? [...prunes(), ...acks()] : [...acks(), ...prunes()]);
        const pruned = (order ? all.slice(0, 2) : all.slice(3)) as { deleted: number }[];
        deleted += pruned.reduce((a, r) => a + r.deleted, 0);
        // Whatever interleaving, a second pass deletes what the first did not (the acks stand).
        deleted += (await s.pruneMail(q({ account: 'alice' }))).deleted + (await s.pruneMail(q({ room: 'lobby' }))).deleted;
        // And an ack looked up before a deletion that has committed finds it gone.
        await ackAll(s, alice, [direct, room]);
        await ackAll(s, bob, [room]);
        gone.push(direct, room);
      }
      assert.equal(deleted, 2 * ROUNDS);
      assert.deepEqual(
        await present(s, gone),
        gone.map(() => false),
      );
      const items = gone.map((m) => ({ seq: m.seq, toKey: m.toKey }));
      assert.equal((await s.ackedAt(alice, items)).size, 0, 'no ack row survives a deleted message');
      assert.equal((await s.ackedAt(bob, items)).size, 0);
      assert.deepEqual([await s.unread(alice), await s.unread(bob)], before, 'unread counts are what they were');
      await post(s, keyOfRoom('lobby'), 60_000);
      assert.deepEqual([await s.unread(alice), await s.unread(bob)], [7, 4], 'new mail counts for each');
    });

    it('prunes records last written before a time, at most the limit per call', async () => {
      const s = store();
      for (let i = 0; i < 5; i++) await s.putRecord({ kind: 'wake_attempt', id: `m-${i}|alice|0`, value: '{}', updatedAt: i < 3 ? 100 : 900 });
      await s.putRecord({ kind: 'timer', id: 'alice|t1', value: '{}', updatedAt: 100 });
      assert.equal(await s.pruneRecords('wake_attempt', 500, 2), 2);
      assert.equal(await s.pruneRecords('wake_attempt', 500, 2), 1);
      assert.equal(await s.pruneRecords('wake_attempt', 500, 2), 0);
      assert.deepEqual(
        (await s.listRecords('wake_attempt', '', 10)).map((r) => r.id),
        ['m-3|alice|0', 'm-4|alice|0'],
      );
      assert.notEqual(await s.getRecord('timer', 'alice|t1'), null, 'other kinds stay');
    });
  });
}
