// Quiet hours on the real daemon with real delivery chains (a command step that records each wake):
// dnd holds a normal wake and the receipt says so while the mail stays readable, urgent mail wakes
// at once; focus holds room mail and wakes for direct mail; the period's end (a short until, or
// `open`) wakes the held mail exactly once, skipping mail read meanwhile; a restart keeps the period
// and the held wakes; hook notices hold and later announce; bad input is refused; and the CLI.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MailClient } from '../src/client/http-client.js';
import { MailError } from '../src/wire/errors.js';
import { ATTENTION_MAX_SECS } from '../src/wire/contacts.js';
import { attentionRequest, parseUntil } from '../src/cli/attention-commands.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { until } from './support/until.js';

const RECORDER = `
const fs = require('node:fs');
fs.appendFileSync(process.argv[2], JSON.stringify({ ids: process.env.M4A_WAKE_MESSAGE_IDS.split(',') }) + '\\n');
`;
const ROOT = join(import.meta.dirname, '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const inSecs = (s: number) => new Date(Date.now() + s * 1000).toISOString();
const CLIENT_URL = pathToFileURL(join(ROOT, 'src', 'client', 'http-client.ts')).href;

/** Runs `body` (with the client `c`) as a short-lived agent process and returns its result. Its
 *  session is not running afterwards, so the command step (which starts only sessions that are
 *  not running) wakes it; a client in this test process would be a running session. */
function asAgent<T>(url: string, token: string, body: string): Promise<T> {
  const code = `const { MailClient } = await import(${JSON.stringify(CLIENT_URL)});
const c = new MailClient({ url: ${JSON.stringify(url)}, token: ${JSON.stringify(token)} });
const r = await (async () => { ${body} })();
process.stdout.write(JSON.stringify(r ?? null));
c.close();`;
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(JSON.parse(stdout) as T),
    ),
  );
}

