// What `m4a import omp-mail` must not do with what it reads: lend imported mail a live session's
// identity (the sender is only ever a session an import made, else the account), or let a file
// name or a parser's message put control sequences on the terminal.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { keyOfLineage, type AccountRecord, type SessionRecord } from '../src/store/types.js';
import { readFacts } from '../src/attest/proc-facts.js';
import type { Attestation } from '../src/attest/types.js';
import type { OmpMessageIn } from '../src/wire/import-omp-mail.js';
import { IMPORTED_EXE } from '../src/engine/import-omp-mail.js';

const LIVE = '019ff695-0000-7000-8000-00000000001a'; // a conversation running with the extension
const RESUMED = '019ff695-0000-7000-8000-00000000001b'; // imported once, resumed since
const INBOX = '019ff695-0000-7000-8000-00000000001c';
const T0 = Date.UTC(2026, 10, 21, 9, 0, 0);

describe('m4a import omp-mail: imported mail never carries an attested session', () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon();
    await d.account('omp');
  });
  after(() => d.stop());

  /** A live omp process of the account whose extension names `conversation`. */
  const liveSession = async (conversation: string): Promise<SessionRecord> => {
    const account = (await d.store.getAccount('omp')) as AccountRecord;
    const me = readFacts(process.pid)!;
    const att: Attestation = { session: me, peer: me, sessionId: `s-${randomBytes(32).toString('hex')}`, corroborated: { provider: 'omp', provider_session_id: conversation } };
    const caller = await d.engine.callerFor(account, att);
    assert.ok(caller.session && d.engine.isLive(caller.session));
    return caller.session;
  };
  const msg = (id: string, from: string): OmpMessageIn => ({ mailbox: INBOX, id, from, subject: id, body: 'b', ts: T0, delivered: false });

  it("a sender whose conversation is live here is the account, not that process's session", async () => {
    const live = await liveSession(LIVE);
    // RESUMED was imported, then its conversation resumed: the import's session is its predecessor.
    await d.operator.admin.importOmpMail({ account: 'omp', sessions: [{ id: RESUMED }], messages: [] });
    const [imported] = (await d.store.listSessions()).filter((s) => s.corroborated.providerSessionId === RESUMED);
    assert.ok(imported && imported.exe === IMPORTED_EXE);
    const successor = await liveSession(RESUMED);
    assert.equal(successor.lineage, imported.lineage);

    // The sender named only by the mail (not among the request's sessions), and among them.
    await d.operator.admin.importOmpMail({ account: 'omp', sessions: [{ id: INBOX }], messages: [msg('from-live', LIVE), msg('from-resumed', RESUMED)] });
    await d.operator.admin.importOmpMail({
      account: 'omp',
      sessions: [{ id: INBOX }, { id: LIVE }, { id: RESUMED }],
      messages: [msg('from-live-2', LIVE), msg('from-resumed-2', RESUMED)],
    });

    const inbox = (await d.store.findByProviderSession('omp', 'omp', INBOX))[0]!;
    const mail = await d.store.page({ account: 'omp', sessionKey: keyOfLineage('omp', inbox.lineage), rooms: [] }, { after: null, pendingOnly: false, limit: 50, threadId: null });
    const from = new Map(mail.map((m) => [m.subject, m.fromSession]));
    assert.equal(from.get('from-live'), null, 'not the live session');
    assert.equal(from.get('from-live-2'), null, 'not the live session, though the request names its conversation');
    assert.notEqual(from.get('from-live'), live.id);
    assert.equal(from.get('from-resumed'), imported.id, "the import's own session, not its live successor");
    assert.equal(from.get('from-resumed-2'), imported.id);
    assert.ok(mail.every((m) => m.fromAccount === 'omp'));
  });
});
