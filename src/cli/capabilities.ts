// `m4a capabilities --json`: what this build supports, for scripts and doctors to read. Tools and
// routes come from the operation table, stores from the list the daemon opens.
import { CLI_VERSION } from './connect.js';
import { HTTP_PATHS, MCP_TOOL_NAMES } from '../wire/operation-facts.js';
import { LIMITS } from '../wire/limits.js';
import { EXTENSION_PROVIDERS, MCP_PROTOCOL_VERSIONS, STORE_KINDS } from '../wire/capabilities.js';
import { PROGRAMS } from './setup/programs.js';

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
    // Programs that load the mail4agent extension: live delivery inside the agent, waiting mail on resume.
    extension_programs: EXTENSION_PROVIDERS,
    limits: { wait_secs_http: LIMITS.waitSecsHttp, wait_secs_mcp: LIMITS.waitSecsMcp },
  };
}
