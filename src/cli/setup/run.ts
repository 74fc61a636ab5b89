// The `m4a setup` and `m4a unsetup` actions: check the arguments, plan every file (refusing before
// any write), make sure the account exists, write, then say what is left to do by hand.
import { existsSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { selectorProblem } from '../../wire/text.js';
import { UsageError } from '../connect.js';
import { credentialsPath, readCredentials } from '../credentials.js';
import { EXIT, fail, printJson } from '../output.js';
import { ensureAccount } from './account.js';
import { copilotTodo } from './copilot-todo.js';
import { opencodeTodo } from './program-opencode.js';
import { GEMINI_AUTH_TODO, geminiAuthSource } from './gemini-auth.js';
import type { Bridge } from './bridge-command.js';
import type { Change } from './plan.js';
import { EXTENSION_MODULE, homeOf, isExtensionProgram, mcpUrl, PROGRAMS, SERVER, STDIO_ONLY, TOKEN_VAR, type Program, type Scope, type Transport } from './programs.js';
import { Refusal } from './refusal.js';
import { SetupResult } from './result.js';
import { prepareSetup, unsetupFiles } from './setup-files.js';
import { statePath } from './state.js';

export interface ScopeFlags {
  project?: string;
  user?: boolean;
  json?: boolean;
}

export interface SetupFlags extends ScopeFlags {
  transport?: string;
  account?: string;
  force?: boolean;
  /** false with --no-hooks. */
  hooks?: boolean;
}

const NAMES: Record<Program, string> = {
  claude: 'Claude Code',
  codex: 'Codex',
  gemini: 'Gemini CLI',
  cursor: 'Cursor',
  pi: 'pi',
  omp: 'omp',
  qwen: 'Qwen Code',
  copilot: 'GitHub Copilot CLI',
  opencode: 'opencode',
};

const real = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
};

function programAndScope(name: string, o: ScopeFlags, env: NodeJS.ProcessEnv, mustExist: boolean): { program: Program; scope: Scope } {
  if (!(PROGRAMS as readonly string[]).includes(name)) throw new UsageError(`unknown program "${name}": choose ${PROGRAMS.join(', ')}`);
  const program = name as Program;
  if (o.project !== undefined && o.user) throw new UsageError('choose --project DIR or --user, not both');
  if (o.project === undefined) return { program, scope: { kind: 'user' } };
  const abs = resolve(o.project);
  if (mustExist && (!existsSync(abs) || !statSync(abs).isDirectory())) throw new UsageError(`--project ${o.project}: no such directory`);
  const dir = real(abs);
  // There the project files and the user files are the same files.
  if (dir === real(homeOf(env))) throw new UsageError('--project is your home directory, where project and user files coincide: use --user');
  return { program, scope: { kind: 'project', dir } };
}

const shq = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

