// One behaviour suite that every store runs (memory, sqlite, and any later one): the store
// contract written as tests. Each case gets a fresh store from `make`.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, it } from 'node:test';
import {
  ackKeyFor,
  keyOfAccount,
  keyOfLineage,
  keyOfRoom,
  readKeys,
  type NewAccount,
  type AckItem,
  type AckResult,
  type CommitEvent,
  type NameRecord,
  type NewMessage,
  type NewSession,
  type PageQuery,
  type ReaderScope,
  type Store,
  type StoredMessage,
} from '../../src/store/types.js';
import { runTaskConformance } from './task-conformance.js';
import { runTeamConformance } from './team-conformance.js';
import { runRetentionConformance } from './retention-conformance.js';
import { runSearchConformance } from './search-conformance.js';
import { runLineageConformance } from './lineage-conformance.js';

// ---- fixtures (exported for store-specific tests)

export const digestOf = (secret: string): string => createHash('sha256').update(secret).digest('hex');

export function account(id: string, over: Partial<NewAccount> = {}): NewAccount {
  return {
    id,
    kind: 'agent',
    label: `label of ${id}`,
    permissions: { send: true, read: true, urgent: false, operator: false },
    bindProvider: null,
    secretDigest: digestOf(`secret-${id}`),
    createdAt: 1_000,
    ...over,
  };
}

export function session(acct: string, id: string, over: Partial<NewSession> = {}): NewSession {
  return {
    account: acct,
    id,
    hostId: 'host-1',
    pid: 4242,
    startTime: 77,
    exe: '/usr/bin/agent',
    uid: 1000,
    corroborated: { provider: 'claude', providerSessionId: `ps-${id}` },
    createdAt: 2_000,
    predecessor: null,
    slugBase: null,
    ...over,
  };
}

let counter = 0;
export function message(toKey: string, over: Partial<NewMessage> = {}): NewMessage {
  counter++;
  return {
    id: `msg-${counter}-${Math.random().toString(36).slice(2)}`,
    threadId: `thread-${counter}`,
    fromAccount: 'zed',
    fromSession: null,
    fromKind: 'agent',
    toAddress: toKey.slice(2),
    toKey,
    subject: `subject ${counter}`,
    body: `body ${counter}`,
    replyTo: null,
    correlation: null,
    refs: [],
    priority: 'normal',
    createdAt: 10_000,
    idempotencyKey: null,
    fingerprint: null,
    ...over,
  };
}

/** Appends and insists it was created. */
export async function send(store: Store, toKey: string, over: Partial<NewMessage> = {}): Promise<StoredMessage> {
  const out = await store.appendMessage(message(toKey, over), 0);
  if (out.kind !== 'created') throw new Error(`expected created, got ${out.kind}`);
  return out.message;
}

export function scope(acct: string, lineage: string | null = null, rooms: string[] = []): ReaderScope {
  return { account: acct, sessionKey: lineage === null ? null : keyOfLineage(acct, lineage), rooms };
}

export const A = keyOfAccount;
export const R = keyOfRoom;
export const seqs = (ms: { seq: number }[]): number[] => ms.map((m) => m.seq);
export const item = (m: { seq: number; toKey: string }): AckItem => ({ seq: m.seq, toKey: m.toKey });
export const q = (over: Partial<PageQuery> = {}): PageQuery => ({ after: null, pendingOnly: false, limit: 100, threadId: null, ...over });
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A small seeded PRNG (mulberry32), so a failing random run replays exactly. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---- the suite

