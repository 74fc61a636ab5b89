// The relay end to end (issue #20), with every part real: a daemon listening on loopback only
// dials out over TLS (a test CA) to `m4a relay serve`, a child process; a person logs in to the
// relay in headless Chromium, reads an agent's mail and answers it; the relay is killed (SIGKILL)
// and started again mid-session and the page goes on, nothing lost or doubled; a second daemon
// presenting the same node's token is refused while the first holds it; a relay user granted one
// mailbox never reads another; a delegate's message carries `via` and the agent's view of it says
// the person's approval is needed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { MailClient } from '../../src/client/http-client.js';
import { CLI } from '../support/shell-agents.js';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { makeTestTls, type TestTls } from '../support/test-tls.js';
import { until } from '../support/until.js';
import { chromiumMissing, launchChromium } from './browser.js';
import { PASSWORD, createPerson } from './web-helpers.js';

const skip = chromiumMissing() ?? false;

interface Run {
  code: number;
  out: string;
}
const run = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> =>
  new Promise((resolve) =>
    execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    ),
  );
const ok = async (args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> => {
  const r = await run(args, env);
  assert.equal(r.code, 0, `m4a ${args.join(' ')}: ${r.out}`);
  return r.out;
};

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A browser's JSON call to the relay over HTTPS, trusting the test CA. */
function relayPost(base: string, ca: Buffer, name: string, body: unknown, login?: { cookie: string; csrf: string }): Promise<{ status: number; json: any; setCookie: string }> {
  const data = JSON.stringify(body);
  const u = new URL(`/web/api/${name}`, base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        ca,
        headers: {
          origin: base,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(data),
          ...(login ? { cookie: login.cookie, 'x-m4a-csrf': login.csrf } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null, setCookie: String(res.headers['set-cookie']?.[0] ?? '') }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

describe('the relay end to end', { skip, timeout: 240_000 }, () => {
  let tls: TestTls;
  let d: TestDaemon;
  let codex: MailClient;
  let codexSecret: string;
  let relayDir: string;
  let port: number;
  let base: string;
  let relay: ChildProcess | null = null;
  let browser: Browser;
  let page: Page;
  let tokenFile: string;
  const dirs: string[] = [];
  const nodeEnv = (): NodeJS.ProcessEnv => ({ M4A_DATA_DIR: d.dataDir });
  const relayFlags = (): string[] => ['--data-dir', relayDir];

  async function startRelay(): Promise<void> {
    const child = spawn(process.execPath, [CLI, 'relay', 'serve', '--listen', `127.0.0.1:${port}`, '--tls-cert', tls.certFile, '--tls-key', tls.keyFile, ...relayFlags()], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    relay = child;
    let err = '';
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (c: Buffer) => {
        err += c.toString('utf8');
        if (err.includes('relay_listening')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`the relay exited (${code}): ${err}`)));
    });
  }
  async function killRelay(): Promise<void> {
    const child = relay;
    if (!child || child.exitCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
    relay = null;
  }
  /** `m4a connect configure` for node laptop at this relay, offering `mailboxes`. */
  const configureArgs = (mailboxes: string[]): string[] => [
    'connect',
    'configure',
    '--server-url',
    `wss://127.0.0.1:${port}`,
    '--node-id',
    'laptop',
    '--node-token-file',
    tokenFile,
    ...mailboxes.flatMap((m) => ['--human-mailbox', m]),
    '--ca-file',
    tls.caFile,
  ];
  const status = async (env = nodeEnv()): Promise<{ connected: boolean; last_error: string | null }> => JSON.parse(await ok(['connect', 'status', '--json'], env));
  const relayUser = async (name: string, mailbox: string, role: 'owner' | 'delegate'): Promise<void> => {
    const pw = join(relayDir, `${name}.pw`);
    writeFileSync(pw, `${PASSWORD}\n`, { mode: 0o600 });
    await ok(['relay', 'user', 'add', name, '--password-file', pw, ...relayFlags()]);
    await ok(['relay', 'user', 'grant', name, '--node', 'laptop', '--mailbox', mailbox, '--role', role, ...relayFlags()]);
  };

  before(async () => {
    tls = makeTestTls();
    d = await startTestDaemon();
    await createPerson(d, 'alice', { display_name: 'Alice' });
    await createPerson(d, 'bob', { display_name: 'Bob' });
    ({ client: codex, secret: codexSecret } = await d.account('codex'));
    relayDir = mkdtempSync(join(tmpdir(), 'm4a-relay-'));
    dirs.push(relayDir);
    port = await freePort();
    base = `https://127.0.0.1:${port}`;
    tokenFile = join(mkdtempSync(join(tmpdir(), 'm4a-node-')), 'laptop.token');
    dirs.push(join(tokenFile, '..'));
    await ok(['relay', 'node', 'add', 'laptop', '--token-file', tokenFile, ...relayFlags()]);
    await relayUser('alice-web', 'alice', 'owner');
    await relayUser('carol', 'alice', 'delegate');
    await relayUser('eve', 'bob', 'owner');
    await startRelay();
    await ok(configureArgs(['alice', 'bob']), nodeEnv());
    await ok(['connect', 'start'], nodeEnv());
    await until('the node connected', async () => (await status()).connected);
    browser = await launchChromium([`--ignore-certificate-errors-spki-list=${tls.spki}`]);
    page = await (await browser.newContext({ viewport: { width: 1100, height: 720 } })).newPage();
    page.setDefaultTimeout(15_000);
  });
  after(async () => {
    await browser?.close();
    await killRelay();
    await d?.stop();
    tls?.remove();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('the daemon listens on loopback only: the relay is reached by its outbound connection', () => {
    assert.match(d.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(d.webLanUrl, null);
    assert.equal(d.smtpUrl, null);
    const cfg = readFileSync(join(d.dataDir, 'relay-link.json'), 'utf8');
    assert.ok(!/BEGIN/.test(cfg), 'no key material in the link file');
  });

  it("a person logs in to the relay in Chromium, reads an agent's mail and answers it", async () => {
    const first = await codex.send({ to: 'alice', subject: 'Build is red', body: 'The parser test fails on main.' });
    await page.goto(`${base}/`);
    await page.getByLabel('Account').fill('alice-web');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor();
    const row = page.locator(`.msg[data-id="${first.message_id}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /Build is red/);
    // The relay offers mail only: no tasks, search, reservations or operator pages.
    const nav = (await page.locator('nav .links').textContent()) ?? '';
    assert.match(nav, /Inbox/);
    assert.doesNotMatch(nav, /Tasks|Search|Reservations|Operator/);
    // A reload finds the login again through `me`, which the relay marks as a relay login.
    await page.reload();
    await row.waitFor();
    assert.doesNotMatch((await page.locator('nav .links').textContent()) ?? '', /Tasks|Search|Reservations|Operator/);
    await page.goto(`${base}/web/tasks`);
    await page.getByRole('heading', { name: 'Not through the relay' }).waitFor();
    await page.getByRole('link', { name: 'Back to the inbox' }).click();
    await row.locator('a.open').click();
    await page.getByRole('heading', { name: 'Build is red' }).waitFor();
    await page.getByLabel('Reply').fill('Looking at it now.');
    await page.getByRole('button', { name: 'Send reply' }).click();
    const reply = await until('the reply at the agent', async () => (await codex.inbox({ include_bodies: true })).messages.find((m) => m.reply_to === first.message_id));
    assert.equal(reply.from, 'alice');
    assert.equal(reply.from_kind, 'human');
    assert.equal(reply.body, 'Looking at it now.');
    assert.equal(reply.via, undefined, "the owner's own mail carries no via");
  });

  it('the relay killed and started again mid-session: the page goes on, nothing lost or doubled', async () => {
    await page.getByRole('link', { name: 'Inbox' }).click();
    await page.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor();
    await killRelay();
    await until('the node sees the relay gone', async () => !(await status()).connected);
    const away = await codex.send({ to: 'alice', subject: 'While the relay was down', body: 'Still red.' });
    await startRelay();
    await until('the node back', async () => (await status()).connected);
    // The login outlived the relay (its store is on disk); the live read catches up from its cursor.
    const row = page.locator(`.msg[data-id="${away.message_id}"]`);
    await row.waitFor({ timeout: 60_000 });
    const live = await codex.send({ to: 'alice', subject: 'After the restart', body: 'Green now.' });
    await page.locator(`.msg[data-id="${live.message_id}"]`).waitFor({ timeout: 60_000 });
    for (const id of [away.message_id, live.message_id]) assert.equal(await page.locator(`.msg[data-id="${id}"]`).count(), 1, `${id} shown once`);
    await page.locator(`.msg[data-id="${live.message_id}"] a.open`).click();
    await page.getByLabel('Reply').fill('Thanks, closing.');
    await page.getByRole('button', { name: 'Send reply' }).click();
    await until('the second reply at the agent', async () => (await codex.inbox({ include_bodies: true })).messages.some((m) => m.reply_to === live.message_id));
    const replies = (await codex.inbox({ include_bodies: true, include_acked: true })).messages.filter((m) => m.reply_to === live.message_id);
    assert.equal(replies.length, 1, 'delivered once');
  });

  it("a second daemon presenting the node's token is refused while the first holds it", async () => {
    const other = await startTestDaemon();
    try {
      await createPerson(other, 'alice');
      const env = { M4A_DATA_DIR: other.dataDir };
      await ok(configureArgs(['alice']), env);
      await ok(['connect', 'start'], env);
      const s = await until('refused', async () => {
        const st = await status(env);
        return st.last_error ? st : null;
      });
      assert.equal(s.connected, false);
      assert.match(s.last_error ?? '', /node_in_use/);
      assert.equal((await status()).connected, true, 'the first node keeps its connection');
      await ok(['connect', 'stop'], env);
    } finally {
      await other.stop();
    }
  });

  it('a relay user granted one mailbox never reads another', async () => {
    const ca = readFileSync(tls.caFile);
    await codex.send({ to: 'bob', subject: 'For Bob only', body: 'b' });
    const li = await relayPost(base, ca, 'login', { account: 'eve', password: PASSWORD });
    assert.equal(li.status, 200, JSON.stringify(li.json));
    assert.equal(li.json.account, 'bob');
    const login = { cookie: li.setCookie.split(';')[0]!, csrf: li.json.csrf as string };
    const inbox = await relayPost(base, ca, 'inbox', {}, login);
    assert.equal(inbox.status, 200);
    const subjects = (inbox.json.messages as Array<{ subject: string }>).map((m) => m.subject);
    assert.ok(subjects.includes('For Bob only'));
    assert.ok(!subjects.some((s) => /Build is red|While the relay/.test(s)), "none of alice's mail");
    // Naming alice's message, or a mailbox, in the body reaches nothing of hers.
    const aliceMail = (await codex.inbox({ include_acked: true })).messages.find((m) => m.subject === 'Re: Build is red');
    assert.ok(aliceMail, "alice's reply is in codex's mailbox");
    const got = await relayPost(base, ca, 'get', { message_id: aliceMail.message_id }, login);
    assert.equal(got.status, 403, 'a message of another mailbox is refused');
    assert.equal(got.json.error.code, 'not_addressed_to_you');
    const sneaky = await relayPost(base, ca, 'inbox', { mailbox: 'alice' }, login);
    assert.equal(sneaky.status, 400, 'a body naming a mailbox is malformed');
    const admin = await relayPost(base, ca, 'admin/overview', {}, login);
    assert.equal(admin.status, 403);
    assert.equal(admin.json.error.code, 'not_relayed');
  });

  it("a delegate's message carries via, and the agent's view says the person's approval is needed", async () => {
    const ca = readFileSync(tls.caFile);
    const li = await relayPost(base, ca, 'login', { account: 'carol', password: PASSWORD });
    assert.equal(li.status, 200, JSON.stringify(li.json));
    assert.equal(li.json.relay.role, 'delegate');
    const login = { cookie: li.setCookie.split(';')[0]!, csrf: li.json.csrf as string };
    const sent = await relayPost(base, ca, 'send', { to: 'codex', subject: 'Ship it', body: 'Please merge and deploy.' }, login);
    assert.equal(sent.status, 200, JSON.stringify(sent.json));
    const m = (await codex.get(sent.json.message_id as string)).message;
    assert.equal(m.from, 'alice');
    assert.deepEqual(m.via, { relay: `127.0.0.1:${port}`, delegate: 'carol' });
    const text = await ok(['read', m.message_id], { M4A_DATA_DIR: d.dataDir, M4A_TOKEN: codexSecret });
    assert.match(text, /via delegate carol \(relay 127\.0\.0\.1:\d+\): get alice's approval before acting on it/);
  });
});
