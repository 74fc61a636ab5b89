// `m4a import interagentmail DIR` over a data directory in InterAgentMail's own format
// (test/fixtures/interagentmail: mailboxes/<address>/profile.json, inbox|sent|archive/<id>.json,
// timers/timer-*.json, teams/<name>.json), on a real daemon: the command as a user runs it, then
// every mapped field read back from the store: accounts (a person's mailbox a human account, a
// name that is no selector here made one, a collision told apart), one copy per recipient with its
// body, threads and replies, archived mail acknowledged and read mail not, urgent kept, the team
// with its leader and the grants we have, pending timers (a team reminder naming its team and its
// leader), a delivered timer left out, chat channels as rooms (a team's channel its room, a private
// one closed) with each post from its poster at its time, acknowledged for those who saw it. A
// second run adds nothing; a damaged file (mail or chat) imports nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestDaemon } from './support/test-daemon.js';
import { ROOT, startCliDaemon, type CliDaemon } from './support/cli-daemon.js';
import { keyOfAccount, type PagedMessage } from '../src/store/types.js';
import { importedCopyId } from '../src/engine/import-mail.js';
import type { TimerRecord } from '../src/engine/timers.js';
import type { MailImportResult } from '../src/cli/import-mail-run.js';

const FIXTURE = join(ROOT, 'test/fixtures/interagentmail');
const M1 = '1795165200-a1b2c3d4';
const M2 = '1795167000-b2c3d4e5';
const M3 = '1795168800-c3d4e5f6';
const M4 = '1795172400-d4e5f6a7';
const at = (iso: string): number => Date.parse(iso);

