// Facts about this build that both the daemon and the CLI state: one list each.

/** The stores a daemon can open (`--store`). */
export const STORE_KINDS = ['sqlite', 'postgres', 'memory'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/** MCP protocol versions the /mcp door speaks, newest first (the answer when a client asks another). */
export const MCP_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;

/** Agent programs whose mail4agent extension runs inside the agent's own process (pi and its fork
 *  omp). Such a process reports its own conversation id (`AGENT_SESSION_HEADER`), since neither
 *  program shows it in its arguments or environment, and its extension delivers waiting mail when
 *  the conversation resumes: mail to one that is not running is kept for it, not refused. */
export const EXTENSION_PROVIDERS = ['pi', 'omp'] as const;
export type ExtensionProvider = (typeof EXTENSION_PROVIDERS)[number];
export const isExtensionProvider = (p: string | undefined): p is ExtensionProvider => (EXTENSION_PROVIDERS as readonly string[]).includes(p ?? '');

/** The request header an extension names its conversation with (a token of at most 128 bytes). */
export const AGENT_SESSION_HEADER = 'x-m4a-agent-session';
export const AGENT_SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
