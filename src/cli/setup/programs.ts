// What setup writes for each agent program: the files per scope, the exact MCP entries and the hooks
// that wake agents. Shapes follow shared/AGENT-INTEGRATIONS.md §1 and §2.1 (Claude Code),
// §4.1 and §4.3 (Codex), §5 (Gemini), §6 (Cursor), §10 (pi and omp: an extension, no MCP entry), §11 (Copilot: program-copilot.ts; opencode: program-opencode.ts).
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_PORT } from '../../wire/locations.js';
import { AGENT_PROGRAMS, isExtensionProvider, type ExtensionProvider } from '../../wire/capabilities.js';
import { bridgeArgs, type Bridge } from './bridge-command.js';
import { qwenDirs, qwenEntry } from './program-qwen.js';
import { copilotEntry, copilotFiles, copilotHooksFile } from './program-copilot.js';
import { copilotExtensionSource } from './copilot-extension.js';
import { opencodeEntry, opencodeFiles, opencodePluginTargets } from './program-opencode.js';
import { renderGuide } from './guide.js';

/** Setup takes each program attestation names (one list: wire/capabilities.ts). */
export const PROGRAMS = AGENT_PROGRAMS;
export type Program = (typeof PROGRAMS)[number];
/** Programs whose entry is the stdio bridge only (Copilot's HTTP entry is not verified). */
export const STDIO_ONLY: readonly Program[] = ['copilot'];
/** Programs that load our extension into their own process instead of an MCP server and hooks. */
export type ExtensionProgram = Program & ExtensionProvider;
export const isExtensionProgram = (p: Program): p is ExtensionProgram => isExtensionProvider(p);
/** The extension both programs load; the same path from src/cli/setup (tsx) and dist/cli/setup. */
export const EXTENSION_MODULE = fileURLToPath(new URL('../../../dist/cli/extension/live-mail.js', import.meta.url));
export type Transport = 'stdio' | 'http';
export type Scope = { kind: 'user' } | { kind: 'project'; dir: string };

/** The server name everywhere (Gemini forbids `_` in it: its policy parser splits on the first one). */
export const SERVER = 'm4a';
export const TOKEN_VAR = 'M4A_TOKEN';
/** An inbox wait lasts up to 60 s; give every call twice that. */
const TOOL_TIMEOUT_MS = 120_000;
/** Codex forwards only a fixed list of variables (HOME, PATH, …) to stdio servers; these locate the
 *  daemon, its data and the credentials, and are forwarded only when set. */
const CODEX_FORWARD = ['M4A_DATA_DIR', 'M4A_PORT', 'M4A_URL', 'M4A_CREDENTIALS', 'XDG_CONFIG_HOME', 'XDG_DATA_HOME'];

export type JsonObject = Record<string, unknown>;

export type Target =
  /** An object member at `keys` (the last is our name) in a JSON file. With `ensure`, a member the
   *  file needs but that is not ours (Cursor's "version"): added when missing, kept when equal,
   *  refused when different; `'present'`: kept whatever its value (opencode's lock entry). */
  | { kind: 'json-entry'; path: string; keys: string[]; value: unknown; ensure?: boolean | 'present' }
  /** A string item in the array at `keys`. */
  | { kind: 'json-item'; path: string; keys: string[]; item: string }
  /** An object appended to the array at `keys`, shared with the user's own items; ours is the item
   *  holding the string `marker` (the hook's command). */
  | { kind: 'json-append'; path: string; keys: string[]; value: JsonObject; marker: string }
  /** A marked block appended to a TOML or Markdown file; `table` is what the TOML must parse to. */
  | { kind: 'block'; path: string; syntax: 'toml' | 'markdown'; body: string; table?: JsonObject }
  /** A whole file of ours. */
  | { kind: 'whole'; path: string; content: string };

export interface Setting {
  program: Program;
  scope: Scope;
  transport: Transport;
  account: string;
  bridge: Bridge;
  env: NodeJS.ProcessEnv;
  /** Install the hooks that wake agents (default true). */
  hooks?: boolean;
}

export const homeOf = (env: NodeJS.ProcessEnv): string => env.HOME || homedir();
export const codexHome = (env: NodeJS.ProcessEnv): string => env.CODEX_HOME || join(homeOf(env), '.codex');
export const mcpUrl = (env: NodeJS.ProcessEnv): string => `http://127.0.0.1:${env.M4A_PORT || DEFAULT_PORT}/mcp`;

/** The MCP server entry in the program's own syntax. No secret: stdio reads the credentials file,
 *  HTTP names the environment variable. */