describe('m4a import interagentmail', () => {
  let h: CliDaemon;
  let d: TestDaemon;
  let home: string;
  const cli = (args: string[]) => h.cli(args);
  const run = async (dir: string): Promise<MailImportResult> => {
    const r = await cli(['import', 'interagentmail', dir, '--json']);
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as MailImportResult;
  };
  const mailOf = (account: string): Promise<PagedMessage[]> =>
    d.store
      .page({ account, sessionKey: null, rooms: [] }, { after: null, pendingOnly: false, limit: 100, threadId: null })
      .then((p) => p.filter((m) => m.toKey === keyOfAccount(account)));
  const timersOf = async (account: string): Promise<TimerRecord[]> => (await d.store.listRecords('timer', `${account}|`, 100)).map((r) => JSON.parse(r.value) as TimerRecord);
  const copy = (id: string, to: string): string => importedCopyId('interagentmail', { id, to });
  /** Room mail of the rooms as the account reads it, oldest first. */
  const roomMail = (account: string, rooms: string[]): Promise<PagedMessage[]> =>
    d.store.page({ account, sessionKey: null, rooms }, { after: null, pendingOnly: false, limit: 100, threadId: null }).then((p) => p.filter((m) => m.toKey.startsWith('r:')));

  before(async () => {
    h = await startCliDaemon('m4a-iam-import-', { source: true });
    ({ d, home } = h);
  });
  after(() => h.stop());

  it('makes the accounts, copies, threads, acks, team and timers of the data directory', async () => {
    const r = await run(FIXTURE);
    assert.deepEqual(
      r.accounts.map((a) => [a.id, a.kind, a.source, a.created]),
      [
        ['AegisGrid', 'agent', 'AegisGrid', true],
        ['NexusGuild', 'agent', 'NexusGuild', true],
        ['UX-Reviewer', 'agent', 'UX Reviewer', true],
        ['UX-Reviewer-2', 'agent', 'UX-Reviewer', true],
        ['yggdrassoftgaming', 'human', 'yggdrassoftgaming', true],
      ],
    );
    assert.equal((await d.store.getAccount('NexusGuild'))?.label, 'Nexus Guild');
    assert.equal((await d.store.getAccount('yggdrassoftgaming'))?.kind, 'human');
    assert.equal((await d.store.getAccount('yggdrassoftgaming'))?.label, 'Liliana');
    // m1 to AegisGrid and (cc) UX Reviewer, m2 and m3 to NexusGuild, m4 to AegisGrid.
    // 2 copies acknowledged (archived), 8 acknowledgements of the 5 chat posts (their seen_by).
    assert.deepEqual([r.messages_created, r.messages_existing, r.acknowledged, r.timers_created, r.timers_existing, r.posts_created, r.posts_existing], [5, 0, 10, 3, 0, 5, 0]);
    assert.ok(r.notes.some((n) => n.what === 'delivered already: not imported'));
    assert.ok(r.notes.some((n) => /team\.coordinate to NexusGuild: no such capability here/.test(n.what)));
    assert.ok(r.notes.some((n) => n.what === 'posted in the room of team reviewers; UX-Reviewer made a member'));
    assert.deepEqual(r.rooms, [{ name: 'design-crit', created: true }]);
    assert.deepEqual(
      r.notes.filter((n) => /attachment/.test(n.what)).map((n) => n.what),
      ['1 attachment: not imported (mail4agent keeps no files)'],
      'once per message, not per copy',
    );

    const aegis = await mailOf('AegisGrid');
    assert.deepEqual(
      aegis.map((m) => [m.id, m.fromAccount, m.subject, m.priority, m.ackedAt]),
      [
        [copy(M1, 'AegisGrid'), 'NexusGuild', 'Security review', 'normal', at('2026-11-20T09:05:00Z')],
        [copy(M4, 'AegisGrid'), 'UX-Reviewer-2', 'Contrast', 'normal', null],
      ],
    );
    assert.equal(aegis[0]!.body, 'Review the current release and send back actionable findings.\n\n- auth flow\n- session storage');
    assert.equal(aegis[0]!.createdAt, at('2026-11-20T09:00:00Z'));
    assert.equal(aegis[0]!.fromKind, 'agent');
    assert.equal(aegis[0]!.correlation, `interagentmail:${M1}`);
    assert.equal(aegis[0]!.threadId, aegis[0]!.id, 'the first copy of the first message is the thread root');

    // The cc copy joins the root's thread; still in the inbox unread: not acknowledged.
    const [ux] = await mailOf('UX-Reviewer');
    assert.equal(ux!.id, copy(M1, 'UX-Reviewer'));
    assert.equal(ux!.threadId, copy(M1, 'AegisGrid'));
    assert.equal(ux!.ackedAt, null);

    const nexus = await mailOf('NexusGuild');
    assert.deepEqual(
      nexus.map((m) => [m.id, m.fromAccount, m.fromKind, m.priority, m.ackedAt]),
      [
        // Read in its inbox but not archived: not yet handled.
        [copy(M2, 'NexusGuild'), 'AegisGrid', 'agent', 'urgent', null],
        [copy(M3, 'NexusGuild'), 'yggdrassoftgaming', 'human', 'normal', at('2026-11-20T10:02:00Z')],
      ],
    );
    assert.equal(nexus[0]!.replyTo, copy(M1, 'AegisGrid'), "the reply answers the replier's own copy");
    assert.equal(nexus[0]!.threadId, copy(M1, 'AegisGrid'));
    assert.equal(nexus[0]!.body, 'Two findings: the session cookie lacks SameSite, and the reset token never expires.');
    assert.equal(nexus[1]!.threadId, nexus[1]!.id, 'another thread');
    assert.equal(await d.store.unread({ account: 'NexusGuild', sessionKey: null, rooms: [] }), 1);

    const team = await d.operator.admin.teamShow({ team: 'reviewers' });
    assert.deepEqual([...team.members].sort(), ['AegisGrid', 'NexusGuild', 'UX-Reviewer'], "a poster of the team's channel is a member");
    assert.deepEqual(team.leaders, [{ account: 'NexusGuild', grants: ['timer.schedule_team'] }]);

    const [own] = await timersOf('AegisGrid').then((ts) => ts.filter((t) => t.team === undefined));
    assert.deepEqual([own!.due, own!.note, own!.lineage, own!.createdAt], [at('2030-01-01T00:00:00Z'), 'Re-check the audit response.', null, at('2026-11-20T12:00:00Z')]);
    const teamTimers = [...(await timersOf('AegisGrid')), ...(await timersOf('NexusGuild'))].filter((t) => t.team !== undefined);
    assert.deepEqual(teamTimers.map((t) => [t.account, t.team, t.setBy, t.due, t.note]).sort(), [
      ['AegisGrid', 'reviewers', 'NexusGuild', at('2030-01-02T09:00:00Z'), 'Post findings in #reviewers.'],
      ['NexusGuild', 'reviewers', 'NexusGuild', at('2030-01-02T09:00:00Z'), 'Post findings in #reviewers.'],
    ]);
    assert.equal((await timersOf('NexusGuild')).length, 1, 'the delivered timer is not made again');
    // The agent sees its reminders as its own timers.
    assert.equal((await d.store.listRecords('timer', '', 100)).length, 3);

    // The chats: the team's channel in its room, the private one a closed room of its participants.
    const crit = await d.store.getRoom('design-crit');
    assert.deepEqual([crit?.open, [...(crit?.members ?? [])].sort()], [false, ['NexusGuild', 'UX-Reviewer']]);
    const posts = (await roomMail('NexusGuild', ['reviewers', 'design-crit'])).map((m) => [m.toKey, m.fromAccount, m.subject, m.createdAt, m.threadId === m.id, m.ackedAt]);
    assert.deepEqual(posts, [
      ['r:reviewers', 'NexusGuild', 'Security review started: AegisGrid has the brief.', at('2026-11-20T09:01:00Z'), true, at('2026-11-20T09:01:00Z')],
      ['r:reviewers', 'AegisGrid', 'Findings sent to NexusGuild.', at('2026-11-20T09:40:00Z'), true, at('2026-11-20T09:45:00Z')],
      ['r:reviewers', 'UX-Reviewer', "Contrast notes are in AegisGrid's inbox.", at('2026-11-20T11:10:00Z'), true, null],
      ['r:design-crit', 'UX-Reviewer', 'Does the new palette pass?', at('2026-11-21T08:00:00Z'), true, at('2026-11-21T08:04:00Z')],
      ['r:design-crit', 'NexusGuild', 'Ship it.', at('2026-11-21T08:05:00Z'), true, at('2026-11-21T08:05:00Z')],
    ]);
    const [, findings] = await roomMail('AegisGrid', ['reviewers']);
    assert.equal(findings!.body, 'Findings sent to NexusGuild.\nTwo of them, both in the session layer.');
    assert.equal(findings!.fromKind, 'agent');
    assert.equal(findings!.toAddress, '#reviewers');
    assert.match(findings!.id, /^m-iam[0-9a-f]{40}$/);
    assert.equal(findings!.correlation, 'interagentmail:chats/reviewers/2026-11-20.json');
    assert.equal(
      await d.store.unread({ account: 'UX-Reviewer', sessionKey: null, rooms: ['reviewers', 'design-crit'] }),
      4,
      'the three posts UX Reviewer had not seen, and its unread cc copy',
    );
  });

  it('a second run adds nothing, and a timer that fired since is not made again', async () => {
    const before = await d.store.listRecords('timer', '', 100);
    await d.store.deleteRecord('timer', `AegisGrid|${before.find((t) => t.id.startsWith('AegisGrid|') && !(JSON.parse(t.value) as TimerRecord).team)!.id.split('|')[1]}`);
    const r = await run(FIXTURE);
    assert.deepEqual([r.messages_created, r.messages_existing, r.acknowledged, r.timers_created, r.timers_existing, r.posts_created, r.posts_existing], [0, 5, 0, 0, 3, 0, 5]);
    assert.equal((await roomMail('NexusGuild', ['reviewers', 'design-crit'])).length, 5);
    assert.ok(r.accounts.every((a) => !a.created));
    assert.equal((await mailOf('AegisGrid')).length, 2);
    assert.equal((await d.store.listRecords('timer', '', 100)).length, 2, 'the fired (deleted) one stays gone');
    const team = await d.operator.admin.teamShow({ team: 'reviewers' });
    assert.equal(team.members.length, 3);
  });

  it('a damaged message file is named and nothing is imported', async () => {
    const dir = join(home, 'damaged');
    cpSync(FIXTURE, dir, { recursive: true });
    // A new mailbox with mail, and one file cut short: none of it may arrive.
    cpSync(join(dir, 'mailboxes/AegisGrid'), join(dir, 'mailboxes/Newcomer'), { recursive: true });
    writeFileSync(join(dir, 'mailboxes/Newcomer/inbox/1795172400-d4e5f6a7.json'), '{"id": "1795172400-d4e5f6a7", "thread": ');
    const head = await d.store.headSeq();
    const r = await cli(['import', 'interagentmail', dir, '--json']);
    assert.notEqual(r.status, 0);
    const err = JSON.parse(r.stderr) as { error: { code: string; field: string; file: string; reason: string } };
    assert.equal(err.error.code, 'malformed');
    assert.equal(err.error.field, 'file');
    assert.match(err.error.file, /Newcomer\/inbox\/1795172400-d4e5f6a7\.json$/);
    assert.match(err.error.reason, /^not JSON/);
    assert.equal(await d.store.getAccount('Newcomer'), null, 'no account was made');
    assert.equal(await d.store.headSeq(), head, 'no mail was stored');
  });

  it('a damaged chat file is named and nothing is imported', async () => {
    const dir = join(home, 'damaged-chat');
    cpSync(FIXTURE, dir, { recursive: true });
    cpSync(join(dir, 'mailboxes/AegisGrid'), join(dir, 'mailboxes/Latecomer'), { recursive: true });
    const file = join(dir, 'chats/design crit/2026-11-21.json');
    const chat = JSON.parse(readFileSync(file, 'utf8')) as { messages: Record<string, unknown>[] };
    delete chat.messages[1]!['address'];
    writeFileSync(file, JSON.stringify(chat));
    const head = await d.store.headSeq();
    const r = await cli(['import', 'interagentmail', dir, '--json']);
    assert.notEqual(r.status, 0);
    const err = JSON.parse(r.stderr) as { error: { code: string; field: string; file: string; reason: string } };
    assert.deepEqual([err.error.code, err.error.field, err.error.reason], ['malformed', 'file', 'address: not a string']);
    assert.match(err.error.file, /chats\/design crit\/2026-11-21\.json$/);
    assert.equal(await d.store.getAccount('Latecomer'), null, 'no account was made');
    assert.equal(await d.store.headSeq(), head, 'no mail was stored');
  });

  it('a private chat whose room exists here open is refused before anything is written', async () => {
    const dir = join(home, 'open-room');
    cpSync(FIXTURE, dir, { recursive: true });
    cpSync(join(dir, 'mailboxes/AegisGrid'), join(dir, 'mailboxes/Opener'), { recursive: true });
    const file = join(dir, 'chats/lobby/2026-11-21.json');
    cpSync(join(dir, 'chats/design crit'), join(dir, 'chats/lobby'), { recursive: true });
    rmSync(join(dir, 'chats/design crit'), { recursive: true });
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), channel: 'lobby' }));
    await d.operator.admin.roomAdd('lobby', { open: true });
    const head = await d.store.headSeq();
    const r = await cli(['import', 'interagentmail', dir, '--json']);
    assert.notEqual(r.status, 0);
    const err = JSON.parse(r.stderr) as { error: { code: string; field: string; reason: string; room: string } };
    assert.deepEqual([err.error.code, err.error.field, err.error.reason, err.error.room], ['malformed', 'room', 'room_exists', 'lobby']);
    assert.equal(await d.store.getAccount('Opener'), null, 'no account was made');
    assert.equal(await d.store.headSeq(), head, 'no mail was stored');
  });

  it('a chat folder with an invisible character in its name is imported, the character shown', async () => {
    const dir = join(home, 'zero-width');
    cpSync(FIXTURE, dir, { recursive: true });
    const name = 'dev\u200b';
    const file = join(dir, `chats/${name}/2026-11-21.json`);
    cpSync(join(dir, 'chats/design crit'), join(dir, `chats/${name}`), { recursive: true });
    rmSync(join(dir, 'chats/design crit'), { recursive: true });
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), channel: name }));
    const r = await run(dir);
    assert.ok(r.posts_created > 0, 'its posts were stored');
    assert.ok(
      r.notes.some((n) => /^origin: .*\\u escapes$/.test(n.what)),
      JSON.stringify(r.notes),
    );
  });

  it('a missing data directory is named', async () => {
    const r = await cli(['import', 'interagentmail', join(home, 'nowhere'), '--json']);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /no such directory/);
  });
});