export function runStoreConformance(name: string, make: () => Promise<Store>): void {
  describe(`store conformance: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await make();
    });
    afterEach(async () => {
      await store.close();
    });

    describe('meta', () => {
      it('sets a value only if absent and returns the one that stands', async () => {
        assert.equal(await store.getMeta('k'), null);
        assert.equal(await store.initMeta('k', 'v1'), 'v1');
        assert.equal(await store.initMeta('k', 'v2'), 'v1');
        assert.equal(await store.getMeta('k'), 'v1');
      });
    });

    describe('accounts', () => {
      it('adds and reads an account, refusing a second one with the same id', async () => {
        const rec = account('alice', { kind: 'human', bindProvider: 'claude', createdAt: 123 });
        assert.equal(await store.addAccount(rec), 'ok');
        assert.equal(await store.addAccount(account('alice', { label: 'other' })), 'exists');
        assert.deepEqual(await store.getAccount('alice'), { ...rec, bornSeq: 0, contactPolicy: 'open' });
        assert.equal(await store.getAccount('nobody'), null);
      });

      it('keeps each of the four permissions on its own', async () => {
        const names = ['send', 'read', 'urgent', 'operator'] as const;
        for (const only of names) {
          const permissions = { send: false, read: false, urgent: false, operator: false, [only]: true };
          await store.addAccount(account(`p-${only}`, { permissions }));
          assert.deepEqual((await store.getAccount(`p-${only}`))?.permissions, permissions, only);
        }
      });

      it('finds an account by the digest of its secret and follows a new secret', async () => {
        await store.addAccount(account('alice'));
        await store.addAccount(account('bob'));
        assert.equal((await store.findAccountByDigest(digestOf('secret-bob')))?.id, 'bob');
        assert.equal(await store.findAccountByDigest(digestOf('nope')), null);
        assert.equal(await store.setAccountSecret('bob', digestOf('new')), true);
        assert.equal(await store.findAccountByDigest(digestOf('secret-bob')), null);
        assert.equal((await store.findAccountByDigest(digestOf('new')))?.id, 'bob');
        assert.equal(await store.setAccountSecret('nobody', digestOf('x')), false);
      });

      it('lists accounts sorted by id', async () => {
        for (const id of ['carol', 'alice', 'bob']) await store.addAccount(account(id));
        assert.deepEqual(
          (await store.listAccounts()).map((a) => a.id),
          ['alice', 'bob', 'carol'],
        );
      });

      it('removes an account with its memberships, listener, sessions and the mail delivered to it', async () => {
        await store.addAccount(account('alice'));
        await store.addAccount(account('bob'));
        await store.addRoom('lobby', 1);
        await store.addMember('lobby', 'alice');
        await store.addMember('lobby', 'bob');
        await store.setListener('alice', 'http://127.0.0.1:9/wake');
        await store.registerSession(session('alice', 's1', { slugBase: 'web' }));
        await store.registerSession(session('bob', 's2', { slugBase: 'web' }));
        assert.equal(await store.addAlias('alice', 's1', '@front'), 'ok');
        const mail = await send(store, A('alice'));
        const sessionMail = await send(store, keyOfLineage('alice', 's1'));
        const toBob = await send(store, A('bob'), { fromAccount: 'alice' });
        const roomMail = await send(store, R('lobby'));
        assert.deepEqual(await store.removeAccount('alice'), { messages: 2 });
        assert.equal(await store.getAccount('alice'), null);
        assert.deepEqual(await store.roomsOf('alice'), []);
        assert.deepEqual((await store.getRoom('lobby'))?.members, ['bob']);
        assert.equal(await store.getListener('alice'), null);
        assert.equal(await store.getSession('alice', 's1'), null);
        assert.notEqual(await store.getSession('bob', 's2'), null);
        assert.deepEqual(await store.namesOf('alice'), []);
        assert.deepEqual(await store.listNames(), [{ account: 'bob', name: 'web', lineage: 's2', kind: 'slug' }]);
        assert.equal(await store.getMessage(mail.id), null);
        assert.equal(await store.getMessage(sessionMail.id), null);
        assert.deepEqual(await store.getMessage(toBob.id), toBob, "mail it sent is its recipients'");
        assert.deepEqual(await store.getMessage(roomMail.id), roomMail, "room mail is the room's");
        assert.equal(await store.removeAccount('alice'), null);
      });
    });

    describe('a name used again', () => {
      const sweep = {
        owned: [
          { kind: 'chain', id: 'alice' },
          { kind: 'chain', prefix: 'alice/' },
          { kind: 'timer', prefix: 'alice|' },
        ],
        byMessage: ['surfaced', 'attempt'],
        byRecipient: ['surfaced', 'attempt'],
      };
      const rec = (kind: string, id: string) => ({ kind, id, value: '{}', updatedAt: 1 });
      const ids = async (kind: string) => (await store.listRecords(kind, '', 100)).map((r) => r.id);

      it('gives a new account of a removed name none of its mail, acks, counters or records', async () => {
        await store.addAccount(account('alice'));
        await store.addAccount(account('alicex'));
        await store.addRoom('lobby', 1);
        await store.addMember('lobby', 'alice');
        const direct = await send(store, A('alice'));
        await send(store, keyOfLineage('alice', 'L1'));
        const room = await send(store, R('lobby'));
        const alice = scope('alice', 'L1', ['lobby']);
        await store.ack(alice, [item(direct), item(room)], 5);
        await store.insertRecords([
          rec('chain', 'alice'),
          rec('chain', 'alice/L1'),
          rec('chain', 'alicex'),
          rec('timer', 'alice|t1'),
          rec('timer', 'alicex|t2'),
          rec('surfaced', `${direct.id}|alice`),
          rec('surfaced', `${room.id}|alice`),
          rec('surfaced', `${room.id}|alicex`),
          rec('attempt', `${room.id}|alice/L1|000000001-000001`),
          rec('attempt', `${room.id}|alicex|000000001-000002`),
          rec('other', 'alice'),
        ]);
        assert.deepEqual(await store.removeAccount('alice', sweep), { messages: 2 });
        assert.deepEqual(await ids('chain'), ['alicex']);
        assert.deepEqual(await ids('timer'), ['alicex|t2']);
        assert.deepEqual(await ids('surfaced'), [`${room.id}|alicex`]);
        assert.deepEqual(await ids('attempt'), [`${room.id}|alicex|000000001-000002`]);
        assert.deepEqual(await ids('other'), ['alice'], 'a kind the sweep does not name stays');

        assert.equal(await store.addAccount(account('alice', { createdAt: 2_000 })), 'ok');
        assert.equal((await store.getAccount('alice'))?.bornSeq, 3, 'born after every seq handed out');
        await store.addMember('lobby', 'alice');
        const again = scope('alice', 'L1', ['lobby']);
        assert.deepEqual(seqs(await store.page(again, q())), [room.seq], "only the room's mail, as to any new member");
        assert.equal(await store.unread(again), 1, "the old account's acks do not count");
        assert.equal((await store.page(again, q()))[0]?.ackedAt, null);
        assert.deepEqual(await store.ackedAt(again, [item(direct), item(room)]), new Map());
        const fresh = await send(store, A('alice'));
        assert.deepEqual(seqs(await store.page(again, q())), [room.seq, fresh.seq]);
        assert.equal(await store.unread(again), 2);
      });

      it('forgets the idempotency keys of the mail a removed account sent, and no more', async () => {
        await store.addAccount(account('alice'));
        const sent = await send(store, A('bob'), { fromAccount: 'alice', idempotencyKey: 'k1', fingerprint: 'f' });
        const other = await send(store, A('bob'), { fromAccount: 'carol', idempotencyKey: 'k1', fingerprint: 'f' });
        await store.removeAccount('alice');
        assert.equal((await store.getMessage(sent.id))?.idempotencyKey, null);
        assert.equal((await store.getMessage(other.id))?.idempotencyKey, 'k1');
        await store.addAccount(account('alice'));
        const retry = await store.appendMessage(message(A('bob'), { fromAccount: 'alice', idempotencyKey: 'k1', fingerprint: 'f' }), 0);
        assert.equal(retry.kind, 'created', "a new account is never answered with the old one's message");
        assert.equal((await store.appendMessage(message(A('bob'), { fromAccount: 'carol', idempotencyKey: 'k1', fingerprint: 'f' }), 0)).kind, 'duplicate');
      });

      it('starts a new account and a new room empty, whatever was left under their keys', async () => {
        const stray = await send(store, A('alice'));
        const strayRoom = await send(store, R('lobby'));
        await store.ack(scope('alice'), [item(stray)], 3);
        assert.equal(await store.addAccount(account('alice')), 'ok');
        assert.equal(await store.addRoom('lobby', 1), 'ok');
        assert.equal(await store.getMessage(stray.id), null);
        assert.equal(await store.getMessage(strayRoom.id), null);
        await store.addMember('lobby', 'alice');
        const me = scope('alice', null, ['lobby']);
        assert.deepEqual(await store.page(me, q()), []);
        assert.equal(await store.unread(me), 0);
        assert.equal(await store.headSeq(), 2, 'seqs are never handed out again');
        assert.equal((await send(store, A('alice'))).seq, 3);
        assert.equal(await store.unread(me), 1);
      });

      it('sweeps at creation what an earlier build left under the name: records, receipts, retry handles', async () => {
        await store.addAccount(account('bob'));
        await store.addRoom('lobby', 1);
        const room = await send(store, R('lobby'));
        const sent = await send(store, A('bob'), { fromAccount: 'alice', idempotencyKey: 'k1', fingerprint: 'f' });
        await store.insertRecords([
          rec('chain', 'alice'),
          rec('chain', 'alice/L1'),
          rec('chain', 'alicex'),
          rec('timer', 'alice|t1'),
          rec('timer', 'alicex|t2'),
          rec('surfaced', `${room.id}|alice`),
          rec('surfaced', `${room.id}|alicex`),
          rec('attempt', `${room.id}|alice/L1|000000001-000001`),
          rec('other', 'alice'),
        ]);
        assert.equal(await store.addAccount(account('alice'), sweep), 'ok');
        assert.deepEqual(await ids('chain'), ['alicex']);
        assert.deepEqual(await ids('timer'), ['alicex|t2']);
        assert.deepEqual(await ids('surfaced'), [`${room.id}|alicex`]);
        assert.deepEqual(await ids('attempt'), []);
        assert.deepEqual(await ids('other'), ['alice'], 'a kind the sweep does not name stays');
        assert.equal((await store.getMessage(sent.id))?.idempotencyKey, null, 'mail sent under the name keeps no retry handle');
        assert.equal((await store.appendMessage(message(A('bob'), { fromAccount: 'alice', idempotencyKey: 'k1', fingerprint: 'f' }), 0)).kind, 'created');
        await store.insertRecords([rec('chain', 'alice')]);
        assert.equal(await store.addAccount(account('alice'), sweep), 'exists');
        assert.deepEqual(await ids('chain'), ['alice', 'alicex'], 'a refused creation deletes nothing');
      });

      it("removes a room with its mail and every account's acks of it; a new room of the name starts empty", async () => {
        await store.addAccount(account('alice'));
        await store.addAccount(account('bob'));
        await store.addRoom('lobby', 1);
        await store.addRoom('other', 1);
        for (const a of ['alice', 'bob']) await store.addMember('lobby', a);
        await store.addMember('other', 'alice');
        const m1 = await send(store, R('lobby'));
        await send(store, R('lobby'));
        const kept = await send(store, R('other'));
        await store.ack(scope('alice', null, ['lobby', 'other']), [item(m1), item(kept)], 4);
        await store.insertRecords([rec('surfaced', `${m1.id}|alice`), rec('surfaced', `${kept.id}|alice`)]);
        assert.deepEqual(await store.removeRoom('lobby', { owned: [], byMessage: ['surfaced'], byRecipient: [] }), { messages: 2 });
        assert.equal(await store.removeRoom('lobby'), null);
        assert.equal(await store.getMessage(m1.id), null);
        assert.deepEqual(await ids('surfaced'), [`${kept.id}|alice`]);
        assert.equal(await store.addRoom('lobby', 9), 'ok');
        await store.addMember('lobby', 'bob');
        await store.addMember('lobby', 'alice');
        const fresh = await send(store, R('lobby'));
        for (const who of ['alice', 'bob']) {
          const s = scope(who, null, await store.roomsOf(who));
          assert.deepEqual(
            seqs(await store.page(s, q({ limit: 10 }))).filter((n) => n !== kept.seq),
            [fresh.seq],
            who,
          );
          assert.equal(await store.unread(s), 1, `${who}: only the new room's message, its own acks of the old one gone`);
        }
        assert.deepEqual(await store.ackedAt(scope('alice', null, ['other']), [item(kept)]), new Map([[kept.seq, 4]]), 'acks of other rooms stay');
      });
    });

    describe('listeners', () => {
      it('sets, replaces, reads and removes a listener; none for an unknown account', async () => {
        await store.addAccount(account('alice'));
        assert.equal(await store.getListener('alice'), null);
        assert.equal(await store.setListener('alice', 'http://a/1'), true);
        assert.equal(await store.setListener('alice', 'http://a/2'), true);
        assert.equal(await store.getListener('alice'), 'http://a/2');
        assert.equal(await store.setListener('nobody', 'http://a/3'), false);
        assert.equal(await store.getListener('nobody'), null);
        assert.equal(await store.removeListener('alice'), true);
        assert.equal(await store.removeListener('alice'), false);
        assert.equal(await store.getListener('alice'), null);
      });
    });

    describe('rooms', () => {
      it('adds a room once', async () => {
        assert.equal(await store.addRoom('lobby', 5), 'ok');
        assert.equal(await store.addRoom('lobby', 6), 'exists');
        assert.deepEqual(await store.getRoom('lobby'), { name: 'lobby', createdAt: 5, members: [], everyone: false, open: false, team: false, leaders: [] });
        assert.equal(await store.getRoom('nowhere'), null);
      });

      it('keeps whether a room is open, and changes it', async () => {
        assert.equal(await store.addRoom('square', 5, { open: true }), 'ok');
        assert.equal(await store.addRoom('lobby', 5), 'ok');
        assert.equal((await store.getRoom('square'))?.open, true);
        assert.equal(await store.setRoomOpen('square', false), true);
        assert.equal(await store.setRoomOpen('lobby', true), true);
        assert.deepEqual(
          (await store.listRooms()).map((r) => [r.name, r.open]),
          [
            ['lobby', true],
            ['square', false],
          ],
        );
        assert.equal(await store.setRoomOpen('nowhere', true), false);
        assert.equal(await store.getRoom('nowhere'), null);
      });

      it('reports each outcome of adding a member', async () => {
        await store.addAccount(account('alice'));
        await store.addRoom('lobby', 1);
        assert.equal(await store.addMember('nowhere', 'alice'), 'no_room');
        assert.equal(await store.addMember('lobby', 'nobody'), 'no_account');
        assert.equal(await store.addMember('lobby', 'alice'), 'ok');
        assert.equal(await store.addMember('lobby', 'alice'), 'exists');
      });

      it("lists rooms, members and an account's rooms sorted", async () => {
        for (const id of ['carol', 'alice', 'bob']) await store.addAccount(account(id));
        for (const r of ['zeta', 'alpha', 'mid']) await store.addRoom(r, 1);
        for (const [r, a] of [
          ['zeta', 'carol'],
          ['zeta', 'alice'],
          ['alpha', 'alice'],
          ['mid', 'bob'],
        ] as const) {
          await store.addMember(r, a);
        }
        assert.deepEqual(await store.roomsOf('alice'), ['alpha', 'zeta']);
        assert.deepEqual(await store.roomsOf('nobody'), []);
        assert.deepEqual((await store.getRoom('zeta'))?.members, ['alice', 'carol']);
        assert.deepEqual(await store.listRooms(), [
          { name: 'alpha', createdAt: 1, members: ['alice'], everyone: false, open: false, team: false, leaders: [] },
          { name: 'mid', createdAt: 1, members: ['bob'], everyone: false, open: false, team: false, leaders: [] },
          { name: 'zeta', createdAt: 1, members: ['alice', 'carol'], everyone: false, open: false, team: false, leaders: [] },
        ]);
      });

      it('removes a member', async () => {
        await store.addAccount(account('alice'));
        await store.addRoom('lobby', 1);
        await store.addMember('lobby', 'alice');
        assert.equal(await store.removeMember('lobby', 'alice'), true);
        assert.equal(await store.removeMember('lobby', 'alice'), false);
        assert.deepEqual(await store.roomsOf('alice'), []);
      });

      it('makes every account, present and later, a member of an everyone room', async () => {
        await store.addAccount(account('bob'));
        await store.addAccount(account('alice'));
        await store.addRoom('lobby', 1);
        assert.equal(await store.addRoom('all', 5, { everyone: true }), 'ok');
        assert.deepEqual(await store.getRoom('all'), { name: 'all', createdAt: 5, members: ['alice', 'bob'], everyone: true, open: false, team: false, leaders: [] });
        assert.equal(await store.addRoom('all', 6, { everyone: false }), 'exists');
        assert.equal((await store.getRoom('all'))?.everyone, true);
        assert.equal(await store.addAccount(account('carol')), 'ok');
        assert.deepEqual(await store.roomsOf('carol'), ['all']);
        assert.equal(await store.addAccount(account('carol')), 'exists');
        assert.equal(await store.addMember('all', 'carol'), 'exists');
        assert.equal(await store.addRoom('news', 7, { everyone: true }), 'ok');
        await store.addAccount(account('dave'));
        assert.deepEqual(await store.roomsOf('dave'), ['all', 'news']);
        assert.deepEqual(await store.listRooms(), [
          { name: 'all', createdAt: 5, members: ['alice', 'bob', 'carol', 'dave'], everyone: true, open: false, team: false, leaders: [] },
          { name: 'lobby', createdAt: 1, members: [], everyone: false, open: false, team: false, leaders: [] },
          { name: 'news', createdAt: 7, members: ['alice', 'bob', 'carol', 'dave'], everyone: true, open: false, team: false, leaders: [] },
        ]);
        // The store still lets a member go (refusing that is the engine's rule).
        assert.equal(await store.removeMember('all', 'bob'), true);
        assert.deepEqual(await store.roomsOf('bob'), ['news']);
        assert.equal(await store.addMember('all', 'bob'), 'ok');
        assert.deepEqual(await store.removeAccount('carol'), { messages: 0 });
        assert.deepEqual((await store.getRoom('all'))?.members, ['alice', 'bob', 'dave']);
        await store.addAccount(account('carol'));
        assert.deepEqual(await store.roomsOf('carol'), ['all', 'news'], 'an account added again joins again');
      });

      it('counts unread everyone-room mail like any membership, the whole history for a new account', async () => {
        await store.addAccount(account('alice'));
        const of = async (who: string) => scope(who, null, await store.roomsOf(who));
        await store.addRoom('all', 1, { everyone: true });
        const early = await send(store, R('all'));
        assert.equal(await store.unread(await of('alice')), 1, 'an existing account reads the history');
        const m2 = await send(store, R('all'));
        await send(store, R('all'));
        await store.ack(await of('alice'), [item(early)], 5);
        assert.equal(await store.unread(await of('alice')), 2);
        await store.addAccount(account('bob'));
        assert.equal(await store.unread(await of('bob')), 3, 'a new account reads the whole history');
        assert.deepEqual(seqs(await store.page(await of('bob'), q({ pendingOnly: true }))), [1, 2, 3]);
        await store.ack(await of('bob'), [item(m2)], 6);
        assert.equal(await store.unread(await of('bob')), 2);
        assert.equal(await store.unread(await of('alice')), 2, 'acks are per account');
        await send(store, R('all'));
        assert.equal(await store.unread(await of('alice')), 3);
        assert.equal(await store.unread(await of('bob')), 3);
        await store.removeMember('all', 'bob');
        assert.equal(await store.unread(await of('bob')), 0);
        await store.addMember('all', 'bob');
        assert.equal(await store.unread(await of('bob')), 3, 'earlier acks are kept on rejoining');
      });

      it('removes a room with its memberships and its mail', async () => {
        await store.addAccount(account('alice'));
        await store.addRoom('lobby', 1);
        await store.addMember('lobby', 'alice');
        const mail = await send(store, R('lobby'));
        assert.deepEqual(await store.removeRoom('lobby'), { messages: 1 });
        assert.equal(await store.removeRoom('lobby'), null);
        assert.equal(await store.getRoom('lobby'), null);
        assert.deepEqual(await store.roomsOf('alice'), []);
        assert.equal(await store.getMessage(mail.id), null);
        assert.equal(await store.unread(scope('alice', null, await store.roomsOf('alice'))), 0);
      });
    });

    describe('sessions', () => {
      it('registers a session as the start of its own lineage', async () => {
        const corroborated = { provider: 'claude', providerSessionId: 'p1', model: 'opus', cwd: '/w' };
        const rec = await store.registerSession(session('alice', 's1', { createdAt: 2_000, corroborated }));
        assert.deepEqual(rec, {
          account: 'alice',
          id: 's1',
          lineage: 's1',
          hostId: 'host-1',
          pid: 4242,
          startTime: 77,
          exe: '/usr/bin/agent',
          uid: 1000,
          corroborated,
          declared: {},
          createdAt: 2_000,
          lastSeen: 2_000,
          endedAt: null,
          successor: null,
          slug: null,
        });
        assert.deepEqual(await store.getSession('alice', 's1'), rec);
        assert.equal(await store.getSession('bob', 's1'), null);
      });

      it('returns an existing registration unchanged', async () => {
        const first = await store.registerSession(session('alice', 's1'));
        await store.registerSession(session('alice', 's0'));
        const again = await store.registerSession(session('alice', 's1', { pid: 9, createdAt: 9_999, predecessor: 's0' }));
        assert.deepEqual(again, first);
        assert.equal((await store.getSession('alice', 's0'))?.successor, null);
      });

      it('keys sessions by account and id', async () => {
        await store.registerSession(session('alice', 'same', { pid: 1 }));
        await store.registerSession(session('bob', 'same', { pid: 2 }));
        assert.equal((await store.getSession('alice', 'same'))?.pid, 1);
        assert.equal((await store.getSession('bob', 'same'))?.pid, 2);
      });

      it('joins the lineage of a predecessor that has no successor, ending it', async () => {
        await store.registerSession(session('alice', 's1', { createdAt: 2_000 }));
        const s2 = await store.registerSession(session('alice', 's2', { createdAt: 3_000, predecessor: 's1' }));
        assert.equal(s2.lineage, 's1');
        const s1 = await store.getSession('alice', 's1');
        assert.equal(s1?.successor, 's2');
        assert.equal(s1?.endedAt, 3_000);
        const s3 = await store.registerSession(session('alice', 's3', { createdAt: 4_000, predecessor: 's2' }));
        assert.equal(s3.lineage, 's1');
        assert.equal((await store.getSession('alice', 's2'))?.endedAt, 4_000);
      });

      it('keeps the end time of a predecessor that had already ended', async () => {
        await store.registerSession(session('alice', 's1', { createdAt: 2_000 }));
        await store.endSession('alice', 's1', 2_500);
        await store.registerSession(session('alice', 's2', { createdAt: 3_000, predecessor: 's1' }));
        const s1 = await store.getSession('alice', 's1');
        assert.equal(s1?.endedAt, 2_500);
        assert.equal(s1?.successor, 's2');
      });

      it('gives a second successor of the same predecessor its own lineage', async () => {
        await store.registerSession(session('alice', 's1', { createdAt: 2_000 }));
        await store.registerSession(session('alice', 's2', { createdAt: 3_000, predecessor: 's1' }));
        const other = await store.registerSession(session('alice', 's2b', { createdAt: 3_500, predecessor: 's1' }));
        assert.equal(other.lineage, 's2b');
        const s1 = await store.getSession('alice', 's1');
        assert.equal(s1?.successor, 's2');
        assert.equal(s1?.endedAt, 3_000);
      });

      it('ignores a predecessor of another account or one that does not exist', async () => {
        await store.registerSession(session('bob', 's1'));
        const a = await store.registerSession(session('alice', 's2', { predecessor: 's1' }));
        const b = await store.registerSession(session('alice', 's3', { predecessor: 'ghost' }));
        assert.equal(a.lineage, 's2');
        assert.equal(b.lineage, 's3');
        assert.equal((await store.getSession('bob', 's1'))?.successor, null);
      });

      it('finds sessions by provider session, newest first', async () => {
        const x = { provider: 'claude', providerSessionId: 'X' };
        await store.registerSession(session('alice', 's1', { createdAt: 2_000, corroborated: x }));
        await store.registerSession(session('alice', 's2', { createdAt: 3_000, corroborated: x }));
        await store.registerSession(session('alice', 's3', { createdAt: 3_000, corroborated: { provider: 'claude', providerSessionId: 'Y' } }));
        await store.registerSession(session('alice', 's4', { createdAt: 3_000, corroborated: { provider: 'codex', providerSessionId: 'X' } }));
        await store.registerSession(session('bob', 's5', { createdAt: 3_000, corroborated: x }));
        await store.registerSession(session('alice', 's6', { createdAt: 2_500, corroborated: x }));
        const found = await store.findByProviderSession('alice', 'claude', 'X');
        assert.deepEqual(
          found.map((s) => s.id),
          ['s2', 's6', 's1'],
        );
        assert.deepEqual(await store.findByProviderSession('alice', 'claude', 'none'), []);
      });

      it('moves lastSeen only forward', async () => {
        await store.registerSession(session('alice', 's1', { createdAt: 2_000 }));
        await store.registerSession(session('alice', 's2', { createdAt: 2_000 }));
        await store.touchSessions([
          { account: 'alice', id: 's1', at: 5_000 },
          { account: 'alice', id: 's2', at: 1_000 },
          { account: 'alice', id: 'ghost', at: 9_000 },
        ]);
        assert.equal((await store.getSession('alice', 's1'))?.lastSeen, 5_000);
        assert.equal((await store.getSession('alice', 's2'))?.lastSeen, 2_000);
        await store.touchSessions([{ account: 'alice', id: 's1', at: 4_000 }]);
        assert.equal((await store.getSession('alice', 's1'))?.lastSeen, 5_000);
        assert.equal(await store.getSession('alice', 'ghost'), null);
      });

      it('ends a session once', async () => {
        await store.registerSession(session('alice', 's1'));
        await store.endSession('alice', 's1', 7_000);
        await store.endSession('alice', 's1', 8_000);
        assert.equal((await store.getSession('alice', 's1'))?.endedAt, 7_000);
      });

      it('replaces the declared fields with the defined ones', async () => {
        await store.registerSession(session('alice', 's1'));
        const rec = await store.setDeclared('alice', 's1', { workingOn: 'parser', role: undefined, parent: 'p' });
        assert.deepEqual(rec?.declared, { workingOn: 'parser', parent: 'p' });
        assert.deepEqual((await store.getSession('alice', 's1'))?.declared, { workingOn: 'parser', parent: 'p' });
        const again = await store.setDeclared('alice', 's1', { role: 'reviewer' });
        assert.deepEqual(again?.declared, { role: 'reviewer' });
        assert.equal(rec?.id, 's1');
        assert.equal(await store.setDeclared('alice', 'ghost', { role: 'x' }), null);
      });

      it('replaces the provider session id a session reports, and finds the session by it', async () => {
        await store.registerSession(session('alice', 's1'));
        const rec = await store.setProviderSessionId('alice', 's1', 'conv-2');
        assert.equal(rec?.corroborated.providerSessionId, 'conv-2');
        assert.equal(rec?.id, 's1');
        const found = await store.findByProviderSession('alice', 'claude', 'conv-2');
        assert.deepEqual(
          found.map((s) => s.id),
          ['s1'],
        );
        assert.equal(await store.setProviderSessionId('alice', 'ghost', 'conv-3'), null);
      });

      it('keeps an ended pi or omp session until its own, later cutoff', async () => {
        await store.registerSession(session('alice', 'r1', { corroborated: { provider: 'pi', providerSessionId: 'conv-r1' } }));
        await store.registerSession(session('alice', 'r2', { corroborated: { provider: 'omp', providerSessionId: 'conv-r2' } }));
        await store.registerSession(session('alice', 'r3'));
        for (const id of ['r1', 'r2', 'r3']) await store.endSession('alice', id, 100);
        assert.equal(await store.pruneSessions(150, 50), 1, 'only the claude session goes');
        assert.deepEqual((await store.listSessions()).map((s) => s.id).sort(), ['r1', 'r2']);
        assert.equal((await store.findByProviderSession('alice', 'pi', 'conv-r1')).length, 1);
        assert.equal(await store.pruneSessions(150, 150), 2);
        assert.deepEqual(await store.listSessions(), []);
      });

      it('prunes sessions that ended before a time, and only those', async () => {
        for (const id of ['s1', 's2', 's3', 's4']) await store.registerSession(session('alice', id));
        await store.endSession('alice', 's1', 100);
        await store.endSession('alice', 's2', 200);
        await store.endSession('alice', 's4', 150);
        assert.equal(await store.pruneSessions(150), 1);
        assert.deepEqual(
          (await store.listSessions()).map((s) => s.id),
          ['s2', 's3', 's4'],
        );
        assert.equal(await store.pruneSessions(1_000), 2);
        assert.deepEqual(
          (await store.listSessions()).map((s) => s.id),
          ['s3'],
        );
      });

      it('lists sessions in registration order', async () => {
        await store.registerSession(session('bob', 'b1', { createdAt: 5 }));
        await store.registerSession(session('alice', 'a1', { createdAt: 9 }));
        await store.registerSession(session('alice', 'a0', { createdAt: 1 }));
        assert.deepEqual(
          (await store.listSessions()).map((s) => `${s.account}/${s.id}`),
          ['bob/b1', 'alice/a1', 'alice/a0'],
        );
      });
    });

    describe('names', () => {
      const slugOf = async (acct: string, id: string) => (await store.getSession(acct, id))?.slug;
      const nameOf = (acct: string, name: string, lineage: string, kind: 'slug' | 'alias'): NameRecord => ({ account: acct, name, lineage, kind });

      it('gives each new lineage a slug unique within the account: base, base-2, base-3', async () => {
        const web = (id: string, acct = 'alice') => store.registerSession(session(acct, id, { slugBase: 'web' }));
        assert.equal((await web('s1')).slug, 'web');
        assert.equal((await web('s2')).slug, 'web-2');
        assert.equal((await web('s3')).slug, 'web-3');
        assert.equal((await web('b1', 'bob')).slug, 'web', 'another account has its own namespace');
        assert.equal((await store.registerSession(session('alice', 's4', { slugBase: 'api' }))).slug, 'api');
        assert.equal((await store.registerSession(session('alice', 's5'))).slug, null, 'no base, no slug');
        assert.equal(await slugOf('alice', 's2'), 'web-2');
        assert.deepEqual(await store.resolveName('alice', 'web-3'), nameOf('alice', 'web-3', 's3', 'slug'));
        assert.equal(await store.resolveName('alice', 'web-4'), null);
        assert.deepEqual(
          (await store.listSessions()).map((s) => s.slug),
          ['web', 'web-2', 'web-3', 'web', 'api', null],
        );
        const x = (await store.getSession('alice', 's2'))?.corroborated.providerSessionId ?? '';
        assert.deepEqual(
          (await store.findByProviderSession('alice', 'claude', x)).map((s) => s.slug),
          ['web-2'],
        );
        assert.equal((await store.setDeclared('alice', 's3', { role: 'r' }))?.slug, 'web-3');
        assert.equal((await web('s1')).slug, 'web', 'a repeated registration changes nothing');
        assert.equal((await store.namesOf('alice')).length, 4);
      });

      it('gives two registrations at once with the same base different slugs', async () => {
        const [a, b] = await Promise.all([store.registerSession(session('alice', 's1', { slugBase: 'web' })), store.registerSession(session('alice', 's2', { slugBase: 'web' }))]);
        assert.deepEqual([a.slug, b.slug].sort(), ['web', 'web-2']);
      });

      it('gives a successor the lineage slug and aliases, ignoring its own base', async () => {
        await store.registerSession(session('alice', 's1', { slugBase: 'web', createdAt: 2_000 }));
        assert.equal(await store.addAlias('alice', 's1', 'front'), 'ok');
        const s2 = await store.registerSession(session('alice', 's2', { slugBase: 'other', predecessor: 's1', createdAt: 3_000 }));
        assert.equal(s2.lineage, 's1');
        assert.equal(s2.slug, 'web');
        assert.equal(await slugOf('alice', 's2'), 'web');
        assert.equal(await slugOf('alice', 's1'), 'web');
        assert.equal(await store.resolveName('alice', 'other'), null, 'a joining session takes no new name');
        assert.deepEqual(await store.resolveName('alice', 'front'), nameOf('alice', 'front', 's1', 'alias'));
        // A second successor of the same predecessor starts its own lineage, with its own slug.
        const other = await store.registerSession(session('alice', 's2b', { slugBase: 'web', predecessor: 's1', createdAt: 3_500 }));
        assert.equal(other.lineage, 's2b');
        assert.equal(other.slug, 'web-2');
        // A lineage without a slug keeps none when a successor with a base joins it.
        await store.registerSession(session('alice', 's7'));
        const s8 = await store.registerSession(session('alice', 's8', { slugBase: 'late', predecessor: 's7' }));
        assert.equal(s8.slug, null);
        assert.equal(await store.resolveName('alice', 'late'), null);
        assert.deepEqual(
          (await store.namesOf('alice')).map((n) => n.name),
          ['front', 'web', 'web-2'],
        );
      });

      it('keeps slugs and aliases in one namespace per account', async () => {
        await store.registerSession(session('alice', 's1', { slugBase: 'web' }));
        await store.registerSession(session('alice', 's2', { slugBase: 'api' }));
        assert.equal(await store.addAlias('alice', 's2', 'web'), 'taken', "an alias equal to another lineage's slug");
        assert.equal(await store.addAlias('alice', 's1', 'front'), 'ok');
        assert.equal(await store.addAlias('alice', 's2', 'front'), 'taken', "an alias equal to another lineage's alias");
        assert.equal(await store.addAlias('bob', 'b1', 'front'), 'ok', 'another account is another namespace');
        // A new slug skips names held as aliases.
        assert.equal((await store.registerSession(session('alice', 's3', { slugBase: 'front' }))).slug, 'front-2');
        assert.equal(await store.addAlias('alice', 's1', 'web-2'), 'ok');
        assert.equal((await store.registerSession(session('alice', 's4', { slugBase: 'web' }))).slug, 'web-3');
        assert.equal(await store.addAlias('alice', 's1', 'web-3'), 'taken');
        assert.deepEqual(await store.resolveName('alice', 'web'), nameOf('alice', 'web', 's1', 'slug'));
        assert.deepEqual(await store.resolveName('alice', 'front'), nameOf('alice', 'front', 's1', 'alias'));
      });

      it("answers a repeated alias, or the lineage's own slug, with ok and changes nothing", async () => {
        await store.registerSession(session('alice', 's1', { slugBase: 'web' }));
        assert.equal(await store.addAlias('alice', 's1', 'front'), 'ok');
        assert.equal(await store.addAlias('alice', 's1', 'front'), 'ok');
        assert.equal(await store.addAlias('alice', 's1', 'web'), 'ok');
        assert.deepEqual(await store.namesOf('alice'), [nameOf('alice', 'front', 's1', 'alias'), nameOf('alice', 'web', 's1', 'slug')]);
      });

      it('removes only an alias of that lineage, never a slug', async () => {
        await store.registerSession(session('alice', 's1', { slugBase: 'web' }));
        await store.registerSession(session('alice', 's2', { slugBase: 'api' }));
        await store.addAlias('alice', 's1', 'front');
        assert.equal(await store.removeAlias('alice', 's1', 'web'), false, 'a slug stays');
        assert.deepEqual(await store.resolveName('alice', 'web'), nameOf('alice', 'web', 's1', 'slug'));
        assert.equal(await store.removeAlias('alice', 's2', 'front'), false, "another lineage's alias stays");
        assert.equal(await store.removeAlias('bob', 's1', 'front'), false, "another account's name stays");
        assert.equal(await store.removeAlias('alice', 's1', 'nothing'), false);
        assert.notEqual(await store.resolveName('alice', 'front'), null);
        assert.equal(await store.removeAlias('alice', 's1', 'front'), true);
        assert.equal(await store.removeAlias('alice', 's1', 'front'), false);
        assert.equal(await store.resolveName('alice', 'front'), null);
        assert.equal(await store.addAlias('alice', 's2', 'front'), 'ok', 'a removed alias is free again');
        assert.deepEqual(await store.resolveName('alice', 'front'), nameOf('alice', 'front', 's2', 'alias'));
      });

      it('lists the names of an account by name, and all names by account then name', async () => {
        await store.registerSession(session('bob', 'b1', { slugBase: 'mid' }));
        await store.registerSession(session('alice', 's1', { slugBase: 'mid' }));
        await store.registerSession(session('alice', 's2', { slugBase: 'Zed' }));
        await store.addAlias('alice', 's1', 'zeta');
        await store.addAlias('alice', 's2', 'alpha');
        await store.addAlias('alice', 's2', 'mid-2');
        await store.addAlias('bob', 'b1', 'aaa');
        await store.addAlias('carol', 'c1', 'b');
        const alice = [
          nameOf('alice', 'Zed', 's2', 'slug'),
          nameOf('alice', 'alpha', 's2', 'alias'),
          nameOf('alice', 'mid', 's1', 'slug'),
          nameOf('alice', 'mid-2', 's2', 'alias'),
          nameOf('alice', 'zeta', 's1', 'alias'),
        ];
        assert.deepEqual(await store.namesOf('alice'), alice);
        assert.deepEqual(await store.namesOf('nobody'), []);
        assert.deepEqual(await store.listNames(), [...alice, nameOf('bob', 'aaa', 'b1', 'alias'), nameOf('bob', 'mid', 'b1', 'slug'), nameOf('carol', 'b', 'c1', 'alias')]);
        assert.equal(await store.resolveName('bob', 'zeta'), null);
      });

      it('prunes the names of lineages left without a session, and only those', async () => {
        // L1: s1 pruned, its successor s2 lives on. L3: wholly pruned. L4 live. L5 ended later.
        await store.registerSession(session('alice', 's1', { slugBase: 'web', createdAt: 50 }));
        await store.registerSession(session('alice', 's2', { predecessor: 's1', createdAt: 100 }));
        await store.addAlias('alice', 's1', 'one');
        await store.registerSession(session('alice', 's3', { slugBase: 'api', createdAt: 60 }));
        await store.addAlias('alice', 's3', 'three');
        await store.registerSession(session('alice', 's4', { slugBase: 'db', createdAt: 70 }));
        await store.registerSession(session('alice', 's5', { slugBase: 'old', createdAt: 80 }));
        await store.registerSession(session('bob', 'b1', { slugBase: 'api', createdAt: 60 }));
        await store.endSession('alice', 's3', 120);
        await store.endSession('alice', 's5', 500);
        assert.equal(await store.pruneSessions(200), 2);
        assert.deepEqual(
          (await store.namesOf('alice')).map((n) => n.name),
          ['db', 'old', 'one', 'web'],
        );
        assert.equal(await slugOf('alice', 's2'), 'web');
        assert.deepEqual((await store.resolveName('alice', 'one'))?.lineage, 's1');
        assert.notEqual(await store.resolveName('bob', 'api'), null, "another account's same name stays");
        assert.equal((await store.registerSession(session('alice', 's6', { slugBase: 'api' }))).slug, 'api', 'a pruned name is free again');
        await store.endSession('alice', 's2', 300);
        assert.equal(await store.pruneSessions(1_000), 2);
        assert.deepEqual(
          (await store.namesOf('alice')).map((n) => n.name),
          ['api', 'db'],
        );
      });
    });

    describe('finding sessions', () => {
      const sid = (hex: string) => `s-${hex.padEnd(64, '0')}`;

      it('finds sessions of the account by id prefix, ordered by id, up to the limit', async () => {
        const [a, b, c, d] = [sid('abc1'), sid('abc2'), sid('abd'), sid('ff')];
        for (const id of [d, b, c, a]) await store.registerSession(session('alice', id, { slugBase: 'w' }));
        await store.registerSession(session('bob', sid('abc3')));
        const find = async (prefix: string, limit = 10) => (await store.findSessionsByPrefix('alice', prefix, limit)).map((s) => s.id);
        assert.deepEqual(await find('s-abc1'), [a], 'unique');
        assert.deepEqual(await find(a), [a], 'a whole id');
        assert.deepEqual(await find('s-abc'), [a, b], 'ambiguous');
        assert.deepEqual(await find('s-ab'), [a, b, c]);
        assert.deepEqual(await find('s-ab', 2), [a, b], 'limited');
        assert.deepEqual(await find('s-ab', 0), []);
        assert.deepEqual(await find('s-abe'), [], 'none');
        assert.deepEqual(await find('s-f'), [d]);
        assert.deepEqual(await find('s-fg'), []);
        assert.deepEqual(await find('s-'), [a, b, c, d]);
        assert.deepEqual(await find(''), [a, b, c, d]);
        assert.deepEqual(await find('S-ABC'), [], 'case counts');
        assert.deepEqual(await store.findSessionsByPrefix('carol', 's-', 10), []);
        const [found] = await store.findSessionsByPrefix('alice', 's-ab', 1);
        assert.deepEqual(found, await store.getSession('alice', a), 'whole records, slug included');
        assert.equal(found?.slug, 'w-4');
      });

      it('matches and orders any text by code point, at the edges of the range too', async () => {
        const ids = ['k-\u{1F600}', 'k-\u{FFFD}', 'k-~', 'k-\u{10FFFF}z', 'k.', 'k-'];
        for (const id of ids) await store.registerSession(session('alice', id));
        const find = async (prefix: string) => (await store.findSessionsByPrefix('alice', prefix, 10)).map((s) => s.id);
        assert.deepEqual(await find('k-'), ['k-', 'k-~', 'k-\u{FFFD}', 'k-\u{1F600}', 'k-\u{10FFFF}z']);
        assert.deepEqual(await find('k-\u{10FFFF}'), ['k-\u{10FFFF}z']);
        assert.deepEqual(await find('k-~'), ['k-~']);
      });

      it('lists the sessions of a lineage oldest first', async () => {
        await store.registerSession(session('alice', 'z1', { createdAt: 2_000 }));
        await store.registerSession(session('alice', 'other', { createdAt: 2_500 }));
        await store.registerSession(session('alice', 'y2', { createdAt: 3_000, predecessor: 'z1' }));
        await store.registerSession(session('alice', 'x3', { createdAt: 3_000, predecessor: 'y2' }));
        await store.registerSession(session('bob', 'z1', { createdAt: 1 }));
        assert.deepEqual(
          (await store.lineageSessions('alice', 'z1')).map((s) => s.id),
          ['z1', 'y2', 'x3'],
        );
        assert.deepEqual(
          (await store.lineageSessions('alice', 'other')).map((s) => s.id),
          ['other'],
        );
        assert.deepEqual(
          (await store.lineageSessions('bob', 'z1')).map((s) => s.id),
          ['z1'],
        );
        assert.deepEqual(await store.lineageSessions('alice', 'y2'), [], 'a lineage is named by its first session');
        assert.deepEqual(await store.lineageSessions('alice', 'none'), []);
      });
    });

    describe('messages', () => {
      it('counts the mail from outside under a key, up to the limit asked, and no other', async () => {
        assert.equal(await store.externalCount(A('bob'), 10), 0);
        for (let i = 0; i < 4; i++) await send(store, A('bob'), { fromAccount: `email:x${i}@example.com`, fromKind: 'external' });
        await send(store, A('bob'), { fromKind: 'agent' });
        await send(store, A('carol'), { fromAccount: 'email:y@example.com', fromKind: 'external' });
        assert.equal(await store.externalCount(A('bob'), 10), 4);
        assert.equal(await store.externalCount(A('bob'), 3), 3, 'the count stops at the limit');
        assert.equal(await store.externalCount(A('carol'), 10), 1);
        assert.equal(await store.externalCount(A('dave'), 10), 0);
        const [first] = await store.page(scope('bob'), q({ limit: 1 }));
        assert.equal(first?.fromKind, 'external', 'the kind is kept');
      });

      it('numbers messages from 1 in commit order and keeps every field', async () => {
        assert.equal(await store.headSeq(), 0);
        const m = message(A('bob'), {
          fromSession: 's-1',
          fromKind: 'human',
          replyTo: 'msg-0',
          correlation: 'c-1',
          priority: 'urgent',
          refs: [
            { kind: 'file', locator: '/a', digest: 'abc' },
            { kind: 'url', locator: 'http://x' },
          ],
          idempotencyKey: 'k',
          fingerprint: 'f',
        });
        const out = await store.appendMessage(m, 0);
        assert.deepEqual(out, { kind: 'created', message: { ...m, seq: 1 } });
        assert.deepEqual(await store.getMessage(m.id), { ...m, seq: 1 });
        assert.equal((await send(store, A('bob'))).seq, 2);
        assert.equal(await store.headSeq(), 2);
        assert.equal(await store.getMessage('missing'), null);
      });

      it('gives every field of a message in a page, a woken fetch and a thread as stored', async () => {
        const m = message(A('bob'), {
          fromSession: 's-1',
          fromKind: 'service',
          replyTo: 'msg-0',
          correlation: 'c-1',
          priority: 'urgent',
          refs: [{ kind: 'file', locator: '/a', digest: 'abc' }],
          idempotencyKey: 'k',
          fingerprint: 'f',
          task: { task_id: 't-1', state: 'working', version: 3 },
          via: { relay: 'relay.example:8443', delegate: 'carol' },
        });
        const plain = message(A('bob'));
        await store.appendMessage(m, 0);
        await store.appendMessage(plain, 0);
        const [a, b] = await store.page(scope('bob'), q());
        assert.deepEqual(a, { ...m, seq: 1, ackedAt: null });
        assert.deepEqual(b, { ...plain, seq: 2, ackedAt: null });
        await store.ack(scope('bob'), [{ seq: 1, toKey: A('bob') }], 77);
        assert.deepEqual((await store.page(scope('bob'), q()))[0], { ...m, seq: 1, ackedAt: 77 });
        assert.deepEqual(await store.messagesAfter(A('bob'), 0, 10), [
          { ...m, seq: 1 },
          { ...plain, seq: 2 },
        ]);
        assert.deepEqual(await store.getThread(m.threadId), [{ ...m, seq: 1 }]);
      });

      it('gives concurrent appends distinct seqs in call order', async () => {
        const ms = Array.from({ length: 20 }, (_, i) => message(A(`u${i % 3}`)));
        const outs = await Promise.all(ms.map((m) => store.appendMessage(m, 0)));
        assert.deepEqual(
          outs.map((o) => o.message.seq),
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
        assert.deepEqual(
          outs.map((o) => o.message.id),
          ms.map((m) => m.id),
        );
      });

      it('rejects a second message with an existing id and stores nothing', async () => {
        const first = await send(store, A('bob'));
        await assert.rejects(store.appendMessage(message(A('bob'), { id: first.id }), 0));
        assert.equal(await store.headSeq(), 1);
        assert.equal(await store.unread(scope('bob')), 1);
      });

      it("keeps a task's change on its message, and gives ordinary mail none (no key, never null)", async () => {
        const mark = { task_id: 't-7', state: 'input_required' as const, version: 3 };
        const root = await send(store, A('bob'), { threadId: 'T' });
        const change = await send(store, A('bob'), { threadId: 'T', task: mark, replyTo: root.id });
        const nulled = await send(store, A('bob'), { threadId: 'T', task: null });
        assert.deepEqual(change.task, mark, 'the append answers with it');
        assert.notEqual(change.task, mark, 'a copy, not the object given');
        const reads: [string, StoredMessage[]][] = [
          ['getMessage', [(await store.getMessage(root.id))!, (await store.getMessage(change.id))!, (await store.getMessage(nulled.id))!]],
          ['getThread', await store.getThread('T')],
          ['page', await store.page(scope('bob'), q())],
          ['page pending', await store.page(scope('bob'), q({ pendingOnly: true, threadId: 'T' }))],
          ['messagesAfter', await store.messagesAfter(A('bob'), 0, 10)],
        ];
        for (const [where, got] of reads) {
          assert.deepEqual(
            got.map((m) => m.id),
            [root.id, change.id, nulled.id],
            where,
          );
          assert.deepEqual(got[1]!.task, mark, `${where}: the task's change`);
          assert.equal('task' in got[0]!, false, `${where}: ordinary mail has no task key`);
          assert.equal('task' in got[2]!, false, `${where}: task: null is stored as none`);
        }
        // What a reader is given is its own: changing it changes nothing stored.
        reads[0]![1][1]!.task!.state = 'failed';
        assert.equal((await store.getMessage(change.id))!.task!.state, 'input_required');
        // A retry answered from the first message gives its task back too.
        const keyed = message(A('bob'), { fromAccount: 'alice', idempotencyKey: 'tk', fingerprint: 'f', task: mark });
        const first = await store.appendMessage(keyed, 0);
        assert.deepEqual(await store.appendMessage({ ...keyed, id: `${keyed.id}-2` }, 0), { kind: 'duplicate', message: first.message });
        assert.deepEqual(first.message.task, mark);
      });

      it('returns a thread in seq order', async () => {
        const a = await send(store, A('bob'), { threadId: 'T' });
        await send(store, A('bob'), { threadId: 'U' });
        const b = await send(store, R('lobby'), { threadId: 'T' });
        assert.deepEqual(await store.getThread('T'), [a, b]);
        assert.deepEqual(await store.getThread('none'), []);
      });
    });

    describe('idempotency', () => {
      const keyed = (fingerprint: string, createdAt: number, over: Partial<NewMessage> = {}) =>
        message(A('bob'), { fromAccount: 'alice', idempotencyKey: 'k1', fingerprint, createdAt, ...over });

      it('answers a retry with the same key and fingerprint as a duplicate, creating nothing', async () => {
        const first = await store.appendMessage(keyed('f1', 100), 0);
        assert.equal(first.kind, 'created');
        const again = await store.appendMessage(keyed('f1', 150), 50);
        assert.deepEqual(again, { kind: 'duplicate', message: first.message });
        assert.equal(await store.headSeq(), 1);
      });

      it('answers the same key with another fingerprint as a conflict, creating nothing', async () => {
        const first = await store.appendMessage(keyed('f1', 100), 0);
        const other = keyed('f2', 150);
        assert.deepEqual(await store.appendMessage(other, 50), { kind: 'conflict', message: first.message });
        assert.equal(await store.getMessage(other.id), null);
        assert.equal(await store.headSeq(), 1);
      });

      it('scopes keys to the sender and ignores messages without a key', async () => {
        await store.appendMessage(keyed('f1', 100), 0);
        assert.equal((await store.appendMessage(keyed('f1', 100, { fromAccount: 'carol' }), 0)).kind, 'created');
        const plain = { idempotencyKey: null, fingerprint: null };
        assert.equal((await store.appendMessage(keyed('f1', 100, plain), 0)).kind, 'created');
        assert.equal((await store.appendMessage(keyed('f1', 100, plain), 0)).kind, 'created');
        assert.equal(await store.headSeq(), 4);
      });

      it('forgets a key once its message is older than the window, then matches the newest', async () => {
        await store.appendMessage(keyed('f1', 100), 0);
        assert.equal((await store.appendMessage(keyed('f1', 100), 100)).kind, 'duplicate', 'the window is inclusive');
        const renewed = await store.appendMessage(keyed('f2', 200), 101);
        assert.equal(renewed.kind, 'created');
        assert.equal(renewed.message.seq, 2);
        const retry = await store.appendMessage(keyed('f2', 250), 0);
        assert.deepEqual(retry, { kind: 'duplicate', message: renewed.message });
      });

      it('evaluates a concurrent pair with one key in order: created, then duplicate', async () => {
        const [a, b] = await Promise.all([store.appendMessage(keyed('f1', 100), 0), store.appendMessage(keyed('f1', 100), 0)]);
        assert.equal(a.kind, 'created');
        assert.deepEqual(b, { kind: 'duplicate', message: a.message });
        assert.equal(await store.headSeq(), 1);
      });
    });

    describe('records', () => {
      const rec = (kind: string, id: string, value: string, updatedAt = 1) => ({ kind, id, value, updatedAt });

      it('puts, replaces, reads and deletes one record; kinds are separate namespaces', async () => {
        assert.equal(await store.getRecord('timer', 't-1'), null);
        await store.putRecord(rec('timer', 't-1', '{"a":1}', 5));
        await store.putRecord(rec('chain', 't-1', 'other kind', 6));
        assert.deepEqual(await store.getRecord('timer', 't-1'), rec('timer', 't-1', '{"a":1}', 5));
        await store.putRecord(rec('timer', 't-1', '{"a":2}', 7));
        assert.deepEqual(await store.getRecord('timer', 't-1'), rec('timer', 't-1', '{"a":2}', 7));
        assert.equal(await store.deleteRecord('timer', 't-1'), true);
        assert.equal(await store.deleteRecord('timer', 't-1'), false, 'only the first delete wins');
        assert.equal(await store.getRecord('timer', 't-1'), null);
        assert.deepEqual(await store.getRecord('chain', 't-1'), rec('chain', 't-1', 'other kind', 6));
      });

      it('inserts only absent records, first writer wins, and names those it inserted', async () => {
        await store.putRecord(rec('seen', 'm-2|bob', 'first', 1));
        const ins = await store.insertRecords([rec('seen', 'm-1|bob', 'a', 2), rec('seen', 'm-2|bob', 'late', 2), rec('seen', 'm-3|bob', 'c', 2)]);
        assert.deepEqual(ins, ['m-1|bob', 'm-3|bob']);
        assert.equal((await store.getRecord('seen', 'm-2|bob'))?.value, 'first');
        assert.deepEqual(await store.insertRecords([]), []);
        assert.deepEqual(await store.insertRecords([rec('seen', 'm-1|bob', 'again', 3)]), []);
      });

      it('lists by id prefix in code point order, up to the limit', async () => {
        for (const id of ['b|2', 'a|1', 'b|10', 'b|1', 'bz', 'b|\u{1F600}', 'c']) await store.putRecord(rec('k', id, id));
        await store.putRecord(rec('other', 'b|0', 'x'));
        assert.deepEqual(
          (await store.listRecords('k', 'b|', 100)).map((r) => r.id),
          ['b|1', 'b|10', 'b|2', 'b|\u{1F600}'],
        );
        assert.deepEqual(
          (await store.listRecords('k', 'b|', 2)).map((r) => r.id),
          ['b|1', 'b|10'],
        );
        assert.deepEqual(
          (await store.listRecords('k', '', 100)).map((r) => r.id),
          ['a|1', 'bz', 'b|1', 'b|10', 'b|2', 'b|\u{1F600}', 'c'],
        );
        assert.deepEqual(await store.listRecords('k', 'b|', 0), []);
        assert.deepEqual(await store.listRecords('none', '', 10), []);
      });

      it('racing inserts of one id: exactly one wins', async () => {
        const results = await Promise.all([1, 2, 3, 4].map((n) => store.insertRecords([rec('claim', 'wake|m-1', `daemon-${n}`)])));
        assert.equal(results.filter((r) => r.length === 1).length, 1);
      });
    });

    describe('onCommit', () => {
      it('tells listeners the key and seq once the message is readable', async () => {
        const seen: CommitEvent[] = [];
        const heads: Promise<number>[] = [];
        const off = store.onCommit((e) => {
          seen.push(e);
          heads.push(store.headSeq());
        });
        await send(store, A('bob'));
        await send(store, R('lobby'));
        await tick();
        assert.deepEqual(seen, [
          { keys: [A('bob')], seq: 1 },
          { keys: [R('lobby')], seq: 2 },
        ]);
        const readable = await Promise.all(heads);
        seen.forEach((e, i) => assert.ok((readable[i] ?? 0) >= e.seq, 'the commit is visible to the listener'));
        off();
        await send(store, A('bob'));
        await tick();
        assert.equal(seen.length, 2);
      });

      it('keeps going when a listener throws', async () => {
        const seen: number[] = [];
        store.onCommit(() => {
          throw new Error('listener bug');
        });
        store.onCommit((e) => seen.push(e.seq));
        await send(store, A('bob'));
        await send(store, A('bob'));
        await tick();
        assert.deepEqual(seen, [1, 2]);
      });

      it('announces nothing for a duplicate or a conflict', async () => {
        const seen: number[] = [];
        const m = message(A('bob'), { fromAccount: 'alice', idempotencyKey: 'k', fingerprint: 'f' });
        await store.appendMessage(m, 0);
        await tick();
        store.onCommit((e) => seen.push(e.seq));
        await store.appendMessage({ ...m, id: 'retry-1' }, 0);
        await store.appendMessage({ ...m, id: 'retry-2', fingerprint: 'other' }, 0);
        await tick();
        assert.deepEqual(seen, []);
      });
    });

    describe('page', () => {
      const alice = scope('alice', 'L1', ['dev', 'lobby']);
      /** Mail to alice's keys (direct, session, two rooms) interleaved with mail she cannot read. */
      async function mailbox(): Promise<StoredMessage[]> {
        const mine: StoredMessage[] = [];
        mine.push(await send(store, A('alice'), { threadId: 'T' }));
        await send(store, A('bob'), { threadId: 'T' });
        mine.push(await send(store, R('lobby')));
        mine.push(await send(store, keyOfLineage('alice', 'L1'), { threadId: 'T' }));
        await send(store, keyOfLineage('alice', 'L2'));
        await send(store, R('ops'), { threadId: 'T' });
        mine.push(await send(store, R('dev'), { threadId: 'T' }));
        mine.push(await send(store, A('alice')));
        return mine;
      }

      it('returns every readable message in seq order with its fields', async () => {
        const mine = await mailbox();
        const page = await store.page(alice, q());
        assert.deepEqual(seqs(page), [1, 3, 4, 7, 8]);
        assert.deepEqual(
          page,
          mine.map((m) => ({ ...m, ackedAt: null })),
        );
      });

      it('starts after the cursor', async () => {
        await mailbox();
        assert.deepEqual(seqs(await store.page(alice, q({ after: 3 }))), [4, 7, 8]);
        assert.deepEqual(seqs(await store.page(alice, q({ after: 8 }))), []);
        assert.deepEqual(seqs(await store.page(alice, q({ after: 0 }))), [1, 3, 4, 7, 8]);
      });

      it('stops at the limit, counting across keys', async () => {
        await mailbox();
        assert.deepEqual(seqs(await store.page(alice, q({ limit: 2 }))), [1, 3]);
        assert.deepEqual(seqs(await store.page(alice, q({ limit: 2, after: 3 }))), [4, 7]);
        assert.deepEqual(seqs(await store.page(alice, q({ limit: 1, after: 4 }))), [7]);
        assert.deepEqual(await store.page(alice, q({ limit: 0 })), []);
      });

      it('keeps to one thread when asked', async () => {
        await mailbox();
        assert.deepEqual(seqs(await store.page(alice, q({ threadId: 'T' }))), [1, 4, 7]);
        assert.deepEqual(seqs(await store.page(alice, q({ threadId: 'T', after: 1, limit: 1 }))), [4]);
        assert.deepEqual(await store.page(alice, q({ threadId: 'none' })), []);
      });

      it('reads only the keys of its scope', async () => {
        await mailbox();
        assert.deepEqual(seqs(await store.page(scope('alice'), q())), [1, 8]);
        assert.deepEqual(seqs(await store.page(scope('alice', 'L2'), q())), [1, 5, 8]);
        assert.deepEqual(seqs(await store.page(scope('bob', null, ['ops']), q())), [2, 6]);
      });

      it('leaves out acknowledged mail when pendingOnly, and shows the ack time otherwise', async () => {
        const mine = await mailbox();
        await store.ack(alice, [item(mine[1] as StoredMessage), item(mine[3] as StoredMessage)], 500);
        assert.deepEqual(seqs(await store.page(alice, q({ pendingOnly: true }))), [1, 4, 8]);
        const all = await store.page(alice, q());
        assert.deepEqual(
          all.map((m) => [m.seq, m.ackedAt]),
          [
            [1, null],
            [3, 500],
            [4, null],
            [7, 500],
            [8, null],
          ],
        );
        assert.deepEqual(seqs(await store.page(alice, q({ pendingOnly: true, after: 1, limit: 1 }))), [4]);
      });

      it('finds pending mail correctly whatever order acks come in', async () => {
        const me = scope('alice');
        const ms: StoredMessage[] = [];
        for (let i = 0; i < 10; i++) ms.push(await send(store, A('alice')));
        const ackSeqs = async (...ss: number[]) =>
          store.ack(
            me,
            ss.map((s) => ({ seq: s, toKey: A('alice') })),
            1,
          );
        const pending = async (over: Partial<PageQuery> = {}) => seqs(await store.page(me, q({ pendingOnly: true, ...over })));
        await ackSeqs(2, 4);
        assert.deepEqual(await pending(), [1, 3, 5, 6, 7, 8, 9, 10]);
        await ackSeqs(1);
        assert.deepEqual(await pending(), [3, 5, 6, 7, 8, 9, 10]);
        await ackSeqs(3);
        assert.deepEqual(await pending(), [5, 6, 7, 8, 9, 10]);
        assert.deepEqual(await pending({ limit: 2 }), [5, 6]);
        assert.deepEqual(await pending({ after: 7 }), [8, 9, 10]);
        assert.deepEqual(await pending({ after: 2 }), [5, 6, 7, 8, 9, 10]);
        await ackSeqs(10, 9, 8, 7, 6, 5);
        assert.deepEqual(await pending(), []);
        assert.deepEqual(seqs(await store.page(me, q({ after: 3 }))), [4, 5, 6, 7, 8, 9, 10], 'acked mail still pages');
        await send(store, A('bob'));
        await send(store, A('alice'));
        assert.deepEqual(await pending(), [12]);
      });
    });

    describe('acks', () => {
      it('acks once: a second ack returns the first time, not fresh, in item order', async () => {
        const me = scope('bob');
        const m1 = await send(store, A('bob'));
        const m2 = await send(store, A('bob'));
        const m3 = await send(store, A('bob'));
        assert.deepEqual(await store.ack(me, [item(m3), item(m1)], 50), [
          { seq: 3, ackedAt: 50, fresh: true },
          { seq: 1, ackedAt: 50, fresh: true },
        ]);
        assert.deepEqual(await store.ack(me, [item(m1), item(m2), item(m2)], 60), [
          { seq: 1, ackedAt: 50, fresh: false },
          { seq: 2, ackedAt: 60, fresh: true },
          { seq: 2, ackedAt: 60, fresh: false },
        ] satisfies AckResult[]);
        assert.deepEqual(await store.ack(me, [], 70), []);
      });

      it('acks direct and room mail once for the whole account', async () => {
        const s1 = scope('alice', 'L1', ['lobby']);
        const s2 = scope('alice', 'L2', ['lobby']);
        const direct = await send(store, A('alice'));
        const room = await send(store, R('lobby'));
        await store.ack(s1, [item(direct), item(room)], 10);
        assert.deepEqual(await store.page(s2, q({ pendingOnly: true })), []);
        assert.deepEqual(await store.page(scope('alice', null, ['lobby']), q({ pendingOnly: true })), []);
        assert.deepEqual(
          [...(await store.ackedAt(s2, [item(direct), item(room)]))],
          [
            [1, 10],
            [2, 10],
          ],
        );
        assert.deepEqual(await store.ack(s2, [item(room)], 20), [{ seq: 2, ackedAt: 10, fresh: false }]);
        // Another member of the room has its own acks.
        assert.deepEqual(seqs(await store.page(scope('bob', null, ['lobby']), q({ pendingOnly: true }))), [2]);
      });

      it('acks session mail only for that session lineage', async () => {
        const l1 = scope('alice', 'L1');
        const mail = await send(store, keyOfLineage('alice', 'L1'));
        assert.equal(ackKeyFor(l1, mail.toKey), mail.toKey);
        await store.ack(l1, [item(mail)], 10);
        // A successor in the same lineage reads under the same key: already acked.
        assert.deepEqual(await store.page(scope('alice', 'L1'), q({ pendingOnly: true })), []);
        assert.deepEqual(await store.page(scope('alice', 'L2'), q()), []);
        assert.deepEqual(await store.page(scope('alice'), q()), []);
        // The direct mailbox of the account is not acked by a session ack.
        const direct = await send(store, A('alice'));
        assert.deepEqual(seqs(await store.page(l1, q({ pendingOnly: true }))), [direct.seq]);
      });

      it('reports ack times only for the acknowledged items of the scope', async () => {
        const me = scope('alice', 'L1');
        const a = await send(store, A('alice'));
        const b = await send(store, keyOfLineage('alice', 'L1'));
        const c = await send(store, A('alice'));
        await store.ack(me, [item(b)], 7);
        await store.ack(me, [item(a)], 9);
        assert.deepEqual([...(await store.ackedAt(me, [item(a), item(b), item(c)]))].sort(), [
          [1, 9],
          [2, 7],
        ]);
        // Direct mail is acked under the reader's account: another account's scope has no ack.
        assert.equal((await store.ackedAt(scope('bob', 'L9'), [item(a)])).size, 0);
      });
    });

    describe('many readers at once', () => {
      it('gives each reader what unread and ackedAt give it alone', async () => {
        for (const id of ['alice', 'bob', 'carol']) await store.addAccount(account(id));
        for (const room of ['lobby', 'ops']) await store.addRoom(room, 1);
        await store.addMember('lobby', 'alice');
        await store.addMember('lobby', 'bob');
        await store.addMember('ops', 'bob');
        const r1 = await send(store, R('lobby'));
        const r2 = await send(store, R('lobby'));
        const o1 = await send(store, R('ops'));
        const d1 = await send(store, A('alice'));
        const s1 = await send(store, keyOfLineage('bob', 'L1'));
        const s2 = await send(store, keyOfLineage('bob', 'L2'));
        await store.ack(scope('alice', null, ['lobby']), [item(r1), item(d1)], 7);
        await store.ack(scope('bob', 'L1', ['lobby', 'ops']), [item(r2), item(s1)], 8);
        const all = [r1, r2, o1, d1, s1, s2].map(item);
        const readers = [
          { scope: scope('alice', null, ['lobby']), items: all },
          { scope: scope('bob', 'L1', ['lobby', 'ops']), items: all },
          { scope: scope('bob', 'L2', ['lobby', 'ops']), items: [item(s1), item(s2), item(r2)] },
          { scope: scope('carol'), items: [item(r1)] },
          // Not a member (the engine never asks so): counted as unread alone counts it.
          { scope: scope('carol', null, ['lobby']), items: [item(r1)] },
          { scope: scope('alice', null, ['lobby']), items: [] },
        ];
        const many = await store.readerFacts(readers);
        assert.equal(many.length, readers.length);
        for (const [i, r] of readers.entries()) {
          assert.equal(many[i]?.unread, await store.unread(r.scope), `reader ${i}: unread`);
          assert.deepEqual(many[i]?.acked, await store.ackedAt(r.scope, [...r.items]), `reader ${i}: acks`);
        }
        assert.deepEqual(
          [...(many[1]?.acked.keys() ?? [])].sort((a, b) => a - b),
          [r2.seq, s1.seq],
        );
        assert.equal(many[3]?.unread, 0);
        assert.deepEqual(await store.readerFacts([]), []);
      });

      it('reads the listeners of many accounts at once', async () => {
        for (const id of ['alice', 'bob', 'carol']) await store.addAccount(account(id));
        await store.setListener('alice', 'http://a/1');
        await store.setListener('carol', 'http://c/1');
        assert.deepEqual(
          await store.listenersOf(['alice', 'bob', 'carol', 'nobody', 'alice']),
          new Map([
            ['alice', 'http://a/1'],
            ['carol', 'http://c/1'],
          ]),
        );
        assert.deepEqual(await store.listenersOf([]), new Map());
      });
    });

    describe('unread', () => {
      it('counts readable mail after sends, and only that', async () => {
        const me = scope('alice', 'L1', ['lobby']);
        assert.equal(await store.unread(me), 0);
        await send(store, A('alice'));
        await send(store, A('alice'));
        await send(store, keyOfLineage('alice', 'L1'));
        await send(store, R('lobby'));
        await send(store, A('bob'));
        await send(store, keyOfLineage('alice', 'L2'));
        await send(store, R('ops'));
        assert.equal(await store.unread(me), 4);
        assert.equal(await store.unread(scope('alice')), 2);
        assert.equal(await store.unread(scope('alice', 'L2')), 3);
      });

      it('drops with fresh acks only', async () => {
        await store.addAccount(account('alice'));
        await store.addRoom('lobby', 1);
        await store.addMember('lobby', 'alice');
        const me = scope('alice', 'L1', ['lobby']);
        const d = await send(store, A('alice'));
        const s = await send(store, keyOfLineage('alice', 'L1'));
        const r = await send(store, R('lobby'));
        await send(store, R('lobby'));
        assert.equal(await store.unread(me), 4);
        await store.ack(me, [item(d), item(s), item(r)], 5);
        assert.equal(await store.unread(me), 1);
        await store.ack(me, [item(d), item(s), item(r)], 6);
        assert.equal(await store.unread(me), 1);
        assert.equal(await store.unread(scope('alice', 'L2', ['lobby'])), 1);
      });

      it('follows room membership: join, leave, rejoin with earlier acks respected', async () => {
        await store.addAccount(account('alice'));
        await store.addAccount(account('bob'));
        await store.addRoom('lobby', 1);
        const of = async (who: string) => scope(who, null, await store.roomsOf(who));
        const r1 = await send(store, R('lobby'));
        const r2 = await send(store, R('lobby'));
        await send(store, R('lobby'));
        assert.equal(await store.unread(await of('alice')), 0);
        await store.addMember('lobby', 'alice');
        assert.equal(await store.unread(await of('alice')), 3, 'mail sent before joining is readable');
        await store.ack(await of('alice'), [item(r1)], 10);
        assert.equal(await store.unread(await of('alice')), 2);
        await store.addMember('lobby', 'bob');
        assert.equal(await store.unread(await of('bob')), 3);
        await store.removeMember('lobby', 'alice');
        assert.deepEqual((await of('alice')).rooms, []);
        assert.equal(await store.unread(await of('alice')), 0);
        assert.deepEqual(await store.page(await of('alice'), q()), []);
        await send(store, R('lobby'));
        await send(store, R('lobby'));
        // An ack while not a member (the engine would refuse it) stands but changes no counter.
        await store.ack(scope('alice', null, ['lobby']), [item(r2)], 11);
        assert.equal(await store.unread(await of('bob')), 5);
        await store.addMember('lobby', 'alice');
        assert.equal(await store.unread(await of('alice')), 3);
        assert.deepEqual(seqs(await store.page(await of('alice'), q({ pendingOnly: true }))), [3, 4, 5]);
        await store.ack(await of('alice'), [item(r2)], 12);
        assert.equal(await store.unread(await of('alice')), 3, 'a repeated ack counts nothing');
      });

      it('drops a room from the count once the room is gone', async () => {
        await store.addAccount(account('alice'));
        await store.addRoom('lobby', 1);
        await store.addMember('lobby', 'alice');
        await send(store, R('lobby'));
        await send(store, A('alice'));
        assert.equal(await store.unread(scope('alice', null, await store.roomsOf('alice'))), 2);
        await store.removeRoom('lobby');
        assert.equal(await store.unread(scope('alice', null, await store.roomsOf('alice'))), 1);
      });
    });

    runTaskConformance(() => store);
    runTeamConformance(() => store);
    runRetentionConformance(() => store);
    runSearchConformance(() => store);
    runLineageConformance(() => store);

    it('matches a reference model over 500 random operations', async () => {
      await randomRun(store, 0x5eed);
    });
  });
}

