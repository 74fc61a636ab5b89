// `m4a doctor`: read-only checks of the daemon, the store (with --check-store its integrity),
// attestation on this platform, every agent program's MCP entry and secret, and what the user must
// still do by hand.
import { existsSync, lstatSync, readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { MailClient } from '../client/http-client.js';
import { MailError } from '../wire/errors.js';
import { AGENT_PROGRAMS } from '../wire/capabilities.js';
import { daemonUrl, dataDirFrom, operatorToken } from './daemon-target.js';
import { fetchSummary, summaryText, type MetricsSummary } from './metrics-summary.js';
import { probe, readDaemonInfo } from './autostart.js';
import { CLI_VERSION } from './connect.js';
import { credentialsPath, readCredentials } from './credentials.js';
import { extensionChecks } from './doctor-extensions.js';
import { opencodeFiles } from './setup/program-opencode.js';
import { opencodePluginChecks } from './doctor-opencode.js';
import { relayLinkCheck } from './relay-link-commands.js';
import { qwenDirs } from './setup/program-qwen.js';
import { copilotFiles, copilotHome, workspaceEntries } from './setup/program-copilot.js';

export type CheckStatus = 'ok' | 'warn' | 'fail';
export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  todo?: string;
}

interface McpEntry {
  program: string;
  scope: string;
  file: string;
  entry: Record<string, unknown>;
}

const home = (env: NodeJS.ProcessEnv) => env.HOME || homedir();

async function readJsonc(file: string): Promise<unknown> {
  const { parse } = await import('jsonc-parser');
  const errors: { error: number }[] = [];
  const v: unknown = parse(readFileSync(file, 'utf8'), errors as never, { allowTrailingComma: true });
  if (errors.length) throw new Error(`cannot parse ${file}`);
  return v;
}

async function findEntries(env: NodeJS.ProcessEnv, project: string): Promise<{ entries: McpEntry[]; problems: Check[] }> {
  const h = home(env);
  const codexHome = env.CODEX_HOME || join(h, '.codex');
  const jsonFiles: [string, string, string][] = [
    ['claude', 'user', join(h, '.claude.json')],
    ['claude', 'project', join(project, '.mcp.json')],
    ['gemini', 'user', join(h, '.gemini', 'settings.json')],
    ['gemini', 'project', join(project, '.gemini', 'settings.json')],
    ['qwen', 'user', qwenDirs(env, null).settings],
    ['qwen', 'project', qwenDirs(env, project).settings],
    ['cursor', 'user', join(h, '.cursor', 'mcp.json')],
    ['cursor', 'project', join(project, '.cursor', 'mcp.json')],
    ['copilot', 'user', copilotFiles(env, null).mcp],
    ['copilot', 'project', copilotFiles(env, project).mcp],
  ];
  const entries: McpEntry[] = [];
  const problems: Check[] = [];
  for (const [program, scope, file] of jsonFiles) {
    if (!existsSync(file)) continue;
    try {
      const e = ((await readJsonc(file)) as { mcpServers?: { m4a?: unknown } } | null)?.mcpServers?.m4a;
      if (e && typeof e === 'object') entries.push({ program, scope, file, entry: e as Record<string, unknown> });
    } catch (err) {
      problems.push({ name: `${program} config`, status: 'fail', detail: (err as Error).message });
    }
  }
  // opencode keeps its servers under `mcp` (opencode.json, or the opencode.jsonc it writes itself).
  for (const [scope, file] of [
    ['user', opencodeFiles({ kind: 'user' }, env).config],
    ['project', opencodeFiles({ kind: 'project', dir: project }, env).config],
  ] as const) {
    if (!existsSync(file)) continue;
    try {
      const e = ((await readJsonc(file)) as { mcp?: { m4a?: unknown } } | null)?.mcp?.m4a;
      if (e && typeof e === 'object') entries.push({ program: 'opencode', scope, file, entry: e as Record<string, unknown> });
    } catch (err) {
      problems.push({ name: 'opencode config', status: 'fail', detail: (err as Error).message });
    }
  }
  for (const [scope, file] of [
    ['user', join(codexHome, 'config.toml')],
    ['project', join(project, '.codex', 'config.toml')],
  ] as const) {
    if (!existsSync(file)) continue;
    try {
      const { parse } = await import('@decimalturn/toml-patch');
      const v = parse(readFileSync(file, 'utf8')) as { mcp_servers?: { m4a?: Record<string, unknown> } };
      if (v.mcp_servers?.m4a) entries.push({ program: 'codex', scope, file, entry: v.mcp_servers.m4a });
    } catch (err) {
      problems.push({ name: 'codex config', status: 'fail', detail: `cannot parse ${file}: ${(err as Error).message}` });
    }
  }
  return { entries, problems };
}

