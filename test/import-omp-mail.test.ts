// `m4a import omp-mail DIR`, run as a user runs it (the built CLI, a real daemon on an ephemeral
// port) over a directory written in omp-mail's own format: agents.json (slugs, aliases, cursors),
// <sessionId>.jsonl mailboxes (a broadcast in every mailbox, the sender's included), a .cursor file.
// The sessions appear ended, provider omp, with their provider session ids and aliases; the mail is
// in their lineages (delivered mail acknowledged); a second run adds nothing; a damaged line is
// named and changes nothing; and a process resuming one of those conversations is its successor
// and reads the mail.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { appendFileSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { raw, type TestDaemon } from './support/test-daemon.js';
import { startCliDaemon, type CliDaemon } from './support/cli-daemon.js';
import { ImportOmpMailResult } from '../src/wire/import-omp-mail.js';
import { packRequests } from '../src/cli/import-commands.js';
import { keyOfLineage, type AccountRecord, type PagedMessage, type SessionRecord } from '../src/store/types.js';
import { readFacts } from '../src/attest/proc-facts.js';
import { LIMITS } from '../src/wire/limits.js';
import type { Attestation } from '../src/attest/types.js';

// omp session ids are UUIDv7s.
const A = '019ff693-1a2b-7c3d-8e4f-00000000000a';
const B = '019ff693-1a2b-7c3d-8e4f-00000000000b';
const C = '019ff693-1a2b-7c3d-8e4f-00000000000c';
const T0 = Date.UTC(2026, 10, 20, 9, 0, 0);
const TRICK = 'invoice\u202Egnp.exe\u200B'; // right-to-left override and a zero-width space
const LONG = 'ünïcode body line\n'.repeat(2000); // 42 KB: kept whole
const HUGE = 'x'.repeat(LIMITS.bodyBytes + 5000); // over 64 KiB: cut with a note

interface Line {
  id: string;
  seq: number;
  from: string;
  fromName?: string;
  fromSlug?: string;
  to: string;
  subject: string;
  body: string;
  ts: number;
}
const line = (to: string, seq: number, from: string, id: string, subject: string, body: string, ts: number): Line => ({
  id,
  seq,
  from,
  fromName: from.slice(-1),
  fromSlug: from === A ? 't1' : from === B ? 't2' : 'docs',
  to,
  subject,
  body,
  ts,
});

function writeFixture(dir: string): void {
  const entry = (slug: string, aliases: string[], cursor: number, alive: boolean) => ({
    name: slug,
    slug,
    aliases,
    cwd: `/home/u/${slug}`,
    pid: 4242,
    lastSeen: T0,
    alive,
    cursor,
  });
  // The registry as omp-mail's daemon writes it (JSON.stringify(registry, null, 2)).
  writeFileSync(
    join(dir, 'agents.json'),
    JSON.stringify({ [A]: entry('t1', ['bb'], 2, false), [B]: entry('t2', ['reviewer', 'cafe01'], 0, false), [C]: entry('docs', [], 0, true) }, null, 2),
  );
  const mailbox = (id: string, lines: Line[]) => writeFileSync(join(dir, `${id}.jsonl`), lines.map((l) => JSON.stringify(l) + '\n').join(''));
  // A broadcast (to: "all") is the same id in every mailbox, the sender's own included.
  const bc = (to: string, seq: number) => line(to, seq, C, 'mq0b-bcast01', 'standup', 'everyone: standup in 5', T0 + 3000);
  mailbox(A, [
    line(A, 1, B, 'mq0a-aaaa0001', 'hello-from-B', 'first live mail', T0 + 1000),
    bc(A, 2),
    line(A, 3, 'ghost-session', 'mq0c-ghost001', 'from nobody known', '?', T0 + 5000),
  ]);
  mailbox(B, [
    line(B, 1, A, 'mq0d-bbbb0001', TRICK, 'open it', T0 + 2000),
    bc(B, 2),
    line(B, 3, A, 'mq0e-long0001', 'long', LONG, T0 + 4000),
    line(B, 4, A, 'mq0f-huge0001', 'huge', HUGE, T0 + 6000),
  ]);
  mailbox(C, [bc(C, 1)]);
  // The extension's own cursor: C's model saw the broadcast (pushed live; the registry cursor says 0).
  writeFileSync(join(dir, `${C}.cursor`), '1');
}

