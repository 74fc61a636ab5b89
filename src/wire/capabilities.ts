// Facts about this build that both the daemon and the CLI state: one list each.

/** The stores a daemon can open (`--store`). */
export const STORE_KINDS = ['sqlite', 'postgres', 'memory'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/** MCP protocol versions the /mcp door speaks, newest first (the answer when a client asks another). */
export const MCP_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