/** The command line of a stdio entry: command and args, or opencode's one command array. */
const commandOf = (entry: Record<string, unknown>): string[] =>
  [...(Array.isArray(entry.command) ? (entry.command as unknown[]) : [entry.command]), ...(Array.isArray(entry.args) ? (entry.args as unknown[]) : [])].map(String);

function accountOf(entry: Record<string, unknown>): string | undefined {
  const args = commandOf(entry);
  const i = args.indexOf('--account');
  return i >= 0 ? args[i + 1] : undefined;
}

/** What `m4a serve` enforces at start (it tightens, or refuses a directory of another user):
 *  this finds a directory loosened since, or one no daemon has started in yet. */
function dataDirCheck(dataDir: string): Check {
  const st = statSync(dataDir);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid)
    return {
      name: 'data directory',
      status: 'fail',
      detail: `${dataDir} belongs to uid ${st.uid}, not to this user: m4a serve refuses to start`,
      todo: `use a directory of your own, or chown -R ${uid} ${dataDir}`,
    };
  const wide: string[] = [];
  const walk = (p: string, s: Stats): void => {
    if ((s.isFile() || s.isDirectory()) && s.mode & 0o077) wide.push(`${p} ${(s.mode & 0o777).toString(8)}`);
    if (s.isDirectory()) for (const n of readdirSync(p)) walk(join(p, n), lstatSync(join(p, n)));
  };
  walk(dataDir, st);
  if (wide.length === 0) return { name: 'data directory', status: 'ok', detail: `${dataDir} mode 700, its files 600` };
  return {
    name: 'data directory',
    status: 'fail',
    detail: `readable by other users: ${wide.join(', ')}`,
    todo: `the daemon tightens them when it starts (m4a daemon restart), or now: chmod -R go-rwx ${dataDir}`,
  };
}

type DoctorOptions = { dataDir?: string; project?: string; checkStore?: boolean; store?: string };

export async function runDoctor(o: DoctorOptions, env: NodeJS.ProcessEnv = process.env): Promise<Check[]> {
  return (await doctorReport(o, env)).checks;
}

