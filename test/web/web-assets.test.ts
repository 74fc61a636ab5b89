// The page's scripts are TypeScript modules (src/doors/web/browser/) served as ES modules without a
// bundler: every module the page imports is served with the right type, caching and CSP; the
// modules import only each other; the built daemon serves what the source tree serves; and the
// engine's answers still fit the shapes the page reads.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestDaemon, type TestDaemon } from '../support/test-daemon.js';
import { serveProcess } from '../support/serve-process.js';
import { call, createPerson, login } from './web-helpers.js';
import { messageId } from '../../src/doors/web/browser/answers.js';
import type * as Page from '../../src/doors/web/browser/answers.js';
import type * as W from '../../src/wire/ops.js';
import type { AccountOut } from '../../src/wire/admin.js';
import type { LoginResponse, WebMeResponse } from '../../src/wire/web.js';
import type { TeamShowResponse } from '../../src/wire/teams.js';
import type { WakeStep } from '../../src/wire/wake.js';
import type { ApprovalOut, TaskListResponse, TaskOut } from '../../src/wire/tasks.js';
import type { LeaseListResponse, LeaseOut } from '../../src/wire/leases.js';
import type { ThrottleView } from '../../src/engine/login-throttle.js';

const SOURCE = fileURLToPath(new URL('../../src/doors/web/browser/', import.meta.url));
const BUILT = fileURLToPath(new URL('../../dist/doors/web/browser/', import.meta.url));

/** Compile-time (npm run typecheck): each answer the engine gives fits what the page reads of it. */
type Fits<PageReads, EngineGives extends PageReads> = EngineGives;
export type EngineAnswersFitThePage = [
  Fits<Page.Message, W.MessageOut>,
  Fits<Page.InboxAnswer, W.InboxResponse>,
  Fits<Page.GetAnswer, W.GetResponse>,
  Fits<Page.SendAnswer, W.SendResponse>,
  Fits<Page.AckAnswer, W.AckResponse>,
  Fits<Page.Directory, W.DirectoryDetail>,
  Fits<Page.Account, AccountOut>,
  Fits<Page.LoginAnswer, LoginResponse>,
  Fits<Page.ThrottleView, ThrottleView>,
  Fits<Page.WakeStep, WakeStep>,
  Fits<Page.Task, TaskOut>,
  Fits<Page.TaskList, TaskListResponse>,
  Fits<Page.Approval, ApprovalOut>,
  Fits<Page.Lease, LeaseOut>,
  Fits<Page.LeaseList, LeaseListResponse>,
  Fits<Page.Me, WebMeResponse>,
  Fits<Page.Team, TeamShowResponse>,
];

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const SPECIFIERS = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g;
const specifiers = (text: string): string[] => [...text.matchAll(SPECIFIERS)].map((m) => m[1] ?? m[2] ?? m[3]!);
const sourceModules = (): string[] =>
  readdirSync(SOURCE)
    .filter((n) => n.endsWith('.ts'))
    .map((n) => n.slice(0, -3))
    .sort();

interface Served {
  status: number;
  type: string;
  cache: string;
  csp: string;
  etag: string;
  body: string;
}

async function get(url: string, path: string): Promise<Served> {
  const r = await fetch(`${url}${path}`);
  const h = (n: string) => r.headers.get(n) ?? '';
  return { status: r.status, type: h('content-type'), cache: h('cache-control'), csp: h('content-security-policy'), etag: h('etag'), body: await r.text() };
}

/** Every module the page loads: app.js and what it imports, followed to the end. */
async function moduleGraph(url: string): Promise<Map<string, Served>> {
  const seen = new Map<string, Served>();
  const todo = ['/web/assets/app.js'];
  for (let path = todo.pop(); path !== undefined; path = todo.pop()) {
    if (seen.has(path)) continue;
    const s = await get(url, path);
    assert.equal(s.status, 200, `${path} is served`);
    seen.set(path, s);
    for (const spec of specifiers(s.body)) todo.push(new URL(spec, `http://x${path}`).pathname);
  }
  return seen;
}

