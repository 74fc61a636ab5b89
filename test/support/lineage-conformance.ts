// The store contract of joinLineage, run inside the store conformance suite against every store: a
// session that started a lineage of its own becomes an earlier session's successor (a provider
// session id adopted late, sessions.ts) only while nothing hangs off its own lineage, else nothing
// changes. Each case gets a fresh store from the suite's `store()`.
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { keyOfLineage, type LineageRefusal, type RecordSweep, type SessionRecord, type Store } from '../../src/store/types.js';
import { account, message, session } from './store-conformance.js';
import { task } from './task-conformance.js';
import { lease } from './lease-conformance.js';

const scope = (lineage: string) => ({ account: 'gm', sessionKey: keyOfLineage('gm', lineage), rooms: [] });
/** What a refusal must leave as it was. */
const snapshot = async (s: Store) => ({ sessions: await s.listSessions(), names: await s.namesOf('gm') });

export function runLineageConformance(store: () => Store): void {
  describe('joining a lineage (a provider session id adopted late)', () => {
    let s: Store;
    // p: an ended session of the project with its slug and an unread message under its lineage;
    // n: a later session of the same directory, alone in the lineage it started (slug proj-2).
    beforeEach(async () => {
      s = store();
      await s.addAccount(account('gm'));
      await s.registerSession(session('gm', 's-p', { slugBase: 'proj', createdAt: 2_000 }));
      await s.endSession('gm', 's-p', 3_000);
      await s.appendMessage(message(keyOfLineage('gm', 's-p'), { subject: 'waiting' }), 0);
      await s.registerSession(session('gm', 's-n', { slugBase: 'proj', createdAt: 4_000, corroborated: { provider: 'gemini' } }));
    });

    const refuses = async (reason: LineageRefusal, records: RecordSweep['owned'] = [], id = 's-n', pred = 's-p') => {
      const before = await snapshot(s);
      assert.deepEqual(await s.joinLineage('gm', id, pred, 5_000, records), { refused: reason });
      assert.deepEqual(await snapshot(s), before, 'a refusal changes nothing');
    };

    it("takes the predecessor's lineage, slug and mail, drops its own slug, and links the two", async () => {
      assert.equal((await s.getSession('gm', 's-n'))?.slug, 'proj-2');
      const out = await s.joinLineage('gm', 's-n', 's-p', 5_000, []);
      assert.ok('joined' in out, JSON.stringify(out));
      assert.equal(out.joined.lineage, 's-p');
      assert.equal(out.joined.slug, 'proj');
      assert.deepEqual(await s.getSession('gm', 's-n'), out.joined);
      const p = (await s.getSession('gm', 's-p')) as SessionRecord;
      assert.equal(p.successor, 's-n');
      assert.equal(p.endedAt, 3_000, 'an end it had stays');
      assert.deepEqual(
        (await s.lineageSessions('gm', 's-p')).map((x) => x.id),
        ['s-p', 's-n'],
      );
      assert.deepEqual(await s.lineageSessions('gm', 's-n'), []);
      assert.equal(await s.resolveName('gm', 'proj-2'), null, 'its own slug is free again');
      assert.equal((await s.resolveName('gm', 'proj'))?.lineage, 's-p');
      // The mail kept under the lineage is the new session's to read.
      const page = await s.page(scope(out.joined.lineage), { after: null, pendingOnly: true, limit: 10, threadId: null });
      assert.deepEqual(
        page.map((m) => m.subject),
        ['waiting'],
      );
      assert.equal(await s.unread(scope(out.joined.lineage)), 1);
    });

    it('joins the lineage the predecessor belongs to, and ends a predecessor not marked ended', async () => {
      await s.registerSession(session('gm', 's-q', { createdAt: 4_500, predecessor: 's-p' }));
      const out = await s.joinLineage('gm', 's-n', 's-q', 5_000, []);
      assert.ok('joined' in out, JSON.stringify(out));
      assert.equal(out.joined.lineage, 's-p');
      const q = (await s.getSession('gm', 's-q')) as SessionRecord;
      assert.equal(q.successor, 's-n');
      assert.equal(q.endedAt, 5_000);
    });

    it('refuses an unknown session or predecessor, and one of another account', async () => {
      await s.addAccount(account('other'));
      await s.registerSession(session('other', 's-o'));
      await refuses('unknown', [], 's-x');
      await refuses('unknown', [], 's-n', 's-x');
      await refuses('unknown', [], 's-n', 's-o');
    });

    it('refuses a predecessor that has a successor, and the session itself', async () => {
      await s.registerSession(session('gm', 's-q', { createdAt: 4_500, predecessor: 's-p' }));
      await refuses('taken');
      await refuses('taken', [], 's-n', 's-n');
    });

    it('refuses a session that is not alone in a lineage it started', async () => {
      await s.registerSession(session('gm', 's-m', { slugBase: 'other', createdAt: 4_200 }));
      // s-n has a successor (its lineage has another session) ...
      await s.registerSession(session('gm', 's-n2', { createdAt: 4_600, predecessor: 's-n' }));
      await refuses('not_alone');
      // ... and s-n2 is in a lineage it did not start.
      await refuses('not_alone', [], 's-n2', 's-m');
    });

    it('refuses when mail was delivered under its lineage, read or not', async () => {
      const own = keyOfLineage('gm', 's-n');
      const sent = await s.appendMessage(message(own), 0);
      assert.equal(sent.kind, 'created');
      await refuses('mail');
      // Still refused once that mail is acknowledged.
      await s.ack({ account: 'gm', sessionKey: own, rooms: [] }, [{ seq: sent.message.seq, toKey: own }], 6_000);
      await refuses('mail');
    });

    it('refuses an alias of its lineage', async () => {
      assert.equal(await s.addAlias('gm', 's-n', '@helper'), 'ok');
      await refuses('alias');
    });

    it('refuses a task assigned to its lineage', async () => {
      await s.createTask(task('t-1', { toAccount: 'gm', toLineage: 's-n', toAddress: 'gm/s-n' }), 0);
      await refuses('task');
    });

    it('refuses a lease its lineage holds', async () => {
      const out = await s.claimLease(lease('l-1', { holderAccount: 'gm', holderSession: 's-n', holderLineage: 's-n', holderAddress: 'gm/s-n' }), {
        now: 1_000,
        maxPerHolder: 8,
        conflicts: () => true,
      });
      assert.equal(out.kind, 'claimed');
      await refuses('lease');
    });

    it('refuses a record the engine names, by id or by prefix, and only those', async () => {
      await s.putRecord({ kind: 'notice', id: 's:gm/s-n', value: '{}', updatedAt: 1 });
      await s.putRecord({ kind: 'wake_held', id: 'gm/s-n|m-1', value: '{}', updatedAt: 1 });
      await refuses('record', [{ kind: 'notice', id: 's:gm/s-n' }]);
      await refuses('record', [{ kind: 'wake_held', prefix: 'gm/s-n|' }]);
      const other: RecordSweep['owned'] = [
        { kind: 'notice', id: 's:gm/s-m' },
        { kind: 'wake_chain', id: 's:gm/s-n' },
        { kind: 'wake_held', prefix: 'gm/s-m|' },
      ];
      assert.ok('joined' in (await s.joinLineage('gm', 's-n', 's-p', 5_000, other)));
    });
  });
}