// ---- the randomized check against a reference model

interface ModelMessage {
  seq: number;
  toKey: string;
  threadId: string;
}

/** The contract in its plainest form: filter every message, count by filtering. */
class Model {
  readonly messages: ModelMessage[] = [];
  readonly acks = new Map<string, Map<number, number>>();
  readonly members = new Map<string, Set<string>>();

  roomsOf(acct: string): string[] {
    return [...this.members]
      .filter(([, m]) => m.has(acct))
      .map(([r]) => r)
      .sort();
  }

  page(s: ReaderScope, pq: PageQuery): [number, number | null][] {
    const keys = new Set(readKeys(s));
    return this.messages
      .filter((m) => keys.has(m.toKey) && (pq.after === null || m.seq > pq.after) && (pq.threadId === null || m.threadId === pq.threadId))
      .map((m): [number, number | null] => [m.seq, this.acks.get(ackKeyFor(s, m.toKey))?.get(m.seq) ?? null])
      .filter(([, at]) => !pq.pendingOnly || at === null)
      .slice(0, Math.max(0, pq.limit));
  }

  ack(s: ReaderScope, items: AckItem[], at: number): AckResult[] {
    return items.map((it) => {
      const key = ackKeyFor(s, it.toKey);
      const acks = this.acks.get(key) ?? new Map<number, number>();
      this.acks.set(key, acks);
      const prior = acks.get(it.seq);
      if (prior !== undefined) return { seq: it.seq, ackedAt: prior, fresh: false };
      acks.set(it.seq, at);
      return { seq: it.seq, ackedAt: at, fresh: true };
    });
  }
}

