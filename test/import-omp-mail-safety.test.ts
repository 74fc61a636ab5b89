// What `m4a import omp-mail` must not do with what it reads: lend imported mail a live session's
// identity (the sender is only ever a session an import made, else the account), or let a file
// name or a parser's message put control sequences on the terminal (the built CLI, run as a user
// runs it, against a real daemon).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { startCliDaemon, type CliDaemon } from './support/cli-daemon.js';
import { keyOfLineage, type AccountRecord, type SessionRecord } from '../src/store/types.js';
import { readFacts } from '../src/attest/proc-facts.js';
import type { Attestation } from '../src/attest/types.js';
import { ImportOmpMailResult, type OmpMessageIn } from '../src/wire/import-omp-mail.js';
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

describe('m4a import omp-mail: names from the files reach the terminal escaped', () => {
  let h: CliDaemon;
  let home: string;
  const ESC = '\x1b';
  // A directory whose name sets the terminal's title, a file whose name turns the text red, one
  // whose name starts a line of its own.
  const dirName = `omp-${ESC}]0;pwned\x07-mail`;
  const red = `${ESC}[31mred${ESC}[0m.jsonl`;
  const cli = (args: string[]) => h.cli(args);
  const noControls = (out: string, what: string): void => assert.ok(!/[\x00-\x08\x0b-\x1f\x7f]/.test(out), `${what} holds a raw control character: ${JSON.stringify(out)}`);

  before(async () => {
    h = await startCliDaemon('m4a-omp-escape-');
    ({ home } = h);
  });
  after(() => h.stop());

  it('a file or directory named with an ESC sequence or a newline is shown as \\u escapes, text and JSON', async () => {
    const dir = join(home, dirName);
    mkdirSync(dir);
    writeFileSync(join(dir, 'agents.json'), JSON.stringify({ [INBOX]: { slug: 'inbox', aliases: [], cursor: 0 } }));
    writeFileSync(join(dir, `${INBOX}.jsonl`), JSON.stringify({ id: 'mq-1', seq: 1, from: LIVE, to: INBOX, subject: 's', body: 'b', ts: T0 }) + '\n');
    writeFileSync(join(dir, red), '');
    writeFileSync(join(dir, 'fake\nline.jsonl'), '');

    const text = await cli(['import', 'omp-mail', dir]);
    assert.equal(text.status, 0, text.stderr);
    noControls(text.stdout, 'the text output');
    assert.ok(text.stdout.includes(`/\\u001b[31mred\\u001b[0m.jsonl file: left out`), text.stdout);
    assert.ok(text.stdout.includes(`/fake\\u000aline.jsonl file: left out`), 'one line, not two');
    assert.ok(text.stdout.includes(`omp-\\u001b]0;pwned\\u0007-mail`), 'the directory too');

    const json = await cli(['import', 'omp-mail', dir, '--json']);
    assert.equal(json.status, 0, json.stderr);
    noControls(json.stdout.replace(/\n/g, ' '), 'the JSON output');
    const r = ImportOmpMailResult.parse(JSON.parse(json.stdout));
    assert.equal(r.dir, dir, 'the value itself is kept: a script gets the real name');
    assert.ok(r.adjusted.some((a) => a.file === join(dir, red)));
  });

  it("refusals quoting the files (a parser's message, a system error, --account) are escaped too", async () => {
    const dir = join(home, `${dirName}-bad`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'agents.json'), `{"a": ${ESC}[31m}`);
    for (const args of [[], ['--json']]) {
      const r = await cli(['import', 'omp-mail', dir, ...args]);
      assert.equal(r.status, 1, r.stdout);
      noControls(r.stderr.replace(/\n$/, ''), `the refusal ${args.join(' ')}`);
      assert.match(r.stderr, /not JSON/);
    }
    const loop = join(home, `${dirName}-loop`);
    mkdirSync(loop);
    symlinkSync(join(loop, 'agents.json'), join(loop, 'agents.json'));
    const sys = await cli(['import', 'omp-mail', loop]);
    assert.equal(sys.status, 1, sys.stdout);
    noControls(sys.stderr.replace(/\n$/, ''), 'a system error');
    assert.match(sys.stderr, /ELOOP.*\\u001b\]0;pwned/);
    const account = await cli(['import', 'omp-mail', dir, '--account', `${ESC}[2J`]);
    assert.equal(account.status, 2);
    noControls(account.stderr.replace(/\n$/, ''), 'a refused --account');
    assert.match(account.stderr, /--account \\u001b\[2J/);
  });
});
