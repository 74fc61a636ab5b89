// The per-user credentials file: one secret per account, written by `m4a setup` (mode 0600), never
// printed again. Several accounts on one machine are normal (one per agent CLI).
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { AGENT_PROGRAMS } from '../wire/capabilities.js';

export interface StoredAccount {
  secret: string;
  /** The agent program this account is for (one of AGENT_PROGRAMS), if set up for one. */
  provider?: string;
}

export interface CredentialsFile {
  version: 1;
  accounts: Record<string, StoredAccount>;
}

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config'), 'mail4agent');
}

export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.M4A_CREDENTIALS || join(configDir(env), 'credentials.json');
}

export function readCredentials(env: NodeJS.ProcessEnv = process.env): CredentialsFile {
  const p = credentialsPath(env);
  if (!existsSync(p)) return { version: 1, accounts: {} };
  const parsed = JSON.parse(readFileSync(p, 'utf8')) as CredentialsFile;
  return { version: 1, accounts: parsed.accounts ?? {} };
}

export function writeCredentials(c: CredentialsFile, env: NodeJS.ProcessEnv = process.env): void {
  const p = credentialsPath(env);
  mkdirSync(dirname(p), { recursive: true, mode: 0o700 });
  const tmp = `${p}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(c, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, p);
}

/** Which agent program this command runs inside, from the variables each sets for its tools. */
export function detectProvider(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.CLAUDECODE || env.CLAUDE_CODE_SESSION_ID || env.CLAUDE_CODE_ENTRYPOINT) return 'claude';
  if (env.CODEX_THREAD_ID || env.CODEX_SANDBOX || env.CODEX_MANAGED_BY_NPM) return 'codex';
  if (env.GEMINI_CLI || env.GEMINI_SESSION_ID) return 'gemini';
  if (env.CURSOR_AGENT || env.CURSOR_TRACE_ID) return 'cursor';
  if (env.PI_CODING_AGENT) return 'pi';
  // Qwen Code gives its tools (shell, MCP servers, hooks) QWEN_CODE_SESSION_ID; its shell also QWEN_CODE=1.
  if (env.QWEN_CODE_SESSION_ID || env.QWEN_CODE === '1') return 'qwen';
  // opencode gives every child (MCP servers, its bash tool) OPENCODE=1 and OPENCODE_PID.
  if (env.OPENCODE === '1' || env.OPENCODE_PID) return 'opencode';
  // Last: Copilot's variables reach every process under it (its bash tool too), so a program
  // started inside Copilot is named by its own.
  if (env.COPILOT_AGENT_SESSION_ID || env.COPILOT_CLI) return 'copilot';
  return undefined;
}

export type AccountChoice = { account: string | null; secret: string; source: string } | { error: string };

/** M4A_TOKEN, else --account / M4A_ACCOUNT from the file, else the account set up for the agent
 *  program this runs inside, else the only account in the file. */
export function chooseAccount(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): AccountChoice {
  if (env.M4A_TOKEN && !flag) return { account: env.M4A_ACCOUNT ?? null, secret: env.M4A_TOKEN, source: 'M4A_TOKEN' };
  const file = readCredentials(env);
  const names = Object.keys(file.accounts);
  const wanted = flag ?? env.M4A_ACCOUNT;
  if (wanted) {
    const a = file.accounts[wanted];
    return a
      ? { account: wanted, secret: a.secret, source: flag ? '--account' : 'M4A_ACCOUNT' }
      : { error: `no secret for account ${wanted} in ${credentialsPath(env)} (run m4a setup)` };
  }
  const provider = detectProvider(env);
  if (provider) {
    const match = names.filter((n) => file.accounts[n]?.provider === provider);
    if (match.length === 1) return { account: match[0]!, secret: file.accounts[match[0]!]!.secret, source: `${provider} session` };
  }
  if (names.length === 1) return { account: names[0]!, secret: file.accounts[names[0]!]!.secret, source: 'only account' };
  if (names.length === 0) return { error: `no credentials: set M4A_TOKEN or run \`m4a setup ${AGENT_PROGRAMS.join('|')}\`` };
  return { error: `several accounts (${names.join(', ')}): choose one with --account or M4A_ACCOUNT` };
}