describe('browser modules', () => {
  let d: TestDaemon;

  before(async () => {
    d = await startTestDaemon();
    await createPerson(d, 'alice');
  });
  after(() => d.stop());

  it('import only each other: nothing from the daemon, no package, no Node module', () => {
    for (const name of sourceModules()) {
      for (const spec of specifiers(readFileSync(join(SOURCE, `${name}.ts`), 'utf8'))) {
        assert.match(spec, /^\.\/[a-z][a-z-]*\.js$/, `${name}.ts imports ${spec}`);
        assert.ok(existsSync(join(SOURCE, spec.replace(/\.js$/, '.ts'))), `${name}.ts imports ${spec}, which is not in the folder`);
      }
    }
  });

  it('the page loads every module through app.js, each a script with strict headers that never parses data as markup', async () => {
    const graph = await moduleGraph(d.url);
    assert.deepEqual([...graph.keys()].map((p) => p.replace(/^\/web\/assets\/|\.js$/g, '')).sort(), sourceModules(), 'every module is reached, and only these');
    for (const [path, s] of graph) {
      assert.match(s.type, /^text\/javascript/, path);
      assert.equal(s.csp, CSP, path);
      assert.equal(s.cache, 'no-cache', `${path} is revalidated by its ETag`);
      assert.doesNotMatch(s.body, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/, `${path} never parses data as markup or code`);
      assert.doesNotMatch(s.body, /\bimport\s+type\b|:\s*HTMLElement\b/, `${path} is compiled JavaScript, not TypeScript`);
      assert.equal((await fetch(`${d.url}${path}`, { headers: { 'if-none-match': s.etag } })).status, 304, path);
    }
    const shell = await get(d.url, '/web/inbox');
    const preloads = [...shell.body.matchAll(/<link rel="modulepreload" href="([^"]+)">/g)].map((m) => m[1]);
    assert.deepEqual(preloads.sort(), [...graph.keys()].sort(), 'the page names every module up front, so they load in one wave');
    const css = await get(d.url, '/web/assets/app.css');
    assert.match(css.type, /^text\/css/);
    assert.match(css.body, /prefers-color-scheme: dark/);
    const icon = await get(d.url, '/favicon.ico');
    assert.equal(icon.type, 'image/svg+xml');
    assert.equal((await get(d.url, '/web/assets/app.ts')).status, 404, 'the sources are not served');
    assert.equal((await get(d.url, '/web/assets/shell.html')).status, 404, 'the page is served at its paths only');
  });

  it('the built daemon serves the same page, styles and modules as the source tree', async () => {
    assert.ok(existsSync(join(BUILT, 'app.js')), `no ${BUILT}app.js: run npm run build`);
    const dir = mkdtempSync(join(tmpdir(), 'm4a-built-web-'));
    const built = await serveProcess(['--data-dir', dir, '--port', '0'], { ...process.env, M4A_LOG_LEVEL: 'warn' });
    try {
      const mine = await moduleGraph(d.url);
      const theirs = await moduleGraph(built.url);
      assert.deepEqual([...theirs.keys()].sort(), [...mine.keys()].sort());
      for (const [path, s] of mine) {
        const b = theirs.get(path)!;
        assert.equal(b.type, s.type, path);
        assert.equal(b.body, s.body, `${path}: the build is stale (npm run build) or compiles differently from the source tree`);
      }
      for (const path of ['/web/inbox', '/web/assets/app.css', '/web/assets/pages.css', '/web/assets/icon.svg', '/favicon.ico']) {
        const [s, b] = [await get(d.url, path), await get(built.url, path)];
        assert.equal(b.status, 200, path);
        assert.equal(b.type, s.type, path);
        assert.equal(b.etag, s.etag, `${path} is the same file`);
      }
    } finally {
      built.child.kill('SIGTERM');
      await built.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the page reads message ids through messageId, and the answers carry them there', async () => {
    const codex = (await d.account('codex')).client;
    const sent = await codex.send({ to: 'alice', subject: 'id check', body: 'which field holds my id?' });
    const l = await login(d.url, 'alice');
    const inbox = (await call(d.url, l, 'inbox')).json as Page.InboxAnswer;
    assert.deepEqual(inbox.messages.map(messageId), [sent.message_id]);
    const got = (await call(d.url, l, 'get', { message_id: sent.message_id, thread: true })).json as Page.GetAnswer;
    assert.equal(messageId(got.message), sent.message_id);
    assert.deepEqual(got.thread?.map(messageId), [sent.message_id]);
  });
});