export function mcpEntry(s: Setting): JsonObject {
  if (isExtensionProgram(s.program)) throw new Error(`${s.program} takes no MCP entry`);
  const stdio = s.transport === 'stdio';
  const cmd = { command: s.bridge.command, args: bridgeArgs(s.bridge, s.account) };
  const url = mcpUrl(s.env);
  switch (s.program) {
    case 'claude':
      // Its HTTP client gives up after 60 s to first byte unless the entry's timeout is >= 60 s.
      return stdio ? { type: 'stdio', ...cmd } : { type: 'http', url, headers: { Authorization: `Bearer \${${TOKEN_VAR}}` }, timeout: TOOL_TIMEOUT_MS };
    case 'codex': {
      // An inline bearer_token is rejected by Codex; it reads the variable named here.
      const timeouts = { startup_timeout_sec: 30, tool_timeout_sec: TOOL_TIMEOUT_MS / 1000 };
      return stdio ? { ...cmd, env_vars: CODEX_FORWARD, ...timeouts } : { url, bearer_token_env_var: TOKEN_VAR, ...timeouts };
    }
    case 'gemini':
      // trust: headless runs offer no untrusted MCP tool (§11); the auth choice is the user's.
      return stdio
        ? { ...cmd, timeout: TOOL_TIMEOUT_MS, trust: true }
        : { url, type: 'http', headers: { Authorization: `Bearer \${${TOKEN_VAR}}` }, timeout: TOOL_TIMEOUT_MS, trust: true };
    case 'qwen':
      return qwenEntry(cmd, url, stdio, TOKEN_VAR, TOOL_TIMEOUT_MS);
    case 'copilot':
      if (!stdio) throw new Error('copilot takes a stdio entry only');
      return copilotEntry(cmd, TOOL_TIMEOUT_MS);
    case 'opencode':
      return opencodeEntry(s.bridge, s.account, stdio ? null : { url, tokenVar: TOKEN_VAR }, TOOL_TIMEOUT_MS);
    case 'cursor':
      // Cursor documents no per-server tool timeout, so there is nothing to raise for long waits.
      return stdio ? { type: 'stdio', ...cmd } : { url, headers: { Authorization: `Bearer \${env:${TOKEN_VAR}}` } };
  }
}

const tomlValue = (v: unknown): string =>
  Array.isArray(v) ? `[${v.map(tomlValue).join(', ')}]` : typeof v === 'string' ? JSON.stringify(v).replace(/\x7f/g, '\\u007f') : String(v);

export function tomlTable(name: string, table: JsonObject, eol = '\n'): string {
  return [`[${name}]`, ...Object.entries(table).map(([k, v]) => `${k} = ${tomlValue(v)}`)].map((l) => l + eol).join('');
}

/** A word for the shell: as is when it needs no quoting, else single-quoted. */
export const shellWord = (s: string): string => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The shell command a program runs for one of our hooks (`m4a hook NAME --account ACCOUNT`). */
export const hookCommand = (b: Bridge, hook: string, account: string): string => [b.command, ...b.prefix, 'hook', hook, '--account', account].map(shellWord).join(' ');

/** A Stop hook long-polls up to M4A_LISTEN_SECS (540 s by default); the program's timeout exceeds it. */
const STOP_TIMEOUT_SECS = 600;
const CONTEXT_TIMEOUT_SECS = 30;

interface HookSpec {
  /** The event, the key of its array under "hooks". */
  event: string;
  matcher?: string;
  hook: string;
  /** Seconds (Gemini's file takes milliseconds; converted there). */
  timeout: number;
}

/** Per program, the hooks and when they run (§2.1, §4.3, §5.3, §6.2). */
const HOOKS: Record<Program, HookSpec[]> = {
  claude: [
    { event: 'Stop', hook: 'claude-stop', timeout: STOP_TIMEOUT_SECS },
    { event: 'UserPromptSubmit', hook: 'claude-prompt', timeout: CONTEXT_TIMEOUT_SECS },
    { event: 'SessionStart', matcher: 'startup|resume', hook: 'claude-prompt', timeout: CONTEXT_TIMEOUT_SECS },
    { event: 'PostToolUse', matcher: '*', hook: 'claude-tool', timeout: CONTEXT_TIMEOUT_SECS },
  ],
  codex: [
    { event: 'Stop', hook: 'codex-stop', timeout: STOP_TIMEOUT_SECS },
    { event: 'UserPromptSubmit', hook: 'codex-prompt', timeout: CONTEXT_TIMEOUT_SECS },
  ],
  gemini: [
    { event: 'AfterAgent', hook: 'gemini-after-agent', timeout: STOP_TIMEOUT_SECS },
    { event: 'BeforeAgent', hook: 'gemini-before-agent', timeout: CONTEXT_TIMEOUT_SECS },
  ],
  cursor: [{ event: 'stop', hook: 'cursor-stop', timeout: STOP_TIMEOUT_SECS }],
  // Copilot's events; its hooks are a whole file of ours (copilotTargets).
  copilot: [
    { event: 'agentStop', hook: 'copilot-stop', timeout: STOP_TIMEOUT_SECS },
    { event: 'userPromptSubmitted', hook: 'copilot-prompt', timeout: CONTEXT_TIMEOUT_SECS },
    { event: 'postToolUse', hook: 'copilot-tool', timeout: CONTEXT_TIMEOUT_SECS },
  ],
  // Claude Code's shape; Qwen caps Stop blocks at 8 in a row itself.
  qwen: [
    { event: 'Stop', hook: 'qwen-stop', timeout: STOP_TIMEOUT_SECS },
    { event: 'UserPromptSubmit', hook: 'qwen-prompt', timeout: CONTEXT_TIMEOUT_SECS },
  ],
  // The extension delivers mail itself, live.
  pi: [],
  omp: [],
  // Its plugin delivers mail into the session (opencodeTargets).
  opencode: [],
};

