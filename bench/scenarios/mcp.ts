// 7. MCP `tools/call` round trip: over HTTP (raw JSON-RPC POSTs on keep-alive) and over the stdio
// bridge (`m4a mcp --account NAME`, credentials in a private XDG_CONFIG_HOME).
import type { Ctx, ScenarioResult, Row } from '../lib/context.js';
import type { FixedResult } from '../loadgen/fixed.js';
import type { McpStdioResult } from '../loadgen/mcp-stdio.js';
import { CLI, tempDir } from '../lib/procs.js';
import { ms, num, pct } from '../lib/format.js';

export async function mcp(ctx: Ctx): Promise<ScenarioResult> {
  const z = ctx.sizes;
  const d = await ctx.daemon();
  const [token] = await ctx.accounts(['mcp-a']);
  const call = (id: number): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'm4a_mail_unread', arguments: {} } });
  const http = await ctx.loadgen<FixedResult>(
    { mode: 'fixed', port: d.port, path: '/mcp', token, body: [call(1), call(2), call(3)], concurrency: 1, count: z.mcpCalls, warmupPerConnection: 20 },
    '7 MCP · tools/call over HTTP',
  );
  const httpPlain = await ctx.loadgen<FixedResult>(
    { mode: 'fixed', port: d.port, path: '/mail/unread', token, body: '{}', concurrency: 1, count: z.mcpCalls, warmupPerConnection: 20 },
    '7 MCP · the same op as POST /mail/unread',
  );
  const stdio = await ctx.loadgen<McpStdioResult>(
    { mode: 'mcp-stdio', cli: CLI, dataDir: d.dataDir, configHome: tempDir('xdg'), account: 'mcp-a', secret: token, count: z.mcpCalls, tool: 'm4a_mail_unread' },
    '7 MCP · tools/call over the stdio bridge',
  );
  const rows: Row[] = [
    { scenario: '7 MCP tools/call m4a_mail_unread', system: 'HTTP POST /mcp', metric: 'round trip', value: `${pct(http.latency)} · ${num(http.rps)}/s at 1 client` },
    { scenario: '7 MCP tools/call m4a_mail_unread', system: 'HTTP POST /mail/unread', metric: 'round trip (same op, no MCP)', value: pct(httpPlain.latency) },
    {
      scenario: '7 MCP tools/call m4a_mail_unread',
      system: 'stdio bridge (m4a mcp)',
      metric: 'round trip',
      value: `${pct(stdio.latency)} · first call ${ms(stdio.firstCallMs)} from spawn${stdio.errors ? ` · ${stdio.errors} errors` : ''}`,
    },
  ];
  return { name: 'mcp', data: { http, httpPlain, stdio }, rows, targets: [] };
}