function setupTodo(program: Program, scope: Scope, transport: Transport, account: string, bridge: Bridge, changes: Change[], rotated: boolean, env: NodeJS.ProcessEnv): string[] {
  const creds = credentialsPath(env);
  const dir = scope.kind === 'project' ? scope.dir : null;
  const mcpFile = changes[0]?.path ?? '';
  // The file holding our hooks, if any were installed (or are there already).
  const hooks = changes.find((c) => c.record?.edits.some((e) => e.kind === 'json-append') || (program === 'copilot' && c.path.endsWith(join('hooks', 'mail4agent.json'))))?.path;
  const todo: string[] = [];
  if (isExtensionProgram(program))
    return extensionTodo(
      program,
      scope,
      changes,
      rotated ? `Account ${account} already existed but its secret was not in ${creds}, so it was rotated: the old secret stops working.` : null,
    );
  if (rotated) todo.push(`Account ${account} already existed but its secret was not in ${creds}, so it was rotated: the old secret stops working.`);
  const commandFiles = [...(transport === 'stdio' ? [mcpFile] : []), ...(hooks && hooks !== mcpFile ? [hooks] : [])];
  if (!bridge.portable && dir && commandFiles.length)
    todo.push(
      `No m4a on PATH is this package, so ${transport === 'stdio' && hooks ? 'the entry and the hooks run' : transport === 'stdio' ? 'the entry runs' : 'the hooks run'} ${bridge.command} ${bridge.prefix.join(' ')}: ${commandFiles.join(' and ')} now ${commandFiles.length > 1 ? 'hold' : 'holds'} a machine-specific path. Put this package's m4a on PATH (npm install -g mail4agent) and run setup again before you commit ${commandFiles.length > 1 ? 'them' : 'it'}.`,
    );
  const main = bridge.prefix[0];
  if ((transport === 'stdio' || hooks) && main && !existsSync(main))
    todo.push(`The ${transport === 'stdio' ? 'entry runs' : 'hooks run'} ${main}, which does not exist yet: build this package (npm run build).`);
  if (transport === 'http') {
    todo.push(
      `The ${NAMES[program]} entry reads the secret from ${TOKEN_VAR}: set it where ${NAMES[program]} starts, e.g. export ${TOKEN_VAR}="$(node -p 'require(process.argv[1]).accounts[process.argv[2]].secret' ${shq(creds)} ${shq(account)})" (the secret is stored in ${creds} and is not printed).`,
    );
    todo.push(`An HTTP entry (${mcpUrl(env)}) cannot start the daemon: run \`m4a daemon install\` so it runs after a reboot.`);
  }
  if (program === 'claude' && dir)
    todo.push(
      `Claude Code asks to approve servers from ${join(dir, '.mcp.json')} in interactive sessions; ${SERVER} is pre-approved in ${join(dir, '.claude', 'settings.local.json')}, which counts only after you accept the workspace trust dialog for ${dir} (claude -p loads it without asking).`,
    );
  if (program === 'codex') {
    if (dir) todo.push(`Codex reads ${join(dir, '.codex', 'config.toml')} only in a trusted project: trust ${dir} when Codex asks.`);
    const agents = changes[1]?.path;
    const override = agents && join(dirname(agents), 'AGENTS.override.md');
    if (override && existsSync(override)) todo.push(`Codex reads ${override} instead of AGENTS.md there, so the mail4agent section in ${agents} is not loaded: copy it over.`);
  }
  if (program === 'copilot') todo.push(...copilotTodo(dir, changes, env));
  if (program === 'opencode') todo.push(...opencodeTodo(scope, changes));
  if (program === 'gemini' && !geminiAuthSource(env, dir)) todo.push(GEMINI_AUTH_TODO);
  if (program === 'qwen' && dir)
    todo.push(`With security.folderTrust enabled, Qwen Code ignores ${join(dir, '.qwen', 'settings.json')} (its MCP servers and hooks) until you trust ${dir}.`);
  if (program === 'gemini' && dir)
    todo.push(`Gemini CLI ignores ${join(dir, '.gemini', 'settings.json')} in untrusted folders (and connects no MCP servers there): trust ${dir} when Gemini CLI asks.`);
  if (hooks) {
    if (program === 'claude' && dir) todo.push(`Claude Code runs the hooks in ${hooks} only after you accept the workspace trust dialog for ${dir}.`);
    if (program === 'codex')
      todo.push(
        `Codex runs non-managed hooks only after they are trusted: open /hooks in Codex and trust the mail4agent Stop and UserPromptSubmit hooks from ${hooks} (trust follows their definition, so trust them again whenever setup changes them).`,
      );
    if (program === 'gemini' && dir)
      todo.push(
        `Gemini CLI fingerprints project hooks: trust the mail4agent hooks in ${hooks} when it asks, and again after they change (setup with another account or m4a command changes them).`,
      );
    if (program === 'cursor' && dir) todo.push(`Cursor runs the hooks in ${hooks} only in a trusted workspace: trust ${dir} in Cursor.`);
  }
  if (program === 'cursor' && !dir)
    todo.push(
      'Cursor has no user rules file, so the agent guide was not installed: run `m4a setup cursor --project DIR` in a project for it, or paste it into Cursor Settings > Rules.',
    );
  todo.push(...changes.flatMap((c) => (c.note ? [c.note] : [])));
  if (changes.some((c) => c.action !== 'unchanged')) todo.push(`Restart running ${NAMES[program]} sessions: they load MCP servers${hooks ? ' and hooks' : ''} at start.`);
  return todo;
}

