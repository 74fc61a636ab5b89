// What a process mail4agent starts may inherit from its parent's environment: the auto-started
// daemon (cli/autostart) and the programs a wake starts (a command step, a spawned codex
// app-server). An allow-list, never a deny-list: whoever started the daemon may hold M4A_TOKEN,
// M4A_ACCOUNT and model API keys, and none of it belongs to the account a wake runs for.

export type Env = Record<string, string | undefined>;

/** What every program expects; none of it is a secret. */
const SYSTEM = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TMPDIR', 'TZ', 'LANG', 'LANGUAGE'] as const;
/** Locale (LC_ALL, LC_CTYPE …) and the XDG base directories. */
const SYSTEM_PREFIXES = ['LC_', 'XDG_'] as const;
/** A name under an allowed prefix that still looks like a secret is never passed. */
const SECRET_LOOKING = /TOKEN|SECRET|PASSW|_KEY|APIKEY|CREDENTIAL|AUTH|COOKIE/i;
/** Where the agent programs keep their own configuration (directories, not secrets). */
const AGENT_HOMES = ['CODEX_HOME', 'CLAUDE_CONFIG_DIR', 'COPILOT_HOME', 'QWEN_HOME'] as const;
/** The daemon's settings that a client also reads to find it (a directory, a port, a log level).
 *  Never M4A_TOKEN, M4A_ACCOUNT or M4A_CREDENTIALS: they say who the starter is (the last names
 *  the starter's secrets file, whose only account a woken `m4a` would take; the daemon never reads it). */
export const SHARED_SETTINGS = ['M4A_DATA_DIR', 'M4A_PORT', 'M4A_LOG_LEVEL'] as const;
/** The daemon's store: M4A_STORE (a PostgreSQL URL may carry a password) and, for a PostgreSQL
 *  store, the libpq variables (PGPASSWORD …). The daemon needs them; a wake's program never gets them. */
const STORE_SETTING = 'M4A_STORE';
const isPostgres = (spec: string | undefined): boolean => spec !== undefined && /^postgres(ql)?:\/\//.test(spec);

/** The variables an agent program sets for the processes it runs, naming its own conversation
 *  (attest/corroborate.ts reads the same names): a process started outside that conversation, for
 *  another account or by a person, must never carry one, or it would be taken for that agent. */
export const AGENT_SESSION_VARS = ['CLAUDE_CODE_SESSION_ID', 'CODEX_THREAD_ID', 'GEMINI_SESSION_ID', 'QWEN_CODE_SESSION_ID', 'COPILOT_AGENT_SESSION_ID'] as const;

/** Names a chain may not pass through: they would say who whoever started the daemon is, or
 *  they are set by the daemon itself. */
const NEVER_NAMED = new Set<string>([
  'M4A_TOKEN',
  'M4A_ACCOUNT',
  'M4A_CREDENTIALS',
  'M4A_STORE',
  // The SMTP relay's credentials (wake/relay-config.ts): the daemon's, never a woken account's.
  'M4A_SMTP_RELAY_USER',
  'M4A_SMTP_RELAY_PASSWORD',
  ...AGENT_SESSION_VARS,
]);
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

function pick(from: Env, keep: (name: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(from)) if (v !== undefined && keep(k)) out[k] = v;
  return out;
}

const isBase = (k: string): boolean =>
  (SYSTEM as readonly string[]).includes(k) ||
  (AGENT_HOMES as readonly string[]).includes(k) ||
  (SHARED_SETTINGS as readonly string[]).includes(k) ||
  (SYSTEM_PREFIXES.some((p) => k.startsWith(p)) && !SECRET_LOOKING.test(k));

/** The base a wake's program starts from: system, locale, XDG, agent config homes, shared settings. */
export function baseEnv(from: Env): Record<string, string> {
  return pick(from, isBase);
}

/** The auto-started daemon's environment: the base plus its store settings. */
export function daemonEnv(from: Env): Record<string, string> {
  const pg = isPostgres(from[STORE_SETTING]);
  return pick(from, (k) => isBase(k) || k === STORE_SETTING || (pg && k.startsWith('PG')));
}

/** Why a variable name may not be named by a chain's `env`, or null when it may. */
export function envNameRefusal(name: string): string | null {
  if (!ENV_NAME.test(name)) return 'not a variable name (letters, digits and _, not starting with a digit)';
  if (name.startsWith('M4A_WAKE_')) return 'M4A_WAKE_* variables are set by the daemon for each wake';
  if (NEVER_NAMED.has(name)) return `${name} belongs to whoever started the daemon, not to the woken account`;
  return null;
}

/** A wake's program: the base, the variables the chain names (from `from`, when set there) and the
 *  daemon's own values (M4A_WAKE_* …), in that order. */
export function wakeProgramEnv(from: Env, named: readonly string[] = [], own: Record<string, string> = {}): Record<string, string> {
  const env = baseEnv(from);
  for (const k of named) {
    const v = from[k];
    if (v !== undefined && envNameRefusal(k) === null) env[k] = v;
  }
  return Object.assign(env, own);
}
