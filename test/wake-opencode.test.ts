// The opencode delivery-chain step. The real `opencode serve` runs only in test/agents
// (test/agents/opencode-live.test.ts); here a small loopback server speaks the routes opencode
// 1.18.33 answers (GET /session/{id}, GET /session, GET /session/status, POST
// /session/{id}/prompt_async, Basic auth user `opencode` when a password is set, as that version
// answers: 404 NotFoundError for an unknown id, 204 for an accepted prompt). And `m4a wake set`
// with the step: stored as given, bad input refused with a named error, no password stored.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from './support/shell-agents.js';
import { startTestDaemon, type TestDaemon } from './support/test-daemon.js';
import { createOpencodeAdapter } from '../src/wake/opencode-server.js';
import { expandArgs } from '../src/wake/command-adapter.js';
import type { WakeRequest, WakeSession } from '../src/wake/types.js';
import { parseStep } from '../src/cli/wake-commands.js';

interface Seen {
  method: string;
  url: string;
  auth: string | undefined;
  body: string;
}

/** opencode's routes over a map of sessions; `password` as OPENCODE_SERVER_PASSWORD. */
function opencodeRoutes(sessions: { id: string; directory: string; updated: number; parentID?: string }[], busy: Set<string>, password?: string) {
  const seen: Seen[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', auth: req.headers.authorization, body });
      const json = (status: number, v?: unknown): void => {
        res.writeHead(status, v === undefined ? {} : { 'content-type': 'application/json' });
        res.end(v === undefined ? undefined : JSON.stringify(v));
      };
      if (password !== undefined && req.headers.authorization !== `Basic ${Buffer.from(`opencode:${password}`).toString('base64')}`) return json(401, { error: 'Unauthorized' });
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const notFound = (id: string): void => json(404, { name: 'NotFoundError', data: { message: `Session not found: ${id}` } });
      if (req.method === 'GET' && path === '/session')
        return json(
          200,
          sessions.map((s) => ({ id: s.id, directory: s.directory, time: { updated: s.updated }, ...(s.parentID ? { parentID: s.parentID } : {}) })),
        );
      if (req.method === 'GET' && path === '/session/status') return json(200, Object.fromEntries([...busy].map((id) => [id, { type: 'busy' }])));
      const m = /^\/session\/([^/]+)(\/prompt_async)?$/.exec(path);
      const s = m && sessions.find((x) => x.id === m[1]);
      if (m && !s) return notFound(m[1]!);
      if (req.method === 'GET' && m && !m[2]) return json(200, { id: s!.id, directory: s!.directory });
      if (req.method === 'POST' && m?.[2]) return json(204);
      json(404, { name: 'NotFoundError' });
    });
  });
  return new Promise<{ url: string; seen: Seen[]; close(): Promise<void> }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, seen, close: () => new Promise((r) => server.close(() => r())) }),
    ),
  );
}

const session = (o: Partial<WakeSession> = {}): WakeSession => ({
  id: 'sess-1',
  lineage: 'lin-1',
  slug: 'proj',
  pid: 1,
  live: true,
  provider: 'opencode',
  providerSessionId: 'ses_abc',
  cwd: '/work/proj',
  listening: false,
  ...o,
});
const wakeReq = (s: WakeSession | null): WakeRequest => ({
  eventId: 'ev-1',
  account: 'opencode',
  session: s,
  mail: [{ message_id: 'm1', from: 'claude', subject: 'hi', priority: 'normal', thread_id: 't1' }],
  urgent: false,
  text: 'You have 1 new message in mail4agent.',
});
const signal = () => AbortSignal.timeout(5_000);

