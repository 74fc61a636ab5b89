// What the opencode tests share: a world where the user's own opencode.json names a scripted model
// (chat completions on loopback, through opencode's bundled @ai-sdk/openai-compatible) before
// `m4a setup opencode` adds to it; `opencode run` one-shot, and `opencode serve --port N` with
// sessions made and prompted over its HTTP API (shared/AGENT-INTEGRATIONS.md §11).
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { MailClient } from '../../../src/client/http-client.js';
import { startScriptedChat, type ChatTurn, type ScriptedChat } from './scripted-chat.js';
import { AGENT_MODULES, freePort, makeWorld, type World } from './world.js';

export const OPENCODE_EXE = join(AGENT_MODULES, 'opencode-ai', 'bin', 'opencode.exe');
/** How opencode names our MCP tools: server `m4a`, then the tool. */
export const tool = (name: string): string => `m4a_${name}`;
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** opencode offline and quiet: no model list from models.dev, no updates. */
export const OPENCODE_ENV: NodeJS.ProcessEnv = { OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_SHARE: '1' };

export interface Ctx {
  w: World;
  tester: MailClient;
  model: ScriptedChat;
  later(f: () => unknown): void;
}

/** The user's own config before setup: the scripted provider as the model. */
export function writeOpencodeConfig(w: World, modelUrl: string): string {
  const dir = join(w.home, '.config', 'opencode');
  mkdirSync(dir, { recursive: true });
  const cfg = {
    $schema: 'https://opencode.ai/config.json',
    provider: { fake: { npm: '@ai-sdk/openai-compatible', options: { baseURL: `${modelUrl}/v1`, apiKey: 'k' }, models: { scripted: { tool_call: true } } } },
    model: 'fake/scripted',
    small_model: 'fake/scripted',
    autoupdate: false,
    share: 'disabled',
  };
  const file = join(dir, 'opencode.json');
  writeFileSync(file, `${JSON.stringify(cfg, null, 2)}\n`);
  return file;
}

export async function opencodeWorld(t: TestContext, prefix: string, script: ChatTurn[], setupArgs: string[] = []): Promise<Ctx> {
  const w = await makeWorld(prefix);
  Object.assign(w.env, OPENCODE_ENV);
  const undo: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of undo.reverse())
      await Promise.resolve()
        .then(f)
        .catch((err: unknown) => process.stderr.write(`cleanup failed: ${String(err)}\n`));
    await w.close();
  });
  const model = await startScriptedChat(script, { filler: 'Mail session' });
  undo.push(() => model.close());
  writeOpencodeConfig(w, model.url);
  await w.m4a(['setup', 'opencode', ...setupArgs]);
  const { secret } = JSON.parse(await w.m4a(['admin', 'account', 'add', 'tester', '--json']));
  const tester = new MailClient({ url: w.url, token: secret });
  undo.push(() => tester.close());
  return { w, tester, model, later: (f) => void undo.push(f) };
}

export interface Serve {
  url: string;
  pid: number;
  child: ChildProcess;
  output(): string;
  /** A request to the server's API (JSON in and out). */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

/** `opencode serve --port N` in `cwd`, up once its API answers; killed when the test ends. */
export async function serve(c: Ctx, cwd: string, env: NodeJS.ProcessEnv = {}, password?: string): Promise<Serve> {
  mkdirSync(cwd, { recursive: true });
  const port = await freePort();
  const child = spawn(OPENCODE_EXE, ['serve', '--port', String(port), '--hostname', '127.0.0.1'], {
    cwd,
    env: { ...c.w.env, ...env, ...(password ? { OPENCODE_SERVER_PASSWORD: password } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  c.later(async () => {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      /* gone */
    }
    await Promise.race([exited, sleep(5_000)]);
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  });
  const url = `http://127.0.0.1:${port}`;
  const auth: Record<string, string> = password ? { authorization: `Basic ${Buffer.from(`opencode:${password}`).toString('base64')}` } : {};
  const api: Serve['api'] = async (method, path, body) => {
    const r = await fetch(url + path, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await r.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* text */
    }
    return { status: r.status, body: parsed };
  };
  const end = Date.now() + 60_000;
  for (;;) {
    const up = await api('GET', '/session/status').catch(() => null);
    if (up?.status === 200) break;
    assert.ok(Date.now() < end && child.exitCode === null, `opencode serve did not come up:\n${out}`);
    await sleep(200);
  }
  return { url, pid: child.pid!, child, output: () => out, api };
}
