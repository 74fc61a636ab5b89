// opencode (shared/AGENT-INTEGRATIONS.md §11, checked against 1.18.33): the MCP entry under `mcp` in
// its config (`$XDG_CONFIG_HOME/opencode/opencode.json`, a project's `opencode.json`), the guide as
// a skill, and a plugin that delivers mail into the running session (opencode-plugin.ts).
//
// The pitfall: once any plugin exists, opencode installs `@opencode-ai/plugin` into each config
// folder at start, and waits for it (about 78 s with no network), unless that folder has a
// `node_modules/` and its `package-lock.json` lists the package under `packages[""]` (opencode's
// own check). Our plugin needs nothing from it, so setup adds exactly those two facts beside the
// plugin: a marker file that makes `node_modules/`, and the one lock entry, each removed by unsetup.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Bridge } from './bridge-command.js';
import { bridgeArgs } from './bridge-command.js';
import type { JsonObject, Scope, Target } from './programs.js';

/** The plugin module the stub imports; the same path from src/cli/setup (tsx) and dist/cli/setup. */
export const OPENCODE_PLUGIN_MODULE = fileURLToPath(new URL('../../../dist/cli/extension/opencode-plugin.js', import.meta.url));
/** The package opencode would install into each config folder. */
export const OPENCODE_PLUGIN_PACKAGE = '@opencode-ai/plugin';

export const opencodeConfigDir = (env: NodeJS.ProcessEnv): string => join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config'), 'opencode');

export interface OpencodeFiles {
  /** opencode.json, or opencode.jsonc when only that one exists (opencode writes it on first run). */
  config: string;
  /** The config folder opencode installs into: `~/.config/opencode`, or the project's `.opencode`. */
  folder: string;
  plugin: string;
  skill: string;
}

export function opencodeFiles(scope: Scope, env: NodeJS.ProcessEnv): OpencodeFiles {
  const base = scope.kind === 'project' ? scope.dir : opencodeConfigDir(env);
  const folder = scope.kind === 'project' ? join(scope.dir, '.opencode') : base;
  const json = join(base, 'opencode.json');
  const jsonc = join(base, 'opencode.jsonc');
  return {
    config: !existsSync(json) && existsSync(jsonc) ? jsonc : json,
    folder,
    plugin: join(folder, 'plugin', 'mail4agent.js'),
    skill: join(folder, 'skill', 'mail4agent', 'SKILL.md'),
  };
}

/** `mcp.m4a`: a local command (one array) or a remote URL; the timeout (ms) covers a 60 s inbox
 *  wait (opencode's default is 5 s). No secret: stdio reads the credentials file, HTTP names the
 *  variable in opencode's `{env:NAME}` syntax. */
export function opencodeEntry(b: Bridge, account: string, http: { url: string; tokenVar: string } | null, timeoutMs: number): JsonObject {
  if (http) return { type: 'remote', url: http.url, headers: { Authorization: `Bearer {env:${http.tokenVar}}` }, enabled: true, timeout: timeoutMs };
  return { type: 'local', command: [b.command, ...bridgeArgs(b, account)], enabled: true, timeout: timeoutMs };
}

/** The plugin file: imports the plugin from this package, for one account. No secret. */
export function opencodePluginStub(account: string, module = OPENCODE_PLUGIN_MODULE): string {
  return [
    '// mail4agent: new mail delivered into the opencode session. Written by `m4a setup opencode`;',
    '// `m4a unsetup opencode` removes it. The code is in the mail4agent package; the secret is not here.',
    `import { mail4agent } from ${JSON.stringify(module)};`,
    `export const Mail4agent = mail4agent({ account: ${JSON.stringify(account)} });`,
    '',
  ].join('\n');
}

const MARKER = [
  '# Made by `m4a setup opencode` (`m4a unsetup opencode` removes it): a node_modules/ here, with the',
  `# ${OPENCODE_PLUGIN_PACKAGE} entry in package-lock.json, keeps opencode from installing that package at`,
  '# every start (it waits about 78 s when offline). The mail4agent plugin does not use it.',
  '',
].join('\n');

const guard = (folder: string): Target[] => [
  { kind: 'whole', path: join(folder, 'node_modules', '.mail4agent'), content: MARKER },
  { kind: 'json-entry', path: join(folder, 'package-lock.json'), keys: ['packages', '', 'dependencies', OPENCODE_PLUGIN_PACKAGE], value: '*', ensure: 'present' },
];

/** The plugin and what keeps opencode from stalling on its install: the marker in node_modules/
 *  and the lock entry (kept as it is when the lock lists the package already), in the plugin's
 *  folder and, for a project, in the user's config folder too (opencode installs into every config
 *  folder once any has a plugin: measured, a project plugin alone still waited 76 s). */
export function opencodePluginTargets(f: OpencodeFiles, account: string, env: NodeJS.ProcessEnv): Target[] {
  const user = opencodeConfigDir(env);
  return [{ kind: 'whole', path: f.plugin, content: opencodePluginStub(account) }, ...guard(f.folder), ...(f.folder === user ? [] : guard(user))];
}

/** What `m4a setup opencode` tells the user about the plugin. */
export function opencodeTodo(scope: Scope, changes: { path: string; after: string | null }[]): string[] {
  const plugin = changes.find((c) => c.path.endsWith(join('plugin', 'mail4agent.js')) && c.after !== null);
  if (!plugin) return [];
  const todo: string[] = [];
  if (!existsSync(OPENCODE_PLUGIN_MODULE)) todo.push(`The plugin loads ${OPENCODE_PLUGIN_MODULE}, which does not exist yet: build this package (npm run build).`);
  if (scope.kind === 'project')
    todo.push(
      `${plugin.path} names ${OPENCODE_PLUGIN_MODULE}, a path of this machine: keep it, and .opencode/node_modules and .opencode/package-lock.json, out of the repository.`,
    );
  todo.push(
    `The plugin wakes an idle session and gives a busy one its mail after the running tool; to wake a session from outside too, start opencode with --port N and run \`m4a wake set ACCOUNT --step opencode=http://127.0.0.1:N\`.`,
  );
  return todo;
}