function extensionTodo(program: Program, scope: Scope, changes: Change[], rotated: string | null): string[] {
  const todo = rotated ? [rotated] : [];
  if (!existsSync(EXTENSION_MODULE)) todo.push(`The extension loads ${EXTENSION_MODULE}, which does not exist yet: build this package (npm run build).`);
  if (scope.kind === 'project')
    todo.push(`${changes[0]?.path ?? 'The extension file'} names ${EXTENSION_MODULE}, a path of this machine: keep it out of the repository (add it to .gitignore).`);
  if (changes.some((c) => c.action !== 'unchanged')) todo.push(`Restart running ${program} sessions (or /reload): they load extensions at start.`);
  return todo;
}

function print(r: SetupResult, json: boolean, head: string): void {
  if (json) return printJson(SetupResult.parse(r));
  const lines = [head, ...r.files.map((f) => `  ${f.action.padEnd(9)} ${f.path}`)];
  if (r.todo.length) lines.push('To do:', ...r.todo.map((t) => `  - ${t}`));
  process.stdout.write(`${lines.join('\n')}\n`);
}

function failWith(err: unknown, json: boolean): never {
  if (err instanceof Refusal) {
    if (json) process.stderr.write(`${JSON.stringify({ error: { code: err.code, message: err.message, file: err.file ?? null } })}\n`);
    else process.stderr.write(`m4a: refused: ${err.message}\n`);
    process.exit(EXIT.failed);
  }
  fail(err, json);
}

const where = (program: Program, scope: Scope): string => `${program}, ${scope.kind === 'project' ? `project ${scope.dir}` : 'user'}`;

export async function runSetup(name: string, o: SetupFlags, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const json = !!o.json;
  try {
    const { program, scope } = programAndScope(name, o, env, true);
    const transport = (o.transport ?? 'stdio') as Transport;
    if (transport !== 'stdio' && transport !== 'http') throw new UsageError(`--transport ${o.transport}: choose stdio or http`);
    if (STDIO_ONLY.includes(program) && transport === 'http') throw new UsageError(`--transport http: ${program} takes the stdio bridge only (m4a mcp)`);
    if (isExtensionProgram(program) && o.transport !== undefined)
      throw new UsageError(`--transport does not apply to ${program}: its extension runs inside ${program} and speaks to the daemon itself`);
    const account = o.account ?? program;
    const bad = selectorProblem(account);
    if (bad) throw new UsageError(`--account ${account}: ${bad}`);
    const port = env.M4A_PORT;
    if (transport === 'http' && port !== undefined && !(/^\d+$/.test(port) && +port >= 1 && +port <= 65535)) throw new UsageError(`M4A_PORT=${port} is not a port number`);
    try {
      readCredentials(env);
    } catch (err) {
      throw new Refusal(`cannot parse ${credentialsPath(env)}: ${err instanceof Error ? err.message : String(err)}`, credentialsPath(env));
    }
    const prepared = prepareSetup({ program, scope, transport, account, force: !!o.force, hooks: o.hooks !== false, env });
    const acct = await ensureAccount(account, program, env);
    const files = prepared.commit();
    const todo = setupTodo(program, scope, transport, account, prepared.bridge, prepared.changes, acct.rotated, env);
    const r: SetupResult = { program, scope: scope.kind, account, account_created: acct.created, secret_rotated: acct.rotated, transport, files, todo };
    const acctText = acct.created ? 'created' : acct.rotated ? 'existed; secret rotated' : 'exists';
    print(r, json, `m4a setup ${where(program, scope)}, ${transport}: account ${account} ${acctText}; its secret is in ${credentialsPath(env)}`);
  } catch (err) {
    failWith(err, json);
  }
}

export async function runUnsetup(name: string, o: ScopeFlags, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const json = !!o.json;
  try {
    const { program, scope } = programAndScope(name, o, env, false);
    const undone = unsetupFiles({ program, scope, env });
    const account = undone.record?.account ?? program;
    const todo = undone.record
      ? [
          `The account ${account} and its secret in ${credentialsPath(env)} are kept: remove them with \`m4a admin account remove ${account}\` and by deleting accounts.${account} from that file.`,
          ...undone.notes,
        ]
      : [`Nothing is recorded for ${where(program, scope)} in ${statePath(env)}: nothing to remove.`];
    const r: SetupResult = {
      program,
      scope: scope.kind,
      account,
      account_created: false,
      secret_rotated: false,
      transport: undone.record?.transport ?? 'stdio',
      files: undone.files,
      todo,
    };
    print(r, json, `m4a unsetup ${where(program, scope)}`);
  } catch (err) {
    failWith(err, json);
  }
}
