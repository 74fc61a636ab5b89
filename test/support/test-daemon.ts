// A real daemon on an ephemeral loopback port with its own data directory, in this process.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDaemon, type DaemonOptions, type RunningDaemon } from '../../src/daemon/daemon.js';
import { MailClient } from '../../src/client/http-client.js';
import { silentLogger } from '../../src/engine/log.js';

export interface TestDaemon extends RunningDaemon {
  operator: MailClient;
  /** Creates an account and returns a client holding its secret. */
  account(id: string, opts?: { urgent?: boolean; kind?: 'agent' | 'human' | 'service'; bind_provider?: string }): Promise<{ client: MailClient; secret: string }>;
  stop(): Promise<void>;
}

export type StoreKind = 'memory' | 'sqlite';
export const STORE_KINDS: StoreKind[] = ['memory', 'sqlite'];

export async function startTestDaemon(o: DaemonOptions & { storeKind?: StoreKind } = {}): Promise<TestDaemon> {
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), 'm4a-test-'));
  const store = o.store ?? (o.storeKind === 'memory' ? 'memory' : `sqlite:${join(dataDir, 'mail.db')}`);
  const d = await startDaemon({ log: silentLogger, port: 0, ...o, dataDir, store });
  const clients: MailClient[] = [];
  const operator = new MailClient({ url: d.url, token: d.operatorToken });
  clients.push(operator);
  return Object.assign(d, {
    operator,
    async account(id: string, opts: { urgent?: boolean; kind?: 'agent' | 'human' | 'service'; bind_provider?: string } = {}) {
      const r = await operator.admin.accountAdd({
        id,
        ...(opts.kind ? { kind: opts.kind } : {}),
        ...(opts.bind_provider ? { bind_provider: opts.bind_provider } : {}),
        permissions: { urgent: !!opts.urgent },
      });
      const client = new MailClient({ url: d.url, token: r.secret });
      clients.push(client);
      return { client, secret: r.secret };
    },
    async stop() {
      for (const c of clients) c.close();
      await d.close();
      if (!o.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  });
}

/** A raw HTTP call with full control of headers and body (for the refusal tests). */
export async function raw(
  url: string,
  path: string,
  opts: { token?: string; body?: string | Buffer; headers?: Record<string, string>; method?: string } = {},
): Promise<{ status: number; json: any; headers: Headers }> {
  const res = await fetch(`${url}${path}`, {
    method: opts.method ?? 'POST',
    headers: { 'content-type': 'application/json', ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...opts.headers },
    ...(opts.body !== undefined ? { body: opts.body } : {}),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = text;
  }
  return { status: res.status, json, headers: res.headers };
}
