// `m4a capabilities --json`: what this build supports, for scripts and doctors to read. Tools and
// routes come from the operation table, stores from the list the daemon opens.
import { CLI_VERSION } from './connect.js';
import { HTTP_PATHS, MCP_TOOL_NAMES } from '../wire/operation-facts.js';
import { LIMITS } from '../wire/limits.js';
import { EXTENSION_PROVIDERS, MCP_PROTOCOL_VERSIONS, STORE_KINDS } from '../wire/capabilities.js';
import { WAKE_KINDS } from '../wire/support.js';
import { hookEvents, PROGRAMS, STDIO_ONLY } from './setup/programs.js';
import { GEMINI_AUTH_SETTINGS } from './setup/gemini-auth.js';

export function capabilities(): Record<string, unknown> {
  return {
    name: 'mail4agent',
    version: CLI_VERSION,
    platform: process.platform,
    node: process.versions.node,
    attestation: process.platform === 'linux' ? 'linux-procfs' : null,
    stores: STORE_KINDS,
    doors: ['http', 'mcp-http', 'mcp-stdio', 'web'],
    mcp_protocol_versions: MCP_PROTOCOL_VERSIONS,
    mcp_tools: MCP_TOOL_NAMES,
    http_routes: [...HTTP_PATHS, '/mcp', '/health'],
    setup_programs: PROGRAMS,
    setup_transports: ['stdio', 'http'],
    setup_stdio_only: STDIO_ONLY,
    // The program events whose hooks setup installs to wake the agent (none: the extension delivers).
    setup_wake_hooks: Object.fromEntries(PROGRAMS.map((p) => [p, hookEvents(p)])),
    // What setup leaves to the user and doctor checks: Gemini CLI's auth method (headless runs exit 41 without one).
    setup_user_settings: { gemini: GEMINI_AUTH_SETTINGS },
    // Programs that load the mail4agent extension: live delivery inside the agent, waiting mail on resume.
    extension_programs: EXTENSION_PROVIDERS,
    // Programs whose plugin, set up beside the MCP entry, delivers mail into the running session.
    plugin_programs: ['opencode'],
    // The steps a delivery chain can hold (m4a wake set --step).
    wake_kinds: WAKE_KINDS,
    limits: { wait_secs_http: LIMITS.waitSecsHttp, wait_secs_mcp: LIMITS.waitSecsMcp },
  };
}