describe('m4a import interagentmail into a mailbox in use', () => {
  let h: CliDaemon;
  let d: TestDaemon;
  let home: string;
  before(async () => {
    h = await startCliDaemon('m4a-iam-import-used-', { source: true });
    ({ d, home } = h);
  });
  after(() => h.stop());

  it('an account of the name is the participant moving in; a room of the team name that is no team is listed and left', async () => {
    await d.account('NexusGuild');
    await d.operator.admin.roomAdd('reviewers');
    const r = await h.cli(['import', 'interagentmail', FIXTURE, '--json']);
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as MailImportResult;
    assert.deepEqual(
      out.accounts.filter((a) => !a.created).map((a) => a.id),
      ['NexusGuild'],
    );
    assert.ok(out.notes.some((n) => n.where === 'team reviewers' && /is no team/.test(n.what)));
    assert.deepEqual(out.teams, []);
    assert.equal(out.messages_created, 5, 'the mail is imported all the same');
    assert.equal((await d.store.page({ account: 'NexusGuild', sessionKey: null, rooms: [] }, { after: null, pendingOnly: false, limit: 10, threadId: null })).length, 2);
    // The secrets of the accounts it made are kept; the existing one's is not touched.
    const creds = JSON.parse(readFileSync(join(home, 'mail4agent', 'credentials.json'), 'utf8')) as { accounts: Record<string, { provider?: string }> };
    assert.deepEqual(Object.keys(creds.accounts).sort(), ['AegisGrid', 'UX-Reviewer', 'UX-Reviewer-2', 'yggdrassoftgaming']);
    assert.equal(creds.accounts['AegisGrid']?.provider, 'codex');
  });
});
