// The interactive GitHub Copilot CLI (its terminal UI) in a tmux pane of the test's own tmux server,
// wired only by `m4a setup copilot` — its MCP entry, hooks and the extension that wakes it — plus the
// BYOK variables, `--experimental` (extensions are experimental) and COPILOT_ALLOW_ALL=true (tools
// allowed and the folder trusted without the dialog). Its model is a scripted chat-completions
// server on loopback; a codex account is there to send it mail.
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { startScriptedChat, type ChatTurn, type ScriptedChat } from './scripted-chat.js';
import { AGENT_MODULES, makeWorld, NODE_BIN, type World } from './world.js';

/** Copilot unpacks 235 MB on its first start; one directory for every run (under node_modules, so
 *  never committed). */
const PKG_CACHE = join(AGENT_MODULES, '.cache', 'copilot-pkg');

/** BYOK, offline: the scripted server is the model provider. */
export const copilotByok = (model: ScriptedChat): NodeJS.ProcessEnv => ({
  COPILOT_OFFLINE: 'true',
  COPILOT_PROVIDER_BASE_URL: `${model.url}/v1`,
  COPILOT_PROVIDER_API_KEY: 'test-key',
  COPILOT_MODEL: 'scripted',
  COPILOT_PROVIDER_MAX_PROMPT_TOKENS: '128000',
  COPILOT_PROVIDER_MAX_OUTPUT_TOKENS: '8000',
  COPILOT_PKG_CACHE_HOME: PKG_CACHE,
});

export const hasTmux = (): boolean => spawnSync('tmux', ['-V']).status === 0;

export interface CopilotPane {
  w: World;
  /** The codex account (`admin account add --json`): its secret sends the mail. */
  codex: any;
  model: ScriptedChat;
  /** tmux on the test's own server (-L), with the world's environment. */
  tm: (args: string[], env?: NodeJS.ProcessEnv) => string;
  /** The pane's text now. */
  screen: () => string;
}

/** A world with Copilot set up and started on `prompt` in a pane, its model answering `script`;
 *  `env` adds to Copilot's variables. All of it is torn down after the test. */
export async function copilotInTmux(t: TestContext, o: { prefix: string; script: ChatTurn[]; prompt: string; env?: NodeJS.ProcessEnv }): Promise<CopilotPane> {
  const w = await makeWorld(o.prefix);
  const tmux = `m4a-copilot-${process.pid}-${w.port}`;
  const tm = (args: string[], env: NodeJS.ProcessEnv = w.env): string => {
    const r = spawnSync('tmux', ['-L', tmux, ...args], { env, encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 0, `tmux ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  t.after(async () => {
    spawnSync('tmux', ['-L', tmux, 'kill-server'], { timeout: 10_000 });
    await w.close();
  });
  const setup = await w.m4a(['setup', 'copilot']);
  assert.match(setup, /extension\.mjs brings mail to an idle session/, setup);
  const codex = JSON.parse(await w.m4a(['admin', 'account', 'add', 'codex', '--json']));
  const model = await startScriptedChat(o.script);
  t.after(() => model.close());

  const env: NodeJS.ProcessEnv = {
    ...copilotByok(model),
    COPILOT_ALLOW_ALL: 'true',
    ...o.env,
  };
  const vars = Object.entries({ ...w.env, ...env }).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
  tm(['new-session', '-d', '-x', '200', '-y', '50', '-c', w.project, 'env', ...vars, join(NODE_BIN, 'copilot'), '--experimental', '-i', o.prompt]);
  return { w, codex, model, tm, screen: () => tm(['capture-pane', '-p']) };
}
