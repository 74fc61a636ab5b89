// m4a open, run as a person runs it (the built CLI, the daemon found through its data directory):
// sessions of Claude, Codex, pi, omp, Gemini, Qwen Code, Copilot and opencode stand-ins, each with its program's own session id and its
// working directory on the card; `m4a open ACCOUNT` (and ACCOUNT/s-…, /slug, /@alias) prints that
// program's resume command there; --exec runs a stand-in program from PATH in that directory with
// that argv and without M4A_TOKEN, and refuses while the session is live unless --force.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliRun as Run } from './support/cli-daemon.js';
import { AGENT_SCRIPT, startAgent, type AgentProc } from './support/agent.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { resumeOf } from '../src/cli/open-commands.js';

const CLAUDE_ID = '7f3c1a2e-0000-4000-8000-00000000c1a0';
const CODEX_ID = '019a0000-1111-7222-8333-444455556666';
/** Gemini, Qwen Code and Copilot resume by UUID; opencode's ids are its own tokens. */
const NEW_IDS = {
  gemini: '53dddd9d-c249-453a-a7c7-83f005431f1d',
  qwen: 'ff907bad-9e0e-4bd8-90d9-bbbc943b9a4a',
  copilot: '8980d70c-ca53-40e1-8da8-b30a96e18415',
  opencode: 'ses_2f1a9c',
};