describe('m4a import omp-mail', () => {
  let h: CliDaemon;
  let d: TestDaemon;
  let home: string;
  let dir: string;
  const cli = (args: string[]) => h.cli(args);
  const runImport = async (from: string) => {
    const r = await cli(['import', 'omp-mail', from, '--json']);
    assert.equal(r.status, 0, r.stderr);
    return ImportOmpMailResult.parse(JSON.parse(r.stdout));
  };
  const sessionOf = async (omp: string): Promise<SessionRecord> => {
    const [s, ...rest] = await d.store.findByProviderSession('omp', 'omp', omp);
    assert.ok(s, `a session for ${omp}`);
    assert.equal(rest.length, 0, 'one session per conversation');
    return s;
  };
  const mailOf = async (s: SessionRecord): Promise<PagedMessage[]> =>
    d.store
      .page({ account: 'omp', sessionKey: keyOfLineage('omp', s.lineage), rooms: [] }, { after: null, pendingOnly: false, limit: 50, threadId: null })
      .then((p) => p.filter((m) => m.toKey.startsWith('s:')));

  before(async () => {
    h = await startCliDaemon('m4a-omp-import-');
    ({ d, home } = h);
    dir = join(home, 'omp-mail');
    mkdirSync(dir);
    writeFixture(dir);
  });
  after(() => h.stop());

  it('makes ended omp sessions with their aliases, and puts the mail in their lineages', async () => {
    const r = await runImport(dir);
    assert.equal(r.account, 'omp');
    assert.equal(r.account_created, true);
    assert.deepEqual([r.sessions_created, r.messages_created, r.messages_existing, r.acknowledged], [3, 8, 0, 3]);
    // The account's secret is where `m4a setup omp` and the extension look for it.
    const creds = JSON.parse(readFileSync(join(home, 'mail4agent', 'credentials.json'), 'utf8'));
    assert.equal(creds.accounts.omp.provider, 'omp');
    assert.match(creds.accounts.omp.secret, /^m4a_/);

    const byOmp = new Map(r.sessions.map((s) => [s.omp_session, s]));
    assert.deepEqual(
      [A, B, C].map((id) => [byOmp.get(id)!.address, byOmp.get(id)!.aliases]),
      [
        ['omp/t1', ['@bb']],
        ['omp/t2', ['@reviewer']],
        ['omp/docs', []],
      ],
    );
    assert.equal(byOmp.get(B)!.aliases_refused[0]!.alias, 'cafe01', 'six hex digits would read as a session id prefix here');

    for (const [id, slug] of [
      [A, 't1'],
      [B, 't2'],
      [C, 'docs'],
    ] as const) {
      const s = await sessionOf(id);
      assert.equal(s.corroborated.provider, 'omp');
      assert.equal(s.corroborated.providerSessionId, id);
      assert.equal(s.corroborated.cwd, `/home/u/${slug}`);
      assert.equal(s.slug, slug);
      assert.notEqual(s.endedAt, null, 'ended: only a resumed conversation is live');
      assert.equal(s.successor, null);
      assert.equal(d.engine.isLive(s), false);
    }
    assert.deepEqual((await d.store.resolveName('omp', '@bb'))?.lineage, (await sessionOf(A)).lineage);

    const [sa, sb, sc] = [await sessionOf(A), await sessionOf(B), await sessionOf(C)];
    const mailA = await mailOf(sa);
    assert.deepEqual(
      mailA.map((m) => [m.subject, m.fromSession, m.createdAt, m.ackedAt !== null]),
      [
        ['hello-from-B', sb.id, T0 + 1000, true],
        ['standup', sc.id, T0 + 3000, true],
        ['from nobody known', null, T0 + 5000, false],
      ],
      "A's mail: sender sessions, original times, the first two delivered (registry cursor 2)",
    );
    assert.equal(mailA[2]!.fromAccount, 'omp', 'an unknown sender is the account');
    const mailB = await mailOf(sb);
    assert.equal(mailB.length, 4);
    assert.ok(
      mailB.every((m) => m.ackedAt === null),
      "B's cursor was 0: nothing delivered",
    );
    const trick = mailB[0]!.subject;
    assert.ok(!trick.includes('\u202E') && !trick.includes('\u200B'), 'no invisible or reordering character is stored');
    assert.equal(trick, 'invoice\\u202egnp.exe\\u200b', 'they are shown as escapes instead');
    assert.equal(mailB[2]!.body, LONG, 'a long body within the limit is kept whole');
    assert.ok(Buffer.byteLength(mailB[3]!.body) <= LIMITS.bodyBytes);
    assert.match(mailB[3]!.body, /\[cut by m4a import omp-mail: the body was 70536 bytes; all of it is line 4 of .*\.jsonl\]$/);
    const mailC = await mailOf(sc);
    assert.deepEqual(
      mailC.map((m) => [m.subject, m.ackedAt !== null]),
      [['standup', true]],
      "the extension's cursor file says C saw the broadcast",
    );
    // The broadcast is one message per mailbox, tied by omp-mail's id.
    assert.deepEqual([...new Set([mailA[1], mailB[1], mailC[0]].map((m) => m!.correlation))], ['omp-mail:mq0b-bcast01']);
    assert.deepEqual(
      r.adjusted.map((a) => [a.file.endsWith(`${B}.jsonl`), a.line, a.field]),
      [
        [true, 1, 'subject'],
        [true, 4, 'body'],
      ],
    );
  });

  it('a second run adds nothing and says so; one after omp-mail moved on acknowledges what it delivered since', async () => {
    const head = await d.store.headSeq();
    const again = await runImport(dir);
    assert.deepEqual([again.account_created, again.sessions_created, again.messages_created, again.messages_existing, again.acknowledged], [false, 0, 0, 8, 0]);
    assert.equal(await d.store.headSeq(), head, 'nothing stored');
    assert.equal((await d.store.listSessions()).filter((s) => s.account === 'omp').length, 3);
    const text = await cli(['import', 'omp-mail', dir]);
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /3 sessions \(0 new\), 0 new messages \(8 imported before\), 0 acknowledged/);

    // B's model has since seen its first message in omp-mail.
    writeFileSync(join(dir, `${B}.cursor`), '1');
    const moved = await runImport(dir);
    assert.deepEqual([moved.messages_created, moved.acknowledged], [0, 1]);
    assert.equal(await d.store.headSeq(), head);
  });

  it('a damaged line is named with its file and line, and nothing is imported', async () => {
    const bad = join(home, 'omp-mail-bad');
    cpSync(dir, bad, { recursive: true });
    const D = '019ff693-1a2b-7c3d-8e4f-00000000000d';
    const reg = JSON.parse(readFileSync(join(bad, 'agents.json'), 'utf8'));
    reg[D] = { name: 'new', slug: 'new', aliases: [], cwd: '/x', pid: 1, lastSeen: T0, alive: false, cursor: 0 };
    writeFileSync(join(bad, 'agents.json'), JSON.stringify(reg, null, 2));
    writeFileSync(join(bad, `${D}.jsonl`), JSON.stringify(line(D, 1, A, 'mq1a-new00001', 'would be new', 'b', T0 + 9000)) + '\n');
    appendFileSync(join(bad, `${C}.jsonl`), '{"id":"mq1b-torn","seq":2,"from":"x","subj\n');
    const head = await d.store.headSeq();
    const sessions = (await d.store.listSessions()).length;
    const r = await cli(['import', 'omp-mail', bad, '--json']);
    assert.equal(r.status, 1, r.stdout);
    const err = JSON.parse(r.stderr).error;
    assert.equal(err.code, 'malformed');
    assert.equal(err.file, join(bad, `${C}.jsonl`));
    assert.equal(err.line, 2);
    assert.match(err.message, /\.jsonl:2: not JSON .*nothing was imported/);
    assert.equal(await d.store.headSeq(), head, 'no mail');
    assert.equal((await d.store.listSessions()).length, sessions, 'no session');
    const human = await cli(['import', 'omp-mail', bad]);
    assert.match(human.stderr, new RegExp(`m4a: malformed: .*${C}\\.jsonl:2: not JSON`));

    // A registry that is not JSON is named with its line too.
    writeFileSync(join(bad, 'agents.json'), '{\n  "a": {}\n  "b": {}\n}\n');
    const reg2 = JSON.parse((await cli(['import', 'omp-mail', bad, '--json'])).stderr).error;
    assert.deepEqual([reg2.file, reg2.line], [join(bad, 'agents.json'), 3]);
  });

  it('a large directory goes in several requests (default ~/.omp/mail), each message once, and again adds nothing', async (t) => {
    const big = join(home, '.omp', 'mail');
    mkdirSync(big, { recursive: true });
    const ids = Array.from({ length: 5 }, (_, i) => `019ff694-0000-7000-8000-${String(i).padStart(12, '0')}`);
    writeFileSync(
      join(big, 'agents.json'),
      JSON.stringify(Object.fromEntries(ids.map((id, i) => [id, { name: `w${i}`, slug: `w${i}`, aliases: [], cwd: '', pid: 0, lastSeen: T0, alive: false, cursor: 250 }]))),
    );
    const N = 500;
    for (const [k, id] of ids.entries())
      writeFileSync(
        join(big, `${id}.jsonl`),
        Array.from({ length: N }, (_, i) => JSON.stringify(line(id, i + 1, ids[(k + 1) % ids.length]!, `big-${k}-${i}`, `m ${i}`, 'b'.repeat(600), T0 + i * 10 + k)) + '\n').join(
          '',
        ),
      );
    const t0 = performance.now();
    const r = await cli(['import', 'omp-mail', '--account', 'big', '--json']);
    const ms = performance.now() - t0;
    assert.equal(r.status, 0, r.stderr);
    const out = ImportOmpMailResult.parse(JSON.parse(r.stdout));
    assert.ok(out.requests >= 3, `${out.requests} requests`);
    assert.deepEqual([out.sessions_created, out.messages_created, out.acknowledged], [5, 5 * N, 5 * 250]);
    t.diagnostic(`${5 * N} messages imported in ${out.requests} requests in ${Math.round(ms)} ms`);
    const again = ImportOmpMailResult.parse(JSON.parse((await cli(['import', 'omp-mail', '--account', 'big', '--json'])).stdout));
    assert.deepEqual([again.sessions_created, again.messages_created, again.messages_existing, again.acknowledged], [0, 0, 5 * N, 0]);
  });

  it('packs requests within the budget: each message once, with the sessions it names', () => {
    const sessions = ['a', 'b', 'c', 'd'].map((id) => ({ id, slug: id }));
    const messages = Array.from({ length: 40 }, (_, i) => ({
      mailbox: 'abc'[i % 3]!,
      id: `m${i}`,
      from: i % 2 ? 'b' : 'ghost',
      subject: 's',
      body: 'x'.repeat(200),
      ts: i,
      delivered: false,
    }));
    const reqs = packRequests('omp', { sessions, messages }, 2000);
    assert.ok(reqs.length > 5);
    assert.deepEqual(
      reqs.flatMap((r) => r.messages.map((m) => m.id)),
      messages.map((m) => m.id),
    );
    for (const r of reqs) {
      assert.ok(Buffer.byteLength(JSON.stringify(r)) < 2000 + 400, 'within the budget (give or take the envelope)');
      const has = new Set(r.sessions.map((x) => x.id));
      for (const m of r.messages) assert.ok(has.has(m.mailbox) && (m.from === 'ghost' || has.has(m.from)), 'its mailbox and known sender ride along');
    }
    assert.ok(
      reqs.some((r) => r.sessions.some((x) => x.id === 'd')),
      'a session without mail is sent too',
    );
    assert.deepEqual(packRequests('omp', { sessions: [], messages: [] }), [{ account: 'omp', sessions: [], messages: [] }]);
  });

  it('is for the operator: an agent secret is refused', async () => {
    const bob = await d.account('bob');
    const r = await raw(d.url, '/admin/import/omp-mail', { token: bob.secret, body: JSON.stringify({ account: 'omp', sessions: [], messages: [] }) });
    assert.equal(r.status, 403);
    assert.equal(r.json.error.code, 'permission_denied');
    const human = await raw(d.url, '/admin/import/omp-mail', { token: d.operatorToken, body: JSON.stringify({ account: 'bob', sessions: [{ id: A }], messages: [] }) });
    assert.equal(human.status, 200, 'an agent account other than omp takes them too');
    const mailbox = await raw(d.url, '/admin/import/omp-mail', { token: d.operatorToken, body: JSON.stringify({ account: 'mailbox', sessions: [], messages: [] }) });
    assert.deepEqual([mailbox.status, mailbox.json.error.code, mailbox.json.error.field], [400, 'malformed', 'account']);
  });

  it('the process resuming an imported conversation is its successor and reads its mail', async () => {
    const account = (await d.store.getAccount('omp')) as AccountRecord;
    const me = readFacts(process.pid)!;
    // What attestation reports for an omp process whose extension names conversation B (this test
    // process stands in for it: it is alive, so the session is live).
    const att: Attestation = { session: me, peer: me, sessionId: `s-${randomBytes(32).toString('hex')}`, corroborated: { provider: 'omp', provider_session_id: B } };
    const imported = await sessionOf(B);
    const caller = await d.engine.callerFor(account, att);
    assert.ok(caller.session);
    assert.equal(caller.session.lineage, imported.lineage, 'joined the imported lineage');
    assert.equal((await d.store.getSession('omp', imported.id))?.successor, caller.session.id);
    assert.equal(caller.session.slug, 't2');

    // What the extension's parked wait is told, once: the mail omp-mail had not delivered (B's first
    // message was delivered since, so it is acknowledged history).
    const live = await d.engine.notice(caller, { event: 'live', wait_secs: 0 });
    assert.deepEqual(
      live.mail.map((m) => m.subject),
      ['standup', 'long', 'huge'],
    );
    assert.deepEqual((await d.engine.notice(caller, { event: 'live', wait_secs: 0 })).mail, [], 'told once');
    const inbox = await d.engine.inbox(caller, {});
    assert.deepEqual(
      inbox.messages.map((m) => m.subject),
      ['standup', 'long', 'huge'],
    );
    assert.equal(inbox.messages[1]!.body, LONG);

    // A reply to A's mail goes to A's lineage: an ended omp conversation keeps mail for its resume.
    const fromA = inbox.messages.find((m) => m.subject === 'long')!;
    const sent = await d.engine.reply(caller, { message_id: fromA.message_id, body: 'read it' });
    assert.equal(sent.to, 'omp/t1');
    assert.equal((await mailOf(await sessionOf(A))).at(-1)?.subject, 'Re: long');
  });

  it('once pruned from the directory, importing again brings the session back with its mail and names', async () => {
    const before = await sessionOf(A);
    const mail = (await mailOf(before)).map((m) => m.id);
    await d.store.pruneSessions(Date.now() + 1); // as the sweep does 24 h after the import
    assert.deepEqual(await d.store.findByProviderSession('omp', 'omp', A), []);
    const r = await runImport(dir);
    assert.equal(r.messages_created, 0);
    const back = await sessionOf(A);
    assert.deepEqual([back.id, back.lineage, back.slug], [before.id, before.lineage, 't1']);
    assert.deepEqual(
      (await mailOf(back)).map((m) => m.id),
      mail,
      'the reply sent to it while it waited included',
    );
    assert.equal((await d.store.resolveName('omp', '@bb'))?.lineage, back.lineage);
    // B's conversation has a live successor: it stays, and nothing is made beside it.
    assert.equal((await d.store.findByProviderSession('omp', 'omp', B)).length, 1);
  });
});