describe('quiet hours', () => {
  let d: TestDaemon;
  let dir: string;
  let script: string;
  let alice: MailClient;
  let boss: MailClient;
  const runs = (account: string): string[][] => {
    const f = join(dir, `${account}.jsonl`);
    return existsSync(f)
      ? readFileSync(f, 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => (JSON.parse(l) as { ids: string[] }).ids)
      : [];
  };
  const woken = (account: string): string[] => runs(account).flat();
  const chain = (account: string, rooms = false) =>
    d.operator.admin.wakeSet({ account, steps: [{ kind: 'command', argv: [process.execPath, script, join(dir, `${account}.jsonl`)], timeout_secs: 30 }], debounce_ms: 0, rooms });
  const quietFor = async (ms: number) => {
    await sleep(ms);
    await d.wake.idle();
  };
  /** Runs of the chain for this message and recipient, from its receipt (the command step refuses
   *  to start a session that is running, and says so: still a wake of the chain). */
  const chainRuns = async (id: string, recipient: string) =>
    ((await alice.receipts(id)).receipts.find((x) => x.recipient.startsWith(recipient))?.signalled ?? []).filter((s) => s.adapter === 'command').length;
  const heldDetail = async (id: string, recipient: string) => {
    const r = (await alice.receipts(id)).receipts.find((x) => x.recipient.startsWith(recipient));
    return r?.signalled.find((s) => s.adapter === 'attention');
  };

  before(async () => {
    d = await startTestDaemon();
    dir = mkdtempSync(join(tmpdir(), 'm4a-attention-'));
    script = join(dir, 'recorder.cjs');
    writeFileSync(script, RECORDER);
    alice = (await d.account('alice')).client;
    boss = (await d.account('boss', { urgent: true })).client;
  });
  after(async () => {
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('dnd holds a normal wake (receipt: held, mail readable), urgent wakes at once, open wakes the held mail exactly once', async () => {
    const bob = (await d.account('bob')).secret;
    await chain('bob');
    const set = await asAgent(d.url, bob, `return c.attention({ mode: 'dnd', account: true })`);
    assert.deepEqual(set, { scope: 'bob', mode: 'dnd', until: null, held: 0 });
    const normal = await alice.send({ to: 'bob', subject: 'normal', body: 'x' });
    const detail = await until('the held attempt', () => heldDetail(normal.message_id, 'bob'));
    assert.deepEqual([detail.ok, detail.detail], [false, 'held: do-not-disturb until open'], 'the sender sees why');
    await quietFor(300);
    assert.deepEqual(woken('bob'), [], 'no wake under dnd');
    assert.equal(await chainRuns(normal.message_id, 'bob'), 0);
    const got = await asAgent<{ subject: string; held: number }>(
      d.url,
      bob,
      `const g = await c.get(${JSON.stringify(normal.message_id)}); return { subject: g.message.subject, held: (await c.attention({ account: true })).held }`,
    );
    assert.deepEqual(got, { subject: 'normal', held: 1 }, 'the mail is stored and readable; a read without a mode counts the held wake');

    const urgent = await boss.send({ to: 'bob', subject: 'fire', body: 'x', priority: 'urgent' });
    await until('the urgent wake', () => woken('bob').includes(urgent.message_id));
    assert.ok(!woken('bob').includes(normal.message_id));

    const open = await asAgent<{ mode: string }>(d.url, bob, `return c.attention({ mode: 'open', account: true })`);
    assert.equal(open.mode, 'open');
    // The chain runs for the held mail once (its command may find the agent that set open running).
    await until('the held wake', async () => (await chainRuns(normal.message_id, 'bob')) > 0);
    await quietFor(400);
    assert.equal(await chainRuns(normal.message_id, 'bob'), 1, 'woken exactly once');
    assert.equal(await d.engine.attention.heldCount('bob'), 0);
  });

  it('focus (this session) holds room mail and team copies, wakes for direct mail, and the end of a short until wakes the held mail once', async () => {
    const carol = (await d.account('carol')).secret;
    await chain('carol', true);
    await d.operator.admin.roomAdd('ops');
    for (const a of ['alice', 'carol']) await d.operator.admin.memberAdd('ops', a);
    const { me, set } = await asAgent<{ me: { address: string }; set: { scope: string; mode: string } }>(
      d.url,
      carol,
      `return { me: await c.whoami(), set: await c.attention({ mode: 'focus', until: ${JSON.stringify(inSecs(4))} }) }`,
    );
    assert.equal(set.scope, me.address, 'the session is the scope by default');
    assert.equal(set.mode, 'focus');
    const scope = `carol/${(await d.engine.store.getSession('carol', me.address.split('/')[1]!))!.lineage}`;
    await d.operator.admin.teamCreate({ name: 'crew', members: ['alice', 'carol'] });
    const room = await alice.send({ to: '#ops', subject: 'standup', body: 'x' });
    const team = (await alice.send({ to: 'team:crew', subject: 'team copy', body: 'x' })).expanded!.find((x) => x.to === 'carol')!;
    const direct = await alice.send({ to: 'carol', subject: 'to you alone', body: 'x' });
    await until('the direct wake', () => woken('carol').includes(direct.message_id));
    const detail = await until('the held room attempt', () => heldDetail(room.message_id, 'carol'));
    assert.match(detail.detail, /^held: focus until \d{4}-\d\d-\d\dT/);
    assert.match((await until('the held team attempt', () => heldDetail(team.message_id, 'carol'))).detail, /^held: focus until /);
    assert.ok(!woken('carol').includes(room.message_id), 'room mail waits under focus');
    assert.ok(!woken('carol').includes(team.message_id), 'so does a team copy');
    assert.equal(await d.engine.attention.heldCount(scope), 2);
    await until('the held wakes after the end', () => woken('carol').includes(room.message_id) && woken('carol').includes(team.message_id), 8000);
    await quietFor(400);
    for (const id of [room.message_id, team.message_id]) assert.equal(woken('carol').filter((x) => x === id).length, 1, 'woken exactly once');
    assert.equal(await d.engine.attention.heldCount(scope), 0, 'nothing held any more');
  });

  it('mail read while it was held is not woken when the period ends', async () => {
    const dave = (await d.account('dave')).secret;
    await chain('dave');
    await asAgent(d.url, dave, `return c.attention({ mode: 'dnd', until: ${JSON.stringify(inSecs(4))}, account: true })`);
    const read = await alice.send({ to: 'dave', subject: 'read meanwhile', body: 'x' });
    const unread = await alice.send({ to: 'dave', subject: 'not read', body: 'x' });
    await until('both held', async () => (await d.engine.attention.heldCount('dave')) === 2);
    // The inbox's first page of one: the older message only is read.
    assert.deepEqual(await asAgent(d.url, dave, `return (await c.inbox({ limit: 1 })).messages.map((m) => m.message_id)`), [read.message_id]);
    await d.engine.receiptsSettled();
    await until('the unread one woken', () => woken('dave').includes(unread.message_id), 8000);
    await quietFor(400);
    assert.deepEqual(woken('dave'), [unread.message_id]);
  });

  it('refuses bad input with named errors and changes nothing', async () => {
    const erin = (await d.account('erin')).client;
    const refused = (p: Promise<unknown>, code: string, field: string) =>
      assert.rejects(p, (e: unknown) => e instanceof MailError && e.code === code && (e.details as { field?: string }).field === field);
    await refused(erin.attention({ mode: 'dnd', until: inSecs(-60) }), 'malformed', 'until');
    await refused(erin.attention({ mode: 'dnd', until: inSecs(ATTENTION_MAX_SECS + 3600) }), 'too_large', 'until');
    await refused(erin.attention({ mode: 'open', until: inSecs(60) }), 'malformed', 'until');
    await refused(erin.attention({ until: inSecs(60) }), 'malformed', 'until');
    await refused(erin.attention({ mode: 'dnd', until: 'tomorrow' } as never), 'malformed', 'until');
    // A caller without a session (a person in the browser) must name the account.
    const account = (await d.engine.store.getAccount('erin'))!;
    await assert.rejects(
      d.engine.attention.set({ account, session: null }, { mode: 'dnd' }),
      (e: unknown) => e instanceof MailError && e.code === 'permission_denied' && (e.details as { need?: string }).need === 'session',
    );
    assert.equal((await erin.attention({})).mode, 'open');
    assert.equal((await erin.attention({ account: true })).mode, 'open');
  });

  it('hook notices: a listening Stop hook neither blocks for held mail nor outwaits the period, and the next notice after it announces the mail', async () => {
    const fay = (await d.account('fay')).client;
    await fay.listen(true);
    assert.deepEqual((await fay.notice({ event: 'stop' })).mail, []);
    await fay.attention({ mode: 'dnd', until: inSecs(2.5) });
    const held = await alice.send({ to: 'fay', subject: 'held from the hook', body: 'x' });
    const urgent = await boss.send({ to: 'fay', subject: 'urgent one', body: 'x', priority: 'urgent' });
    const first = await fay.notice({ event: 'stop', wait_secs: 1 });
    assert.deepEqual(
      first.mail.map((m) => m.message_id),
      [urgent.message_id],
      'urgent mail is announced at once, held mail is not',
    );
    assert.equal(first.block, true);
    const t0 = Date.now();
    const second = await fay.notice({ event: 'stop', wait_secs: 30 });
    assert.deepEqual(second.mail, [], 'nothing but held mail: no block');
    assert.equal(second.block, false);
    assert.ok(Date.now() - t0 < 6000, `the wait ended by the period's end, took ${Date.now() - t0} ms`);
    await until('the period over', async () => (await fay.attention({})).mode === 'open');
    const after = await fay.notice({ event: 'stop' });
    assert.deepEqual(
      after.mail.map((m) => m.message_id),
      [held.message_id],
      'the held mail is announced after the end',
    );
    assert.equal(after.block, true);
    assert.deepEqual((await fay.notice({ event: 'stop' })).mail, [], 'and only once');
  });

  it('held mail a hook notice paged (and so "surfaced") still wakes through the chain when the period ends', async () => {
    const kim = (await d.account('kim')).client;
    await chain('kim');
    await kim.attention({ mode: 'dnd', until: inSecs(2), account: true });
    const held = await alice.send({ to: 'kim', subject: 'paged by a hook', body: 'x' });
    await until('held', async () => (await d.engine.attention.heldCount('kim')) === 1);
    assert.deepEqual((await kim.notice({ event: 'stop' })).mail, [], 'the hook holds it back');
    await d.engine.receiptsSettled();
    assert.ok((await alice.receipts(held.message_id)).receipts[0]!.surfaced_at, 'the notice page counts as surfaced');
    await until('the chain ran after the end', async () => (await chainRuns(held.message_id, 'kim')) > 0, 8000);
    assert.deepEqual(
      (await kim.notice({ event: 'stop' })).mail.map((m) => m.message_id),
      [held.message_id],
    );
  });

  it('a live notice during dnd waits at most until the period ends', async () => {
    const gus = (await d.account('gus')).client;
    await gus.notice({ event: 'live' });
    await gus.attention({ mode: 'dnd', until: inSecs(1.5) });
    const held = await alice.send({ to: 'gus', subject: 'held live', body: 'x' });
    const t0 = Date.now();
    const live = await gus.notice({ event: 'live', wait_secs: 30 });
    assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
    const mail = live.mail.length > 0 ? live.mail : (await gus.notice({ event: 'live', wait_secs: 5 })).mail;
    assert.deepEqual(
      mail.map((m) => m.message_id),
      [held.message_id],
      'told once the period is over',
    );
  });

  it('the CLI: m4a attention dnd --until HH:MM --json, then no mode reads it, open ends it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'm4a-attention-cli-'));
    try {
      const secret = (await d.account('hal')).secret;
      mkdirSync(join(home, 'mail4agent'));
      writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { hal: { secret } } }), { mode: 0o600 });
      const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir, NO_COLOR: '1' };
      const cli = (args: string[]) =>
        new Promise<{ status: number; stdout: string; stderr: string }>((resolve) =>
          execFile(
            process.execPath,
            ['--import', 'tsx', join(ROOT, 'src', 'cli', 'main.ts'), 'attention', ...args],
            { env, encoding: 'utf8', timeout: 30_000 },
            (err, stdout, stderr) => resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
          ),
        );
      const at = new Date(Date.now() + 3 * 3600 * 1000);
      const hhmm = `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`;
      const r = await cli(['dnd', '--until', hhmm, '--for-account', '--json']);
      assert.equal(r.status, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.equal(out.scope, 'hal');
      assert.equal(out.mode, 'dnd');
      assert.equal(new Date(out.until).getTime(), new Date(parseUntil(hhmm)).getTime(), 'HH:MM is local time, next occurrence');
      assert.ok(Math.abs(Date.parse(out.until) - at.getTime()) < 61_000);
      const read = JSON.parse((await cli(['--for-account', '--json'])).stdout);
      assert.equal(read.mode, 'dnd');
      const bad = await cli(['dnd', '--until', '25:00']);
      assert.notEqual(bad.status, 0);
      assert.match(bad.stderr, /not a time of day/);
      const open = await cli(['open', '--for-account']);
      assert.equal(open.status, 0, open.stderr);
      assert.match(open.stdout, /hal: open/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('the CLI turns times into ISO with an offset: HH:MM today or tomorrow, --for a duration', () => {
    const now = new Date(2026, 5, 1, 17, 30, 0);
    assert.equal(new Date(parseUntil('18:00', now)).getTime(), new Date(2026, 5, 1, 18, 0, 0).getTime());
    assert.equal(new Date(parseUntil('09:15', now)).getTime(), new Date(2026, 5, 2, 9, 15, 0).getTime(), 'passed today: tomorrow');
    assert.match(parseUntil('18:00', now), /[+-]\d\d:\d\d$/);
    const req = attentionRequest('focus', { for: '45m', forAccount: true }, now);
    assert.equal(new Date(req.until!).getTime(), now.getTime() + 45 * 60_000);
    assert.equal(req.account, true);
    assert.throws(() => attentionRequest('open', { for: '1h' }, now), /end dnd or focus/);
    assert.throws(() => attentionRequest('nap', {}, now), /not a mode/);
  });
});

describe('quiet hours across a restart', () => {
  it('keeps the period and the held wake, and wakes it once after the end', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'm4a-attention-restart-'));
    const out = join(dataDir, 'ivy.jsonl');
    const script = join(dataDir, 'recorder.cjs');
    writeFileSync(script, RECORDER);
    let d: TestDaemon | null = await startTestDaemon({ dataDir });
    try {
      const ivySecret = (await d.account('ivy')).secret;
      const alice = (await d.account('alice')).client;
      await d.operator.admin.wakeSet({ account: 'ivy', steps: [{ kind: 'command', argv: [process.execPath, script, out], timeout_secs: 30 }], debounce_ms: 0 });
      await asAgent(d.url, ivySecret, `return c.attention({ mode: 'dnd', until: ${JSON.stringify(inSecs(6))}, account: true })`);
      const sent = await alice.send({ to: 'ivy', subject: 'across the restart', body: 'x' });
      await until('held', async () => (await d!.engine.attention.heldCount('ivy')) === 1);
      await d.stop();
      d = await startTestDaemon({ dataDir });
      const kept = await asAgent<{ mode: string; held: number }>(d.url, ivySecret, `return c.attention({ account: true })`);
      assert.equal(kept.mode, 'dnd', 'the period outlives the restart');
      assert.equal(kept.held, 1, 'so does the held wake');
      assert.ok(!existsSync(out), 'nothing woken yet');
      const lines = await until('woken after the end', () => existsSync(out) && readFileSync(out, 'utf8').trim().split('\n'), 10_000);
      await sleep(400);
      assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 1, 'once');
      assert.deepEqual(JSON.parse(lines[0]!).ids, [sent.message_id]);
    } finally {
      await d?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a period that ended while the daemon was down wakes what it held at start', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'm4a-attention-down-'));
    const out = join(dataDir, 'jo.jsonl');
    const script = join(dataDir, 'recorder.cjs');
    writeFileSync(script, RECORDER);
    let d: TestDaemon | null = await startTestDaemon({ dataDir });
    try {
      const joSecret = (await d.account('jo')).secret;
      const alice = (await d.account('alice')).client;
      await d.operator.admin.wakeSet({ account: 'jo', steps: [{ kind: 'command', argv: [process.execPath, script, out], timeout_secs: 30 }], debounce_ms: 0 });
      await asAgent(d.url, joSecret, `return c.attention({ mode: 'dnd', until: ${JSON.stringify(inSecs(3))}, account: true })`);
      await alice.send({ to: 'jo', subject: 'held', body: 'x' });
      await until('held', async () => (await d!.engine.attention.heldCount('jo')) === 1);
      await d.stop();
      await sleep(3000);
      d = await startTestDaemon({ dataDir });
      await until('woken at start', () => existsSync(out), 10_000);
    } finally {
      await d?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
