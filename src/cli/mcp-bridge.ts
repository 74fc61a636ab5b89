// `m4a mcp`: MCP over stdio for agents that only speak stdio, forwarded to the daemon's /mcp over
// keep-alive HTTP. The bridge is transparent to attestation, so the agent that spawned it is the
// session. Stdout carries only JSON-RPC; diagnostics go to stderr.
import { createInterface } from 'node:readline';
import type { MailClient } from '../client/http-client.js';
import { MailError } from '../wire/errors.js';
import { bridgeAccount } from './bridge-account.js';
import { connect } from './connect.js';

type Id = string | number | null;

const rpcError = (id: Id, code: number, message: string, data?: unknown): string =>
  JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined ? { data } : {}) } });

/** Ids of the requests in a message (notifications and responses have none to answer). */
function requestIds(msg: unknown): Id[] {
  const one = (m: unknown): Id[] => {
    if (typeof m !== 'object' || m === null) return [];
    const r = m as Record<string, unknown>;
    return typeof r.method === 'string' && Object.hasOwn(r, 'id') ? [r.id as Id] : [];
  };
  return Array.isArray(msg) ? msg.flatMap(one) : one(msg);
}

export async function runBridge(o: { account?: string; dataDir?: string }): Promise<void> {
  const chosen = bridgeAccount(o.account);
  if ('error' in chosen) {
    process.stderr.write(`m4a mcp: ${chosen.error}\n`);
    process.exit(3);
  }
  if (chosen.note) process.stderr.write(`m4a mcp: ${chosen.note}\n`);
  let client: MailClient;
  try {
    client = (await connect({ ...o, account: chosen.account })).client;
  } catch (err) {
    process.stderr.write(`m4a mcp: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(3);
  }
  const write = (line: string): void => void process.stdout.write(`${line}\n`);
  let inFlight = 0;
  let closing = false;
  const maybeExit = (): void => {
    if (closing && inFlight === 0) {
      client.close();
      process.exit(0);
    }
  };

  const forward = async (line: string): Promise<void> => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      return write(rpcError(null, -32700, 'parse error: not JSON'));
    }
    const ids = requestIds(parsed);
    try {
      // Inbox waits last up to 50 s over MCP; allow for them.
      const r = await client.post('/mcp', line, 60_000);
      if (r.status === 202 || r.text === '') return;
      if (r.status === 200) return write(r.text.trim());
      // Refused at the HTTP layer (credential, attestation): answer each request with the envelope.
      let envelope: unknown = r.text;
      try {
        envelope = JSON.parse(r.text);
      } catch {
        /* keep the text */
      }
      const code = (envelope as { error?: { code?: string } })?.error?.code ?? `http_${r.status}`;
      for (const id of ids) write(rpcError(id, -32001, `mail4agent refused the request: ${code}`, envelope));
    } catch (err) {
      const message = err instanceof MailError ? err.message : err instanceof Error ? err.message : String(err);
      for (const id of ids) write(rpcError(id, -32002, `mail4agent daemon unreachable: ${message}`));
    }
  };

  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on('line', (line) => {
    if (line.trim() === '') return;
    inFlight++;
    void forward(line).finally(() => {
      inFlight--;
      maybeExit();
    });
  });
  rl.on('close', () => {
    closing = true;
    maybeExit();
  });
}
