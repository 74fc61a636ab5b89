// m4a report, run as a user runs it (the built CLI, a daemon found through its data directory):
// a mailbox seeded with secrets, paths, account, display, room and team names, a person, mail with
// unique subjects and bodies, a task, a lease, approvals (pending, decided, expired), mail deleted by
// retention (so the head seq is no longer the number stored), and a daemon.log whose lines hold all
// of those. The report has its sections and counts, and not one of the seeded strings; --output keeps an
// existing file unless --force; the default writes 0600 under the data directory's reports/.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliRun as Run } from './support/cli-daemon.js';
import { AGENT_SCRIPT, startAgent, type AgentProc } from './support/agent.js';
import { raw, startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { Sanitizer } from '../src/cli/report-sanitize.js';

describe('m4a report', () => {
  let d: TestDaemon;
  let tmp: string;
  let home: string;
  let cwd: string;
  let env: Record<string, string>;
  let agent: AgentProc;
  const seeded: string[] = [];
  const procs: AgentProc[] = [];
  /** Messages retention deleted (the head seq counts them, the store no longer holds them). */
  let pruned = 0;

  const report = (args: string[]): Promise<Run> => runCli(['report', ...args], { cwd: tmp, env, timeout: 30_000 });

  before(async () => {
    d = await startTestDaemon();
    tmp = mkdtempSync(join(tmpdir(), 'm4a-report-'));
    home = join(tmp, 'home', 'someone');
    cwd = join(home, 'secret-project');
    mkdirSync(cwd, { recursive: true });
    const zephyr = await d.operator.admin.accountAdd({ id: 'zephyr-quill', label: 'Zephyr Quillfeather' });
    const bramble = await d.operator.admin.accountAdd({ id: 'bramblewick' });
    await d.operator.call('/admin/user/create', { id: 'marigold', display_name: 'Marigold Featherstone', password: 'a long enough password' });
    await d.operator.admin.roomAdd('obsidian-lounge', { everyone: false, open: false });
    await d.operator.admin.memberAdd('obsidian-lounge', 'zephyr-quill');
    await d.operator.call('/admin/team/create', { name: 'walrus-squad', members: ['zephyr-quill', 'bramblewick'] });

    // A session of zephyr-quill, a Claude stand-in with its own session id, in the secret project.
    writeFileSync(join(tmp, 'package.json'), '{"type":"module"}');
    const fakeClaude = join(tmp, 'claude');
    copyFileSync(AGENT_SCRIPT, fakeClaude);
    agent = await startAgent(d.url, zephyr.secret, { script: fakeClaude, args: ['--resume', 'conv-pelican-4242'], cwd });
    procs.push(agent);
    const me = (await agent.call('/mail/whoami')).body;
    await agent.call('/mail/status', { alias: 'nightjar' });
    const sent = (await agent.call('/mail/send', { to: 'bramblewick', subject: 'SUBJ-ultramarine-pelican', body: 'BODY-vermilion-heron' })).body;
    assert.ok(sent.message_id, JSON.stringify(sent));
    const task = (await agent.call('/task/create', { to: 'bramblewick', title: 'TITLE-chartreuse-ibis', instructions: 'INSTR-cobalt-egret' })).body;
    assert.ok(task.task_id, JSON.stringify(task));
    const lease = (await agent.call('/lease/claim', { resource: 'path:src/**', root: cwd })).body;
    assert.ok(lease.lease_id, JSON.stringify(lease));
    // Approvals: one left pending, one decided, one past its expiry; then zephyr-quill's mail (the
    // decided approval's thread) acknowledged and deleted by retention's store call.
    const approve = async (reviewer: string, action: string, extra: object = {}): Promise<string> => {
      const r = (await agent.call('/approval/request', { reviewer, action, ...extra })).body;
      assert.ok(r.approval_id, JSON.stringify(r));
      return r.approval_id as string;
    };
    const expiring = Date.now();
    await approve('bramblewick', 'ACTION-saffron-kestrel', { expires_in: 1 });
    await approve('bramblewick', 'ACTION-umber-plover');
    const decided = await approve('zephyr-quill', 'ACTION-teal-avocet');
    assert.equal((await agent.call('/approval/decide', { approval_id: decided, decision: 'approved', reason: 'REASON-mauve-curlew' })).status, 200);
    const inbox = (await agent.call('/mail/inbox', {})).body;
    const ids = (inbox.messages as { message_id: string }[]).map((m) => m.message_id);
    assert.ok(ids.length >= 2, JSON.stringify(inbox));
    assert.equal((await agent.call('/mail/ack', { message_ids: ids })).status, 200);
    pruned = (await d.store.pruneMail({ target: { account: 'zephyr-quill' }, before: Date.now() + 1000, after: 0, limit: 100, byMessage: [] })).deleted;
    assert.ok(pruned >= 2, `retention deleted ${pruned}`);
    await new Promise((r) => setTimeout(r, Math.max(0, expiring + 1100 - Date.now())));

    await d.operator.admin.wakeSet({ account: 'bramblewick', steps: [{ kind: 'hooks' }] });

    writeFileSync(
      join(d.dataDir, 'daemon.log'),
      [
        JSON.stringify({ level: 30, time: 1, pid: 7, hostname: hostname(), msg: 'mail4agent listening' }),
        JSON.stringify({ level: 30, time: 2, pid: 7, hostname: hostname(), msg: 'mail4agent listening' }),
        JSON.stringify({ level: 30, time: 3, pid: 7, hostname: hostname(), msg: 'mail4agent listening' }),
        JSON.stringify({
          level: 40,
          time: 4,
          msg: `wake of zephyr-quill (Zephyr Quillfeather) failed: Bearer ${zephyr.secret} in ${cwd} for marigold@example.org from 10.20.30.40:8443 host ${hostname()}`,
          subject: 'SUBJ-ultramarine-pelican',
        }),
        JSON.stringify({ level: 50, time: 5, msg: `${me.session} of obsidian-lounge and walrus-squad lost ${sent.message_id}, task ${task.task_id}, lease ${lease.lease_id}` }),
        `Error: ENOENT: ${cwd}/state.json; operator ${d.operatorToken}; Marigold Featherstone; eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl; ${'ab12'.repeat(10)}`,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    mkdirSync(join(home, 'mail4agent'), { recursive: true });
    writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { bramblewick: { secret: bramble.secret } } }), { mode: 0o600 });
    env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir, NO_COLOR: '1' };
    seeded.push(
      ...['zephyr-quill', 'Zephyr Quillfeather', 'bramblewick', 'marigold', 'Marigold Featherstone', 'obsidian-lounge', 'walrus-squad', 'nightjar'],
      ...[zephyr.secret, bramble.secret, d.operatorToken, d.operatorToken.slice(4, 20), 'eyJhbGciOiJIUzI1NiJ9', 'ab12ab12ab12ab12ab12'],
      ...[d.dataDir, tmp, home, cwd, 'secret-project', 'someone', 'marigold@example.org', '10.20.30.40'],
      ...[me.session, me.address, sent.message_id, task.task_id, lease.lease_id, 'conv-pelican-4242', hostname()],
      ...['SUBJ-ultramarine-pelican', 'BODY-vermilion-heron', 'TITLE-chartreuse-ibis', 'INSTR-cobalt-egret'],
      ...['ACTION-saffron-kestrel', 'ACTION-umber-plover', 'ACTION-teal-avocet', 'REASON-mauve-curlew', decided],
    );
  });
  after(async () => {
    for (const p of procs) await p.exit();
    await d.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  const assertClean = (text: string) => {
    for (const s of seeded) assert.ok(!text.toLowerCase().includes(s.toLowerCase()), `the report shows ${JSON.stringify(s)}:\n${text}`);
  };

  it('--stdout: versions, daemon, doctor, counts and log statistics, with none of the seeded names, paths, ids, secrets or mail', async () => {
    const r = await report(['--stdout']);
    assert.equal(r.status, 0, r.stderr);
    const text = r.stdout;
    assertClean(text);
    for (const h of ['# mail4agent support report', '## Versions', '## Daemon', '## Doctor', '## Counts', '## Log'])
      assert.ok(text.includes(`\n${h}\n`) || text.startsWith(`${h}\n`), h);
    assert.match(text, new RegExp(`\\| Node.js \\| ${process.version.replace(/\./g, '\\.')} \\|`));
    assert.match(text, /\| running \| yes \|/);
    assert.match(text, /\| store \| sqlite \|/);
    const accounts = (await d.operator.admin.accountList()).accounts;
    const humans = accounts.filter((a) => a.kind === 'human').length;
    assert.match(
      text,
      new RegExp(`^- accounts: ${accounts.length} \\(agent ${accounts.length - humans - accounts.filter((a) => a.kind === 'service').length}, human ${humans},`, 'm'),
    );
    assert.match(text, /^- sessions: \d+ \(live [1-9]\d*, ended \d+\)$/m);
    assert.match(text, /^- rooms: 1 \(everyone-rooms 0\); teams: 1$/m);
    // Stored, not the head seq: retention deleted some (and the seq of a deleted message is never reused).
    const head = await d.store.headSeq();
    assert.match(text, new RegExp(`^- messages: ${head - pruned} stored \\(the store's highest seq: ${head}\\)$`, 'm'));
    assert.match(text, /^- tasks: 1 \(submitted 1, working 0/m);
    assert.match(text, /^- approvals: 3 \(pending 1, approved 1, rejected 0, expired 1\)$/m);
    assert.match(text, /^- leases live: 1$/m);
    assert.match(text, /^- wake chains: 1 \(hooks 1, codex-app-server 0, command 0, webhook 0, a2a 0, opencode 0\)$/m);
    assert.match(text, /^By level: info 3, warn 1, error 1, text 1\.$/m);
    assert.match(text, /^\| 3 \| info \| mail4agent listening \|$/m);
    // The placeholders keep it readable: the same account is the same placeholder throughout.
    assert.match(text, /\| warn \| wake of account-\d+ \(label-\d+\) failed: Bearer secret-\d+ in path-\d+ for email-\d+ from ip-\d+ host host-\d+ \|/);
    assert.match(text, /^\| 1 \| text \| Error: ENOENT: path-\d+; operator secret-\d+; label-\d+; secret-\d+; secret-\d+ \|$/m, "the daemon's own account names stay");
    assert.match(text, /\| account account-\d+ \| secret valid/, "doctor's check of the stored secret, its account replaced");
  });

  it('--output keeps an existing file unless --force, then overwrites it 0600; the default is a new file under <data dir>/reports', async () => {
    const out = join(tmp, 'support.md');
    writeFileSync(out, 'mine\n', { mode: 0o644 });
    const kept = await report(['--output', out]);
    assert.equal(kept.status, 1);
    assert.match(kept.stderr, /already_exists/);
    assert.equal(readFileSync(out, 'utf8'), 'mine\n', 'the existing file is untouched');
    const forced = await report(['--output', out, '--force']);
    assert.equal(forced.status, 0, forced.stderr);
    assert.match(readFileSync(out, 'utf8'), /^# mail4agent support report/);
    assert.equal(statSync(out).mode & 0o777, 0o600);
    assertClean(readFileSync(out, 'utf8'));

    const both = await report(['--stdout', '--output', out]);
    assert.equal(both.status, 2, 'a usage error');

    const def = await report([]);
    assert.equal(def.status, 0, def.stderr);
    const path = def.stdout.trim();
    assert.ok(path.startsWith(join(d.dataDir, 'reports', 'report-')), path);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(statSync(join(d.dataDir, 'reports')).mode & 0o777, 0o700);
    assertClean(readFileSync(path, 'utf8'));
  });

  it("/admin/support/*: numbers only in the counts, cards in the sessions, and an account's secret is refused", async () => {
    const counts = await d.operator.call<Record<string, Record<string, unknown>>>('/admin/support/counts', {});
    const leaves = Object.values(counts).flatMap((o) => Object.values(o));
    assert.ok(leaves.length > 20 && leaves.every((v) => typeof v === 'number'), JSON.stringify(counts));
    assert.deepEqual(counts.approvals, { pending: 1, approved: 1, rejected: 0, expired: 1 });
    assert.equal(counts.messages?.stored, (await d.store.headSeq()) - pruned);
    const sessions = await d.operator.call<{ sessions: { account: string; card: { corroborated: { cwd?: string } } }[] }>('/admin/support/sessions', { account: 'zephyr-quill' });
    assert.deepEqual(
      sessions.sessions.map((x) => [x.account, x.card.corroborated.cwd]),
      [['zephyr-quill', cwd]],
    );
    const secret = (await d.account('intruder')).secret;
    for (const path of ['/admin/support/counts', '/admin/support/sessions']) {
      const r = await raw(d.url, path, { token: secret, body: '{}' });
      assert.equal(r.status, 403, path);
      assert.deepEqual([r.json.error.code, r.json.error.need], ['permission_denied', 'operator'], path);
    }
  });

  it('the sanitizer: shapes by pattern, names as words, the same value the same placeholder, loopback and routes kept', () => {
    const s = new Sanitizer();
    s.name('account', 'ops');
    const out = s.clean(
      'ops and operator at http://127.0.0.1:7341/mail/send, not https://user:pw@example.com/x; POST /admin/account/list; ::1 and fe80::1:2:3; ops again; key=hunter2; /etc/passwd',
    );
    assert.equal(out, 'account-1 and operator at http://127.0.0.1:7341/mail/send, not url-1; POST /admin/account/list; ::1 and ip-1; account-1 again; key=hunter2; path-1');
    assert.equal(s.clean('api_key: sk-live-123456 and token=abc'), 'api_key=secret-1 and token=secret-2');
  });
});