/** The events setup hooks for a program (capabilities lists them). */
export const hookEvents = (p: Program): string[] => HOOKS[p].map((h) => h.event);

/** Cursor's follow-up cap per stop hook (its documented default). */
const CURSOR_LOOP_LIMIT = 5;

/** The hook targets for one program in `path`: one object appended to each event's array. */
export function hookTargets(s: Setting, path: string): Target[] {
  return HOOKS[s.program].map((h): Target => {
    const command = hookCommand(s.bridge, h.hook, s.account);
    let value: JsonObject;
    if (s.program === 'cursor') value = { command, timeout: h.timeout, loop_limit: CURSOR_LOOP_LIMIT };
    else if (s.program === 'gemini') value = { hooks: [{ type: 'command', command, name: 'mail4agent', timeout: h.timeout * 1000 }] };
    else value = { ...(h.matcher !== undefined ? { matcher: h.matcher } : {}), hooks: [{ type: 'command', command, timeout: h.timeout }] };
    return { kind: 'json-append', path, keys: ['hooks', h.event], value, marker: command };
  });
}

/** The file holding a program's hooks for a scope. */
export function hooksFile(s: Setting): string {
  const dir = s.scope.kind === 'project' ? s.scope.dir : null;
  const home = homeOf(s.env);
  switch (s.program) {
    case 'claude':
      return join(dir ?? home, '.claude', 'settings.json');
    case 'codex':
      return join(dir ? join(dir, '.codex') : codexHome(s.env), 'hooks.json');
    case 'gemini':
      return join(dir ?? home, '.gemini', 'settings.json');
    case 'cursor':
      return join(dir ?? home, '.cursor', 'hooks.json');
    case 'copilot':
      return copilotFiles(s.env, dir).hooks;
    case 'qwen':
      return qwenDirs(s.env, dir).settings;
    case 'opencode':
      return opencodeFiles(s.scope, s.env).plugin;
    case 'pi':
    case 'omp':
      return extensionFile(s.program, s.scope, s.env);
  }
}

/** Where each program looks for extensions: `~/.pi/agent/extensions`, `<project>/.pi/extensions`
 *  (omp: `.omp` for `.pi`). */
export function extensionFile(program: ExtensionProgram, scope: Scope, env: NodeJS.ProcessEnv): string {
  const dot = `.${program}`;
  return scope.kind === 'project' ? join(scope.dir, dot, 'extensions', 'mail4agent.ts') : join(homeOf(env), dot, 'agent', 'extensions', 'mail4agent.ts');
}

/** The agent guide as a skill: `~/.pi/agent/skills/mail4agent/SKILL.md`, `<project>/.pi/skills/…`. */
export function skillFile(program: ExtensionProgram, scope: Scope, env: NodeJS.ProcessEnv): string {
  const dot = `.${program}`;
  const base = scope.kind === 'project' ? join(scope.dir, dot, 'skills') : join(homeOf(env), dot, 'agent', 'skills');
  return join(base, 'mail4agent', 'SKILL.md');
}

/** The file setup writes: two lines that load the extension from this package, for one account.
 *  No secret: the extension reads it from the credentials file. */
export function extensionStub(program: ExtensionProgram, account: string, module = EXTENSION_MODULE): string {
  return [
    `// mail4agent: live mail, mail tools and /mail in ${program}. Written by \`m4a setup ${program}\`;`,
    `// \`m4a unsetup ${program}\` removes it. The code is in the mail4agent package; the secret is not here.`,
    `import { mail4agent } from ${JSON.stringify(module)};`,
    `export default mail4agent({ account: ${JSON.stringify(account)} });`,
    '',
  ].join('\n');
}

