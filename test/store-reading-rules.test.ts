// The reading rules every store shares (src/store/reading-rules.ts), on their own: the conformance
// suite checks that the stores answer alike; these pin the rules themselves.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ackCounter, countUnread, floorStep, pageLowerBound, scopeKeys, tallyAcks, unreadTerms } from '../src/store/reading-rules.js';
import { keyOfAccount, keyOfLineage, keyOfRoom, type ReaderScope } from '../src/store/types.js';

const scope: ReaderScope = { account: 'alice', sessionKey: keyOfLineage('alice', 's-1'), rooms: ['ops', 'dev', 'ops'] };
const q = { after: null, pendingOnly: true, limit: 10, threadId: null };

describe('reading rules', () => {
  it('a scope reads its account, its rooms and its session key, each once', () => {
    assert.deepEqual(scopeKeys(scope), ['a:alice', 'r:ops', 'r:dev', 's:alice/s-1']);
    assert.deepEqual(unreadTerms(scope), { mailboxes: ['a:alice', 's:alice/s-1'], rooms: ['r:ops', 'r:dev'] });
  });

  it('an ack moves the key’s own counter, the member’s room count, or nothing', () => {
    assert.deepEqual(ackCounter(scope, { seq: 1, toKey: keyOfAccount('alice') }), { kind: 'mailbox', key: 'a:alice' });
    assert.deepEqual(ackCounter(scope, { seq: 2, toKey: keyOfLineage('alice', 's-1') }), { kind: 'mailbox', key: 's:alice/s-1' });
    assert.deepEqual(ackCounter(scope, { seq: 3, toKey: keyOfRoom('ops') }), { kind: 'member', room: 'ops' });
    assert.equal(ackCounter(scope, { seq: 4, toKey: keyOfAccount('bob') }), null, 'another account’s mail is acknowledged under alice’s key');
  });

  it('acks are summed per counter, in key order, with one floor per (ack key, mail key)', () => {
    const t = tallyAcks(scope, [
      { seq: 9, toKey: 'r:ops' },
      { seq: 3, toKey: 'a:alice' },
      { seq: 5, toKey: 'r:dev' },
      { seq: 4, toKey: 'a:alice' },
      { seq: 7, toKey: 'r:ops' },
    ]);
    assert.deepEqual(t.mailboxes, [['a:alice', 2]]);
    assert.deepEqual(t.members, [
      ['dev', 1],
      ['ops', 2],
    ]);
    assert.deepEqual(t.floors, [
      ['a:alice', 'a:alice'],
      ['a:alice', 'r:dev'],
      ['a:alice', 'r:ops'],
    ]);
  });

  it('unread is each own key’s unacked count plus each room’s total less the member’s acks', () => {
    const counts: Record<string, { total: number; unacked: number }> = {
      'a:alice': { total: 5, unacked: 2 },
      'r:ops': { total: 7, unacked: 7 },
      'r:dev': { total: 1, unacked: 1 },
    };
    const n = countUnread(scope, {
      unacked: (k) => counts[k]?.unacked ?? 0,
      total: (k) => counts[k]?.total ?? 0,
      memberAcked: (room) => (room === 'ops' ? 3 : 0),
    });
    assert.equal(n, 2 + 0 + (7 - 3) + (1 - 0));
  });

  it('a pending page starts above the ack floor, any page above the cursor', () => {
    assert.equal(pageLowerBound(q, 40), 40);
    assert.equal(pageLowerBound({ ...q, after: 50 }, 40), 50);
    assert.equal(pageLowerBound({ ...q, pendingOnly: false }, 40), 0);
  });

  it('a floor moves past the acknowledged run and stops at the first gap', () => {
    const acked = (seq: number, a = true) => ({ seq, acked: a });
    assert.deepEqual(floorStep(10, [acked(11), acked(14), acked(15, false), acked(16)]), { floor: 14, done: true });
    assert.deepEqual(floorStep(10, [acked(11, false)]), { floor: 10, done: true });
    assert.deepEqual(floorStep(10, [acked(11), acked(12)]), { floor: 12, done: false }, 'a full step may have more behind it');
    assert.deepEqual(floorStep(12, []), { floor: 12, done: true });
  });
});
