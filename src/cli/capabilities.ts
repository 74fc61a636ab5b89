// `m4a capabilities --json`: what this build supports, for scripts and doctors to read.
import { CLI_VERSION } from './connect.js';

export function capabilities(): Record<string, unknown> {
  return {
    name: 'mail4agent',
    version: CLI_VERSION,
    platform: process.platform,
    node: process.versions.node,
    attestation: process.platform === 'linux' ? 'linux-procfs' : null,
    stores: ['sqlite', 'memory'],
    doors: ['http', 'mcp-http', 'mcp-stdio'],
    mcp_protocol_versions: ['2025-11-25', '2025-06-18', '2025-03-26'],
    mcp_tools: ['m4a_mail_send', 'm4a_mail_inbox', 'm4a_mail_ack', 'm4a_mail_get', 'm4a_mail_unread', 'm4a_mail_whoami', 'm4a_mail_status', 'm4a_mail_peers'],
    http_routes: ['/mail/send', '/mail/inbox', '/mail/ack', '/mail/get', '/mail/unread', '/mail/whoami', '/mail/status', '/mail/directory', '/mcp', '/health'],
    setup_programs: ['claude', 'codex', 'gemini', 'cursor'],
    setup_transports: ['stdio', 'http'],
    limits: { wait_secs_http: 60, wait_secs_mcp: 50 },
  };
}
