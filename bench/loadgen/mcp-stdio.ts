// MCP over the stdio bridge: spawn `m4a mcp --account NAME` (credentials in a private
// XDG_CONFIG_HOME), write JSON-RPC lines, read answers; one call at a time, like an agent.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { progressReporter } from './http.js';
import { msSince, nowNs, summarize, type Summary } from '../lib/stats.js';

export interface McpStdioSpec {
  mode: 'mcp-stdio';
  cli: string;
  dataDir: string;
  configHome: string;
  account: string;
  secret: string;
  count: number;
  tool: string;
}

export interface McpStdioResult {
  count: number;
  errors: number;
  firstCallMs: number;
  latency: Summary;
}

export async function runMcpStdio(s: McpStdioSpec): Promise<McpStdioResult> {
  const dir = join(s.configHome, 'mail4agent');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'credentials.json'), JSON.stringify({ version: 1, accounts: { [s.account]: { secret: s.secret } } }), { mode: 0o600 });
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: s.configHome, M4A_DATA_DIR: s.dataDir };
  delete env.M4A_TOKEN;
  const child = spawn(process.execPath, [s.cli, 'mcp', '--account', s.account], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map<number, (line: string) => void>();
  const rl = createInterface({ input: child.stdout });
  rl.on('line', (line) => {
    const id = (JSON.parse(line) as { id: number }).id;
    const w = waiting.get(id);
    waiting.delete(id);
    w?.(line);
  });
  let nextId = 1;
  const call = (method: string, params: unknown): Promise<string> =>
    new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  const t0 = nowNs();
  await call('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'm4a-bench', version: '1' } });
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  const first = await call('tools/call', { name: s.tool, arguments: {} });
  const firstCallMs = msSince(t0);
  if (first.includes('"error"') && !first.includes('"result"')) throw new Error(`first call failed: ${first.slice(0, 300)}`);
  for (let i = 0; i < 20; i++) await call('tools/call', { name: s.tool, arguments: {} });
  const lat: number[] = [];
  let errors = 0;
  const tick = progressReporter(s.count, 'calls');
  for (let i = 0; i < s.count; i++) {
    const t = nowNs();
    const line = await call('tools/call', { name: s.tool, arguments: {} });
    lat.push(msSince(t));
    if (!line.includes('"result"') || line.includes('"isError":true')) errors++;
    tick(i + 1);
  }
  child.stdin.end();
  await new Promise((r) => child.once('exit', r));
  return { count: lat.length, errors, firstCallMs: Math.round(firstCallMs), latency: summarize(lat) };
}