async function randomRun(store: Store, seed: number): Promise<void> {
  const rand = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const model = new Model();
  const accounts = ['alice', 'bob', 'carol'];
  const rooms = ['r1', 'r2'];
  for (const a of accounts) await store.addAccount(account(a));
  for (const r of rooms) {
    await store.addRoom(r, 1);
    model.members.set(r, new Set());
  }
  const keys = [A('alice'), A('bob'), A('carol'), keyOfLineage('alice', 'L1'), keyOfLineage('alice', 'L2'), keyOfLineage('bob', 'L3'), R('r1'), R('r2')];
  const readers: [string, string | null][] = [
    ['alice', 'L1'],
    ['alice', 'L2'],
    ['alice', null],
    ['bob', 'L3'],
    ['carol', null],
  ];
  const threads = ['t1', 't2', 't3'];

  for (let step = 1; step <= 500; step++) {
    const where = `seed ${seed} step ${step}`;
    const roll = rand();
    if (roll < 0.5) {
      const toKey = pick(keys);
      const threadId = pick(threads);
      const m = await send(store, toKey, { threadId });
      model.messages.push({ seq: m.seq, toKey, threadId });
      assert.equal(m.seq, model.messages.length, where);
    } else if (roll < 0.88) {
      const [who, lineage] = pick(readers);
      const s = scope(who, lineage, model.roomsOf(who));
      const readable = model.page(s, q({ limit: 1e9 }));
      if (readable.length === 0) continue;
      const items: AckItem[] = [];
      for (let n = 1 + Math.floor(rand() * 3); n > 0; n--) {
        const [seq] = pick(readable);
        items.push({ seq, toKey: (model.messages[seq - 1] as ModelMessage).toKey });
      }
      assert.deepEqual(await store.ack(s, items, step), model.ack(s, items, step), where);
    } else {
      const room = pick(rooms);
      const who = pick(accounts);
      const members = model.members.get(room) as Set<string>;
      if (members.has(who)) {
        assert.equal(await store.removeMember(room, who), true, where);
        members.delete(who);
      } else {
        assert.equal(await store.addMember(room, who), 'ok', where);
        members.add(who);
      }
    }

    for (const [who, lineage] of readers) {
      const rs = await store.roomsOf(who);
      assert.deepEqual(rs, model.roomsOf(who), where);
      const s = scope(who, lineage, rs);
      const at = `${where} reader ${who}/${lineage}`;
      assert.equal(await store.unread(s), model.page(s, q({ pendingOnly: true, limit: 1e9 })).length, at);
      const query = q({
        pendingOnly: rand() < 0.5,
        after: rand() < 0.5 ? null : Math.floor(rand() * (model.messages.length + 1)),
        limit: 1 + Math.floor(rand() * 12),
        threadId: rand() < 0.3 ? pick(threads) : null,
      });
      const got = (await store.page(s, query)).map((m): [number, number | null] => [m.seq, m.ackedAt]);
      assert.deepEqual(got, model.page(s, query), `${at} query ${JSON.stringify(query)}`);
    }
  }
}