/** The checks, and the daemon's metrics summary when its /metrics answered the operator. */
export async function doctorReport(o: DoctorOptions, env: NodeJS.ProcessEnv = process.env): Promise<{ checks: Check[]; metrics: MetricsSummary | null }> {
  let metrics: MetricsSummary | null = null;
  const checks: Check[] = [];
  const dataDir = dataDirFrom(o.dataDir, env);
  const project = resolve(o.project ?? process.cwd());
  const url = daemonUrl(dataDir, env);

  if (process.platform !== 'linux')
    checks.push({ name: 'attestation', status: 'fail', detail: `no process attestation on ${process.platform}: every mail request will be refused (unattested)` });

  const h = await probe(url);
  if (!h) {
    checks.push({
      name: 'daemon',
      status: 'warn',
      detail: `nothing answers at ${url}`,
      todo: 'it starts on first use (m4a send, m4a mcp); or run `m4a serve` / `m4a daemon install`',
    });
  } else {
    const health = await new MailClient({ url, token: '', checkPortOwner: false }).health();
    checks.push({ name: 'daemon', status: 'ok', detail: `mail4agent ${health.version} at ${url} (pid ${health.pid})` });
    if (health.version !== CLI_VERSION)
      checks.push({ name: 'version', status: 'warn', detail: `daemon ${health.version}, cli ${CLI_VERSION}`, todo: 'run `m4a daemon restart` to run this version' });
    checks.push({ name: 'store', status: 'ok', detail: `${health.store} in ${dataDir}` });
    checks.push({
      name: 'attestation',
      status: health.attestation ? 'ok' : 'fail',
      detail: health.attestation ? 'the daemon attests connections on this platform' : 'the daemon cannot attest connections here',
    });
    const info = readDaemonInfo(dataDir);
    if (info && info.pid !== h.pid) checks.push({ name: 'daemon.json', status: 'warn', detail: `daemon.json names pid ${info.pid}, the daemon is pid ${h.pid}` });
    let token: string | null = null;
    try {
      token = operatorToken(dataDir);
    } catch {
      /* another user's daemon, or none started here yet */
    }
    const m = await fetchSummary(url, token);
    if ('summary' in m) {
      metrics = m.summary;
      checks.push({ name: 'metrics', status: 'ok', detail: summaryText(m.summary) });
    } else checks.push({ name: 'metrics', status: m.off ? 'ok' : 'warn', detail: m.why });
    const link = await relayLinkCheck(url, token);
    if (link) checks.push(link);
  }
  if (existsSync(dataDir)) checks.push(dataDirCheck(dataDir));
  if (o.checkStore) {
    const { checkStore } = await import('../daemon/check-store.js');
    checks.push({ name: 'store integrity', ...checkStore({ dataDir, ...(o.store ? { store: o.store } : {}) }, env) });
  }

  const credPath = credentialsPath(env);
  let creds: ReturnType<typeof readCredentials> = { version: 1, accounts: {} };
  if (existsSync(credPath)) {
    const mode = statSync(credPath).mode & 0o777;
    checks.push({
      name: 'credentials',
      status: mode & 0o077 ? 'fail' : 'ok',
      detail: `${credPath} (${Object.keys(readCredentials(env).accounts).join(', ') || 'no accounts'}) mode ${mode.toString(8)}`,
      ...(mode & 0o077 ? { todo: `chmod 600 ${credPath}` } : {}),
    });
    creds = readCredentials(env);
  } else if (!env.M4A_TOKEN) {
    checks.push({ name: 'credentials', status: 'warn', detail: `no ${credPath}`, todo: `run \`m4a setup ${AGENT_PROGRAMS.join('|')}\`` });
  }

  // Each account's secret, proven against the daemon (a whoami attests this very process).
  if (h) {
    for (const [name, acc] of Object.entries(creds.accounts)) {
      const c = new MailClient({ url, token: acc.secret });
      try {
        const me = await c.whoami();
        checks.push({
          name: `account ${name}`,
          status: me.account === name ? 'ok' : 'fail',
          detail: me.account === name ? `secret valid; this shell would speak as ${me.address}` : `the stored secret names ${me.account}`,
        });
      } catch (err) {
        const code = err instanceof MailError ? err.code : 'unreachable';
        checks.push({
          name: `account ${name}`,
          status: 'fail',
          detail: `${code}: ${(err as Error).message}`,
          todo: code === 'unauthenticated' ? `run \`m4a setup ${acc.provider ?? name}\` again` : undefined,
        });
      } finally {
        c.close();
      }
    }
  }

  const { entries, problems } = await findEntries(env, project);
  checks.push(...problems);
  const extensions = extensionChecks(env, project, creds);
  checks.push(...extensions.checks);
  checks.push(...opencodePluginChecks(env, project, creds).checks);
  if (entries.length === 0 && extensions.found === 0)
    checks.push({
      name: 'agents',
      status: 'warn',
      detail: 'no agent program is wired to mail4agent',
      todo: `run \`m4a setup claude\` (or ${AGENT_PROGRAMS.filter((p) => p !== 'claude').join(', ')})`,
    });
  for (const e of entries) {
    const name = `${e.program} (${e.scope})`;
    const isHttp = typeof e.entry.url === 'string';
    if (isHttp) {
      const envRef = JSON.stringify(e.entry).match(/M4A_TOKEN/) !== null;
      checks.push({
        name,
        status: envRef ? 'ok' : 'warn',
        detail: `HTTP entry ${String(e.entry.url)} in ${e.file}`,
        todo: env.M4A_TOKEN ? undefined : 'export M4A_TOKEN in the environment the agent starts from',
      });
    } else {
      const account = accountOf(e.entry);
      const has = account !== undefined && creds.accounts[account] !== undefined;
      checks.push({
        name,
        status: has ? 'ok' : 'fail',
        detail: `stdio bridge ${commandOf(e.entry).join(' ')} in ${e.file}`,
        ...(has ? {} : { todo: `no secret for account ${account ?? '(none)'}: run \`m4a setup ${e.program}\`` }),
      });
    }
    if (e.program === 'claude' && e.scope === 'project') {
      const local = join(project, '.claude', 'settings.local.json');
      let approved = false;
      try {
        const v = (await readJsonc(local)) as { enabledMcpjsonServers?: string[]; enableAllProjectMcpServers?: boolean; disabledMcpjsonServers?: string[] };
        approved = !!(v.enableAllProjectMcpServers || v.enabledMcpjsonServers?.includes('m4a')) && !v.disabledMcpjsonServers?.includes('m4a');
      } catch {
        /* no local settings */
      }
      checks.push({
        name: 'claude project approval',
        status: approved ? 'ok' : 'warn',
        detail: approved ? 'm4a is pre-approved in .claude/settings.local.json (counts once the folder is trusted)' : '.mcp.json servers wait for approval in interactive sessions',
        todo: 'open `claude` in the project once and accept the workspace trust dialog',
      });
    }
    // Headless runs (and wake turns) use only trusted servers' tools.
    if ((e.program === 'gemini' || e.program === 'qwen') && e.entry.trust !== true)
      checks.push({
        name: `${name} trust`,
        status: 'warn',
        detail: `the m4a entry in ${e.file} is not trusted: headless runs refuse its tools`,
        todo: `run \`m4a setup ${e.program}\` again`,
      });
    if (e.program === 'gemini' && e.scope === 'project') {
      let trusted = false;
      try {
        const t = (await readJsonc(join(home(env), '.gemini', 'trustedFolders.json'))) as Record<string, string>;
        trusted = Object.entries(t).some(([dir, level]) => (project === dir || project.startsWith(`${dir}/`)) && level !== 'DO_NOT_TRUST');
      } catch {
        /* none */
      }
      checks.push({
        name: 'gemini folder trust',
        status: trusted ? 'ok' : 'warn',
        detail: trusted ? `${project} is trusted` : 'project settings are ignored in untrusted folders',
        todo: trusted ? undefined : 'trust the folder in Gemini CLI (/permissions)',
      });
    }
    // A trusted folder's .mcp.json (Claude Code's) wins over Copilot's entry; the bridge then speaks
    // as the account set up for Copilot, or refuses with wrong_program.
    if (e.program === 'copilot' && e.scope === 'user') {
      const other = workspaceEntries(project, copilotFiles(env, project).mcp);
      if (other.length)
        checks.push({
          name: 'copilot workspace entry',
          status: 'warn',
          detail: `in a trusted folder Copilot also loads ${other.join(' and ')}, whose m4a entry wins over ${e.file}; the bridge speaks as the account set up for Copilot there`,
          todo: 'keep an account set up for copilot (m4a setup copilot) so that entry works under Copilot',
        });
    }
    // The extension that wakes an idle session runs only with Copilot's experimental features on.
    if (e.program === 'copilot' && existsSync(copilotFiles(env, e.scope === 'project' ? project : null).extension)) {
      let on = false;
      try {
        on = ((await readJsonc(join(copilotHome(env), 'settings.json'))) as { experimental?: unknown } | null)?.experimental === true;
      } catch {
        /* no settings yet */
      }
      checks.push({
        name: `copilot ${e.scope} idle wake`,
        status: on ? 'ok' : 'warn',
        detail: on
          ? 'experimental features are on: the mail4agent extension wakes an idle session'
          : 'experimental features are off: Copilot does not run the mail4agent extension, so mail reaches a session only at the end of its turn',
        ...(on ? {} : { todo: 'start Copilot once with `copilot --experimental` (it keeps the setting)' }),
      });
    }
    if (e.program === 'codex' && e.scope === 'project') {
      checks.push({
        name: 'codex project trust',
        status: 'warn',
        detail: 'project .codex/config.toml is read only in trusted projects',
        todo: 'trust the project when Codex asks; hooks must also be trusted in /hooks',
      });
    }
  }
  if (entries.some((e) => e.program === 'gemini')) {
    const { GEMINI_AUTH_TODO, geminiAuthSource } = await import('./setup/gemini-auth.js');
    const source = geminiAuthSource(env, project);
    checks.push(source ? { name: 'gemini auth', status: 'ok', detail: source } : { name: 'gemini auth', status: 'warn', detail: 'no auth method chosen', todo: GEMINI_AUTH_TODO });
  }
  return { checks: checks.map((c) => (c.todo === undefined ? (({ todo: _t, ...rest }) => rest)(c) : c)), metrics };
}