describe('m4a open', () => {
  let d: TestDaemon;
  let tmp: string;
  let bin: string;
  let env: Record<string, string>;
  const dirs: Record<string, string> = {};
  const procs: AgentProc[] = [];
  const live: Record<string, AgentProc> = {};
  const secrets: Record<string, string> = {};

  const m4a = (args: string[], extra: Record<string, string> = {}): Promise<Run> => runCli(['open', ...args], { cwd: tmp, env: { ...env, ...extra }, timeout: 30_000 });
  const json = async (target: string) => {
    const r = await m4a([target, '--json']);
    assert.equal(r.status, 0, `${target}: ${r.stderr}`);
    return JSON.parse(r.stdout) as { address: string; provider: string; provider_session_id: string; cwd: string; live: boolean; argv: string[]; command: string };
  };

  before(async () => {
    d = await startTestDaemon();
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'm4a-open-')));
    writeFileSync(join(tmp, 'package.json'), '{"type":"module"}');
    for (const p of ['claude', 'codex', ...Object.keys(NEW_IDS)]) copyFileSync(AGENT_SCRIPT, join(tmp, p));
    for (const a of ['cl', 'cx', 'pi', 'om', ...Object.keys(NEW_IDS)]) {
      secrets[a] = (await d.account(a)).secret;
      dirs[a] = join(tmp, 'work', `project-${a}`);
      mkdirSync(dirs[a], { recursive: true });
    }
    const start = async (account: string, o: { script?: string; args?: string[]; title?: string; conversation?: string }) => {
      const p = await startAgent(d.url, secrets[account]!, {
        cwd: dirs[account]!,
        ...(o.script ? { script: o.script } : {}),
        ...(o.args ? { args: o.args } : {}),
        ...(o.title ? { env: { M4A_TEST_TITLE: o.title } } : {}),
      });
      procs.push(p);
      if (o.conversation) await p.call('headers', { 'x-m4a-agent-session': o.conversation });
      const me = (await p.call('/mail/whoami')).body;
      assert.ok(me.card?.corroborated?.provider_session_id, JSON.stringify(me));
      return p;
    };
    // Claude's first run in the project, then (resumed) a second that stays live.
    const c1 = await start('cl', { script: join(tmp, 'claude'), args: ['--resume', CLAUDE_ID] });
    await c1.call('/mail/status', { alias: 'otter' });
    await c1.exit();
    live.cx = await start('cx', { script: join(tmp, 'codex'), args: ['resume', CODEX_ID] });
    await (await start('pi', { title: 'pi', conversation: 'conv-pi-1' })).exit();
    await (await start('om', { title: 'omp', conversation: 'conv-omp-1' })).exit();
    // Each named by the option its own CLI resumes with (a hook or plugin names it too: session-adoption).
    await (await start('gemini', { script: join(tmp, 'gemini'), args: ['-m', 'gemini-2.5-flash', '--resume', NEW_IDS.gemini] })).exit();
    await (await start('qwen', { script: join(tmp, 'qwen'), args: ['--resume', NEW_IDS.qwen] })).exit();
    await (await start('copilot', { script: join(tmp, 'copilot'), args: [`--resume=${NEW_IDS.copilot}`] })).exit();
    await (await start('opencode', { script: join(tmp, 'opencode'), args: ['--session', NEW_IDS.opencode] })).exit();

    bin = join(tmp, 'bin');
    mkdirSync(bin);
    // A stand-in for each program: records its directory, argv and whether it got M4A_TOKEN.
    for (const p of ['claude', 'codex']) {
      writeFileSync(join(bin, p), `#!/bin/sh\n{ pwd -P; printf '%s\\n' "$@"; echo "token=\${M4A_TOKEN:-none}"; echo "account=\${M4A_ACCOUNT:-none}"; } > "$OPEN_RECORD"\nexit 7\n`);
      chmodSync(join(bin, p), 0o755);
    }
    env = { HOME: tmp, XDG_CONFIG_HOME: tmp, M4A_DATA_DIR: d.dataDir, NO_COLOR: '1' };
  });
  after(async () => {
    for (const p of procs) await p.exit();
    await d.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it("prints each program's resume command in the session's directory: claude, codex, pi, omp, gemini, qwen, copilot, opencode", async () => {
    const cl = await json('cl');
    assert.deepEqual([cl.provider, cl.argv, cl.cwd, cl.live], ['claude', ['claude', '--resume', CLAUDE_ID], dirs.cl, false]);
    assert.equal(cl.command, `cd ${dirs.cl} && claude --resume ${CLAUDE_ID}`);
    const cx = await json('cx');
    assert.deepEqual([cx.provider, cx.argv, cx.cwd, cx.live], ['codex', ['codex', 'resume', CODEX_ID], dirs.cx, true]);
    assert.deepEqual((await json('pi')).argv, ['pi', '--session', 'conv-pi-1']);
    assert.deepEqual((await json('om')).argv, ['omp', '--resume', 'conv-omp-1']);
    assert.equal((await json('om')).cwd, dirs.om);
    assert.deepEqual((await json('gemini')).argv, ['gemini', '--resume', NEW_IDS.gemini]);
    assert.deepEqual((await json('qwen')).argv, ['qwen', '--resume', NEW_IDS.qwen]);
    assert.deepEqual((await json('copilot')).argv, ['copilot', `--resume=${NEW_IDS.copilot}`]);
    const oc = await json('opencode');
    assert.deepEqual([oc.provider, oc.argv, oc.cwd], ['opencode', ['opencode', '--session', NEW_IDS.opencode], dirs.opencode]);

    const text = await m4a(['cl']);
    assert.equal(text.status, 0, text.stderr);
    assert.equal(text.stdout, `# ${cl.address}: claude not running\ncd ${dirs.cl} && claude --resume ${CLAUDE_ID}\n`);
  });

  it('takes a session address: ACCOUNT/s-prefix, ACCOUNT/slug, ACCOUNT/@alias; names what it cannot find', async () => {
    const cl = await json('cl');
    const id = cl.address.slice('cl/'.length);
    for (const t of [`cl/${id.slice(0, 8)}`, 'cl/project-cl', 'cl/@otter', cl.address]) assert.equal((await json(t)).address, cl.address, t);
    // No target: the most recently seen session of any account that can be resumed.
    const any = await m4a(['--json']);
    assert.equal(any.status, 0, any.stderr);
    assert.ok(['claude', 'codex', 'pi', 'omp', ...Object.keys(NEW_IDS)].includes(JSON.parse(any.stdout).provider), any.stdout);
    const none = await m4a(['cl/@nobody']);
    assert.equal(none.status, 1);
    assert.match(none.stderr, /unknown_session/);
    const noAccount = await m4a(['ghost']);
    assert.equal(noAccount.status, 1);
    assert.match(noAccount.stderr, /unknown_participant/);
  });

  it('--exec runs the program in that directory with that argv and without M4A_TOKEN; a live session only with --force', async () => {
    const record = join(tmp, 'record.txt');
    const extra = { PATH: `${bin}:${process.env.PATH}`, M4A_TOKEN: secrets.cl!, M4A_ACCOUNT: 'cl', OPEN_RECORD: record };
    const r = await m4a(['cl', '--exec'], extra);
    assert.equal(r.status, 7, `the program's exit code is m4a's: ${r.stderr}`);
    assert.deepEqual(readFileSync(record, 'utf8').trim().split('\n'), [dirs.cl, '--resume', CLAUDE_ID, 'token=none', 'account=none']);
    rmSync(record);

    const refused = await m4a(['cx', '--exec'], extra);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /session_live: cx\/s-\S+ is live/);
    assert.ok(!existsSync(record), 'nothing ran');
    const forced = await m4a(['cx', '--exec', '--force'], extra);
    assert.equal(forced.status, 7, forced.stderr);
    assert.deepEqual(readFileSync(record, 'utf8').trim().split('\n'), [dirs.cx, 'resume', CODEX_ID, 'token=none', 'account=none']);
    assert.equal((await m4a(['cl', '--force'])).status, 2, '--force without --exec is a usage error');
  });

  it('a program it cannot resume is not_supported {field: provider}', () => {
    const card = { attested: null, corroborated: { provider: 'cursor', provider_session_id: 'c-1', cwd: '/x' }, declared: {} };
    const s = { account: 'cu', address: 'cu/s-1', slug: null, aliases: [], live: false, last_seen: '', ended_at: null, successor: null, card };
    assert.throws(
      () => resumeOf(s),
      (e: { code?: string; details?: { field?: string; provider?: string } }) => e.code === 'not_supported' && e.details?.field === 'provider' && e.details.provider === 'cursor',
    );
  });
});