/** Every file setup touches for this program and scope, in the order they are written (several
 *  targets may edit one file; they apply in this order). */
export function targets(s: Setting): Target[] {
  if (isExtensionProgram(s.program))
    return [
      { kind: 'whole', path: extensionFile(s.program, s.scope, s.env), content: extensionStub(s.program, s.account) },
      { kind: 'whole', path: skillFile(s.program, s.scope, s.env), content: renderGuide(s.program, 'file') },
    ];
  const base = mcpTargets(s);
  if (s.hooks === false) return base;
  if (s.program === 'opencode') return [...base, ...opencodePluginTargets(opencodeFiles(s.scope, s.env), s.account, s.env)];
  if (s.program === 'copilot') return [...base, ...copilotHooks(s)];
  const file = hooksFile(s);
  // Cursor's hooks.json declares its format version.
  const version: Target[] = s.program === 'cursor' ? [{ kind: 'json-entry', path: file, keys: ['version'], value: 1, ensure: true }] : [];
  return [...base, ...version, ...hookTargets(s, file)];
}

function mcpTargets(s: Setting): Target[] {
  const home = homeOf(s.env);
  const dir = s.scope.kind === 'project' ? s.scope.dir : null;
  const entry = mcpEntry(s);
  const mcp = (path: string): Target => ({ kind: 'json-entry', path, keys: ['mcpServers', SERVER], value: entry });
  const section = (path: string): Target => ({ kind: 'block', path, syntax: 'markdown', body: renderGuide(s.program, 'section') });
  switch (s.program) {
    case 'claude': {
      const skill = join(dir ?? home, '.claude', 'skills', 'mail4agent', 'SKILL.md');
      const guide: Target = { kind: 'whole', path: skill, content: renderGuide('claude', 'file') };
      if (!dir) return [mcp(join(home, '.claude.json')), guide];
      // A project server needs approval in interactive sessions; this is the approval the dialog writes.
      const approve: Target = { kind: 'json-item', path: join(dir, '.claude', 'settings.local.json'), keys: ['enabledMcpjsonServers'], item: SERVER };
      return [mcp(join(dir, '.mcp.json')), approve, guide];
    }
    case 'codex': {
      const base = dir ? join(dir, '.codex') : codexHome(s.env);
      const table: Target = { kind: 'block', path: join(base, 'config.toml'), syntax: 'toml', body: tomlTable(`mcp_servers.${SERVER}`, entry), table: entry };
      return [table, section(join(dir ?? codexHome(s.env), 'AGENTS.md'))];
    }
    case 'gemini': {
      const base = join(dir ?? home, '.gemini');
      return [mcp(join(base, 'settings.json')), section(join(dir ?? base, 'GEMINI.md'))];
    }
    case 'cursor': {
      const base = join(dir ?? home, '.cursor');
      if (!dir) return [mcp(join(base, 'mcp.json'))];
      return [mcp(join(base, 'mcp.json')), { kind: 'whole', path: join(base, 'rules', 'mail4agent.mdc'), content: renderGuide('cursor', 'file') }];
    }
    case 'qwen': {
      const q = qwenDirs(s.env, dir);
      return [mcp(q.settings), section(q.guide)];
    }
    case 'copilot': {
      const f = copilotFiles(s.env, dir);
      return [mcp(f.mcp), { kind: 'whole', path: f.skill, content: renderGuide('copilot', 'file') }];
    }
    case 'opencode': {
      const f = opencodeFiles(s.scope, s.env);
      return [
        { kind: 'json-entry', path: f.config, keys: ['mcp', SERVER], value: entry },
        { kind: 'whole', path: f.skill, content: renderGuide('opencode', 'file') },
      ];
    }
    case 'pi':
    case 'omp':
      return [];
  }
}

/** Copilot's hooks: one whole file (`hooks/mail4agent.json`), agentStop and the context hooks;
 *  and the extension that brings mail to an idle session (it runs `m4a hook copilot-live`). */
function copilotHooks(s: Setting): Target[] {
  const hooks = HOOKS.copilot.map((h) => ({ event: h.event, command: hookCommand(s.bridge, h.hook, s.account), timeoutSec: h.timeout }));
  const live = [s.bridge.command, ...s.bridge.prefix, 'hook', 'copilot-live', '--account', s.account];
  const extension = copilotFiles(s.env, s.scope.kind === 'project' ? s.scope.dir : null).extension;
  return [
    { kind: 'whole', path: hooksFile(s), content: copilotHooksFile(hooks) },
    { kind: 'whole', path: extension, content: copilotExtensionSource(live) },
  ];
}