describe('opencode step: the adapter against opencode routes', () => {
  it('an idle session: GET the session, then prompt_async with the wake text (204 = delivered); a busy one says so', async () => {
    const busy = new Set<string>();
    const srv = await opencodeRoutes([{ id: 'ses_abc', directory: '/work/proj', updated: 1 }], busy);
    try {
      const a = createOpencodeAdapter({ kind: 'opencode', url: srv.url });
      const r = await a.wake(wakeReq(session()), signal());
      assert.equal(r.ok, true, r.detail);
      assert.match(r.detail, /ses_abc \(idle: a turn starts\)/);
      const [get, , post] = srv.seen;
      assert.equal(get!.method, 'GET');
      assert.equal(get!.url, '/session/ses_abc?directory=%2Fwork%2Fproj');
      assert.equal(post!.url, '/session/ses_abc/prompt_async?directory=%2Fwork%2Fproj');
      assert.deepEqual(JSON.parse(post!.body), { parts: [{ type: 'text', text: 'You have 1 new message in mail4agent.' }] });
      assert.equal(post!.auth, undefined, 'no password set: no Authorization');
      busy.add('ses_abc');
      const b = await a.wake(wakeReq(session()), signal());
      assert.match(b.detail, /busy: given after its running tool/);
    } finally {
      await srv.close();
    }
  });

  it('an id the server does not hold is not prompted (no silent new session); no id: the newest top-level session of the directory', async () => {
    const srv = await opencodeRoutes(
      [
        { id: 'ses_old', directory: '/work/proj', updated: 1 },
        { id: 'ses_new', directory: '/work/proj', updated: 5 },
        { id: 'ses_child', directory: '/work/proj', updated: 9, parentID: 'ses_new' },
      ],
      new Set(),
    );
    try {
      const a = createOpencodeAdapter({ kind: 'opencode', url: srv.url });
      const r = await a.wake(wakeReq(session({ providerSessionId: 'ses_gone' })), signal());
      assert.equal(r.ok, false);
      assert.match(r.detail, /does not hold session ses_gone/);
      assert.ok(!srv.seen.some((s) => s.method === 'POST'), 'nothing was posted');
      const n = await a.wake(wakeReq(session({ providerSessionId: null })), signal());
      assert.equal(n.ok, true, n.detail);
      assert.ok(srv.seen.some((s) => s.method === 'POST' && s.url.startsWith('/session/ses_new/prompt_async')));
      assert.equal((await a.wake(wakeReq(session({ provider: 'claude' })), signal())).ok, false, 'not an opencode session');
      assert.equal((await a.wake(wakeReq(null), signal())).ok, false, 'no session on record');
    } finally {
      await srv.close();
    }
  });

  it('password_file: Basic auth user opencode with the password read from the file at each call; missing or wrong: not delivered, and said why', async () => {
    const srv = await opencodeRoutes([{ id: 'ses_abc', directory: '/work/proj', updated: 1 }], new Set(), 'pw-1234');
    const dir = mkdtempSync(join(tmpdir(), 'm4a-oc-pw-'));
    try {
      const file = join(dir, 'opencode-password');
      writeFileSync(file, 'pw-1234\n', { mode: 0o600 });
      const a = createOpencodeAdapter({ kind: 'opencode', url: srv.url, password_file: file });
      const ok = await a.wake(wakeReq(session()), signal());
      assert.equal(ok.ok, true, ok.detail);
      assert.ok(!ok.detail.includes('pw-1234'));
      writeFileSync(file, 'nope\n');
      const wrong = await a.wake(wakeReq(session()), signal());
      assert.deepEqual([wrong.ok, /401/.test(wrong.detail)], [false, true], 'read again at each call');
      rmSync(file);
      const gone = await a.wake(wakeReq(session()), signal());
      assert.deepEqual([gone.ok, /password_file .*: the daemon cannot read it/.test(gone.detail)], [false, true]);
      const none = await createOpencodeAdapter({ kind: 'opencode', url: srv.url }).wake(wakeReq(session()), signal());
      assert.match(none.detail, /set password_file/);
    } finally {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('opencode step: m4a wake set', () => {
  let d: TestDaemon;
  let home: string;
  let env: Record<string, string>;
  const cli = (args: string[]) =>
    new Promise<{ status: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );

  before(async () => {
    d = await startTestDaemon();
    home = mkdtempSync(join(tmpdir(), 'm4a-wake-opencode-'));
    const secret = (await d.account('oc')).secret;
    mkdirSync(join(home, 'mail4agent'));
    writeFileSync(join(home, 'mail4agent', 'credentials.json'), JSON.stringify({ version: 1, accounts: { oc: { secret } } }), { mode: 0o600 });
    env = { HOME: home, XDG_CONFIG_HOME: home, M4A_DATA_DIR: d.dataDir };
  });
  after(async () => {
    await d.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('stores the step with the path of the password file only; bad input is refused by name and stores nothing', async () => {
    const pw = join(home, 'opencode-password');
    writeFileSync(pw, 'secret-pw\n', { mode: 0o600 });
    const step = { kind: 'opencode', url: 'http://127.0.0.1:4096', password_file: pw };
    assert.deepEqual(parseStep('opencode=http://127.0.0.1:4096', { passwordFile: pw }), step);
    const set = await cli(['wake', 'set', 'oc', '--step', 'opencode=http://127.0.0.1:4096', '--password-file', pw, '--json']);
    assert.equal(set.status, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout).chain.steps, [step]);
    assert.ok(!set.stdout.includes('secret-pw'));
    assert.ok((await cli(['wake', 'list'])).stdout.includes(`opencode=http://127.0.0.1:4096 password_file=${pw}`));
    const refusals: [string[], string][] = [
      [['--step', 'opencode=http://example.com:4096'], 'url'],
      [['--step', 'opencode=http://127.0.0.1:4096/session'], 'url'],
      [['--step', 'opencode=http://opencode:pw@127.0.0.1:4096'], 'url'],
      [['--step', 'opencode=http://127.0.0.1:4096', '--password-file', 'relative/pw'], 'password_file'],
      [['--step', 'opencode=http://127.0.0.1:4096', '--password-file', join(home, 'no-such-file')], 'password_file'],
    ];
    for (const [args, field] of refusals) {
      const r = await cli(['wake', 'set', 'oc', ...args, '--json']);
      assert.notEqual(r.status, 0, args.join(' '));
      const e = JSON.parse(r.stderr).error;
      assert.deepEqual([e.code, e.field], ['malformed', field], `${args.join(' ')}: ${r.stderr}`);
    }
    const after = JSON.parse((await cli(['wake', 'list', '--json'])).stdout);
    assert.deepEqual(after.chains[0].steps, [step], 'refusals changed nothing');
    const bare = await cli(['wake', 'set', 'oc', '--step', 'opencode', '--json']);
    assert.notEqual(bare.status, 0);
    assert.match(bare.stderr, /opencode needs its server's URL/);
  });
});

describe('opencode in a command step', () => {
  it('an opencode session id (ses_…) is a plain token: {provider_session_id} becomes it (opencode run --session ID)', () => {
    const values = { provider_session_id: 'ses_dc151435dffekOtS47lBU65ZPQ', session: 's-1', account: 'opencode', lineage: 'l-1', wake_text: 'You have mail.', cwd: '/w' };
    assert.deepEqual(expandArgs(['opencode', 'run', '--session', '{provider_session_id}', '{wake_text}'], values), {
      ok: true,
      args: ['opencode', 'run', '--session', 'ses_dc151435dffekOtS47lBU65ZPQ', 'You have mail.'],
    });
  });
});
