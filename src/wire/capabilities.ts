// Facts about this build that both the daemon and the CLI state: one list each.

/** The stores a daemon can open (`--store`). */
export const STORE_KINDS = ['sqlite', 'postgres', 'memory'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/** MCP protocol versions the /mcp door speaks, newest first (the answer when a client asks another). */
export const MCP_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;

/** The agent programs mail4agent knows, by the provider name attestation gives each (the session
 *  card's `provider`): `m4a setup` takes the same names. */
export const AGENT_PROGRAMS = ['claude', 'codex', 'gemini', 'cursor', 'pi', 'omp', 'qwen', 'copilot', 'opencode'] as const;
export type AgentProgram = (typeof AGENT_PROGRAMS)[number];

/** Agent programs whose mail4agent extension runs inside the agent's own process (pi and its fork
 *  omp). Such a process reports its own conversation id (`AGENT_SESSION_HEADER`), since neither
 *  program shows it in its arguments or environment, and its extension delivers waiting mail when
 *  the conversation resumes: mail to one that is not running is kept for it, not refused. */
export const EXTENSION_PROVIDERS = ['pi', 'omp'] as const;
export type ExtensionProvider = (typeof EXTENSION_PROVIDERS)[number];
export const isExtensionProvider = (p: string | undefined): p is ExtensionProvider => (EXTENSION_PROVIDERS as readonly string[]).includes(p ?? '');

/** Agent programs whose own process names its conversation (`AGENT_SESSION_HEADER`): the pi and omp
 *  extensions, and opencode's plugin (opencode also runs our MCP bridge, so it is no extension
 *  provider: its mail to an ended session is not kept). Taken only from the agent process itself. */
export const SELF_REPORTING_PROVIDERS = [...EXTENSION_PROVIDERS, 'opencode'] as const;
export const reportsOwnSession = (p: string | undefined): boolean => (SELF_REPORTING_PROVIDERS as readonly string[]).includes(p ?? '');

/** How long a live notice parks (pi's and omp's extension, opencode's plugin, Copilot's
 *  `m4a hook copilot-live`): under the 60 s a notice may wait, so the daemon answers first. */
export const LIVE_WAIT_SECS = 55;

/** The request header an extension names its conversation with (a token of at most 128 bytes). */
export const AGENT_SESSION_HEADER = 'x-m4a-agent-session';
export const AGENT_SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
